"""Charts of notebook 03: Delta-Delta% heatmaps, noise curves, retrieval impact of noise.

A tidy frame in, an altair chart out; call :func:`ragnb.report.charts.setup` first in a report.
"""

from __future__ import annotations

import pandas as pd

from ragnb.report.charts import alt, heatmap, interval_tooltip, line_chart, value_tooltip

__all__ = [
    "ablation_heatmap",
    "noise_curves",
    "noise_impact_chart",
]


def ablation_heatmap(frame: pd.DataFrame, *, cell: int = 34) -> alt.FacetChart:
    """Delta-Delta% by ablation (rows) x embedder (columns), one panel per language.

    Parameters
    ----------
    frame : DataFrame
        :attr:`ragnb.studies.diagnostics.DiagnosticsResult.ablations` without the base rows: columns
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
    cells = heatmap(
        data,
        x=alt.X("model:N", title=None, axis=alt.Axis(labelAngle=-30, labelLimit=220)),
        y=alt.Y("ablation:N", title=None, sort=order),
        color=alt.Color(
            "delta_delta_pct:Q",
            title="ΔΔ% (name margin)",
            scale=alt.Scale(scheme="redblue", reverse=True, domain=[-100, 100], clamp=True),
        ),
        text="label:N",
        tooltip=[
            "language:N",
            "model:N",
            "ablation:N",
            alt.Tooltip("delta_delta_pct:Q", title="ΔΔ%", format="+.1f"),
            alt.Tooltip("delta_delta:Q", title="ΔΔ (cosine)", format="+.4f"),
            alt.Tooltip("n_changed:Q", title="bundles changed"),
            alt.Tooltip("n_bundles:Q", title="bundles"),
        ],
        fontSize=11,
    )
    n_models = max(1, frame["model"].nunique())
    return cells.properties(width=max(120, 90 * n_models), height=cell * max(1, len(order))).facet(
        column=alt.Column("language:N", title="language")
    )


def noise_curves(frame: pd.DataFrame, *, width: int = 260, height: int = 180) -> alt.FacetChart:
    """Mean cosine against the noise level per embedder: with the reference passage (Table 12),
    with the clean query, and after the rewrite when there is one.

    Parameters
    ----------
    frame : DataFrame
        :func:`ragnb.studies.diagnostics.noise_summary`: ``model``, ``language``, ``level``,
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
    return line_chart(
        long,
        x=alt.X("level:O", title="noise level"),
        y=alt.Y("value:Q", title="mean cosine", scale=alt.Scale(zero=False)),
        color=alt.Color("model:N", title="embedder"),
        strokeDash=alt.StrokeDash("view:N", title=None, sort=[views[c] for c in present]),
        tooltip=value_tooltip("language:N", "model:N", "view:N", "level:O"),
        width=width,
        height=height,
    ).facet(column=alt.Column("language:N", title="language"))


def noise_impact_chart(
    frame: pd.DataFrame, *, width: int = 220, height: int = 160
) -> alt.FacetChart:
    """Change of a retrieval measure against the clean queries per noise level, with its paired
    bootstrap CI; noisy (solid) and rewritten (dashed) queries.

    Parameters
    ----------
    frame : DataFrame
        :meth:`ragnb.studies.diagnostics.DiagnosticsResult.impact_table` restricted to measures with
        a CI: ``retriever``, ``language``, ``condition``, ``level``, ``measure``, ``value``,
        ``delta``, ``ci_low``, ``ci_high``.
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
            *value_tooltip("retriever:N", "language:N", "condition:N", "measure:N", "level:O"),
            *interval_tooltip("delta", fmt="+.4f"),
        ],
    )
    bars = base.mark_errorbar().encode(y="ci_low:Q", y2="ci_high:Q")
    return (
        alt.layer(bars, lines, data=data)
        .properties(width=width, height=height)
        .facet(row=alt.Row("measure:N", title=None), column=alt.Column("language:N"))
    )
