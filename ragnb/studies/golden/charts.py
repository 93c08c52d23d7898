"""Charts of notebook 02: grades, pool overlap, Judged@K, refinement, calibration, simulation.

A tidy frame in, an altair chart out; call :func:`ragnb.report.charts.setup` first in a report.
"""

from __future__ import annotations

import pandas as pd

from ragnb.report.charts import alt, heatmap, interval_tooltip, line_chart, panels, value_tooltip

__all__ = [
    "bias_slopes_chart",
    "confusion_matrix_chart",
    "grade_distribution_chart",
    "judged_at_k_chart",
    "pool_overlap_chart",
    "pr_curve_chart",
    "refinement_convergence_chart",
    "simulation_chart",
    "system_agreement_chart",
]


def grade_distribution_chart(
    frame: pd.DataFrame, *, width: int = 320, height: int = 180
) -> alt.Chart:
    """Share of each grade in the candidates, the pruned pool and the refined top, side by side.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.golden.grade_distribution`: columns ``set`` (str), ``grade`` (str, a
        grade or ``"invalid"``), ``count`` (int), ``share`` (float in [0, 1]).
    """
    sets = list(dict.fromkeys(frame["set"]))
    grades = list(dict.fromkeys(frame["grade"]))
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("grade:N", title="grade", sort=grades),
            xOffset=alt.XOffset("set:N", sort=sets),
            y=alt.Y("share:Q", title="share of the set", axis=alt.Axis(format="%")),
            color=alt.Color("set:N", title=None, sort=sets),
            tooltip=value_tooltip("set:N", "grade:N", "count:Q", value="share", fmt=".1%"),
        )
        .properties(width=width, height=height)
    )


def pool_overlap_chart(frame: pd.DataFrame, *, size: int = 60) -> alt.LayerChart:
    """The pool overlap matrix: the share of row system's candidates the column system also found.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.golden.pool_overlap`: columns ``system_a``, ``system_b`` (str),
        ``common``, ``n_a`` (int), ``share`` (float in [0, 1]).
    size : int, default 60
        Pixels per cell.
    """
    systems = list(dict.fromkeys(frame["system_a"]))
    n = max(1, len(systems))
    cells = heatmap(
        frame,
        x=alt.X("system_b:N", title="also found by", sort=systems),
        y=alt.Y("system_a:N", title="candidates of", sort=systems),
        color=alt.Color("share:Q", scale=alt.Scale(domain=[0, 1], scheme="blues"), title="share"),
        text=alt.Text("share:Q", format=".0%"),
        tooltip=value_tooltip(
            "system_a:N", "system_b:N", "common:Q", "n_a:Q", value="share", fmt=".1%"
        ),
        text_color=alt.condition(alt.datum.share > 0.6, alt.value("white"), alt.value("black")),
        baseline="middle",
    )
    return cells.properties(width=size * n, height=size * n)


def judged_at_k_chart(frame: pd.DataFrame, *, width: int = 320, height: int = 180) -> alt.Chart:
    """Judged@K against K, one line per system (pool systems solid, new systems dashed).

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.studies.golden.GoldenSet.judged_at_k`: columns ``system``, ``role`` ("pool" or
        "new"), ``k`` (int), ``judged`` (float in [0, 1]).
    """
    return line_chart(
        frame,
        x=alt.X("k:Q", title="cutoff K"),
        y=alt.Y("judged:Q", title="Judged@K", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("system:N"),
        strokeDash=alt.StrokeDash("role:N", title="role", sort=["pool", "new"]),
        tooltip=value_tooltip("system:N", "role:N", "k:Q", value="judged", fmt=".3f"),
        width=width,
        height=height,
    )


def refinement_convergence_chart(
    frame: pd.DataFrame, *, width: int = 220, height: int = 150
) -> alt.FacetChart:
    """S6 convergence: some queries' traces (grey) and the mean over queries (red) per call.

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.studies.golden.GoldenSet.convergence`: columns ``query_id`` (``"(mean)"`` for
        the mean), ``iteration`` (int), ``metric`` (str: ``n_locks``, ``mean_sigma``,
        ``stable_for``), ``value`` (float).
    """
    base = alt.Chart().encode(
        x=alt.X("iteration:Q", title="judge calls"), y=alt.Y("value:Q", title=None)
    )
    traces = (
        base.transform_filter(alt.datum.query_id != "(mean)")
        .mark_line(opacity=0.3, color="#9e9e9e", strokeWidth=1)
        .encode(detail="query_id:N")
    )
    mean = (
        base.transform_filter(alt.datum.query_id == "(mean)")
        .mark_line(color="#d62728", strokeWidth=2)
        .encode(tooltip=value_tooltip("iteration:Q", fmt=".3f"))
    )
    metrics = list(dict.fromkeys(frame["metric"]))
    layered = alt.layer(traces, mean, data=frame).properties(width=width, height=height)
    return panels(layered, "metric:N", columns=3, sort=metrics)


def confusion_matrix_chart(frame: pd.DataFrame, *, size: int = 44) -> alt.LayerChart:
    """Human labels (rows) against judge grades (columns): counts as a heat map.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.judge.agreement.confusion_matrix`: columns ``human``, ``judge``
        (int), ``count`` (int), ``share`` (float).
    """
    labels = sorted(set(frame["human"]) | set(frame["judge"]))
    n = max(1, len(labels))
    top = max(1, int(frame["count"].max())) if len(frame) else 1
    cells = heatmap(
        frame,
        x=alt.X("judge:O", title="judge grade", sort=labels),
        y=alt.Y("human:O", title="human label", sort=labels),
        color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="pairs"),
        text="count:Q",
        tooltip=value_tooltip("human:O", "judge:O", "count:Q", value="share", fmt=".1%"),
        text_color=alt.condition(alt.datum.count > top / 2, alt.value("white"), alt.value("black")),
        baseline="middle",
    )
    return cells.properties(width=size * n, height=size * n)


