"""Charts of a CLQ sweep: a tidy frame in, an altair chart out, no computation here.

The frames come from :class:`ragnb.studies.clq.sweep.SweepResult` and the helpers of
:mod:`ragnb.studies.clq.pareto` (:func:`~ragnb.studies.clq.pareto.latency_by_k`,
:func:`~ragnb.studies.clq.pareto.quality_by_dim`). In a report, call
:func:`ragnb.report.charts.setup` first: its renderer wraps every chart in a ``.ragnb-chart``
element and draws it offline.
"""

from __future__ import annotations

import pandas as pd

from ragnb.report.charts import alt, line_chart, value_tooltip

__all__ = [
    "frontier_chart",
    "latency_vs_k_chart",
    "proc_vs_actual_chart",
    "quality_vs_dim_chart",
    "recall_vs_ef_chart",
]

_TOOLTIP = [
    alt.Tooltip("label:N", title="configuration"),
    alt.Tooltip("quality:Q", format=".3f"),
    alt.Tooltip("latency_p50_ms:Q", title="p50 ms", format=".2f"),
    alt.Tooltip("latency_p95_ms:Q", title="p95 ms", format=".2f"),
    alt.Tooltip("cost_usd:Q", title="$ / 1k queries", format=".4f"),
    alt.Tooltip("pct_proc:Q", title="%PROC", format=".1%"),
]


def frontier_chart(
    frame: pd.DataFrame,
    *,
    quality_title: str = "quality",
    latency: str = "latency_p95_ms",
    width: int = 520,
    height: int = 320,
) -> alt.Chart:
    """Quality against latency, one point per configuration; Pareto points filled and larger
    (their cost shown by colour), the rest hollow; tooltips name the configuration; pan/zoom.

    Parameters
    ----------
    frame : DataFrame
        The results table with a boolean ``pareto`` column
        (:func:`ragnb.studies.clq.pareto.pareto_front`) and ``label``, ``quality``,
        ``latency_p50_ms``, ``latency_p95_ms``, ``cost_usd``, ``pct_proc``, ``mode``, ``reranker``.
    quality_title : str
        Axis title naming the headline measure.
    latency : str
        Latency column (milliseconds) of the x axis.
    """
    cols = [
        "label",
        "quality",
        "latency_p50_ms",
        "latency_p95_ms",
        "cost_usd",
        "pct_proc",
        "mode",
        "reranker",
        "pareto",
    ]
    data = frame[[c for c in dict.fromkeys([*cols, latency]) if c in frame.columns]]
    return (
        alt.Chart(data)
        .mark_point(filled=True)
        .encode(
            x=alt.X(f"{latency}:Q", title=f"{latency} (ms)", scale=alt.Scale(type="log")),
            y=alt.Y("quality:Q", title=quality_title, scale=alt.Scale(zero=False)),
            color=alt.Color(
                "cost_usd:Q", title="$ / 1k queries", scale=alt.Scale(scheme="viridis")
            ),
            shape=alt.Shape("mode:N"),
            size=alt.condition("datum.pareto", alt.value(140), alt.value(30)),
            opacity=alt.condition("datum.pareto", alt.value(1.0), alt.value(0.35)),
            tooltip=[*_TOOLTIP, alt.Tooltip("pareto:N", title="on the frontier")],
        )
        .properties(width=width, height=height, title="Configurations: Pareto points large")
        .interactive()
    )


def latency_vs_k_chart(frame: pd.DataFrame, *, width: int = 260, height: int = 200) -> alt.Chart:
    """Latency (p50 and p95, ms) against pool size K, one line per reranker.

    Parameters
    ----------
    frame : DataFrame
        ``reranker``, ``pool_k``, ``stat`` (``"p50"``/``"p95"``), ``latency_ms``
        (:func:`ragnb.studies.clq.pareto.latency_by_k`).
    """
    return line_chart(
        frame,
        x=alt.X("pool_k:Q", title="pool size K"),
        y=alt.Y("latency_ms:Q", title="latency (ms, median over configurations)"),
        color=alt.Color("reranker:N"),
        strokeDash=alt.StrokeDash("stat:N"),
        tooltip=value_tooltip("reranker", "pool_k", "stat", value="latency_ms", fmt=".2f"),
        width=width,
        height=height,
    )


