"""The Primer correlation study: retrieval measures against the LLM grade of the response.

For each graded sample (a query, an embedder's top K of ``Nc`` candidates holding ``Np``
positives, and the grade of the answer written from that top K) the measures F, F_e, T, T_u
(each over a grid of alpha) and within-K nDCG are computed with the kernels of
:mod:`ragnb.measures.primer`; each measure's correlation with the grade (Spearman, Pearson,
Kendall tau-b and tau-c) is maximised over alpha, per embedder, subset and segment (narrow
``K < Np`` vs wide ``K >= Np``; ``K/Np`` rounded to one decimal, segments of at least
``min_segment`` samples). Differences between two measures' correlations get bootstrap
intervals. Acc|Hit (Dallaire 2.3.1) sets the grade of samples whose top K holds every positive
beside the grade of all samples.

References
----------
.. [1] S. Schwartz, O. Vasilyev and R. Sawaya, "How important is Recall for Measuring Retrieval
   Quality?", Primer: Section 2.1 (measures, eqs. 1-4), Sections 2.4 and 3 (correlations
   maximised over alpha, segments by K/N_p of at least 300 samples, narrow/wide), Appendix C.
.. [2] Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs" (arXiv 2511.09545), Section 2.3.1 (Acc|Hit@K) and 2.4
   (Hit@K).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from ragnb.core.validation import check_int_at_least
from ragnb.errors import InputError
from ragnb.measures.kernel import RankingArrays
from ragnb.measures.primer import (
    f_e_per_query,
    f_per_query,
    ndcg_in_k_per_query,
    t_per_query,
    t_u_per_query,
)
from ragnb.studies.correlation.data import RANKED_KEY, subset_of

__all__ = [
    "ALPHA_MEASURES",
    "MEASURES",
    "METHODS",
    "SampleSet",
    "acc_given_hit",
    "alpha_grid",
    "best_over_alpha",
    "correlate",
    "correlation_table",
    "difference_table",
    "grade_distribution",
    "measure_by_key",
    "measure_matrix",
    "sample_set",
    "segments",
    "simulate_grades",
]

#: The measures with a parameter alpha (Primer's F, F_e, T and T_u).
ALPHA_MEASURES = ("F", "F_e", "T", "T_u")
#: Every measure the study correlates with the graded samples: the alpha measures, then
#: within-K nDCG, precision and recall.
MEASURES = (*ALPHA_MEASURES, "nDCG_inK", "P", "R")
METHODS = ("spearman", "pearson", "kendall_b", "kendall_c")
_KERNELS = {"F": f_per_query, "F_e": f_e_per_query, "T": t_per_query, "T_u": t_u_per_query}


def alpha_grid(steps: int = 350, base: float = 0.95) -> np.ndarray:
    """The alpha grid of the study: ``base**i`` and ``1 - base**i`` for ``i = 1..steps``, 0, 1.

    Parameters
    ----------
    steps : int, default 350
    base : float in (0, 1), default 0.95

    Returns
    -------
    ndarray of float64, shape (n_alpha,)
        Sorted, without duplicates, in [0, 1] (702 values by default: dense near 0 and 1).

    Raises
    ------
    InputError
        On ``steps < 1`` or ``base`` outside (0, 1).

    Examples
    --------
    >>> g = alpha_grid(2, 0.5)
    >>> g.tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError(f"steps must be an integer >= 1, got {steps!r}")
    if not 0 < base < 1:
        raise InputError(f"base must be in (0, 1), got {base!r}")
    p = base ** np.arange(1, steps + 1, dtype=np.float64)
    return np.unique(np.concatenate([p, 1 - p, [0.0, 1.0]]))


# ----------------------------------------------------------------------------- samples


