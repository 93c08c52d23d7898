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

import pandas as pd

from ragnb.core.lazylibs import MissingExtra, require

try:
    import altair as alt
except ModuleNotFoundError as _e:  # the notebooks extra
    raise MissingExtra("altair", "notebooks") from _e

__all__ = [
    "RENDERER",
    "comparison_chart",
    "heatmap",
    "interval_tooltip",
    "javascript_bundle",
    "line_chart",
    "panels",
    "setup",
    "spec_to_html",
    "value_tooltip",
]

RENDERER = "ragnb"


@cache
def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (vl-convert), matching altair's Vega-Lite."""
    vlc = require("vl_convert")

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
      el.innerHTML = "<pre>chart library missing: run ragnb.report.charts.setup() first</pre>";
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


def interval_tooltip(
    estimate: str, low: str = "ci_low", high: str = "ci_high", *, fmt: str = ".3f"
) -> list[alt.Tooltip]:
    """Tooltip entries of an estimate and its interval, the three numbers in one format.

    Parameters
    ----------
    estimate, low, high : str
        Columns of the estimate and of the interval's bounds (quantitative).
    fmt : str, default ".3f"
        d3 number format, e.g. ``"+.4f"`` for signed changes.

    Examples
    --------
    >>> [t.to_dict()["field"] for t in interval_tooltip("diff")]
    ['diff', 'ci_low', 'ci_high']
    """
    return [alt.Tooltip(f"{column}:Q", format=fmt) for column in (estimate, low, high)]


def value_tooltip(*fields: Any, value: str = "value", fmt: str = ".4f") -> list[Any]:
    """Tooltip entries: ``fields`` as given, then the quantitative ``value`` column formatted.

    Measure values show with four decimals in every chart unless ``fmt`` says otherwise.

    Parameters
    ----------
    *fields : str or alt.Tooltip
        Entries shown before the value, e.g. ``"retriever:N"``.
    value : str, default "value"
        Column of the number (quantitative).
    fmt : str, default ".4f"
        d3 number format, e.g. ``".1%"`` for shares.

    Returns
    -------
    list
        ``[*fields, alt.Tooltip(value, format=fmt)]``, for a ``tooltip`` encoding.

    Examples
    --------
    >>> entries = value_tooltip("retriever:N", "k:Q")
    >>> entries[:2], entries[2].to_dict()
    (['retriever:N', 'k:Q'], {'field': 'value', 'format': '.4f', 'type': 'quantitative'})
    """
    return [*fields, alt.Tooltip(f"{value}:Q", format=fmt)]


def heatmap(
    data: pd.DataFrame,
    *,
    x: alt.X,
    y: alt.Y,
    color: alt.Color,
    text: str | alt.Text,
    tooltip: list[Any],
    text_color: Any = alt.Undefined,
    **text_mark: Any,
) -> alt.LayerChart:
    """Coloured cells with a text label in each: one cell per row of ``data`` at (x, y).

    Parameters
    ----------
    data : DataFrame
        One row per cell.
    x, y : alt.X, alt.Y
        The cell's column and row (discrete).
    color : alt.Color
        The cell's fill.
    text : str or alt.Text
        The label written in the cell.
    tooltip : list
        Tooltip of the cell and of its label.
    text_color : optional
        Colour encoding of the label, e.g. ``alt.condition(...)`` for white on dark cells.
    **text_mark
        Properties of the text mark (``fontSize``, ``color``, ``baseline``, ...).

    Returns
    -------
    LayerChart
        Cells under labels, ready for ``.properties`` and ``.facet``.
    """
    base = alt.Chart(data).encode(x=x, y=y, tooltip=tooltip)
    cells = base.mark_rect().encode(color=color)
    labels = base.mark_text(**text_mark).encode(text=text, color=text_color)
    return alt.LayerChart(layer=[cells, labels], data=data)


def line_chart(data: pd.DataFrame, *, width: int, height: int, **encodings: Any) -> alt.Chart:
    """Lines with a point at each value: one line per value of the colour (and dash) channels.

    The line chart the studies share (a measure against K or the noise level, latency against
    the pool size, recall against efSearch, Judged@K...).

    Parameters
    ----------
    data : DataFrame
        One row per point.
    width, height : int
        Size of the chart (of each panel once faceted), pixels.
    **encodings
        Altair encoding channels: ``x``, ``y``, ``color``, ``strokeDash``, ``tooltip``...

    Returns
    -------
    Chart
        ``data`` drawn by ``mark_line(point=True)``, ready for ``.facet`` and
        ``.resolve_scale``.

    Examples
    --------
    >>> frame = pd.DataFrame({"k": [1, 2], "value": [0.5, 0.7]})
    >>> line_chart(frame, x="k:Q", y="value:Q", width=200, height=100).to_dict()["mark"]
    {'type': 'line', 'point': True}
    """
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(**encodings)
        .properties(width=width, height=height)
    )


def panels(chart: Any, field: str, *, columns: int, sort: Any = alt.Undefined) -> alt.FacetChart:
    """Small multiples: ``chart`` drawn once per value of ``field``, each panel with its own y
    scale (measures of different ranges side by side).

    Parameters
    ----------
    chart : Chart or LayerChart
        One panel, its width and height set (``.properties``) and its data attached.
    field : str
        The facet field with its type, e.g. ``"family:N"``; the panels carry no title line
        (each panel's header names the value).
    columns : int
        Panels per row.
    sort : list, optional
        Order of the panels (default: the field's natural order).

    Returns
    -------
    FacetChart

    Examples
    --------
    >>> frame = pd.DataFrame({"k": [1, 2], "value": [0.5, 0.7], "family": ["P", "R"]})
    >>> one = line_chart(frame, x="k:Q", y="value:Q", width=100, height=80)
    >>> panels(one, "family:N", columns=2).to_dict()["resolve"]
    {'scale': {'y': 'independent'}}
    """
    return chart.facet(
        facet=alt.Facet(field, title=None, sort=sort), columns=columns
    ).resolve_scale(y="independent")


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
            *interval_tooltip("difference", fmt=".4f"),
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
