"""Decisions over a sweep's results: Pareto frontier, operator rules, leaderboard, scenarios.

Every function takes the results table of :func:`ragnb.studies.clq.sweep.run_sweep` (one row per
configuration) and names its columns as parameters, so any cost, latency or quality column can
be used. Defaults: cost ``cost_usd`` (US dollars per 1,000 queries), latency ``latency_p95_ms``
(milliseconds, embed + search + rerank), quality ``quality`` (the sweep's headline measure).

Operator rules (Dallaire section 3.3):

- latency-bound: keep ``latency <= SLA``; maximise quality (:func:`best_under_sla`);
- cost-bound: keep ``cost <= budget``; maximise quality (:func:`best_under_budget`);
- quality-targeted: keep ``quality >= target``; minimise latency, then cost
  (:func:`fastest_for_target`);
- tie-breaks: the smaller pool K (smaller prompt, cheaper reranking), then the efficiency
  scalar ``Avg(quality) / latency (s)`` (:func:`efficiency`), which the paper allows only as a
  tie-breaker.

References
----------
Dallaire, arXiv:2511.09545, section 3.3 (frontier, rules, efficiency) and 5.4-5.5 (marginal
Delta-quality per Delta-ms, the scenario matrix of Table 8). Miettinen, *Nonlinear
Multiobjective Optimization*, 1999 (Pareto optimality).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.validation import require_columns
from ragnb.errors import InputError

__all__ = [
    "EFFICIENCY_MEASURES",
    "Choice",
    "best_under_budget",
    "best_under_sla",
    "efficiency",
    "fastest_for_target",
    "leaderboard",
    "marginal_gains",
    "latency_by_k",
    "pareto_front",
    "quality_by_dim",
    "recommend",
    "scenario_matrix",
]

#: The four measures averaged by the paper's efficiency scalar (section 3.3).
EFFICIENCY_MEASURES = ("N-Recall4+@10", "RA-nWG@10", "N-Recall4+@30", "RA-nWG@30")


def _need(frame: pd.DataFrame, *columns: str) -> None:
    require_columns(frame, columns, "results table")


def pareto_front(
    frame: pd.DataFrame,
    *,
    cost: str = "cost_usd",
    latency: str = "latency_p95_ms",
    quality: str = "quality",
) -> pd.Series:
    """Which rows are Pareto-optimal over (cost min, latency min, quality max).

    A row is dominated when another row is at least as good on all three and strictly better
    on one; rows with a NaN objective are never on the front.

    Parameters
    ----------
    frame : DataFrame
        One row per configuration.
    cost, latency, quality : str
        Column names.

    Returns
    -------
    Series of bool, indexed like ``frame``

    Raises
    ------
    InputError
        On a missing column.

    Examples
    --------
    >>> f = pd.DataFrame({"cost_usd": [1, 2, 1, 3], "latency_p95_ms": [10, 5, 10, 30],
    ...                   "quality": [0.5, 0.6, 0.4, 0.6]})
    >>> pareto_front(f).tolist()  # row 2 is beaten by row 0, row 3 by row 1
    [True, True, False, False]
    """
    _need(frame, cost, latency, quality)
    pts = np.column_stack(
        [
            frame[cost].to_numpy(dtype=float),
            frame[latency].to_numpy(dtype=float),
            -frame[quality].to_numpy(dtype=float),
        ]
    )
    ok = ~np.isnan(pts).any(axis=1)
    front = np.zeros(len(frame), dtype=bool)
    for i in np.flatnonzero(ok):
        others = pts[ok]
        le = (others <= pts[i]).all(axis=1)
        lt = (others < pts[i]).any(axis=1)
        front[i] = not (le & lt).any()
    return pd.Series(front, index=frame.index, name="pareto")


def efficiency(
    frame: pd.DataFrame,
    *,
    measures: Sequence[str] = EFFICIENCY_MEASURES,
    latency: str = "latency_p50_ms",
) -> pd.Series:
    """Dallaire's efficiency scalar: mean of ``measures`` divided by latency in seconds.

    ``Efficiency = Avg(N-Recall4+@10, RA-nWG@10, N-Recall4+@30, RA-nWG@30) / latency (s)``;
    measures missing from the table (binary data has no graded measures) are left out of the
    average, and ``nDCG@10`` (else ``quality``) stands in when none is present. A tie-breaker
    only.

    Parameters
    ----------
    frame : DataFrame
    measures : sequence of str
    latency : str
        Milliseconds; the paper divides by median latency.

    Returns
    -------
    Series of float (quality per second), NaN when latency is 0 or missing.

    References
    ----------
    Dallaire, arXiv:2511.09545, section 3.3 ("Efficiency (tie-breaker only)") and 5.4.

    Examples
    --------
    >>> f = pd.DataFrame({"RA-nWG@10": [0.8], "RA-nWG@30": [0.6], "latency_p50_ms": [350.0]})
    >>> round(float(efficiency(f).iloc[0]), 4)  # 0.7 / 0.35 s
    2.0
    """
    fallback = [c for c in ("nDCG@10", "quality") if c in frame.columns][:1] or ["nDCG@10"]
    cols = [m for m in measures if m in frame.columns] or fallback
    _need(frame, latency, *cols)
    avg = frame[cols].mean(axis=1, skipna=True)
    seconds = frame[latency].astype(float) / 1000.0
    return (avg / seconds.where(seconds > 0)).rename("efficiency")


def _order(
    frame: pd.DataFrame,
    keys: list[tuple[str, bool]],
    k_column: str,
    eff: pd.Series,
) -> pd.DataFrame:
    """Sort by ``keys`` then smaller K, then higher efficiency (the tie-breaks)."""
    f = frame.assign(_eff=eff.reindex(frame.index).fillna(-np.inf))
    by = [c for c, _ in keys] + [k_column, "_eff"]
    asc = [a for _, a in keys] + [True, False]
    return f.sort_values(by, ascending=asc, kind="stable").drop(columns="_eff")


class Choice(dict):  # type: ignore[type-arg]
    """A rule's outcome: ``rule``, ``row`` (Series or None), ``sentence``, ``n_feasible``."""


