"""Charts: a tidy DataFrame in, an altair chart out; and offline rendering for reports.

Every builder takes the frame it draws (no computation here beyond reshaping) so the data behind
a chart is always at hand, and returns an ``altair.Chart``.

Reports must render with the network off, so :func:`setup` switches altair to the ``ragnb``
renderer: each chart becomes a ``text/html`` output that calls ``vegaEmbed`` on its spec (data
inline), and :func:`setup` itself displays, once per notebook, a script holding the Vega,
Vega-Lite and vega-embed libraries bundled by ``vl-convert`` (no CDN). The Vega-Lite JSON
mimetype is included beside the HTML so JupyterLab still draws charts natively.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

import altair as alt
import pandas as pd

__all__ = [
    "RENDERER",
    "ablation_heatmap",
    "comparison_chart",
    "confusion_matrix_chart",
    "grade_distribution_chart",
    "javascript_bundle",
    "judged_at_k_chart",
    "measure_vs_k",
    "noise_curves",
    "noise_impact_chart",
    "per_query_distribution",
    "pool_overlap_chart",
    "pr_curve_chart",
    "proc_vs_k",
    "refinement_convergence_chart",
    "setup",
    "simulation_chart",
    "spec_to_html",
    "system_agreement_chart",
]

RENDERER = "ragnb"


@cache
def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert), matching altair's Vega-Lite."""
    import vl_convert as vlc

    major_minor = ".".join(alt.VEGALITE_VERSION.split(".")[:2])
    return str(vlc.javascript_bundle(vl_version=major_minor))  # type: ignore[call-arg]


def spec_to_html(spec: dict[str, Any]) -> str:
    """HTML that draws ``spec`` with the page's ``vegaEmbed`` once the page has loaded.

    Parameters
    ----------
    spec : dict
        A Vega-Lite specification (data inline).

    Returns
    -------
    str
        A ``<div>`` and a ``<script>``; on failure the chart's div shows the error.
    """
    blob = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    div = "ragnb-chart-" + hashlib.sha256(blob.encode()).hexdigest()[:16]
    # "</" must not end the script element early when the data holds such text
    blob = blob.replace("</", "<\\/")
    return f"""<div id="{div}" class="ragnb-chart"></div>
<script type="text/javascript">
(function (spec) {{
  var el = document.getElementById("{div}");
  function draw() {{
    if (!window.vegaEmbed) {{
      el.innerHTML = "<pre>chart library missing: run ragnb.charts.setup() first</pre>";
      return;
    }}
    window.vegaEmbed(el, spec, {{"mode": "vega-lite", "actions": false, "renderer": "svg"}})
      .catch(function (err) {{ el.innerHTML = "<pre>chart error: " + err + "</pre>"; }});
  }}
  if (document.readyState === "complete") {{ draw(); }}
  else {{ window.addEventListener("load", draw); }}
}})({blob});
</script>"""


def _renderer(spec: dict[str, Any], **_: Any) -> dict[str, Any]:
    mime = f"application/vnd.vegalite.v{alt.VEGALITE_VERSION.split('.')[0]}+json"
    return {
        "text/html": spec_to_html(spec),
        mime: spec,
        "text/plain": "<altair chart: drawn by vega-embed>",
    }


def setup(max_rows: int | None = 20_000) -> Any:
    """Enable the offline renderer and return the script bundle to display once.

    Call it in a notebook's first code cell and let the cell display the result.

    Parameters
    ----------
    max_rows : int or None, default 20000
        Altair's inline-data row limit (None disables it).

    Returns
    -------
    IPython.display.HTML
        A ``<script>`` with the Vega libraries (about 0.9 MB).
    """
    from IPython.display import HTML

    alt.renderers.register(RENDERER, _renderer)
    alt.renderers.enable(RENDERER)
    if max_rows is None:
        alt.data_transformers.disable_max_rows()
    else:
        alt.data_transformers.enable("default", max_rows=max_rows)
    bundle = javascript_bundle().replace("</script", "<\\/script")
    return HTML(f'<script type="text/javascript">{bundle}</script>')


