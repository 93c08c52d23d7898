"""Agreement between two runs' top-K lists: overlap and Fagin, Kumar and Sivakumar's K^(p)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.frames.schema import RunOrder
from ragnb.stats.paired import RESAMPLE_BLOCK


class KendallTopK(NamedTuple):
    """Fagin et al.'s Kendall distance between two top-k lists.

    Attributes
    ----------
    k_p : float
        The raw distance K^(p), in [0, k_a k_b + p (C(k_a, 2) + C(k_b, 2))].
    distance : float in [0, 1]
        ``k_p`` divided by its maximum (reached when the lists are disjoint); NaN if that
        maximum is 0.
    tau : float in [-1, 1]
        ``1 - 2 * distance``.
    """

    k_p: float
    distance: float
    tau: float


def _kendall_kp(pos_a: np.ndarray, pos_b: np.ndarray, valid: np.ndarray, p: float) -> np.ndarray:
    """K^(p) per row: ``pos_*`` int arrays of shape (Q, M), the 1-based rank of each union
    member in each list (k + 1 when absent), ``valid`` (Q, M) marks the real members (the rest
    is padding). Returns shape (Q,).

    A pair is discordant when the two lists order it oppositely, with an absent member ranked
    after every present one: that covers Fagin et al.'s cases 1-3 (penalty 1 or 0). A pair tied
    in one list (both members absent from it, case 4) costs p.
    """
    q, m = pos_a.shape
    out = np.zeros(q)
    if m == 0:
        return out
    rows = max(1, RESAMPLE_BLOCK // (m * m))
    for start in range(0, q, rows):
        stop = min(q, start + rows)
        a, b, v = pos_a[start:stop], pos_b[start:stop], valid[start:stop]
        da = np.sign(a[:, :, None] - a[:, None, :])  # (block, M, M)
        db = np.sign(b[:, :, None] - b[:, None, :])
        pair = v[:, :, None] & v[:, None, :]
        discordant = ((da * db) < 0) & pair
        tied_in_one = ((da == 0) != (db == 0)) & pair  # excludes the diagonal
        # each unordered pair appears twice in the (M, M) matrices
        out[start:stop] = (discordant.sum(axis=(1, 2)) + p * tied_in_one.sum(axis=(1, 2))) / 2
    return out


def _kp_maximum(k_a: np.ndarray, k_b: np.ndarray, p: float) -> np.ndarray:
    """max K^(p) for lists of lengths k_a, k_b: disjoint lists, k_a k_b + p (C(k_a,2)+C(k_b,2))."""
    return k_a * k_b + p * (k_a * (k_a - 1) + k_b * (k_b - 1)) / 2


def _check_p(p: float) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise InputError(f"penalty p must be a number in [0, 1], got {p!r}") from None
    if not 0.0 <= value <= 1.0:
        raise InputError(f"penalty p must lie in [0, 1], got {p!r}")
    return value


def kendall_top_k(list_a: Sequence[str], list_b: Sequence[str], *, p: float = 0.5) -> KendallTopK:
    """Kendall distance with penalty parameter p between two top-k lists (Fagin et al. 2003).

    The lists may hold different members. Over every unordered pair {i, j} of the union D of
    the two lists, the penalty is (Fagin et al., section 3.1, the four cases of K̄^(p)_{i,j}):

    1. i and j in both lists: 1 if the lists order them oppositely, else 0;
    2. i and j in one list, only i in the other: 1 if j is ahead of i in the first list, else 0
       (the other list implicitly puts the present i ahead of the absent j);
    3. i only in one list, j only in the other: 1;
    4. i and j in one list, neither in the other: p (p = 0 optimistic, 1/2 neutral).

    ``K^(p) = sum of the penalties``. ragnb normalises it by its maximum, which disjoint lists
    reach: ``k_a k_b + p (C(k_a, 2) + C(k_b, 2))`` (for k_a = k_b = k, ``k² + p k (k - 1)``),
    giving ``distance`` in [0, 1] (0 for identical lists, 1 for disjoint ones) and
    ``tau = 1 - 2 distance`` in [-1, 1]. Note that a reversed list is not at distance 1: it
    keeps the same members. The normalisation and tau are ragnb's, not the paper's.

    Parameters
    ----------
    list_a, list_b : sequence of str
        Top-k lists, best first, without repeated members; lengths may differ (then the same
        case rules and the maximum above apply).
    p : float in [0, 1], default 0.5
        Penalty for a pair that one list ranks and the other does not hold at all.

    Returns
    -------
    KendallTopK
        ``k_p``, ``distance`` (NaN when the maximum is 0: both lists empty, or p = 0 and one
        list empty), ``tau``.

    Raises
    ------
    InputError
        If a list repeats a member or p is outside [0, 1].

    References
    ----------
    Fagin, R., Kumar, R., Sivakumar, D. (2003). Comparing top k lists. SIAM Journal on
    Discrete Mathematics 17(1), 134-160, section 3.1 (K^(p)).

    Examples
    --------
    A = (a, b, c), B = (b, a, d). Pairs: {a,b} case 1 swapped: 1; {a,c}, {b,c}: case 2, the
    shared member is ahead in A: 0; {a,d}, {b,d}: case 2 in B: 0; {c,d} case 3: 1. K = 2; the
    maximum is 3·3 + ½·(3 + 3) = 12, so distance = 2/12 and tau = 1 - 4/12:

    >>> r = kendall_top_k(["a", "b", "c"], ["b", "a", "d"])
    >>> r.k_p, round(r.distance, 4), round(r.tau, 4)
    (2.0, 0.1667, 0.6667)
    """
    p = _check_p(p)
    la, lb = [str(x) for x in list_a], [str(x) for x in list_b]
    for name, lst in (("list_a", la), ("list_b", lb)):
        if len(set(lst)) != len(lst):
            dup = next(x for i, x in enumerate(lst) if x in lst[:i])
            raise InputError(f"{name} holds {dup!r} more than once")
    union = list(dict.fromkeys(la + lb))
    ra = {d: i + 1 for i, d in enumerate(la)}
    rb = {d: i + 1 for i, d in enumerate(lb)}
    absent = max(len(la), len(lb)) + 1
    pos_a = np.array([[ra.get(d, absent) for d in union]], dtype=np.int64).reshape(1, -1)
    pos_b = np.array([[rb.get(d, absent) for d in union]], dtype=np.int64).reshape(1, -1)
    valid = np.ones_like(pos_a, dtype=bool)
    kp = float(_kendall_kp(pos_a, pos_b, valid, p)[0])
    top = float(_kp_maximum(np.array(len(la)), np.array(len(lb)), p))
    dist = kp / top if top > 0 else float("nan")
    return KendallTopK(kp, dist, 1.0 - 2.0 * dist)


@dataclass(frozen=True, eq=False)
class TopKAgreement:
    """How much two runs agree on their top K, per query and on average.

    Attributes
    ----------
    k : int
    p : float
        The penalty parameter of K^(p).
    order : {"score", "file"}
        How each run was ordered (:func:`ragnb.frames.index.sort_run`).
    per_query : DataFrame
        One row per query of either run (sorted): ``query_id`` (str), ``k_a``, ``k_b`` (int,
        list lengths, at most K; 0 when the query is absent from that run), ``n_common`` (int),
        ``overlap`` (float in [0, 1], ``n_common / K``), ``k_p`` (float, raw K^(p)),
        ``kendall_distance`` (float in [0, 1], NaN when undefined), ``kendall_tau`` (float in
        [-1, 1], NaN when undefined).
    aggregate : DataFrame
        ``measure`` (``overlap``, ``kendall_distance``, ``kendall_tau``), ``value`` (mean over
        the queries where it is defined), ``n_valid``, ``n_queries``.
    """

    k: int
    p: float
    order: str
    per_query: pd.DataFrame
    aggregate: pd.DataFrame

    def aggregate_to_dict(self) -> dict[str, float]:
        """``{"overlap": ..., "kendall_distance": ..., "kendall_tau": ...}``."""
        return {
            str(m): float(v)
            for m, v in zip(self.aggregate["measure"], self.aggregate["value"], strict=True)
        }


def top_k_agreement(
    run_a: pd.DataFrame,
    run_b: pd.DataFrame,
    k: int = 10,
    *,
    p: float = 0.5,
    order: RunOrder = "score",
) -> TopKAgreement:
    """Overlap@K and Fagin et al.'s top-K Kendall tau between two runs, per query.

    Each run is put in evaluation order (:func:`ragnb.frames.index.sort_run`: by default score
    descending, ties by ``doc_id`` descending, as trec_eval) and cut at K. Per query:
    ``overlap = |top-K(A) ∩ top-K(B)| / K`` and the normalised K^(p) of :func:`kendall_top_k`.
    A query missing from one run has an empty list there: overlap 0, and a Kendall distance of 1
    when the other list holds two or more documents and p > 0 (NaN otherwise).

    Parameters
    ----------
    run_a, run_b : DataFrame
        Run frames (``query_id``, ``doc_id``, ``score``; optionally ``rank``).
    k : int, default 10
        The cutoff K (>= 1).
    p : float in [0, 1], default 0.5
        Penalty of K^(p) for a pair one list ranks and the other lacks entirely.
    order : {"score", "file"}, default "score"

    Returns
    -------
    TopKAgreement
        ``per_query`` and ``aggregate`` frames (columns documented there).

    Raises
    ------
    InputError
        On a malformed run, k < 1, or p outside [0, 1].

    References
    ----------
    Fagin, R., Kumar, R., Sivakumar, D. (2003). Comparing top k lists. SIAM Journal on
    Discrete Mathematics 17(1), 134-160, section 3.1.

    Examples
    --------
    q1: A = (a, b, c), B = (b, a, d): two shared of K = 3, K^(1/2) = 2 of at most 12.

    >>> a = pd.DataFrame({"query_id": "q1", "doc_id": list("abc"), "score": [3.0, 2.0, 1.0]})
    >>> b = pd.DataFrame({"query_id": "q1", "doc_id": list("bad"), "score": [3.0, 2.0, 1.0]})
    >>> row = top_k_agreement(a, b, k=3).per_query.iloc[0]
    >>> round(float(row["overlap"]), 4), float(row["k_p"]), round(float(row["kendall_tau"]), 4)
    (0.6667, 2.0, 0.6667)
    """
    k = check_positive_int(k, "k")
    p = _check_p(p)
    tops = []
    for run in (run_a, run_b):
        ordered = sort_run(run, order, warn=False).run
        tops.append(ordered.loc[ordered["rank"] <= k, ["query_id", "doc_id", "rank"]])
    merged = tops[0].merge(tops[1], on=["query_id", "doc_id"], how="outer", suffixes=("_a", "_b"))
    merged = merged.sort_values("query_id", kind="stable").reset_index(drop=True)
    codes, qids = pd.factorize(merged["query_id"], sort=True)
    slot = merged.groupby(codes, sort=False).cumcount().to_numpy()
    n_q = len(qids)
    width = int(slot.max()) + 1 if len(slot) else 0
    absent = k + 1
    pos_a = np.full((n_q, width), absent, dtype=np.int64)
    pos_b = np.full((n_q, width), absent, dtype=np.int64)
    valid = np.zeros((n_q, width), dtype=bool)
    rank_a = merged["rank_a"].to_numpy(dtype=np.float64)
    rank_b = merged["rank_b"].to_numpy(dtype=np.float64)
    pos_a[codes, slot] = np.where(np.isnan(rank_a), absent, rank_a).astype(np.int64)
    pos_b[codes, slot] = np.where(np.isnan(rank_b), absent, rank_b).astype(np.int64)
    valid[codes, slot] = True
    in_a = (pos_a <= k) & valid
    in_b = (pos_b <= k) & valid
    k_a = in_a.sum(axis=1)
    k_b = in_b.sum(axis=1)
    common = (in_a & in_b).sum(axis=1)
    kp = _kendall_kp(pos_a, pos_b, valid, p)
    top = _kp_maximum(k_a, k_b, p)
    dist = np.full(n_q, np.nan)
    np.divide(kp, top, out=dist, where=top > 0)
    per_query = pd.DataFrame(
        {
            "query_id": pd.Series(np.asarray(qids, dtype=object), dtype=object),
            "k_a": k_a.astype(np.int64),
            "k_b": k_b.astype(np.int64),
            "n_common": common.astype(np.int64),
            "overlap": common / k,
            "k_p": kp,
            "kendall_distance": dist,
            "kendall_tau": 1.0 - 2.0 * dist,
        }
    )
    rows = []
    for name in ("overlap", "kendall_distance", "kendall_tau"):
        col = per_query[name]
        rows.append((name, float(col.mean()) if col.notna().any() else np.nan, col.notna().sum()))
    aggregate = pd.DataFrame(rows, columns=["measure", "value", "n_valid"])
    aggregate["n_valid"] = aggregate["n_valid"].astype(np.int64)
    aggregate["n_queries"] = np.int64(n_q)
    return TopKAgreement(k=k, p=p, order=order, per_query=per_query, aggregate=aggregate)
