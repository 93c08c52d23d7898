"""Charts of notebook 07: evidence recall against searches, searches to the first relevant
document, redundancy, the reranker's gain, the per-turn curves.

A tidy frame in (the tables of :class:`ragnb.studies.agentic.study.AgenticRetrieval`), an altair
chart out; call :func:`ragnb.report.charts.setup` first in a report.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragnb.report.charts import alt, interval_tooltip, line_chart, value_tooltip

__all__ = [
    "calls_to_first_chart",
    "recall_by_calls_chart",
    "redundancy_chart",
    "rerank_gain_chart",
    "turn_curves_chart",
]


def _whole(values: pd.Series, *, zero: bool = False) -> alt.Axis:
    """An axis of whole numbers: a tick at each (up to 12 of them), none between."""
    top = int(values.max()) if len(values) else 1
    low = 0 if zero else max(1, int(values.min()) if len(values) else 1)
    if top - low > 12:
        return alt.Axis(format="d", tickMinStep=1)
    return alt.Axis(values=list(range(low, top + 1)), format="d")


def _curve(frame: pd.DataFrame, color: str, title: str, width: int, height: int) -> Any:
    """A mean over searches with its interval as a band, one line per value of ``color``."""
    data = frame.assign(**{color: frame[color].astype(str)})
    x = alt.X("search_call:Q", title="searches made", axis=_whole(frame["search_call"]))
    band = (
        alt.Chart(data)
        .mark_area(opacity=0.15)
        .encode(x=x, y="ci_low:Q", y2="ci_high:Q", color=alt.Color(f"{color}:N", title=title))
    )
    lines = line_chart(
        data,
        x=x,
        y=alt.Y("value:Q", title="evidence recall", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color(f"{color}:N", title=title),
        tooltip=[f"{color}:N", "search_call:Q", *interval_tooltip("value"), "n_queries:Q"],
        width=width,
        height=height,
    )
    return alt.layer(band, lines).properties(width=width, height=height)


def recall_by_calls_chart(frame: pd.DataFrame, *, width: int = 420, height: int = 240) -> Any:
    """Evidence recall after c searches, one line per system, its bootstrap interval as a band.

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.studies.agentic.study.AgenticRetrieval.curves`: ``system``,
        ``search_call`` (int), ``value``, ``ci_low``, ``ci_high`` (float in [0, 1]),
        ``n_queries``.
    """
    return _curve(frame, "system", "system", width, height)


def turn_curves_chart(
    frame: pd.DataFrame, *, width: int = 420, height: int = 240
) -> alt.LayerChart:
    """Evidence recall after c searches, one line per conversation turn.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.agentic.study.turn_curves`: ``turn`` (int), ``search_call``,
        ``value``, ``ci_low``, ``ci_high``, ``n_queries``.
    """
    return _curve(frame, "turn", "turn", width, height)


def calls_to_first_chart(frame: pd.DataFrame, *, width: int = 260, height: int = 180) -> Any:
    """Questions by the search that first returned a relevant document, ``never`` included,
    one bar group per system.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.agentic.study.calls_to_first`: ``system``, ``calls`` (str),
        ``questions`` (int), ``share`` (float).
    """
    order = list(dict.fromkeys(frame["calls"]))
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("calls:N", title="searches to the first relevant document", sort=order),
            y=alt.Y("questions:Q", title="questions", axis=_whole(frame["questions"], zero=True)),
            color=alt.Color("calls:N", sort=order, legend=None),
            tooltip=value_tooltip("system:N", "calls:N", "questions:Q", value="share", fmt=".0%"),
        )
        .properties(width=width, height=height)
        .facet(column=alt.Column("system:N", title=None, sort=list(dict.fromkeys(frame["system"]))))
    )


def redundancy_chart(frame: pd.DataFrame, *, width: int = 420, height: int = 220) -> alt.Chart:
    """Share of each search's documents an earlier search had already returned, against the
    search's place, one line per system.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.agentic.study.redundancy_by_call`: ``system``, ``search_call``,
        ``redundancy`` (float in [0, 1]), ``new_relevant``, ``searches``.
    """
    return line_chart(
        frame,
        x=alt.X("search_call:Q", title="search", axis=_whole(frame["search_call"])),
        y=alt.Y("redundancy:Q", title="documents already returned", axis=alt.Axis(format="%")),
        color=alt.Color("system:N"),
        tooltip=value_tooltip(
            "system:N", "search_call:Q", "searches:Q", "new_relevant:Q", value="redundancy"
        ),
        width=width,
        height=height,
    )


def rerank_gain_chart(frame: pd.DataFrame, *, size: int = 260) -> Any:
    """nDCG of each reranking's output against its input: above the diagonal the reranker
    helped.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.agentic.study.rerank_calls`: ``system``, ``query_id``,
        ``search_call``, ``query``, ``input_nDCG``, ``output_nDCG``, ``gain``.
    """
    unit = alt.Scale(domain=[0, 1])
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]}))
        .mark_line(strokeDash=[4, 3], color="#888")
        .encode(x="x:Q", y="y:Q")
    )
    points = (
        alt.Chart(frame)
        .mark_circle(size=60, opacity=0.7)
        .encode(
            x=alt.X("input_nDCG:Q", title="nDCG of the search (reranker's input)", scale=unit),
            y=alt.Y("output_nDCG:Q", title="nDCG after reranking", scale=unit),
            color=alt.Color("system:N"),
            tooltip=value_tooltip(
                "system:N", "query_id:N", "search_call:Q", "query:N", value="gain", fmt="+.4f"
            ),
        )
    )
    return alt.layer(diagonal, points).properties(width=size, height=size)
