"""numpydoc entries that several public functions of :mod:`ragnb.golden` share word for word.

:func:`fill_golden_doc` expands the ``{{name, ...}}`` lines of their docstrings from
:data:`GOLDEN_ENTRIES` (:func:`ragnb.docstrings.doc_filler`); an unknown name raises KeyError at
import time.
"""

from __future__ import annotations

from ragnb.docstrings import doc_filler

__all__ = ["GOLDEN_ENTRIES", "fill_golden_doc"]

#: The percentile bootstrap over queries of Kendall's tau
#: (:func:`ragnb.golden.agreement.tau_interval` and
#: :func:`ragnb.golden.calibration.system_tau_interval`, which passes them on).
GOLDEN_ENTRIES: dict[str, str] = {
    "n_boot": "n_boot : int >= 0, default 1000",
    "seed": "seed : int or None, default 0",
    "ci": "ci : float in (0, 1), default 0.95",
}

#: Decorator expanding :data:`GOLDEN_ENTRIES`.
fill_golden_doc = doc_filler(GOLDEN_ENTRIES)
