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

__all__ = [
    "calibration_markdown",
    "estimate_markdown",
    "first_screen",
    "ppi_markdown",
    "ppi_table",
    "simulation_table",
]


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


# ----------------------------------------------------------------------------- first screen


def first_screen(config: Any, pipeline: Any, needs: str, golden: Any = None) -> str:
    """Markdown for the top of notebook 02: the judge, the sample and what it stands for, or
    what is missing when there is no judge (:func:`ragnb.golden.pipeline.open_pipeline`).

    Parameters
    ----------
    config : GoldenSetConfig
    pipeline : GoldenPipeline or None
    needs : str
        What is missing when ``pipeline`` is None.
    golden : GoldenSet, optional
        Once built: the degenerate-judge findings of its grades
        (:meth:`~ragnb.golden.GoldenSet.judge_checks`) follow the judge's banner. The notebook
        draws the first screen before the run and redraws it with the golden set after.
    """
    if pipeline is None:
        return needs
    from ragnb.golden.degenerate import findings_markdown
    from ragnb.golden.judging import LOCAL_MODEL_NAME

    info = pipeline.dataset_info
    lines = [pipeline.banner(), ""]
    checks = "" if golden is None else findings_markdown(golden.judge_checks(), short=True)
    if checks:
        lines += [checks, ""]
    if getattr(pipeline.judge, "local_server", None) is not None:
        lines += [
            f"The judge is {LOCAL_MODEL_NAME}: it makes the real LLM path run here (HTTP, "
            "constrained output, token log-probabilities, the cache and the ledger), and its "
            "agreement with the labels below is what a 135M-parameter model does, not what LLM "
            "judging can do. Point `judge='openai'` at a capable model for a golden set to rely "
            "on; `judge='noisy'` and `'qrels'` simulate one from the dataset's labels.",
            "",
        ]
    systems = ", ".join(pipeline.systems)
    lines.append(
        f"**Sample:** {info.get('queries_from', '')}; pool systems {systems}, top "
        f"{pipeline.depth} each; at most {pipeline.refine_config.max_iterations} listwise "
        f"call(s) per query for a top {pipeline.top_n}. "
        + (
            "These are the defaults, shrunk so that the report renders in minutes on two CPU "
            "cores with the local model; a full golden set sets `max_queries=0`, `depth=30`, "
            "`min_pool=30`, `top_n=20`, `refine_max_iterations=60`."
            if config.judge == "local"
            else ""
        )
    )
    if not getattr(pipeline.dataset, "has_qrels", True) and not config.human_labels:
        from ragnb.golden.human import NO_LABELS

        lines += ["", NO_LABELS]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- calibration


def _interval(cal: Any, statistic: str) -> str:
    a = cal.agreement.set_index("statistic")
    row = a.loc[statistic]
    if "low" in a.columns and row["low"] == row["low"]:
        return f"{row['value']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
    return f"{row['value']:.3f}"


def calibration_markdown(cal: Any, human: Any) -> str:
    """Markdown: whose labels, the headline agreement with its intervals, Kendall's tau with its
    interval, the published reference points beside them, and the calibration's notes."""
    from ragnb.golden.human import REFERENCE_POINTS

    n_q = cal.pairs["query_id"].nunique()
    ti = cal.tau_interval
    tau = "n/a (no systems)"
    if cal.tau is not None:
        tau = f"{cal.tau.tau:.3f}" + ("" if ti is None else f" [{ti.low:.3f}, {ti.high:.3f}]")
        tau += f" over {len(cal.systems)} systems ({cal.measure})"
    lines = [
        f"**Human labels:** {human.source}. {len(cal.pairs)} pairs of {n_q} queries carry "
        "both a human label and a judge grade.",
        "",
        f"**This judge:** Cohen's kappa {_interval(cal, 'kappa')}, linear-weighted "
        f"{_interval(cal, 'kappa (linear)')}, quadratic-weighted "
        f"{_interval(cal, 'kappa (quadratic)')}; system-ranking Kendall tau {tau}. "
        f"Intervals: {cal.ci:.0%} percentile bootstrap over queries ({cal.n_boot} resamples).",
        "",
        REFERENCE_POINTS,
    ]
    lines += [f"- {note}" for note in [*human.notes, *cal.notes]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- PPI


def ppi_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`ragnb.golden.human.ppi_estimates`' table as the notebook shows it: per system and
    measure, judge-only, human-only and PPI++ with their 95% intervals, ``lam``, the width ratio
    and the labels that would halve the PPI interval."""
    if table.empty:
        return table
    cols = {
        "system": "system",
        "measure": "measure",
        "n_labelled": "labels",
        "n_total": "pairs",
        "judge_only": "judge only",
        "human_only": "human only",
        "human_ci_low": "human low",
        "human_ci_high": "human high",
        "ppi": "PPI++",
        "ppi_ci_low": "PPI low",
        "ppi_ci_high": "PPI high",
        "lam": "lambda",
        "width_ratio": "width PPI / human",
        "labels_to_halve": "labels to halve",
    }
    return table[list(cols)].rename(columns=cols)


def ppi_markdown(human: Any, table: pd.DataFrame, notes: list[str]) -> str:
    """Markdown above the PPI table: whose labels, the design, the halving estimate."""
    from ragnb.golden.human import halving_markdown

    lines = [
        f"**Human labels:** {human.source}. Population: every (query, document) pair a system "
        "ranks in its top K, all graded by the judge; the estimand is the measure under human "
        "labels on all of them.",
        "",
    ]
    lines += [f"- {n}" for n in [*human.notes, *notes]]
    if not table.empty:
        lines += ["", halving_markdown(table)]
    return "\n".join(lines)
