"""How RA-nWG@K and the retrievers' ranking move with the rarity exponent and the caps.

Dallaire fixes the rarity exponent ``a = 1`` and the caps ``cap4 = 1.0``, ``cap3 = 0.25`` and
reports, in Appendix A, the sensitivity over ``a in {0, 0.5, 1, 2}``, ``cap4 in {0.75, 1.0}`` and
``cap3 in {0.20, 0.25, 0.33}`` (section 2.4, "Hyperparameters: rationale & robustness"). This
module computes that grid for several retrievers on the same graded qrels, so a report shows
whether a conclusion ("retriever X beats Y on RA-nWG@10") depends on the choice.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, section 2.4 and Appendix A.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import evaluate
from ragnb.measures import Measure

__all__ = [
    "DEFAULT_SETTING",
    "GRID_A",
    "GRID_CAP3",
    "GRID_CAP4",
    "check_grid",
    "ranwg_sensitivity",
    "sensitivity_wide",
]

#: Dallaire's defaults (section 2.4): rarity exponent a, cap4, cap3.
DEFAULT_SETTING = (1.0, 1.0, 0.25)
#: The grid of Appendix A.
GRID_A = (0.0, 0.5, 1.0, 2.0)
GRID_CAP4 = (0.75, 1.0)
GRID_CAP3 = (0.20, 0.25, 0.33)

_COLUMNS = [
    "a",
    "cap4",
    "cap3",
    "is_default",
    "retriever",
    "measure",
    "value",
    "n_valid",
    "delta",
    "rank",
    "default_rank",
    "rank_stable",
    "kendall_tau",
]


def _values(name: str, values: Sequence[float], low: float, high: float | None) -> list[float]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InputError(f"{name} must be a list of numbers, got {values!r}", column=name)
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
            raise InputError(f"{name} must hold numbers, got {v!r}", column=name)
        if not np.isfinite(v) or v < low or (high is not None and v > high):
            bound = f"[{low}, {high}]" if high is not None else f">= {low}"
            raise InputError(f"{name} values must lie in {bound}, got {v!r}", column=name)
        out.append(float(v))
    return list(dict.fromkeys(out))


def check_grid(
    a_values: Sequence[float], cap4_values: Sequence[float], cap3_values: Sequence[float]
) -> tuple[list[float], list[float], list[float]]:
    """Check and de-duplicate the grid's values (a >= 0, caps in [0, 1]).

    Returns
    -------
    tuple of 3 lists of float
        ``a``, ``cap4`` and ``cap3`` values, first occurrences in the given order.

    Raises
    ------
    InputError
        Naming the parameter (``sensitivity_a``, ...) of a bad value.
    """
    return (
        _values("sensitivity_a", a_values, 0.0, None),
        _values("sensitivity_cap4", cap4_values, 0.0, 1.0),
        _values("sensitivity_cap3", cap3_values, 0.0, 1.0),
    )


def _kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two score vectors (NaN with fewer than 2 systems or a constant one)."""
    from scipy.stats import kendalltau

    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan")
    return float(kendalltau(a[ok], b[ok]).statistic)