@dataclass(frozen=True, eq=False)
class SampleSet:
    """Graded samples with their positive labels as padded arrays.

    Attributes
    ----------
    frame : DataFrame
        One row per graded sample: ``id``, ``subset``, ``E``, ``Nc``, ``Np``, ``K``, ``n_p``
        (positives in the top K), ``P``, ``R``, ``ratio`` (``K/Np`` rounded to one decimal),
        ``width`` (``"narrow"``: ``K < Np``; ``"wide"``), ``complete_hit`` (every positive is in
        the top K), ``has_2k`` (the labels reach rank ``min(2K, Nc)``: F_e is defined),
        ``grade`` (float, NaN when missing).
    labels : ndarray of int8, shape (n_samples, width)
        1 where the candidate at that rank is a positive: the ranked sample's ``rank[:2K]`` when
        the ranked samples are given, else the graded ``inK``.
    filled : ndarray of bool, shape (n_samples, width)
        Rank positions that hold a candidate.
    """

    frame: pd.DataFrame
    labels: np.ndarray
    filled: np.ndarray

    def __len__(self) -> int:
        return len(self.frame)

    def take(self, index: np.ndarray) -> SampleSet:
        """The samples at the positions ``index`` (int array or bool mask)."""
        idx = np.flatnonzero(index) if np.asarray(index).dtype == bool else np.asarray(index)
        return SampleSet(
            self.frame.iloc[idx].reset_index(drop=True), self.labels[idx], self.filled[idx]
        )


def sample_set(graded: pd.DataFrame, ranked: pd.DataFrame | None = None) -> SampleSet:
    """Build the :class:`SampleSet` of graded samples (and their ranked samples, for F_e).

    Parameters
    ----------
    graded : DataFrame
        Graded samples (:func:`ragnb.studies.correlation.read_graded`), or graded-sample skeletons
        (:func:`ragnb.studies.correlation.data.graded_labels`) with a ``grade`` column added.
    ranked : DataFrame, optional
        The ranked samples: F_e needs ``rank[:2K]``; without them F_e is NaN.

    Returns
    -------
    SampleSet

    Raises
    ------
    InputError
        When a graded sample's ranked sample is missing from ``ranked``.
    """
    g = graded.reset_index(drop=True)
    n = len(g)
    ks = g["K"].to_numpy(dtype=np.int64)
    nps = g["Np"].to_numpy(dtype=np.int64)
    ncs = g["Nc"].to_numpy(dtype=np.int64)
    if ranked is not None:
        full = {tuple(r[k] for k in RANKED_KEY): r["rank"] for r in ranked.to_dict("records")}
        rows = []
        for r in g[list(RANKED_KEY)].itertuples(index=False):
            key = tuple(r)
            if key not in full:
                raise InputError(
                    f"graded sample {dict(zip(RANKED_KEY, key, strict=True))} has no ranked sample",
                    query_id=str(key[0]),
                )
            rows.append(full[key])
        widths = np.minimum(2 * ks, ncs)
        ranks = [list(r)[:w] for r, w in zip(rows, widths, strict=True)]
        has_2k = np.ones(n, dtype=bool)
    else:
        ranks = [list(r) for r in g["rank"]]
        has_2k = np.zeros(n, dtype=bool)
    width = max((len(r) for r in ranks), default=0)
    labels = np.zeros((n, width), dtype=np.int8)
    filled = np.zeros((n, width), dtype=bool)
    for i, r in enumerate(ranks):
        a = np.asarray(r, dtype=np.int64)
        labels[i, : len(a)] = a < nps[i]
        filled[i, : len(a)] = True
    n_p = (labels * (np.arange(width) < ks[:, None])).sum(axis=1) if width else np.zeros(n)
    grade = g["grade"].to_numpy(dtype=np.float64) if "grade" in g.columns else np.full(n, np.nan)
    frame = pd.DataFrame(
        {
            "id": g["id"].astype(str).to_numpy(dtype=object),
            "subset": [subset_of(i) for i in g["id"]],
            "E": g["E"].astype(str).to_numpy(dtype=object),
            "Nc": ncs,
            "Np": nps,
            "K": ks,
            "n_p": n_p.astype(np.int64),
            "P": n_p / ks,
            "R": n_p / nps,
            "ratio": np.round(ks / nps, 1),
            "width": np.where(ks < nps, "narrow", "wide"),
            "complete_hit": n_p == nps,
            "has_2k": has_2k,
            "grade": grade,
        }
    )
    return SampleSet(frame, labels, filled)


def _arrays(ss: SampleSet, index: np.ndarray, k: int) -> RankingArrays:
    """RankingArrays over the samples ``index`` (all with cutoff ``k``): what the kernels read."""
    width = min(ss.labels.shape[1], 2 * k)
    labels = ss.labels[index, :width].astype(np.int64)
    filled = ss.filled[index, :width]
    f = ss.frame.iloc[index]
    nps = f["Np"].to_numpy(dtype=np.int64)
    ncs = f["Nc"].to_numpy(dtype=np.int64)
    ids = f["id"].to_numpy(dtype=object)
    return RankingArrays(
        query_ids=ids,
        grades=labels,
        judged=filled,
        filled=filled,
        ideal=np.zeros((len(index), 0), dtype=np.int64),
        n_judged=ncs,
        n_retrieved=filled.sum(axis=1).astype(np.int64),
        grade_levels=np.array([0, 1], dtype=np.int64),
        level_counts=np.stack([ncs - nps, nps], axis=1),
        order="file",
        depth_cap=None,
        n_rank_disagreements=0,
        n_run_queries_without_qrels=0,
    )