def quality_vs_dim_chart(
    frame: pd.DataFrame, *, quality_title: str = "quality", width: int = 260, height: int = 200
) -> alt.Chart:
    """Best quality against embedding dimension, one line per embedder (dense modes).

    Parameters
    ----------
    frame : DataFrame
        ``embedder``, ``vector_dim``, ``mode``, ``quality``, ``label``
        (:func:`ragnb.studies.clq.pareto.quality_by_dim`).
    """
    tooltip = [
        "embedder",
        "vector_dim",
        "mode",
        alt.Tooltip("quality:Q", format=".3f"),
        alt.Tooltip("label:N", title="best configuration"),
    ]
    return line_chart(
        frame,
        x=alt.X("vector_dim:Q", title="dimension"),
        y=alt.Y("quality:Q", title=f"best {quality_title}", scale=alt.Scale(zero=False)),
        color=alt.Color("embedder:N"),
        strokeDash=alt.StrokeDash("mode:N"),
        tooltip=tooltip,
        width=width,
        height=height,
    )


def proc_vs_actual_chart(
    frame: pd.DataFrame, *, quality_title: str = "quality", size: int = 260
) -> alt.LayerChart:
    """Actual quality against PROC (the pool's ceiling), one colour per pool size; points on
    the diagonal realise their whole ceiling (Dallaire section 5.2).

    Parameters
    ----------
    frame : DataFrame
        The results table: ``proc``, ``quality``, ``pool_k``, ``label``, ``pct_proc``.
    """
    data = frame[["label", "proc", "quality", "pool_k", "pct_proc", "reranker"]].assign(
        pool_k=frame["pool_k"].astype(str)
    )
    points = (
        alt.Chart(data)
        .mark_circle(size=50, opacity=0.7)
        .encode(
            x=alt.X(
                "proc:Q",
                title=f"PROC of {quality_title} (pool ceiling)",
                scale=alt.Scale(domain=[0, 1]),
            ),
            y=alt.Y("quality:Q", title=f"actual {quality_title}", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("pool_k:N", title="pool K"),
            shape=alt.Shape("reranker:N"),
            tooltip=[
                "label",
                alt.Tooltip("proc:Q", format=".3f"),
                alt.Tooltip("quality:Q", format=".3f"),
                alt.Tooltip("pct_proc:Q", title="%PROC", format=".1%"),
            ],
        )
    )
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(color="grey", strokeDash=[4, 4])
        .encode(x="x:Q", y="y:Q")
    )
    return (diagonal + points).properties(width=size, height=size)


def recall_vs_ef_chart(frame: pd.DataFrame, *, width: int = 300, height: int = 200) -> alt.Chart:
    """Recall of the exact top K against efSearch, per index and K (log-scaled x).

    Parameters
    ----------
    frame : DataFrame
        ``index_label``, ``chunker``, ``k``, ``ef_search``, ``recall``, ``latency_ms_p50``
        (:attr:`ragnb.studies.clq.sweep.SweepResult.recall`).
    """
    data = frame.assign(
        series=frame["index_label"] + " " + frame["chunker"], k=frame["k"].astype(str)
    )
    return line_chart(
        data,
        x=alt.X("ef_search:Q", title="efSearch", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("recall:Q", title="recall of the exact top K", scale=alt.Scale(zero=False)),
        color=alt.Color("series:N", title="index"),
        strokeDash=alt.StrokeDash("k:N", title="K"),
        tooltip=[
            "series",
            "k",
            "ef_search",
            alt.Tooltip("recall:Q", format=".4f"),
            alt.Tooltip("latency_ms_p50:Q", title="p50 ms", format=".3f"),
        ],
        width=width,
        height=height,
    )
