"""JupyterLab views (ipywidgets, the ``notebooks`` extra): labelling pairs for a judge's
calibration and auditing a golden set's refined top (:mod:`ragnb.widgets.labelling`)."""

from ragnb.widgets.labelling import LabellingWidget, audit_view, label_pairs

__all__ = ["LabellingWidget", "audit_view", "label_pairs"]