def measure_matrix(ss: SampleSet, measure: str, alphas: np.ndarray | None = None) -> np.ndarray:
    """A measure of every sample, for every alpha at once.

    Parameters
    ----------
    ss : SampleSet
    measure : {"F", "F_e", "T", "T_u", "nDCG_inK", "P", "R"}
        F, F_e, T, T_u by the kernels of :mod:`ragnb.measures.primer` (Primer eqs. 2-4; F_e with
        ``N_p`` estimated as the positives in ``rank[:2K]``); nDCG_inK is the within-K nDCG of
        the ``inK`` labels (0 when no positive is in the top K).
    alphas : ndarray of shape (n_alpha,), optional
        Needed for the alpha measures.

    Returns
    -------
    ndarray of float64, shape (n_alpha, n_samples)
        One row for nDCG_inK, P, R. F_e is NaN for samples without ``rank[:2K]``.

    Raises
    ------
    InputError
        On an unknown measure or missing alphas.
    """
    if measure not in MEASURES:
        raise InputError(f"measure must be one of {MEASURES}, got {measure!r}")
    n = len(ss)
    if measure in ("P", "R"):
        return ss.frame[measure].to_numpy(dtype=np.float64)[None, :]
    if measure in ALPHA_MEASURES:
        if alphas is None:
            raise InputError(f"{measure} needs alphas")
        a = np.asarray(alphas, dtype=np.float64)[:, None]
        out = np.empty((a.shape[0], n))
    else:
        out = np.empty((1, n))
    ks = ss.frame["K"].to_numpy()
    for k in np.unique(ks):
        idx = np.flatnonzero(ks == k)
        arrays = _arrays(ss, idx, int(k))
        if measure in ALPHA_MEASURES:
            out[:, idx] = _KERNELS[measure](arrays, int(k), alpha=cast(Any, a), rel=1)
        else:
            out[:, idx] = ndcg_in_k_per_query(arrays, int(k), rel=1)
    if measure == "F_e":
        out[:, ~ss.frame["has_2k"].to_numpy()] = np.nan
    return out


# ----------------------------------------------------------------------------- correlations


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``x`` (m, n) with ``y`` (n,); NaN for constant rows."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    num = xc @ yc
    den = np.sqrt((xc * xc).sum(axis=1) * (yc @ yc))
    const = (np.ptp(x, axis=1) == 0) | (np.ptp(y) == 0)
    out = np.full(x.shape[0], np.nan)
    ok = ~const & (den > 0)
    out[ok] = num[ok] / den[ok]
    return np.clip(out, -1.0, 1.0)


