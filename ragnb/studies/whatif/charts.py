"""Charts of the what-if analysis (notebook 06): tidy frames in, altair charts out.

Two kinds:

* Slider charts for static HTML reports (:func:`what_if_chart`, :func:`rank_bump_chart`): the
  K and alpha sliders are altair parameters bound to ``binding_range`` inputs, and every view
  filters an inline table of aggregates (never per-query rows), so a reader moves K and alpha in
  the browser with no kernel. A slider between two grid values snaps down to the grid: the chart
  keeps the rows with the largest grid K <= the slider's K and the largest grid alpha <= its
  alpha.
* A static chart for the widgets (:func:`alpha_curves_chart`), redrawn by the kernel.

They draw what :mod:`ragnb.studies.whatif.study` computed; each is displayed through the house
renderer (:func:`ragnb.report.charts.setup`), which wraps it in a ``.ragnb-chart`` element with the
Vega bundle inline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pandas as pd

from ragnb.errors import InputError
from ragnb.report.charts import alt, panels, value_tooltip
from ragnb.studies.whatif.grid import MAX_CHART_ROWS

__all__ = ["alpha_curves_chart", "rank_bump_chart", "slider_params", "what_if_chart"]

#: Text of the what-if table's header; tests find the chart by it.
WHAT_IF_TITLE = "What-if table"


def _inline_sliders(
    frame: pd.DataFrame, *, k: int, alpha: float, max_rows: int
) -> tuple[alt.Parameter, alt.Parameter]:
    """The K and alpha sliders over the grid of ``frame``, a table the chart will inline."""
    if len(frame) > max_rows:
        raise InputError(
            f"{len(frame):,} inline rows exceed the chart limit of {max_rows:,}; coarsen the grid"
        )
    return slider_params(frame["k"], frame["alpha"], k=k, alpha=alpha)


def slider_params(
    ks: Sequence[int], alphas: Sequence[float], *, k: int, alpha: float
) -> tuple[alt.Parameter, alt.Parameter]:
    """The K and alpha parameters, bound to range sliders spanning the grid.

    Parameters
    ----------
    ks : sequence of int
        The K grid (the slider moves by 1 between its smallest and largest value).
    alphas : sequence of float
        The alpha grid (the slider's step is the smallest gap between neighbours).
    k, alpha :
        Initial values.

    Returns
    -------
    (Parameter, Parameter)
        Named ``K`` and ``alpha``.
    """
    ks = sorted({int(v) for v in ks})
    grid = sorted({float(a) for a in alphas})
    gaps = [b - a for a, b in zip(grid, grid[1:], strict=False) if b - a > 1e-9]
    step = round(min(gaps), 6) if gaps else 0.01
    k_param = alt.param(
        name="K",
        value=int(k),
        bind=alt.binding_range(min=ks[0], max=max(ks[-1], ks[0] + 1), step=1, name="K "),
    )
    a_param = alt.param(
        name="alpha",
        value=float(alpha),
        bind=alt.binding_range(
            min=grid[0], max=max(grid[-1], grid[0] + step), step=step, name="alpha "
        ),
    )
    return k_param, a_param


def _with_params(chart: alt.VConcatChart, *params: alt.Parameter) -> alt.VConcatChart:
    """Declare variable parameters at the top level of a compound chart.

    ``add_params`` on a concatenation pushes parameters into its sub-charts and fails on layers
    inside it; top-level variable parameters (slider bindings) are valid Vega-Lite.
    """
    chart.params = cast(Any, [p.param for p in params])
    return chart


def _snap_k(chart: Any) -> Any:
    """Keep the rows of the largest grid K <= the K slider."""
    return (
        chart.transform_filter("datum.k <= K")
        .transform_joinaggregate(k_sel="max(k)")
        .transform_filter("datum.k == datum.k_sel")
    )


def _snap_alpha(chart: Any) -> Any:
    """Keep the rows of the largest grid alpha <= the alpha slider."""
    return (
        chart.transform_filter("datum.alpha <= alpha + 1e-9")
        .transform_joinaggregate(a_sel="max(alpha)")
        .transform_filter("datum.alpha == datum.a_sel")
    )


def _alpha_lines(color: alt.Color, **mark: Any) -> alt.Chart:
    """Each retriever's value against alpha (one panel of a family; data from the layer)."""
    return (
        alt.Chart()
        .mark_line(**mark)
        .encode(
            x=alt.X("alpha:Q", title="alpha", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("value:Q", title=None),
            color=color,
            tooltip=value_tooltip("retriever:N", "k:Q", "alpha:Q"),
        )
    )


def what_if_chart(
    table: pd.DataFrame,
    *,
    k: int,
    alpha: float,
    cell_width: int = 110,
    row_height: int = 24,
    max_rows: int = MAX_CHART_ROWS,
) -> alt.VConcatChart:
    """The measure table at the sliders' (K, alpha), and each family's curve against alpha.

    Parameters
    ----------
    table : DataFrame
        :func:`ragnb.studies.whatif.grid.slider_table`: columns ``retriever``, ``family``, ``order``
        (int, column order), ``k`` (int), ``alpha`` (float), ``has_alpha`` (bool), ``value``
        (float), ``score`` (float, higher is better).
    k, alpha :
        Initial slider values (in the grid).
    cell_width, row_height : int
        Pixels per table column and row.
    max_rows : int, default 5000
        Inline row limit.

    Returns
    -------
    VConcatChart
        A header naming the setting, a text-mark table (one row per retriever, one column per
        measure named at the setting, the best of each column shaded) and line charts of the
        value against alpha at the selected K, with a rule at the selected alpha.

    Raises
    ------
    InputError
        When ``table`` holds more than ``max_rows`` rows.
    """
    k_param, a_param = _inline_sliders(table, k=k, alpha=alpha, max_rows=max_rows)
    fams = list(dict.fromkeys(table.sort_values("order")["family"]))
    rets = list(dict.fromkeys(table["retriever"]))
    label = (
        "datum.has_alpha ? datum.family + '(alpha=' + format(datum.alpha, '.2f') + ')@' + "
        "datum.k : datum.family + '@' + datum.k"
    )
    snapped = _snap_alpha(_snap_k(alt.Chart())).transform_calculate(label=label)
    header = (
        snapped.transform_aggregate(k_sel="max(k_sel)", a_sel="max(a_sel)")
        .transform_calculate(
            text=f"'{WHAT_IF_TITLE}: K = ' + datum.k_sel + ', alpha = ' + "
            "format(datum.a_sel, '.2f')"
        )
        .mark_text(align="left", fontSize=14, fontWeight="bold")
        .encode(text="text:N", x=alt.value(0), y=alt.value(10))
        .properties(width=cell_width * len(fams), height=20)
    )
    cols = alt.X(
        "label:N",
        sort=alt.EncodingSortField("order", op="min"),
        title=None,
        axis=alt.Axis(orient="top", labelAngle=0, labelLimit=cell_width),
    )
    rows = alt.Y("retriever:N", sort=rets, title=None)
    ranked = snapped.transform_window(
        col_rank="rank()", groupby=["family"], sort=[alt.SortField("score", order="descending")]
    )
    cells = ranked.mark_rect(stroke="#ddd").encode(
        x=cols,
        y=rows,
        color=alt.condition(
            "datum.col_rank == 1 && isValid(datum.value)", alt.value("#c7e9c0"), alt.value("white")
        ),
        tooltip=[*value_tooltip("retriever:N", "label:N"), "n_valid:Q"],
    )
    text = snapped.mark_text(baseline="middle").encode(
        x=cols, y=rows, text=alt.Text("value:Q", format=".4f")
    )
    grid_table = alt.layer(cells, text).properties(
        width=cell_width * len(fams), height=row_height * len(rets)
    )
    lines = _alpha_lines(alt.Color("retriever:N", sort=rets))
    rule = (
        alt.Chart()
        .transform_filter("datum.alpha == datum.a_sel")
        .mark_rule(color="#444", strokeDash=[4, 3])
        .encode(x="alpha:Q")
    )
    # Vega-Lite cannot compile a joinaggregate inside a faceted layer: snap before faceting
    layered = alt.layer(lines, rule, data=table).properties(width=170, height=120)
    curves = _snap_k(panels(layered, "family:N", columns=len(fams), sort=fams)).transform_calculate(
        a_ok="datum.alpha <= alpha + 1e-9 ? datum.alpha : -1"
    )
    curves = curves.transform_joinaggregate(a_sel="max(a_ok)")
    return _with_params(
        alt.vconcat(header, grid_table, curves, data=table, spacing=12), k_param, a_param
    )


def rank_bump_chart(
    ranks: pd.DataFrame,
    *,
    k: int,
    alpha: float,
    max_rows: int = MAX_CHART_ROWS,
) -> alt.VConcatChart:
    """How the retrievers' ranks move: against alpha at the selected K, and against K at the
    selected alpha, one panel per family (bump charts, rank 1 on top).

    Parameters
    ----------
    ranks : DataFrame
        :func:`ragnb.studies.whatif.grid.rank_table` of one dataset: columns ``family``, ``k``,
        ``alpha``, ``retriever``, ``value``, ``rank`` (int, 1 = best).
    k, alpha :
        Initial slider values.
    max_rows : int, default 5000

    Raises
    ------
    InputError
        When ``ranks`` holds more than ``max_rows`` rows.
    """
    k_param, a_param = _inline_sliders(ranks, k=k, alpha=alpha, max_rows=max_rows)
    fams = list(dict.fromkeys(ranks["family"]))
    rets = list(dict.fromkeys(ranks["retriever"]))
    n = max(1, len(rets))
    y = alt.Y(
        "rank:Q",
        scale=alt.Scale(domain=[n + 0.3, 0.7]),
        axis=alt.Axis(values=list(range(1, n + 1)), format="d"),
        title="rank",
    )
    color = alt.Color("retriever:N", sort=rets)
    tooltip = value_tooltip("retriever:N", "family:N", "k:Q", "alpha:Q", "rank:Q")

    def bumps(x: alt.X, **mark: Any) -> alt.FacetChart:
        """The ranks against ``x``, one panel per family."""
        return (
            alt.Chart(ranks)
            .mark_line(point=True, strokeWidth=2, **mark)
            .encode(x=x, y=y, color=color, tooltip=tooltip)
            .properties(width=200, height=35 * n)
            .facet(facet=alt.Facet("family:N", sort=fams, title=None), columns=len(fams))
        )

    by_alpha = _snap_k(
        bumps(alt.X("alpha:Q", title="alpha (at the selected K)"), interpolate="step-after")
    )
    by_k = _snap_alpha(
        bumps(alt.X("k:Q", title="K (at the selected alpha)", scale=alt.Scale(type="log", base=2)))
    )
    return _with_params(alt.vconcat(by_alpha, by_k, spacing=16), k_param, a_param)


def alpha_curves_chart(
    frame: pd.DataFrame, *, alpha: float, width: int = 170, height: int = 120
) -> alt.FacetChart:
    """Each family's value against alpha at one K, one line per retriever, a rule at ``alpha``.

    Static (no sliders): the widgets redraw it when K or alpha moves.

    Parameters
    ----------
    frame : DataFrame
        Grid rows of one dataset and one K (:attr:`ragnb.studies.whatif.grid.WhatIfFrames.grid`):
        columns ``retriever``, ``family``, ``k``, ``alpha``, ``value``.
    alpha : float
        The selected alpha.
    """
    fams = list(dict.fromkeys(frame["family"]))
    lines = _alpha_lines(alt.Color("retriever:N"), point=alt.OverlayMarkDef(size=12))
    rule = alt.Chart().mark_rule(color="#444", strokeDash=[4, 3]).encode(x=alt.datum(float(alpha)))
    layered = alt.layer(lines, rule, data=frame).properties(width=width, height=height)
    return panels(layered, "family:N", columns=min(len(fams), 6), sort=fams)