def measure_vs_k(frame: pd.DataFrame, *, width: int = 220, height: int = 160) -> alt.Chart:
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
        tooltip=["retriever:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
    )
    layered = alt.layer(base.mark_line(), base.mark_point(size=30), data=frame)
    return (
        layered.properties(width=width, height=height)
        .facet(facet=alt.Facet("family:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )


def per_query_distribution(
    frame: pd.DataFrame, *, width: int = 220, height: int = 160
) -> alt.Chart:
    """Per-query values of each measure as box plots, one box per retriever.

    Parameters
    ----------
    frame : DataFrame
        Columns ``retriever``, ``measure``, ``query_id``, ``value`` (one row per query).
    """
    return (
        alt.Chart(frame)
        .mark_boxplot(extent="min-max")
        .encode(
            x=alt.X("retriever:N", title=None),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("retriever:N", legend=None),
        )
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("measure:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )


def comparison_chart(
    frame: pd.DataFrame, *, width: int = 240, row_height: int = 22, columns: int = 3
) -> alt.Chart:
    """Differences between systems with their confidence intervals, one panel per measure.

    Each compared pair is a row: a point at the mean difference, a bar from ``ci_low`` to
    ``ci_high``, and a dashed line at 0; pairs whose adjusted p-value is significant are drawn in
    red, the others in grey.

    Parameters
    ----------
    frame : DataFrame
        :attr:`ragnb.stats.ComparisonResult.pairs`: columns ``measure`` (str), ``pair`` (str,
        e.g. ``"dense − bm25"``), ``difference``, ``ci_low``, ``ci_high`` (float, the measure's
        unit), ``significant`` (bool), ``p_value``, ``p_adjusted`` (float, for the tooltip).
    width : int, default 240
        Width of each panel, pixels.
    row_height : int, default 22
        Height per pair, pixels.
    columns : int, default 3
        Panels per row.
    """
    n_pairs = max(1, frame["pair"].nunique())
    label = frame["significant"].map({True: "significant", False: "not significant"})
    data = frame.assign(significance=label)
    base = alt.Chart().encode(
        y=alt.Y("pair:N", title=None, sort=list(dict.fromkeys(frame["pair"]))),
        tooltip=[
            "measure:N",
            "pair:N",
            alt.Tooltip("difference:Q", format=".4f"),
            alt.Tooltip("ci_low:Q", format=".4f"),
            alt.Tooltip("ci_high:Q", format=".4f"),
            alt.Tooltip("p_value:Q", format=".4g"),
            alt.Tooltip("p_adjusted:Q", format=".4g"),
        ],
    )
    color = alt.Color(
        "significance:N",
        title=None,
        scale=alt.Scale(domain=["significant", "not significant"], range=["#d62728", "#9e9e9e"]),
    )
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("ci_low:Q", title="difference a − b (with CI)"), x2="ci_high:Q", color=color
    )
    points = base.mark_point(filled=True, size=50).encode(x="difference:Q", color=color)
    zero = alt.Chart().mark_rule(strokeDash=[4, 3], color="#444").encode(x=alt.datum(0))
    layered = alt.layer(zero, bars, points, data=data)
    return (
        layered.properties(width=width, height=row_height * n_pairs)
        .facet(
            facet=alt.Facet("measure:N", title=None, sort=list(dict.fromkeys(frame["measure"]))),
            columns=columns,
        )
        .resolve_scale(x="independent")
    )


def proc_vs_k(frame: pd.DataFrame, *, width: int = 220, height: int = 160) -> alt.Chart:
    """Actual value (solid) and its pool ceiling PROC (dashed) against K, per retriever.

    Parameters
    ----------
    frame : DataFrame
        Columns ``retriever``, ``family``, ``cutoff`` (int), ``actual``, ``proc`` (floats), as in
        :attr:`ragnb.experiment.Comparison.proc`.
    """
    long = frame.melt(
        id_vars=["retriever", "family", "cutoff"],
        value_vars=["actual", "proc"],
        var_name="kind",
        value_name="value",
    )
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("cutoff:Q", title="cutoff K", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("retriever:N"),
            strokeDash=alt.StrokeDash("kind:N", title="value", sort=["actual", "proc"]),
            tooltip=[
                "retriever:N",
                "family:N",
                "cutoff:Q",
                "kind:N",
                alt.Tooltip("value:Q", format=".4f"),
            ],
        )
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("family:N", title=None), columns=4)
    )


# ----------------------------------------------------------------------------- golden sets (02)


def grade_distribution_chart(
    frame: pd.DataFrame, *, width: int = 320, height: int = 180
) -> alt.Chart:
    """Share of each grade in the candidates, the pruned pool and the refined top, side by side.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.golden.grade_distribution`: columns ``set`` (str), ``grade`` (str, a grade
        or ``"invalid"``), ``count`` (int), ``share`` (float in [0, 1]).
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
            tooltip=["set:N", "grade:N", "count:Q", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(width=width, height=height)
    )


def pool_overlap_chart(frame: pd.DataFrame, *, size: int = 60) -> alt.LayerChart:
    """The pool overlap matrix: the share of row system's candidates the column system also found.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.golden.pool_overlap`: columns ``system_a``, ``system_b`` (str), ``common``,
        ``n_a`` (int), ``share`` (float in [0, 1]).
    size : int, default 60
        Pixels per cell.
    """
    systems = list(dict.fromkeys(frame["system_a"]))
    n = max(1, len(systems))
    base = alt.Chart(frame).encode(
        x=alt.X("system_b:N", title="also found by", sort=systems),
        y=alt.Y("system_a:N", title="candidates of", sort=systems),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("share:Q", scale=alt.Scale(domain=[0, 1], scheme="blues"), title="share"),
        tooltip=[
            "system_a:N",
            "system_b:N",
            "common:Q",
            "n_a:Q",
            alt.Tooltip("share:Q", format=".1%"),
        ],
    )
    text = base.mark_text(baseline="middle").encode(
        text=alt.Text("share:Q", format=".0%"),
        color=alt.condition(alt.datum.share > 0.6, alt.value("white"), alt.value("black")),
    )
    return alt.LayerChart(layer=[cells, text], width=size * n, height=size * n)


def judged_at_k_chart(frame: pd.DataFrame, *, width: int = 320, height: int = 180) -> alt.Chart:
    """Judged@K against K, one line per system (pool systems solid, new systems dashed).

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.golden.GoldenSet.judged_at_k`: columns ``system``, ``role`` ("pool" or
        "new"), ``k`` (int), ``judged`` (float in [0, 1]).
    """
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", title="cutoff K"),
            y=alt.Y("judged:Q", title="Judged@K", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("system:N"),
            strokeDash=alt.StrokeDash("role:N", title="role", sort=["pool", "new"]),
            tooltip=["system:N", "role:N", "k:Q", alt.Tooltip("judged:Q", format=".3f")],
        )
        .properties(width=width, height=height)
    )


def refinement_convergence_chart(
    frame: pd.DataFrame, *, width: int = 220, height: int = 150
) -> alt.FacetChart:
    """S6 convergence: some queries' traces (grey) and the mean over queries (red) per call.

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.golden.GoldenSet.convergence`: columns ``query_id`` (``"(mean)"`` for the
        mean), ``iteration`` (int), ``metric`` (str: ``n_locks``, ``mean_sigma``,
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
        .encode(tooltip=["iteration:Q", alt.Tooltip("value:Q", format=".3f")])
    )
    metrics = list(dict.fromkeys(frame["metric"]))
    return (
        alt.layer(traces, mean, data=frame)
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("metric:N", title=None, sort=metrics), columns=3)
        .resolve_scale(y="independent")
    )


def confusion_matrix_chart(frame: pd.DataFrame, *, size: int = 44) -> alt.LayerChart:
    """Human labels (rows) against judge grades (columns): counts as a heat map.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.calibration.confusion_matrix`: columns ``human``, ``judge`` (int),
        ``count`` (int), ``share`` (float).
    """
    labels = sorted(set(frame["human"]) | set(frame["judge"]))
    n = max(1, len(labels))
    top = max(1, int(frame["count"].max())) if len(frame) else 1
    base = alt.Chart(frame).encode(
        x=alt.X("judge:O", title="judge grade", sort=labels),
        y=alt.Y("human:O", title="human label", sort=labels),
    )
    cells = base.mark_rect().encode(
        color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="pairs"),
        tooltip=["human:O", "judge:O", "count:Q", alt.Tooltip("share:Q", format=".1%")],
    )
    text = base.mark_text(baseline="middle").encode(
        text="count:Q",
        color=alt.condition(alt.datum.count > top / 2, alt.value("white"), alt.value("black")),
    )
    return alt.LayerChart(layer=[cells, text], width=size * n, height=size * n)