def ranwg_sensitivity(
    qrels: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    k: int,
    *,
    a_values: Sequence[float] = GRID_A,
    cap4_values: Sequence[float] = GRID_CAP4,
    cap3_values: Sequence[float] = GRID_CAP3,
) -> pd.DataFrame:
    """RA-nWG@K of every retriever at every (a, cap4, cap3) of the grid, and its rank.

    Parameters
    ----------
    qrels : DataFrame
        Grades already on Dallaire's 1-5 scale (:func:`ragnb.measures.map_grades`); columns
        ``query_id``, ``doc_id``, ``relevance``.
    runs : mapping of str to DataFrame
        One run per retriever (``query_id``, ``doc_id``, ``score``), in report order.
    k : int
        The cutoff K (the report's headline K).
    a_values : sequence of float >= 0, default (0, 0.5, 1, 2)
        Rarity exponents (``r_g = b_g / p_g**a``; 0 means no rarity).
    cap4_values, cap3_values : sequence of float in [0, 1]
        Caps on ``w4 = r4 / r5`` and ``w3 = r3 / r5``; default (0.75, 1.0) and
        (0.20, 0.25, 0.33).

    Returns
    -------
    DataFrame
        One row per setting and retriever, settings in grid order (the default setting
        ``a = 1, cap4 = 1, cap3 = 0.25`` is always included, ``is_default`` True), columns
        ``a``, ``cap4``, ``cap3``, ``is_default``, ``retriever``, ``measure`` (the canonical
        name, e.g. ``RA-nWG(a=0.5)@10``), ``value`` (macro mean over the ``n_valid`` queries
        where it is defined), ``n_valid``, ``delta`` (value minus the default setting's value),
        ``rank`` (1 = best; ties share the smallest rank), ``default_rank``, ``rank_stable``
        (True when every retriever's rank equals its rank at the default setting) and
        ``kendall_tau`` (tau-b between this setting's values and the default's, over the
        retrievers; NaN with fewer than two retrievers or when one side is constant).

    Raises
    ------
    InputError
        On an empty ``runs``, a non-positive ``k`` or a grid value out of range.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, section 2.4 (weights, caps, defaults) and Appendix A
       (the grid).
    """
    if not runs:
        raise InputError("ranwg_sensitivity needs at least one run")
    k = check_positive_int(k, "k")
    grid_a, grid4, grid3 = check_grid(a_values, cap4_values, cap3_values)
    settings = list(product(grid_a, grid4, grid3))
    if DEFAULT_SETTING not in settings:
        settings.append(DEFAULT_SETTING)
    measures = {s: Measure("RA-nWG", k, a=s[0], cap4=s[1], cap3=s[2]) for s in settings}
    names = list(dict.fromkeys(measures.values()))
    rows = []
    for retriever, run in runs.items():
        agg = evaluate(qrels, run, names).aggregate.set_index("measure")
        for s, m in measures.items():
            name = str(m)
            rows.append(
                {
                    "a": s[0],
                    "cap4": s[1],
                    "cap3": s[2],
                    "is_default": s == DEFAULT_SETTING,
                    "retriever": retriever,
                    "measure": name,
                    "value": float(agg.at[name, "value"]),
                    "n_valid": int(agg.at[name, "n_valid"]),
                }
            )
    return _ranked(pd.DataFrame(rows), list(runs))


def _ranked(frame: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Add ``delta``, ``rank``, ``default_rank``, ``rank_stable`` and ``kendall_tau``."""
    keys = ["a", "cap4", "cap3"]
    frame["rank"] = (
        frame.groupby(keys, sort=False)["value"].rank(ascending=False, method="min").astype(float)
    )
    default = frame[frame["is_default"]].set_index("retriever")
    frame["delta"] = frame["value"] - frame["retriever"].map(default["value"])
    frame["default_rank"] = frame["retriever"].map(default["rank"])
    base = default["value"].reindex(order).to_numpy(dtype=float)
    stable, tau = {}, {}
    for key, g in frame.groupby(keys, sort=False):
        g = g.set_index("retriever").reindex(order)
        same = g["rank"].to_numpy() == g["default_rank"].to_numpy()
        stable[key] = bool(np.all(same))
        tau[key] = _kendall_tau(g["value"].to_numpy(dtype=float), base)
    idx = list(zip(frame["a"], frame["cap4"], frame["cap3"], strict=True))
    frame["rank_stable"] = [stable[i] for i in idx]
    frame["kendall_tau"] = [tau[i] for i in idx]
    return frame[_COLUMNS]


def sensitivity_wide(grid: pd.DataFrame) -> pd.DataFrame:
    """The grid as one row per setting: each retriever's RA-nWG@K and rank, then
    ``rank stable`` and ``Kendall tau`` against the default setting.

    Parameters
    ----------
    grid : DataFrame
        :func:`ranwg_sensitivity`'s output.

    Returns
    -------
    DataFrame
        Index (``a``, ``cap4``, ``cap3``) in grid order; columns ``<retriever>`` (value),
        ``rank <retriever>``, ``rank stable`` ("yes"/"no", "default" on the default row) and
        ``Kendall tau``. Empty when ``grid`` is.
    """
    if grid.empty:
        return pd.DataFrame()
    keys = ["a", "cap4", "cap3"]
    order = list(dict.fromkeys(grid["retriever"]))
    values = grid.pivot_table(index=keys, columns="retriever", values="value", sort=False)
    ranks = grid.pivot_table(index=keys, columns="retriever", values="rank", sort=False)
    out = values[order].copy()
    for r in order:
        out[f"rank {r}"] = ranks[r].astype("Int64")
    per_setting = grid.drop_duplicates(keys).set_index(keys)
    stable = per_setting["rank_stable"].map({True: "yes", False: "no"})
    stable[per_setting["is_default"]] = "default"
    out["rank stable"] = stable.reindex(out.index)
    out["Kendall tau"] = per_setting["kendall_tau"].reindex(out.index)
    return out