def _choice(rule: str, ranked: pd.DataFrame, n_feasible: int, sentence: str) -> Choice:
    row = ranked.iloc[0] if len(ranked) else None
    return Choice(rule=rule, row=row, sentence=sentence, n_feasible=n_feasible)


def _quality_ties(frame: pd.DataFrame, quality: str, tol: float) -> pd.DataFrame:
    """Rows within ``tol`` of the best quality (the tie set the tie-breaks choose from)."""
    best = frame[quality].max()
    return frame[frame[quality] >= best - tol]


def _best_within(
    frame: pd.DataFrame,
    bound_column: str,
    bound: float,
    rule: str,
    lead: str,
    quality: str,
    latency: str,
    k_column: str,
    quality_tol: float,
) -> Choice:
    """Among the rows of ``frame`` with ``bound_column <= bound`` and a quality, the highest
    quality; rows within ``quality_tol`` of it tie and go to the smaller K, then the higher
    efficiency."""
    _need(frame, bound_column, quality, k_column)
    ok = frame[frame[bound_column] <= bound].dropna(subset=[quality])
    ties = _quality_ties(ok, quality, quality_tol)
    ranked = _order(ties, [(quality, False)], k_column, _eff(frame))
    return _choice(rule, ranked, len(ok), _sentence(ranked, lead, quality, latency, len(ok)))