def system_agreement_chart(
    frame: pd.DataFrame, *, title: str | None = None, size: int = 280
) -> alt.LayerChart:
    """Each system's measure under human labels (x) and judge grades (y), with the diagonal.

    Vespa's scatter plot: systems on the diagonal's order are ranked alike by both labellings.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.judge.calibration.system_agreement`: columns ``system``, ``measure``
        (str), ``human``, ``judge`` (float).
    title : str, optional
        E.g. the Kendall tau.
    """
    values = pd.concat([frame["human"], frame["judge"]]).astype(float)
    lo = float(values.min()) if len(values) else 0.0
    hi = float(values.max()) if len(values) else 1.0
    pad = max(0.02, (hi - lo) * 0.1)
    domain = [max(0.0, lo - pad), min(1.0, hi + pad)]
    scale = alt.Scale(domain=domain, zero=False)
    diagonal = (
        alt.Chart(pd.DataFrame({"x": domain, "y": domain}))
        .mark_line(strokeDash=[4, 3], color="#888")
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale))
    )
    measure = str(frame["measure"].iloc[0]) if len(frame) else "measure"
    base = alt.Chart(frame).encode(
        x=alt.X("human:Q", title=f"{measure}, human labels", scale=scale),
        y=alt.Y("judge:Q", title=f"{measure}, judge grades", scale=scale),
        tooltip=[
            "system:N",
            alt.Tooltip("human:Q", format=".4f"),
            alt.Tooltip("judge:Q", format=".4f"),
        ],
    )
    points = base.mark_point(filled=True, size=70).encode(color=alt.Color("system:N", legend=None))
    labels = base.mark_text(align="left", dx=7, dy=-5).encode(text="system:N")
    return alt.LayerChart(
        layer=[diagonal, points, labels], width=size, height=size, title=title or alt.Undefined
    )


def pr_curve_chart(frame: pd.DataFrame, *, width: int = 300, height: int = 220) -> alt.Chart:
    """Interpolated precision against recall, one line per system (SPEAR's PR curves).

    Parameters
    ----------
    frame : DataFrame
        :attr:`ragnb.studies.golden.spear.SpearResult.interpolated`: columns ``system``,
        ``recall``, ``precision`` (floats in [0, 1]), ``n_queries``.
    """
    return (
        alt.Chart(frame)
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X(
                "recall:Q", title="recall (relative to the pool)", scale=alt.Scale(domain=[0, 1])
            ),
            y=alt.Y("precision:Q", title="interpolated precision", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("system:N"),
            tooltip=value_tooltip("system:N", "recall:Q", value="precision", fmt=".3f"),
        )
        .properties(width=width, height=height)
    )


def simulation_chart(
    frame: pd.DataFrame, *, metric: str = "overlap", width: int = 200, height: int = 160
) -> alt.FacetChart:
    """Refinement vs one-shot (and multi-pass) against the token budget, per noise level.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.golden.simulation.summarise`: columns ``noise_sd``, ``budget`` (passes
        of the sliding window), ``method``, ``metric``, ``mean``, ``low``, ``high``.
    metric : str, default "overlap"
        The row of ``metric`` drawn.
    """
    data = frame[frame["metric"] == metric]
    budgets = sorted(float(b) for b in data["budget"].unique())
    base = alt.Chart().encode(
        x=alt.X(
            "budget:Q",
            title="token budget (sliding-window passes)",
            scale=alt.Scale(type="log", base=2),
            axis=alt.Axis(values=budgets, format="g"),
        ),
        color=alt.Color("method:N"),
    )
    y_scale = alt.Scale(zero=False)
    band = base.mark_area(opacity=0.15).encode(
        y=alt.Y("low:Q", title=metric, scale=y_scale), y2="high:Q"
    )
    line = base.mark_line(point=True).encode(
        y=alt.Y("mean:Q", title=metric, scale=y_scale),
        tooltip=[
            "method:N",
            "noise_sd:Q",
            "budget:Q",
            *interval_tooltip("mean", "low", "high"),
        ],
    )
    return (
        alt.layer(band, line, data=data)
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("noise_sd:Q", title="judge noise sd"), columns=4)
    )


def bias_slopes_chart(frame: pd.DataFrame, *, width: int = 320) -> alt.LayerChart:
    """The judge audit's slopes with their intervals, one row per target and feature.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.judge.bias_audit`: columns ``target``, ``feature``, ``unit`` (str),
        ``slope``, ``low``, ``high`` (float, grade units per unit of the feature).
    """
    data = frame.dropna(subset=["slope"]).assign(row=lambda f: f["target"] + " vs " + f["feature"])
    rows = list(dict.fromkeys(data["row"]))
    y = alt.Y("row:N", title=None, sort=rows)
    tooltip = ["row:N", "unit:N", *interval_tooltip("slope", "low", "high", fmt="+.3f")]
    bars = alt.Chart(data).mark_rule().encode(y=y, x="low:Q", x2="high:Q", tooltip=tooltip)
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(y=y, x=alt.X("slope:Q", title="slope (grades per unit)"), tooltip=tooltip)
    )
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(strokeDash=[4, 4]).encode(x="x:Q")
    return (bars + points + zero).properties(width=width, height=28 * max(1, len(rows)))