def correlate(
    x: np.ndarray,
    y: np.ndarray,
    method: str = "spearman",
    *,
    max_samples: int = 0,
    seed: int = 0,
) -> np.ndarray:
    """Correlation of each row of ``x`` with ``y``.

    Parameters
    ----------
    x : ndarray of shape (n_rows, n_samples)
        A measure for each alpha (:func:`measure_matrix`).
    y : ndarray of shape (n_samples,)
        The grade.
    method : {"spearman", "pearson", "kendall_b", "kendall_c"}
        Spearman is Pearson on average ranks (``scipy.stats.rankdata``), vectorised over rows;
        Kendall tau-b and tau-c are ``scipy.stats.kendalltau(variant=...)``, computed once per
        distinct ranking of the row (rows that order the samples alike share one value, exactly).
    max_samples : int, default 0
        Kendall only: use a random subset of this many samples (0: all), drawn with ``seed``;
        the same subset for every row.
    seed : int, default 0

    Returns
    -------
    ndarray of float64, shape (n_rows,)
        NaN where a row or ``y`` is constant.

    Raises
    ------
    InputError
        On an unknown method or mismatched shapes.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64)
    if x.shape[1] != y.shape[0]:
        raise InputError(f"x has {x.shape[1]} samples, y {y.shape[0]}")
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if x.shape[1] < 2:
        return np.full(x.shape[0], np.nan)
    if method == "pearson":
        return _pearson_rows(x, y)
    if method == "spearman":
        return _pearson_rows(stats.rankdata(x, axis=1), stats.rankdata(y))
    if max_samples and x.shape[1] > max_samples:
        pick = np.sort(np.random.default_rng(seed).choice(x.shape[1], max_samples, replace=False))
        x, y = x[:, pick], y[pick]
    ranks = stats.rankdata(x, axis=1, method="dense")
    uniq, inverse = np.unique(ranks, axis=0, return_inverse=True)
    variant = method[-1]
    values = np.full(uniq.shape[0], np.nan)
    if np.ptp(y) > 0:
        for i, row in enumerate(uniq):
            if np.ptp(row) > 0:
                values[i] = stats.kendalltau(row, y, variant=variant).statistic
    return values[np.asarray(inverse).ravel()]


def _measure_keys(ss: SampleSet, measure: str) -> np.ndarray:
    """Integer features that determine ``measure`` for each sample, shape (n_samples, d)."""
    f = ss.frame
    k = f["K"].to_numpy(dtype=np.int64)
    cols = [k, f["n_p"].to_numpy(dtype=np.int64)]
    if measure in ("F", "R"):
        cols.append(f["Np"].to_numpy(dtype=np.int64))
    elif measure == "F_e":
        w = ss.labels.shape[1]
        in_2k = np.arange(w)[None, :] < np.minimum(2 * k, w)[:, None]
        cols.append((ss.labels * in_2k).sum(axis=1).astype(np.int64))
        cols.append(f["has_2k"].to_numpy(dtype=np.int64))
    elif measure == "nDCG_inK":
        w = ss.labels.shape[1]
        in_k = np.arange(w)[None, :] < k[:, None]
        return np.column_stack([k, (ss.labels * in_k).astype(np.int64)])
    return np.column_stack(cols)


def _average_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) that each of ``values`` (n_rows, m) would get,
    row by row, in the data where column u occurs ``counts[u]`` times."""
    v = np.atleast_2d(values)
    order = np.argsort(v, axis=1, kind="stable")
    sv = np.take_along_axis(v, order, axis=1)
    sc = counts[order]
    after = np.cumsum(sc, axis=1)
    before = after - sc
    ones = np.ones((v.shape[0], 1), dtype=bool)
    first = np.concatenate([ones, sv[:, 1:] != sv[:, :-1]], axis=1)
    last = np.concatenate([first[:, 1:], ones], axis=1)
    start = np.maximum.accumulate(np.where(first, before, 0.0), axis=1)
    end = np.minimum.accumulate(np.where(last, after, np.inf)[:, ::-1], axis=1)[:, ::-1]
    out = np.empty(v.shape, dtype=np.float64)
    np.put_along_axis(out, order, (start + 1 + end) / 2, axis=1)
    return out


def _grouped_correlate(
    xu: np.ndarray,
    inverse: np.ndarray,
    y: np.ndarray,
    method: str,
    *,
    max_samples: int = 0,
    seed: int = 0,
) -> np.ndarray:
    """:func:`correlate` of ``xu[:, inverse]`` with ``y`` without expanding the samples.

    ``xu`` (n_rows, m) holds the measure on m distinct feature tuples and ``inverse`` (n,) maps
    each sample to its tuple; the sums Pearson needs are taken per tuple (exact, same ranks)."""
    m = xu.shape[1]
    if len(y) < 2:
        return np.full(xu.shape[0], np.nan)
    if method.startswith("kendall"):
        if max_samples and len(y) > max_samples:
            pick = np.sort(np.random.default_rng(seed).choice(len(y), max_samples, replace=False))
            inverse, y = inverse[pick], y[pick]
        ranks = stats.rankdata(xu, axis=1, method="dense")
        uniq, back = np.unique(ranks, axis=0, return_inverse=True)
        values = correlate(uniq[:, inverse], y, method)
        return values[np.asarray(back).ravel()]
    counts = np.bincount(inverse, minlength=m).astype(np.float64)
    if method == "spearman":
        rx, ry = _average_ranks(xu, counts), stats.rankdata(y)
    else:
        rx, ry = xu, y
    n = float(len(y))
    s = np.bincount(inverse, weights=ry, minlength=m)
    sx, sxx, sxy = rx @ counts, (rx * rx) @ counts, rx @ s
    sy, syy = ry.sum(), ry @ ry
    cov = sxy - sx * sy / n
    var_x = sxx - sx * sx / n
    var_y = syy - sy * sy / n
    out = np.full(xu.shape[0], np.nan)
    present = counts > 0
    ok = (np.ptp(xu[:, present], axis=1) > 0) & (var_x > 0) & (np.ptp(y) > 0)
    out[ok] = cov[ok] / np.sqrt(var_x[ok] * var_y)
    return np.clip(out, -1.0, 1.0)


