"""Charts of notebook 01: a measure against K, per-query distributions, PROC against K.

A tidy frame in, an altair chart out; call :func:`ragnb.report.charts.setup` first in a report.
"""

from __future__ import annotations

import pandas as pd

from ragnb.report.charts import alt, line_chart, panels, value_tooltip

__all__ = [
    "measure_vs_k",
    "per_query_distribution",
    "proc_vs_k",
]


def measure_vs_k(frame: pd.DataFrame, *, width: int = 220, height: int = 160) -> alt.FacetChart:
    """Each measure against the cutoff K, one line per retriever, one panel per measure family.

    Parameters
    ----------
    frame : DataFrame
        Columns ``retriever`` (str), ``family`` (str, e.g. ``"nDCG"``), ``k`` (int),
        ``value`` (float), ``measure`` (str, full name, for the tooltip).
    """
    base = alt.Chart(frame).encode(
        x=alt.X("k:Q", title="cutoff K", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=True)),
        color=alt.Color("retriever:N", title="retriever"),
        tooltip=value_tooltip("retriever:N", "measure:N"),
    )
    layered = alt.layer(base.mark_line(), base.mark_point(size=30), data=frame)
    return panels(layered.properties(width=width, height=height), "family:N", columns=3)


def per_query_distribution(
    frame: pd.DataFrame, *, width: int = 220, height: int = 160
) -> alt.FacetChart:
    """Per-query values of each measure as box plots, one box per retriever.

    Parameters
    ----------
    frame : DataFrame
        Columns ``retriever``, ``measure``, ``query_id``, ``value`` (one row per query).
    """
    boxes = (
        alt.Chart(frame)
        .mark_boxplot(extent="min-max")
        .encode(
            x=alt.X("retriever:N", title=None),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("retriever:N", legend=None),
        )
        .properties(width=width, height=height)
    )
    return panels(boxes, "measure:N", columns=3)


def proc_vs_k(frame: pd.DataFrame, *, width: int = 220, height: int = 160) -> alt.FacetChart:
    """Actual value (solid) and its pool ceiling PROC (dashed) against K, per retriever.

    Parameters
    ----------
    frame : DataFrame
        Columns ``retriever``, ``family``, ``cutoff`` (int), ``actual``, ``proc`` (floats), as in
        :attr:`ragnb.studies.retrieval.study.Comparison.proc`.
    """
    long = frame.melt(
        id_vars=["retriever", "family", "cutoff"],
        value_vars=["actual", "proc"],
        var_name="kind",
        value_name="value",
    )
    return line_chart(
        long,
        x=alt.X("cutoff:Q", title="cutoff K", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("retriever:N"),
        strokeDash=alt.StrokeDash("kind:N", title="value", sort=["actual", "proc"]),
        tooltip=value_tooltip("retriever:N", "family:N", "cutoff:Q", "kind:N"),
        width=width,
        height=height,
    ).facet(facet=alt.Facet("family:N", title=None), columns=4)
