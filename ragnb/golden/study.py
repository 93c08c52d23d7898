"""Notebook 02's own helpers: the cost estimate and the simulation summary as the notebook shows
them.

The golden set itself is built by :class:`ragnb.golden.GoldenPipeline` (modules:
:mod:`~ragnb.golden.config` for :class:`~ragnb.golden.GoldenSetConfig`,
:mod:`~ragnb.golden.stages` for S1-S6, :mod:`~ragnb.golden.pipeline`,
:mod:`~ragnb.golden.goldenset` for the result); the notebook reaches everything through
``from ragnb import golden``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["estimate_markdown", "simulation_table"]


def simulation_table(summary: pd.DataFrame, metric: str = "overlap") -> pd.DataFrame:
    """One metric of :func:`ragnb.golden.simulation.summarise`, wide, for reading: rows (noise sd,
    budget) written with ``:g``, columns the methods' means, then their 95% intervals as
    ``<method> low`` / ``<method> high``."""
    rows = summary[summary["metric"] == metric]
    mean = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values="mean")
    parts = [mean]
    for bound in ("low", "high"):
        b = rows.pivot_table(index=["noise_sd", "budget"], columns="method", values=bound)
        parts.append(b.rename(columns=lambda c, s=bound: f"{c} {s}"))
    out = pd.concat(parts, axis=1)
    out.columns.name = metric
    out.index = out.index.set_levels([lvl.map("{:g}".format) for lvl in out.index.levels])
    return out


def estimate_markdown(estimate: Any, budget_usd: float | None) -> str:
    """Markdown stating a :class:`~ragnb.ledger.CostEstimate` against the budget."""
    s = estimate.summary()
    if s["calls"] == 0 and s["cached_calls"] == 0:
        return "**Cost estimate:** no LLM call is planned (offline judge, or every stage done)."
    total = "unknown (unpriced model)" if s["total_usd"] is None else f"${s['total_usd']:.4f}"
    lines = [
        f"**Cost estimate:** {s['calls']} calls ({s['cached_calls']} more answered by the cache), "
        f"{s['input_tokens']} input + {s['output_tokens']} assumed output tokens: **{total}**"
        + ("" if budget_usd is None else f" against a budget of ${budget_usd:.2f}")
        + f"; prices as of {s['prices'].get('as_of')}."
    ]
    lines += [f"- {n}" for n in s["notes"]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- judges
