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
    "comparison_chart",
    "javascript_bundle",
    "measure_vs_k",
    "per_query_distribution",
    "proc_vs_k",
    "setup",
    "spec_to_html",
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