def best_under_sla(
    frame: pd.DataFrame,
    sla_ms: float,
    *,
    latency: str = "latency_p95_ms",
    quality: str = "quality",
    k_column: str = "pool_k",
    quality_tol: float = 0.0,
) -> Choice:
    """Latency-bound rule: among rows with ``latency <= sla_ms``, the highest quality.

    Parameters
    ----------
    frame : DataFrame
    sla_ms : float
        Latency budget, milliseconds.
    latency, quality, k_column : str
        Column names.
    quality_tol : float, default 0
        Rows within this of the best quality count as tied; ties go to the smaller K, then
        the higher :func:`efficiency`.

    Returns
    -------
    Choice
        ``row`` is None when no row meets the SLA.

    Examples
    --------
    >>> f = pd.DataFrame({"latency_p95_ms": [10.0, 50, 20], "latency_p50_ms": [8.0, 40, 15],
    ...                   "quality": [0.5, 0.9, 0.5], "pool_k": [100, 50, 50],
    ...                   "label": list("abc")})
    >>> best_under_sla(f, 30)["row"]["label"]  # a and c tie on quality: c has the smaller K
    'c'
    """
    lead = f"Under a {latency.replace('latency_', '').replace('_ms', '')} SLA of {sla_ms:g} ms"
    return _best_within(
        frame, latency, sla_ms, "sla", lead, quality, latency, k_column, quality_tol
    )


def best_under_budget(
    frame: pd.DataFrame,
    budget_usd_per_1k: float,
    *,
    cost: str = "cost_usd",
    quality: str = "quality",
    latency: str = "latency_p95_ms",
    k_column: str = "pool_k",
    quality_tol: float = 0.0,
) -> Choice:
    """Cost-bound rule: among rows with ``cost <= budget``, the highest quality.

    Parameters
    ----------
    budget_usd_per_1k : float
        US dollars per 1,000 queries.

    Returns
    -------
    Choice
    """
    lead = f"Under a budget of USD {budget_usd_per_1k:g} per 1,000 queries"
    return _best_within(
        frame, cost, budget_usd_per_1k, "budget", lead, quality, latency, k_column, quality_tol
    )


def fastest_for_target(
    frame: pd.DataFrame,
    target: float,
    *,
    quality: str = "quality",
    latency: str = "latency_p95_ms",
    cost: str = "cost_usd",
    k_column: str = "pool_k",
) -> Choice:
    """Quality-targeted rule: among rows with ``quality >= target``, the lowest latency, then
    the lowest cost, then the smaller K and the higher efficiency.

    Returns
    -------
    Choice
    """
    _need(frame, cost, quality, latency, k_column)
    ok = frame[frame[quality] >= target]
    ranked = _order(ok, [(latency, True), (cost, True)], k_column, _eff(frame))
    sentence = _sentence(ranked, f"For a {quality} target of {target:g}", quality, latency, len(ok))
    return _choice("target", ranked, len(ok), sentence)


def _eff(frame: pd.DataFrame) -> pd.Series:
    if "latency_p50_ms" not in frame.columns:
        return pd.Series(np.nan, index=frame.index)
    try:
        return efficiency(frame)
    except InputError:
        return pd.Series(np.nan, index=frame.index)


def _sentence(ranked: pd.DataFrame, lead: str, quality: str, latency: str, n: int) -> str:
    if not len(ranked):
        return f"{lead}, no configuration qualifies."
    r = ranked.iloc[0]
    label = r.get("label", r.name)
    cost = r.get("cost_usd", np.nan)
    return (
        f"{lead}, ship **{label}**: {quality} {r[quality]:.3f}, {latency} {r[latency]:.1f} ms, "
        f"USD {cost:.3f} per 1,000 queries (chosen among {n} qualifying configurations)."
    )


def recommend(
    frame: pd.DataFrame,
    *,
    sla_ms: float,
    budget_usd_per_1k: float,
    quality_target: float,
    quality: str = "quality",
    latency: str = "latency_p95_ms",
    cost: str = "cost_usd",
) -> dict[str, Choice]:
    """The three operator rules at once: ``{"sla": ..., "budget": ..., "target": ...}``."""
    return {
        "sla": best_under_sla(frame, sla_ms, latency=latency, quality=quality),
        "budget": best_under_budget(
            frame, budget_usd_per_1k, cost=cost, quality=quality, latency=latency
        ),
        "target": fastest_for_target(
            frame, quality_target, quality=quality, latency=latency, cost=cost
        ),
    }


