"""Heatmaps of the correlation study, like the Primer paper's figures: a tidy frame in, an altair
chart out, no computation. Shown after :func:`ragnb.report.charts.setup` they render offline in the
house ``.ragnb-chart`` wrapper.

References
----------
.. [1] Schwartz, Vasilyev and Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer: Figures 2-4 (score distributions), 6 (correlations by K/Np), 7-18
   (differences).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.report.charts import alt, heatmap, interval_tooltip, line_chart, panels, value_tooltip

__all__ = [
    "correlation_heatmap",
    "difference_heatmap",
    "grade_distribution_heatmap",
    "ranked_measures_chart",
]


def _ratio_order(values: pd.Series) -> list[str]:
    return sorted({str(v) for v in values}, key=float)


def _segment_heatmap(
    frame: pd.DataFrame,
    panel: str,
    fill: alt.Color,
    text: str | alt.Text,
    tooltip: list[Any],
    size: int,
    text_color: Any = alt.Undefined,
) -> alt.FacetChart:
    """Cells filled by ``fill`` per K/Np segment (columns) and embedder (rows), labelled with
    ``text``, one panel per value of ``panel``."""
    order = _ratio_order(frame["segment"])
    return (
        heatmap(
            frame,
            x=alt.X("segment:O", title="K/Np", sort=order),
            y=alt.Y("E:N", title="embedder"),
            color=fill,
            text=text,
            tooltip=[f"{panel}:N", "E:N", "segment:O", *tooltip],
            text_color=text_color,
            fontSize=9,
        )
        .properties(width=size * max(1, len(order)), height=40)
        .facet(row=alt.Row(f"{panel}:N", title=None))
    )


def grade_distribution_heatmap(frame: pd.DataFrame, *, size: int = 26) -> alt.Chart:
    """Share of each grade (rows, 1-5) per K/Np segment (columns), one panel per embedder.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.correlation.grade_distribution`: ``E``, ``ratio``, ``grade``,
        ``share``, ``count``, ``n``.
    """
    order = _ratio_order(frame["ratio"])
    return (
        alt.Chart(frame)
        .mark_rect()
        .encode(
            x=alt.X("ratio:O", title="K/Np", sort=order),
            y=alt.Y("grade:O", title="response score", sort="descending"),
            color=alt.Color("share:Q", title="share", scale=alt.Scale(scheme="blues")),
            row=alt.Row("E:N", title="embedder"),
            tooltip=[
                *value_tooltip("E:N", "ratio:O", "grade:O", value="share", fmt=".3f"),
                "n:Q",
            ],
        )
        .properties(width=size * max(1, len(order)), height=5 * 16)
    )


def correlation_heatmap(frame: pd.DataFrame, *, size: int = 34) -> alt.FacetChart:
    """Correlation with the grade per K/Np segment (columns) and embedder (rows), one panel per
    measure.

    Parameters
    ----------
    frame : DataFrame
        Rows of :func:`ragnb.studies.correlation.correlation_table` for one method and
        ``kind="ratio"``: ``E``, ``segment``, ``measure``, ``corr``, ``alpha``, ``n``.
    """
    fill = alt.Color("corr:Q", title="correlation", scale=alt.Scale(scheme="viridis"))
    tooltip = [alt.Tooltip("corr:Q", format=".3f"), alt.Tooltip("alpha:Q", format=".3f"), "n:Q"]
    text = alt.Text("corr:Q", format=".2f")
    return _segment_heatmap(
        frame, "measure", fill, text, tooltip, size, text_color=alt.value("white")
    )


def difference_heatmap(frame: pd.DataFrame, *, size: int = 34) -> alt.FacetChart:
    """Difference of correlations A - B per K/Np segment and embedder, one panel per pair; a
    ``*`` marks a difference whose bootstrap interval excludes 0.

    Parameters
    ----------
    frame : DataFrame
        Rows of :func:`ragnb.studies.correlation.difference_table` with ``kind="ratio"``: ``E``,
        ``segment``, ``pair``, ``diff``, ``ci_low``, ``ci_high``, ``significant``, ``label``
        (the cell text, e.g. ``"0.03*"``).
    """
    bound = float(frame["diff"].abs().max()) if len(frame) else 1.0
    fill = alt.Color(
        "diff:Q",
        title="difference",
        scale=alt.Scale(scheme="redblue", domain=[-bound or -1, bound or 1]),
    )
    tooltip = [*interval_tooltip("diff"), "significant:N", "n:Q"]
    return _segment_heatmap(frame, "pair", fill, "label:N", tooltip, size)


def ranked_measures_chart(
    frame: pd.DataFrame, *, width: int = 200, height: int = 140
) -> alt.FacetChart:
    """Mean measure of the ranked samples against K/Np, one line per embedder, one panel per
    measure.

    Parameters
    ----------
    frame : DataFrame
        Long form of :meth:`CorrelationStudy.ranked_measures`: ``E``, ``ratio`` (float),
        ``measure``, ``value``.
    """
    lines = line_chart(
        frame,
        x=alt.X("ratio:Q", title="K/Np"),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("E:N", title="embedder"),
        tooltip=value_tooltip("E:N", "measure:N", "ratio:Q", fmt=".3f"),
        width=width,
        height=height,
    )
    return panels(lines, "measure:N", columns=4)
