"""Tables about a golden set's coverage: Judged@K of runs, overlap of the pool systems and the
grades at each stage (what notebook 02 charts)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

__all__ = ["grade_distribution", "judged_table", "pool_overlap"]


def judged_table(
    qrels: pd.DataFrame, runs: Mapping[str, pd.DataFrame], cutoffs: Sequence[int]
) -> pd.DataFrame:
    """Judged@K of each run on ``qrels`` (share of the top K that has a judgement).

    Returns
    -------
    DataFrame
        ``system``, ``k``, ``judged`` (float in [0, 1], macro mean over the qrels' queries),
        ``n_queries``.
    """
    from ragnb.evaluation.evaluate import evaluate

    ks = sorted({int(k) for k in cutoffs})
    rows = []
    for name, run in runs.items():
        agg = evaluate(qrels, run, [f"Judged@{k}" for k in ks]).aggregate
        for k, v, n in zip(ks, agg["value"], agg["n_queries"], strict=True):
            rows.append((str(name), k, float(v), int(n)))
    return pd.DataFrame(rows, columns=["system", "k", "judged", "n_queries"])


def pool_overlap(pools: pd.DataFrame) -> pd.DataFrame:
    """Share of each system's candidates that each other system also returned.

    Parameters
    ----------
    pools : DataFrame
        S2's frame.

    Returns
    -------
    DataFrame
        One row per ordered pair of systems (the diagonal included): ``system_a``, ``system_b``,
        ``common`` (int, (query, document) pairs both returned), ``n_a`` (pairs ``system_a``
        returned), ``share`` (``common / n_a``: not symmetric when the systems return different
        numbers of documents).
    """
    sets = {
        name: set(zip(g["query_id"], g["doc_id"], strict=True))
        for name, g in pools.groupby("system", sort=False)
    }
    rows = []
    for a, sa in sets.items():
        for b, sb in sets.items():
            common = len(sa & sb)
            rows.append((a, b, common, len(sa), common / len(sa) if sa else math.nan))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "common", "n_a", "share"])


def grade_distribution(
    grades: pd.DataFrame, pool: pd.DataFrame, order: pd.DataFrame
) -> pd.DataFrame:
    """Grades of the candidates (S4), the pruned pool (S5) and the refined top (S6).

    Returns
    -------
    DataFrame
        ``set`` ("candidates", "pruned pool", "refined top"), ``grade`` (str: the grade, or
        "invalid"), ``count`` (int), ``share`` (float, of the set).
    """
    sets = [
        ("candidates", grades["grade"].where(grades["valid"])),
        ("pruned pool", pool["grade"]),
        ("refined top", order.loc[order["in_top"], "grade"]),
    ]
    rows = []
    for order, (name, g) in enumerate(sets):
        values = pd.to_numeric(g, errors="coerce").astype("Float64")
        for v, n in values.value_counts(dropna=False).items():
            label = "invalid" if pd.isna(v) else str(int(v))
            key = math.inf if pd.isna(v) else float(v)
            rows.append((order, key, name, label, int(n), n / len(values)))
    out = pd.DataFrame(rows, columns=["_o", "_k", "set", "grade", "count", "share"])
    out = out.sort_values(["_o", "_k"], kind="stable").drop(columns=["_o", "_k"])
    return out.reset_index(drop=True)