def marginal_gains(
    frame: pd.DataFrame,
    *,
    quality: str = "quality",
    latency: str = "latency_p50_ms",
    family: str = "family",
    k_column: str = "pool_k",
) -> pd.DataFrame:
    """Delta-quality per Delta-ms when raising K within a family of configurations.

    Families are configurations identical but for K (the results' ``family`` column); dynamic-K
    rows are left out. For consecutive pool sizes ``K1 < K2`` of a family:
    ``dq_per_ms = (Q(K2) - Q(K1)) / (L(K2) - L(K1))``.

    Returns
    -------
    DataFrame
        ``family``, ``label`` (of the K2 row), ``k_from``, ``k_to``, ``d_quality``,
        ``d_latency_ms``, ``dq_per_ms`` (NaN when the latency did not grow).

    References
    ----------
    Dallaire, arXiv:2511.09545, section 5.4 ("marginal analyses, Delta RA-nWG / Delta ms").
    """
    _need(frame, quality, latency, family, k_column)
    fixed = frame[frame["dynamic"].fillna("") == ""] if "dynamic" in frame.columns else frame
    rows = []
    for fam, group in fixed.groupby(family, sort=False):
        g = group.sort_values(k_column)
        for (_, a), (_, b) in zip(g.iloc[:-1].iterrows(), g.iloc[1:].iterrows(), strict=True):
            dq = float(b[quality] - a[quality])
            dl = float(b[latency] - a[latency])
            rows.append(
                {
                    "family": fam,
                    "label": b.get("label", ""),
                    "k_from": int(a[k_column]),
                    "k_to": int(b[k_column]),
                    "d_quality": dq,
                    "d_latency_ms": dl,
                    "dq_per_ms": dq / dl if dl > 0 else np.nan,
                }
            )
    cols = ["family", "label", "k_from", "k_to", "d_quality", "d_latency_ms", "dq_per_ms"]
    return pd.DataFrame(rows, columns=cols)


def leaderboard(
    frame: pd.DataFrame,
    *,
    quality: str = "quality",
    columns: Sequence[str] = (),
    top: int = 10,
) -> pd.DataFrame:
    """The ``top`` configurations by quality (ties: smaller K, higher efficiency), with their
    cost, latency, PROC and %PROC.

    Returns
    -------
    DataFrame
        ``rank`` (1-based), ``label`` and the chosen columns.
    """
    _need(frame, quality)
    ranked = _order(frame.dropna(subset=[quality]), [(quality, False)], "pool_k", _eff(frame))
    default = [quality, "proc", "pct_proc", "latency_p50_ms", "latency_p95_ms", "cost_usd"]
    cols = [c for c in (list(columns) or default) if c in frame.columns]
    out = ranked.head(top)[["label", *cols]].reset_index(drop=True)
    out.insert(0, "rank", range(1, len(out) + 1))
    return out


