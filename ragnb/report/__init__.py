"""Reports: a study result's protocol (:mod:`ragnb.report.protocol`), notebook parameters
(:mod:`ragnb.report.params`), charts and tables (:mod:`ragnb.report.charts`,
:mod:`ragnb.report.tables`), and notebooks rendered by papermill into self-contained HTML
(:mod:`ragnb.report.render`).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.report.render",
        "ragnb.report.protocol",
        "ragnb.report.params",
    ],
)