def measure_by_key(
    ss: SampleSet, measure: str, alphas: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The measure on the distinct feature tuples of the samples, and each sample's tuple.

    Returns
    -------
    values : ndarray of float64, shape (n_rows, m)
        As :func:`measure_matrix`, on one representative sample per tuple.
    inverse : ndarray of int, shape (n_samples,)
        ``measure_matrix(ss, measure, alphas) == values[:, inverse]``.
    """
    keys = _measure_keys(ss, measure)
    _, rep, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return measure_matrix(ss.take(rep), measure, alphas), np.asarray(inverse).ravel()


def best_over_alpha(values: np.ndarray, alphas: np.ndarray | None) -> tuple[float, float]:
    """The largest correlation and its alpha (the first, i.e. smallest, on ties).

    Returns
    -------
    (float, float)
        ``(correlation, alpha)``; ``(nan, nan)`` when every value is NaN; alpha is NaN for
        measures without one.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or np.all(np.isnan(v)):
        return float("nan"), float("nan")
    i = int(np.nanargmax(v))
    return float(v[i]), float("nan") if alphas is None or v.size == 1 else float(alphas[i])


# ----------------------------------------------------------------------------- segments


def segments(
    ss: SampleSet, *, min_segment: int = 300, by: Sequence[str] = ("subset", "E")
) -> list[tuple[dict[str, Any], np.ndarray]]:
    """The study's segments: all samples, narrow/wide, and K/Np rounded, per group.

    Parameters
    ----------
    ss : SampleSet
    min_segment : int, default 300
        Segments with fewer samples (with a grade) are dropped (Primer Section 3.1).
    by : sequence of str, default ("subset", "E")
        Columns of ``ss.frame`` that split the samples first.

    Returns
    -------
    list of (dict, ndarray of int)
        The segment's labels (the ``by`` columns, ``kind`` in ``{"all", "width", "ratio"}``,
        ``segment``: ``"all"``, ``"narrow"``/``"wide"`` or the ratio as text such as ``"0.5"``)
        and the positions of its samples.
    """
    f = ss.frame
    graded = f["grade"].notna().to_numpy()
    out: list[tuple[dict[str, Any], np.ndarray]] = []
    groups = f.groupby(list(by), sort=True).indices if by else {(): np.arange(len(f))}
    for gkey, gidx in groups.items():
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        labels = dict(zip(by, gkey, strict=True))
        gidx = np.asarray(gidx)[graded[gidx]]
        parts: list[tuple[str, str, np.ndarray]] = [("all", "all", gidx)]
        for w in ("narrow", "wide"):
            parts.append(("width", w, gidx[f["width"].to_numpy()[gidx] == w]))
        ratios = f["ratio"].to_numpy()[gidx]
        for r in np.unique(ratios):
            parts.append(("ratio", f"{r:.1f}", gidx[ratios == r]))
        for kind, seg, idx in parts:
            if len(idx) >= min_segment:
                out.append(({**labels, "kind": kind, "segment": seg}, idx))
    return out


def correlation_table(
    ss: SampleSet,
    *,
    measures: Sequence[str] = ("F", "F_e", "T", "T_u", "nDCG_inK"),
    methods: Sequence[str] = ("spearman",),
    alphas: np.ndarray | None = None,
    min_segment: int = 300,
    by: Sequence[str] = ("subset", "E"),
    kendall_max_samples: int = 2000,
    kendall_alpha_stride: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """Each measure's correlation with the grade, maximised over alpha, per segment.

    Parameters
    ----------
    ss : SampleSet
    measures : sequence of str
        Names of :data:`MEASURES`.
    methods : sequence of str
        Names of :data:`METHODS`.
    alphas : ndarray, optional
        Default :func:`alpha_grid` (702 values).
    min_segment : int, default 300
    by : sequence of str, default ("subset", "E")
    kendall_max_samples : int, default 2000
        Kendall on at most this many samples of a segment (0: all); see :func:`correlate`.
    kendall_alpha_stride : int, default 1
        Kendall over every ``stride``-th alpha of the grid (plus the grid's last value).
    seed : int, default 0

    Returns
    -------
    DataFrame
        One row per segment, measure and method: the ``by`` columns, ``kind``, ``segment``,
        ``n`` (samples), ``measure``, ``method``, ``corr`` (float in [-1, 1], the maximum over
        alpha), ``alpha`` (its argmax; NaN for measures without alpha).

    References
    ----------
    .. [1] Primer, Section 2.4 ("the correlations are given by the maximal values as alpha is
       varied within a subset of the data") and Section 3.2.
    """
    alphas = alpha_grid() if alphas is None else np.asarray(alphas, dtype=np.float64)
    kendall_alpha_stride = check_int_at_least(kendall_alpha_stride, "kendall_alpha_stride", 1)
    rows = []
    for labels, idx in segments(ss, min_segment=min_segment, by=by):
        part = ss.take(idx)
        y = part.frame["grade"].to_numpy(dtype=np.float64)
        for m in measures:
            xu, inv = measure_by_key(part, m, alphas)
            keep = ~np.isnan(xu).any(axis=0)[inv]
            if keep.sum() < max(2, min_segment):
                continue
            inv_k, ys = inv[keep], y[keep]
            a = alphas if m in ALPHA_MEASURES else None
            for method in methods:
                rows_idx = np.arange(xu.shape[0])
                if method.startswith("kendall") and a is not None and kendall_alpha_stride > 1:
                    rows_idx = np.unique(
                        np.r_[np.arange(0, len(a), kendall_alpha_stride), len(a) - 1]
                    )
                v = _grouped_correlate(
                    xu[rows_idx], inv_k, ys, method, max_samples=kendall_max_samples, seed=seed
                )
                corr, alpha = best_over_alpha(v, None if a is None else a[rows_idx])
                rows.append(
                    {
                        **labels,
                        "n": int(keep.sum()),
                        "measure": m,
                        "method": method,
                        "corr": corr,
                        "alpha": alpha,
                    }
                )
    cols = [*by, "kind", "segment", "n", "measure", "method", "corr", "alpha"]
    return pd.DataFrame(rows, columns=cols)


def difference_table(
    ss: SampleSet,
    table: pd.DataFrame,
    pairs: Sequence[tuple[str, str]] = (
        ("T", "F"),
        ("T_u", "T"),
        ("nDCG_inK", "F"),
        ("F_e", "F"),
        ("T", "nDCG_inK"),
    ),
    *,
    method: str = "spearman",
    alphas: np.ndarray | None = None,
    n_boot: int = 200,
    confidence: float = 0.95,
    min_segment: int = 300,
    by: Sequence[str] = ("subset", "E"),
    seed: int = 0,
) -> pd.DataFrame:
    """Differences of correlations between two measures, with paired bootstrap intervals.

    Parameters
    ----------
    ss : SampleSet
    table : DataFrame
        :func:`correlation_table` output holding both measures for ``method`` (gives each
        measure's argmax alpha per segment).
    pairs : sequence of (str, str)
        ``(A, B)``: the difference is ``corr(A) - corr(B)`` (the paper's "A-response minus
        B-response").
    method : {"spearman", "pearson"}, default "spearman"
    n_boot : int, default 200
        Bootstrap resamples of the segment's samples (the same resample for A and B).
    confidence : float, default 0.95
    min_segment, by
        As for :func:`correlation_table` (the same segments).
    seed : int, default 0

    Returns
    -------
    DataFrame
        Per segment and pair: the ``by`` columns, ``kind``, ``segment``, ``n``, ``pair``
        (``"T-F"``), ``a``, ``b``, ``diff``, ``ci_low``, ``ci_high``, ``significant`` (the
        interval excludes 0).

    Notes
    -----
    Each measure keeps the alpha that maximised its correlation on the whole segment; the
    interval is conditional on that choice (alpha is not re-maximised in each resample).
    Percentile intervals.
    """
    if method not in ("spearman", "pearson"):
        raise InputError(f"bootstrap differences support spearman and pearson, not {method!r}")
    alphas = alpha_grid() if alphas is None else np.asarray(alphas, dtype=np.float64)
    rng = np.random.default_rng(seed)
    t = table[table["method"] == method]
    rows = []
    for labels, idx in segments(ss, min_segment=min_segment, by=by):
        sel = np.ones(len(t), dtype=bool)
        for k, v in labels.items():
            sel &= (t[k] == v).to_numpy()
        here = t[sel].set_index("measure")
        part = ss.take(idx)
        y = part.frame["grade"].to_numpy(dtype=np.float64)
        boot_idx = rng.integers(0, len(idx), size=(n_boot, len(idx)))
        wanted = [p for p in pairs if p[0] in here.index and p[1] in here.index]
        xs = {}
        for m in {m for p in wanted for m in p}:
            alpha = here.loc[m, "alpha"]
            if m in ALPHA_MEASURES and np.isnan(alpha):  # no correlation (e.g. constant grades)
                xs[m] = np.full(len(idx), np.nan)
                continue
            xs[m] = measure_matrix(part, m, None if np.isnan(alpha) else np.array([alpha]))[0]
        usable = {m: not np.isnan(x).any() for m, x in xs.items()}
        boots = (
            _boot_corrs({m: x for m, x in xs.items() if usable[m]}, y, boot_idx, method)
            if n_boot > 0
            else {}
        )
        for a_name, b_name in wanted:
            diff = float(here.loc[a_name, "corr"] - here.loc[b_name, "corr"])
            lo = hi = float("nan")
            if a_name in boots and b_name in boots:
                d = boots[a_name] - boots[b_name]
                d = d[~np.isnan(d)]
                if d.size:
                    q = (1 - confidence) / 2
                    lo, hi = (float(v) for v in np.quantile(d, [q, 1 - q]))
            rows.append(
                {
                    **labels,
                    "n": len(idx),
                    "pair": f"{a_name}-{b_name}",
                    "a": a_name,
                    "b": b_name,
                    "diff": diff,
                    "ci_low": lo,
                    "ci_high": hi,
                    "significant": bool(lo > 0 or hi < 0),
                }
            )
    cols = [*by, "kind", "segment", "n", "pair", "a", "b", "diff", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=[*cols, "significant"])


def _boot_ranks(codes: np.ndarray, m: int) -> np.ndarray:
    """Average ranks within each row of ``codes`` (B, n), values coded 0..m-1 in sort order."""
    b, n = codes.shape
    flat = codes + (np.arange(b) * m)[:, None]
    counts = np.bincount(flat.ravel(), minlength=b * m).reshape(b, m).astype(np.float64)
    start = np.cumsum(counts, axis=1) - counts
    avg = start + (counts + 1) / 2
    return np.take_along_axis(avg, codes, axis=1)


def _boot_corrs(
    xs: dict[str, np.ndarray], y: np.ndarray, idx: np.ndarray, method: str
) -> dict[str, np.ndarray]:
    """Correlation of ``x[idx[b]]`` with ``y[idx[b]]`` for each measure x and resample b."""
    out = {m: np.empty(idx.shape[0]) for m in xs}
    step = max(1, 2_000_000 // max(1, idx.shape[1]))
    codes = {}
    if method == "spearman":
        for m, x in (*xs.items(), ("__y", y)):
            values, inverse = np.unique(x, return_inverse=True)
            codes[m] = (np.asarray(inverse).ravel(), len(values))
    for s in range(0, idx.shape[0], step):
        rows = idx[s : s + step]
        if method == "spearman":
            yi = _boot_ranks(codes["__y"][0][rows], codes["__y"][1])
        else:
            yi = y[rows]
        yc = yi - yi.mean(axis=1, keepdims=True)
        syy = (yc * yc).sum(axis=1)
        for m, x in xs.items():
            xi = _boot_ranks(codes[m][0][rows], codes[m][1]) if method == "spearman" else x[rows]
            xc = xi - xi.mean(axis=1, keepdims=True)
            den = np.sqrt((xc * xc).sum(axis=1) * syy)
            const = (np.ptp(xi, axis=1) == 0) | (np.ptp(yi, axis=1) == 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                r = (xc * yc).sum(axis=1) / den
            out[m][s : s + step] = np.where(const | ~(den > 0), np.nan, r)
    return out


# ----------------------------------------------------------------------------- grades


def grade_distribution(
    ss: SampleSet, *, min_segment: int = 300, by: Sequence[str] = ("subset", "E")
) -> pd.DataFrame:
    """Share of each grade per K/Np segment (Primer Figures 2-4): each segment's shares sum to 1.

    Returns
    -------
    DataFrame
        The ``by`` columns, ``ratio`` (str), ``grade`` (the numeric grade rounded to an integer),
        ``n`` (samples of the segment), ``count``, ``share`` (float in [0, 1]).
    """
    rows = []
    for labels, idx in segments(ss, min_segment=min_segment, by=by):
        if labels["kind"] != "ratio":
            continue
        g = np.round(ss.frame["grade"].to_numpy()[idx]).astype(int)
        values, counts = np.unique(g, return_counts=True)
        for v, c in zip(values, counts, strict=True):
            rows.append(
                {
                    **{k: labels[k] for k in by},
                    "ratio": labels["segment"],
                    "grade": int(v),
                    "n": len(idx),
                    "count": int(c),
                    "share": c / len(idx),
                }
            )
    return pd.DataFrame(rows, columns=[*by, "ratio", "grade", "n", "count", "share"])


def acc_given_hit(
    ss: SampleSet,
    *,
    accurate_grade: float = 4,
    by: Sequence[str] = ("subset", "E", "width"),
) -> pd.DataFrame:
    """Acc|Hit@K (Dallaire 2.3.1): the grade when the top K holds every positive, beside all.

    Parameters
    ----------
    ss : SampleSet
    accurate_grade : float, default 4
        A response with grade >= this counts as accurate (4: "nearly all relevant
        information" on the Primer A.3 scale).
    by : sequence of str, default ("subset", "E", "width")

    Returns
    -------
    DataFrame
        Per group: ``n``, ``hit_rate`` (share with ``CompleteHit@K = 1``: all ``Np`` positives
        in the top K; only possible when ``K >= Np``), ``grade_all``, ``grade_hit``,
        ``grade_miss`` (mean grades), ``acc_all``, ``acc_hit``, ``acc_miss`` (share of
        accurate responses), ``n_hit``.

    Notes
    -----
    The recall-first premise predicts ``acc_hit`` close to 1 and well above ``acc_miss``: once
    all evidence is in the prompt, the generator answers well.

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), Section 2.3.1 (Acc|Hit@K) and Section 2.4 (Hit@K).
    """
    f = ss.frame[ss.frame["grade"].notna()]
    rows = []
    for key, g in f.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        hit = g["complete_hit"].to_numpy()
        grade = g["grade"].to_numpy(dtype=np.float64)
        acc = grade >= accurate_grade

        def mean(a: np.ndarray) -> float:
            return float(a.mean()) if a.size else float("nan")

        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": len(g),
                "n_hit": int(hit.sum()),
                "hit_rate": mean(hit.astype(float)),
                "grade_all": mean(grade),
                "grade_hit": mean(grade[hit]),
                "grade_miss": mean(grade[~hit]),
                "acc_all": mean(acc.astype(float)),
                "acc_hit": mean(acc[hit].astype(float)),
                "acc_miss": mean(acc[~hit].astype(float)),
            }
        )
    cols = [
        *by,
        "n",
        "n_hit",
        "hit_rate",
        "grade_all",
        "grade_hit",
        "grade_miss",
        "acc_all",
        "acc_hit",
        "acc_miss",
    ]
    return pd.DataFrame(rows, columns=cols)


def simulate_grades(
    ss: SampleSet,
    alpha: float,
    *,
    noise: float = 0.5,
    seed: int = 0,
    discrete: bool = True,
) -> np.ndarray:
    """SIMULATED grades from F at a known alpha: ``1 + 4 F(alpha) + N(0, noise)``.

    Parameters
    ----------
    ss : SampleSet
    alpha : float in (0, 1]
    noise : float, default 0.5
        Standard deviation of the Gaussian noise, in grade units.
    seed : int, default 0
    discrete : bool, default True
        Round and clip to the 1-5 scale of Primer A.3 (a Likert grade); False keeps the
        continuous value.

    Returns
    -------
    ndarray of float64, shape (n_samples,)

    Notes
    -----
    For tests and demonstrations only: a study on these grades recovers ``alpha`` and ranks F
    first by construction; it says nothing about real LLM responses.
    """
    if not 0 < alpha <= 1:
        raise InputError(f"simulated alpha must be in (0, 1], got {alpha!r}")
    f = measure_matrix(ss, "F", np.array([alpha]))[0]
    g = 1 + 4 * f + np.random.default_rng(seed).normal(0, noise, len(f))
    return np.clip(np.round(g), 1, 5) if discrete else g