def scenario_matrix(
    frame: pd.DataFrame,
    *,
    sla_ms: float,
    budget_usd_per_1k: float,
    quality_target: float,
    quality: str = "quality",
    latency: str = "latency_p95_ms",
    cost: str = "cost_usd",
    measures: Sequence[str] = ("N-Recall4+@10", "RA-nWG@10", "RA-nWG@30", "nDCG@10"),
) -> pd.DataFrame:
    """Representative scenarios in the shape of Dallaire's Table 8.

    Scenarios: best quality overall, the three operator rules, the cheapest configuration,
    the fastest one, the best by the efficiency scalar, and the largest-K check.

    Returns
    -------
    DataFrame
        ``scenario``, ``rule`` (how it was chosen), ``mode``, ``embedder``, ``dim``,
        ``index``, ``chunker``, ``reranker``, ``K``, ``cost_usd``, latency, and ``measures``
        present in the table; a scenario with no qualifying row is left out.

    References
    ----------
    Dallaire, arXiv:2511.09545, section 5.5, Table 8.
    """
    _need(frame, quality, latency, cost)
    eff = _eff(frame)
    rec = recommend(
        frame,
        sla_ms=sla_ms,
        budget_usd_per_1k=budget_usd_per_1k,
        quality_target=quality_target,
        quality=quality,
        latency=latency,
        cost=cost,
    )
    picks: list[tuple[str, str, Any]] = [
        ("Quality push", f"max {quality}", _order(frame, [(quality, False)], "pool_k", eff)),
        ("Within SLA", f"{latency} <= {sla_ms:g} ms, max {quality}", rec["sla"]["row"]),
        (
            "Within budget",
            f"cost <= ${budget_usd_per_1k:g}/1k, max {quality}",
            rec["budget"]["row"],
        ),
        (
            "Quality target",
            f"{quality} >= {quality_target:g}, min latency then cost",
            rec["target"]["row"],
        ),
        ("Cost saver", "min cost", _order(frame, [(cost, True)], "pool_k", eff)),
        ("Fastest", f"min {latency}", _order(frame, [(latency, True)], "pool_k", eff)),
        (
            "Efficiency",
            "max Avg(quality)/latency (tie-breaker scalar)",
            frame.assign(_e=eff).sort_values("_e", ascending=False).drop(columns="_e"),
        ),
        (
            "High-K check",
            "largest K, max quality",
            _order(
                frame[frame["pool_k"] == frame["pool_k"].max()], [(quality, False)], "pool_k", eff
            ),
        ),
    ]
    rows = []
    for scenario, rule, pick in picks:
        if isinstance(pick, pd.DataFrame):
            pick = pick.iloc[0] if len(pick) else None
        if pick is None:
            continue
        row: dict[str, Any] = {"scenario": scenario, "rule": rule}
        for c in ("label", "mode", "embedder", "dim", "index", "chunker", "reranker"):
            if c in pick.index:
                row[c] = pick[c]
        row["K"] = pick.get("dynamic") or int(pick["pool_k"])
        row["cost_usd"] = pick[cost]
        row[latency] = pick[latency]
        for m in measures:
            if m in pick.index and not pd.isna(pick[m]):
                row[m] = pick[m]
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- chart frames


def latency_by_k(frame: pd.DataFrame) -> pd.DataFrame:
    """Median over configurations of p50 and p95 latency, per reranker and pool size K
    (fixed-K configurations only).

    Returns
    -------
    DataFrame
        ``reranker``, ``pool_k``, ``stat`` (``"p50"``/``"p95"``), ``latency_ms``.
    """
    _need(frame, "reranker", "pool_k", "latency_p50_ms", "latency_p95_ms")
    fixed = frame[frame["dynamic"].fillna("") == ""] if "dynamic" in frame.columns else frame
    agg = fixed.groupby(["reranker", "pool_k"], as_index=False)[
        ["latency_p50_ms", "latency_p95_ms"]
    ].median()
    long = agg.melt(["reranker", "pool_k"], var_name="stat", value_name="latency_ms")
    long["stat"] = long["stat"].str.replace("latency_", "").str.replace("_ms", "")
    return long


def quality_by_dim(frame: pd.DataFrame, *, quality: str = "quality") -> pd.DataFrame:
    """Best quality per (embedder, vector dimension, mode) among dense and hybrid rows.

    Returns
    -------
    DataFrame
        ``embedder``, ``vector_dim``, ``mode``, ``quality``, ``label`` (the best row's).
    """
    _need(frame, "embedder", "vector_dim", "mode", quality)
    dense = frame[frame["mode"].isin(["dense", "hybrid"])].dropna(subset=[quality])
    if not len(dense):
        return pd.DataFrame(columns=["embedder", "vector_dim", "mode", "quality", "label"])
    best = dense.loc[dense.groupby(["embedder", "vector_dim", "mode"])[quality].idxmax()]
    out = best[["embedder", "vector_dim", "mode", quality, "label"]].rename(
        columns={quality: "quality"}
    )
    return out.sort_values(["embedder", "mode", "vector_dim"]).reset_index(drop=True)