def system_agreement_chart(
    frame: pd.DataFrame, *, title: str | None = None, size: int = 280
) -> alt.LayerChart:
    """Each system's measure under human labels (x) and judge grades (y), with the diagonal.

    Vespa's scatter plot: systems on the diagonal's order are ranked alike by both labellings.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.calibration.system_agreement`: columns ``system``, ``measure`` (str),
        ``human``, ``judge`` (float).
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
        :attr:`ragnb.calibration.SpearResult.interpolated`: columns ``system``, ``recall``,
        ``precision`` (floats in [0, 1]), ``n_queries``.
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
            tooltip=["system:N", "recall:Q", alt.Tooltip("precision:Q", format=".3f")],
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
        :func:`ragnb.simulation.summarise`: columns ``noise_sd``, ``budget`` (passes of the
        sliding window), ``method``, ``metric``, ``mean``, ``low``, ``high``.
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
            alt.Tooltip("mean:Q", format=".3f"),
            alt.Tooltip("low:Q", format=".3f"),
            alt.Tooltip("high:Q", format=".3f"),
        ],
    )
    return (
        alt.layer(band, line, data=data)
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("noise_sd:Q", title="judge noise sd"), columns=4)
    )


# ----------------------------------------------------------------------------- diagnostics (03)


def ablation_heatmap(frame: pd.DataFrame, *, cell: int = 34) -> alt.FacetChart:
    """Delta-Delta% by ablation (rows) x embedder (columns), one panel per language.

    Parameters
    ----------
    frame : DataFrame
        :attr:`ragnb.diagnostics.DiagnosticsResult.ablations` without the base rows: columns
        ``language``, ``model``, ``ablation``, ``delta_delta_pct`` (percent), ``delta_delta``
        (cosine), ``n_changed``, ``n_bundles``. Rows are drawn in the frame's ablation order.
    cell : int, default 34
        Cell height in pixels.

    Notes
    -----
    Colours: blue where the ablation lowers the name margin, red where it raises it, clamped
    to [-100, +100]%; the cell label is the rounded percentage.
    """
    order = list(dict.fromkeys(frame["ablation"]))
    data = frame.assign(label=frame["delta_delta_pct"].round(0).map("{:+.0f}".format))
    base = alt.Chart(data).encode(
        x=alt.X("model:N", title=None, axis=alt.Axis(labelAngle=-30, labelLimit=220)),
        y=alt.Y("ablation:N", title=None, sort=order),
    )
    rect = base.mark_rect().encode(
        color=alt.Color(
            "delta_delta_pct:Q",
            title="ΔΔ% (name margin)",
            scale=alt.Scale(scheme="redblue", reverse=True, domain=[-100, 100], clamp=True),
        ),
        tooltip=[
            "language:N",
            "model:N",
            "ablation:N",
            alt.Tooltip("delta_delta_pct:Q", title="ΔΔ%", format="+.1f"),
            alt.Tooltip("delta_delta:Q", title="ΔΔ (cosine)", format="+.4f"),
            alt.Tooltip("n_changed:Q", title="bundles changed"),
            alt.Tooltip("n_bundles:Q", title="bundles"),
        ],
    )
    text = base.mark_text(fontSize=11).encode(text="label:N")
    n_models = max(1, frame["model"].nunique())
    return (
        alt.layer(rect, text, data=data)
        .properties(width=max(120, 90 * n_models), height=cell * max(1, len(order)))
        .facet(column=alt.Column("language:N", title="language"))
    )


def noise_curves(frame: pd.DataFrame, *, width: int = 260, height: int = 180) -> alt.FacetChart:
    """Mean cosine against the noise level per embedder: with the reference passage (Table 12),
    with the clean query, and after the rewrite when there is one.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.diagnostics.noise_summary`: ``model``, ``language``, ``level``,
        ``cos_reference``, ``cos_clean`` and optionally ``cos_reference_rewritten``.
    """
    views = {
        "cos_reference": "query vs reference passage",
        "cos_clean": "noisy vs clean query",
        "cos_reference_rewritten": "rewritten query vs reference",
    }
    present = [c for c in views if c in frame.columns]
    long = frame.melt(id_vars=["model", "language", "level"], value_vars=present, var_name="view")
    long["view"] = long["view"].map(views)
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("level:O", title="noise level"),
            y=alt.Y("value:Q", title="mean cosine", scale=alt.Scale(zero=False)),
            color=alt.Color("model:N", title="embedder"),
            strokeDash=alt.StrokeDash("view:N", title=None, sort=[views[c] for c in present]),
            tooltip=[
                "language:N",
                "model:N",
                "view:N",
                "level:O",
                alt.Tooltip("value:Q", format=".4f"),
            ],
        )
        .properties(width=width, height=height)
        .facet(column=alt.Column("language:N", title="language"))
    )


def noise_impact_chart(
    frame: pd.DataFrame, *, width: int = 220, height: int = 160
) -> alt.FacetChart:
    """Change of a retrieval measure against the clean queries per noise level, with its paired
    bootstrap CI; noisy (solid) and rewritten (dashed) queries.

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.diagnostics.DiagnosticsResult.impact_table` restricted to measures with a CI:
        ``retriever``, ``language``, ``condition``, ``level``, ``measure``, ``value``, ``delta``,
        ``ci_low``, ``ci_high``.
    """
    data = frame.dropna(subset=["ci_low", "ci_high"])
    base = alt.Chart(data).encode(
        x=alt.X("level:O", title="noise level"),
        color=alt.Color("retriever:N"),
        strokeDash=alt.StrokeDash("condition:N", title=None, sort=["noisy", "rewritten"]),
    )
    lines = base.mark_line(point=True).encode(
        y=alt.Y("delta:Q", title="change vs clean queries"),
        tooltip=[
            "retriever:N",
            "language:N",
            "condition:N",
            "measure:N",
            "level:O",
            alt.Tooltip("value:Q", format=".4f"),
            alt.Tooltip("delta:Q", format="+.4f"),
            alt.Tooltip("ci_low:Q", format="+.4f"),
            alt.Tooltip("ci_high:Q", format="+.4f"),
        ],
    )
    bars = base.mark_errorbar().encode(y="ci_low:Q", y2="ci_high:Q")
    return (
        alt.layer(bars, lines, data=data)
        .properties(width=width, height=height)
        .facet(row=alt.Row("measure:N", title=None), column=alt.Column("language:N"))
    )
