"""ipywidgets views over already-computed what-if frames: move K and alpha, nothing recomputed.

:func:`view` is the view as a plain function (a table and a chart for one setting), used by the
widget and by tests; :class:`WhatIfWidget` puts sliders for K and alpha and drop-downs for the
dataset and the retriever in front of it and redraws its output on every change. The frames come
from :func:`ragnb.studies.whatif.precompute` (or :func:`ragnb.studies.whatif.run`): every value
shown is a lookup in :attr:`ragnb.studies.whatif.WhatIfFrames.grid`, so no embedding, retrieval or
evaluation runs when a control moves.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.errors import InputError
from ragnb.report.charts import alt
from ragnb.studies.whatif.charts import alpha_curves_chart
from ragnb.studies.whatif.grid import WhatIfFrames

__all__ = ["WhatIfWidget", "interactive_frontend", "view"]

ALL = "(all)"


def view(
    frames: WhatIfFrames,
    *,
    k: int,
    alpha: float,
    dataset: str | None = None,
    retriever: str | None = None,
) -> tuple[pd.DataFrame, alt.FacetChart]:
    """The what-if table and chart at one setting.

    Parameters
    ----------
    frames : WhatIfFrames
        Precomputed per-query values and their grid of aggregates.
    k : int
        A cutoff of ``frames.ks``.
    alpha : float
        A value of ``frames.alphas``.
    dataset : str, optional
        Default: the first dataset of the frames.
    retriever : str, optional
        Show one retriever only (default: all).

    Returns
    -------
    table : DataFrame
        Index ``retriever``; one column per measure at the setting, named as the measure
        (``"F(alpha=0.5)@10"``, ``"RA-nWG@10"``...), in the frames' family order; values are macro
        means over the queries with a defined value. ``table.attrs`` holds ``k``, ``alpha``,
        ``dataset``.
    chart : altair.FacetChart
        Each family against alpha at ``k``, one line per retriever, a rule at ``alpha``
        (:func:`ragnb.studies.whatif.charts.alpha_curves_chart`).

    Raises
    ------
    InputError
        When ``k``, ``alpha``, ``dataset`` or ``retriever`` is not in the frames.
    """
    rows = frames.at(k, alpha, dataset, retriever)
    dataset = str(rows["dataset"].iloc[0]) if len(rows) else (dataset or frames.datasets[0])
    names = list(dict.fromkeys(rows["measure"]))
    table = rows.pivot(index="retriever", columns="measure", values="value")
    table = table.loc[list(dict.fromkeys(rows["retriever"])), names]
    table.columns.name = None
    table.attrs.update({"k": int(k), "alpha": float(alpha), "dataset": dataset})
    g = frames.grid
    at_k = g[(g["dataset"] == dataset) & (g["k"] == int(k))]
    if retriever is not None:
        at_k = at_k[at_k["retriever"] == retriever]
    chart = alpha_curves_chart(at_k.reset_index(drop=True), alpha=float(alpha))
    return table, chart


def interactive_frontend() -> bool:
    """True when the running kernel's current request comes from a frontend that can answer.

    JupyterLab, Notebook and VS Code send ``execute_request`` with ``allow_stdin=True``;
    headless executors (nbclient, papermill, ``nbconvert --execute``) send ``False``. Widgets need
    such a frontend; in a papermill report they would only leave widget state behind, which the
    HTML exporter turns into a widget-manager script fetched from a CDN.

    Returns
    -------
    bool
        False outside an IPython kernel.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return bool(getattr(kernel, "_allow_stdin", False))


def _bundle(obj: Any) -> dict[str, Any]:
    """A display_data output of a DataFrame (HTML table) or an altair chart (active renderer)."""
    if isinstance(obj, pd.DataFrame):
        html = obj.style.format("{:.4f}", na_rep="NA").to_html()
        data: dict[str, Any] = {"text/html": html, "text/plain": obj.to_string()}
    else:
        bundle = obj._repr_mimebundle_()
        data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
    return {"output_type": "display_data", "data": data, "metadata": {}}


class WhatIfWidget:
    """Sliders for K and alpha, drop-downs for dataset and retriever, over precomputed frames.

    Parameters
    ----------
    frames : WhatIfFrames
    k : int, optional
        Initial K (default: the grid's K closest to 10).
    alpha : float, optional
        Initial alpha (default: the grid's alpha closest to 0.5).

    Attributes
    ----------
    k_slider : ipywidgets.SelectionSlider
        Over ``frames.ks``.
    alpha_slider : ipywidgets.SelectionSlider
        Over ``frames.alphas``.
    dataset : ipywidgets.Dropdown
    retriever : ipywidgets.Dropdown
        ``"(all)"`` or one retriever of the selected dataset.
    output : ipywidgets.Output
        The table and the chart of the current setting (its ``outputs`` are replaced on change).
    table : DataFrame
        The current table (:func:`view`).
    chart : altair.FacetChart
        The current chart.
    box : ipywidgets.VBox
        The whole widget; displaying the object displays it.

    Examples
    --------
    >>> w = WhatIfWidget(frames)            # doctest: +SKIP
    >>> w.k_slider.value = 20; w.table      # doctest: +SKIP
    """

    def __init__(
        self, frames: WhatIfFrames, *, k: int | None = None, alpha: float | None = None
    ) -> None:
        widgets = require("ipywidgets")

        if not isinstance(frames, WhatIfFrames):
            raise InputError(f"frames must be WhatIfFrames, got {type(frames).__name__}")
        self.frames = frames
        k = k if k is not None else min(frames.ks, key=lambda v: abs(v - 10))
        alpha = alpha if alpha is not None else min(frames.alphas, key=lambda v: abs(v - 0.5))
        frames._check_setting(k, alpha, None, None)
        self.k_slider = widgets.SelectionSlider(
            options=list(frames.ks), value=int(k), description="K", continuous_update=False
        )
        self.alpha_slider = widgets.SelectionSlider(
            options=[(f"{a:g}", a) for a in frames.alphas],
            value=min(frames.alphas, key=lambda v: abs(v - float(alpha))),
            description="alpha",
            continuous_update=False,
        )
        self.dataset = widgets.Dropdown(options=frames.datasets, description="dataset")
        self.retriever = widgets.Dropdown(
            options=[ALL, *frames.retrievers(self.dataset.value)], description="retriever"
        )
        self.output = widgets.Output()
        controls = widgets.HBox([self.k_slider, self.alpha_slider])
        choices = widgets.HBox([self.dataset, self.retriever])
        self.box = widgets.VBox([controls, choices, self.output])
        self.table: pd.DataFrame = pd.DataFrame()
        self.chart: alt.FacetChart | None = None
        self.refresh()
        for control in (self.k_slider, self.alpha_slider, self.retriever):
            control.observe(self.refresh, names="value")
        self.dataset.observe(self._dataset_changed, names="value")

    def _dataset_changed(self, change: Any = None) -> None:
        options = [ALL, *self.frames.retrievers(self.dataset.value)]
        with self.retriever.hold_trait_notifications():
            self.retriever.options = options
            self.retriever.value = ALL
        self.refresh()

    def refresh(self, change: Any = None) -> None:
        """Recompute the view for the controls' values and replace the output."""
        retriever = None if self.retriever.value in (ALL, None) else self.retriever.value
        self.table, self.chart = view(
            self.frames,
            k=self.k_slider.value,
            alpha=self.alpha_slider.value,
            dataset=self.dataset.value,
            retriever=retriever,
        )
        self.output.outputs = (_bundle(self.table), _bundle(self.chart))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)
