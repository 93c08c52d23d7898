"""Notebook 06: what-if tuning of K and alpha over stored runs.

- :mod:`ragnb.studies.whatif.grid`: per-query values on the K x alpha grid, aggregates, rank
  stability.
- :mod:`ragnb.studies.whatif.study`: :class:`WhatIfConfig`, :func:`run` and the :class:`WhatIf` it
  returns.
- :mod:`ragnb.studies.whatif.charts`: altair charts with K/alpha sliders for static reports.
- :mod:`ragnb.studies.whatif.widgets`: ipywidgets views for JupyterLab.
"""

from ragnb.studies.whatif.charts import (
    alpha_curves_chart,
    rank_bump_chart,
    slider_params,
    what_if_chart,
)
from ragnb.studies.whatif.grid import (
    ALPHA_FAMILIES,
    DEFAULT_ALPHAS,
    DEFAULT_FAMILIES,
    MAX_CHART_ROWS,
    WhatIfFrames,
    chart_rows,
    grid_measures,
    precompute,
    rank_table,
    slider_table,
    top_changes,
)
from ragnb.studies.whatif.study import WhatIf, WhatIfConfig, compute_runs, load_runs, run
from ragnb.studies.whatif.widgets import (
    WhatIfWidget,
    interactive_frontend,
    view,
)

__all__ = [
    "ALPHA_FAMILIES",
    "DEFAULT_ALPHAS",
    "DEFAULT_FAMILIES",
    "MAX_CHART_ROWS",
    "WhatIf",
    "WhatIfConfig",
    "WhatIfFrames",
    "WhatIfWidget",
    "alpha_curves_chart",
    "chart_rows",
    "compute_runs",
    "grid_measures",
    "interactive_frontend",
    "load_runs",
    "precompute",
    "rank_bump_chart",
    "rank_table",
    "run",
    "slider_params",
    "slider_table",
    "top_changes",
    "view",
    "what_if_chart",
]
