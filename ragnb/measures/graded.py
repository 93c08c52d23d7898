"""Graded set measures of Dallaire: RA-nWG, N-Recall4+/5, CompleteHit, Precision4+, Harm.

All of them read grades on Dallaire's 1-5 utility rubric (Section 2.4 of [1]): 5 answers the
question, 4 is highly relevant, 3 partially relevant, 2 tangential, 1 not relevant. Other scales
must be mapped onto it first, with a map the user states: :func:`map_grades` and the documented
defaults in :data:`GRADE_MAPS`.

Scale conventions
-----------------
* A judged grade <= 0 counts as grade 1: judged, utility 0, part of the pool, and harm for
  ``Harm@K``. Unjudged documents are not in the pool, weigh 0 and are never harm.
* A grade above 5 is an error (:class:`~ragnb.errors.InputError` naming the grade and a query).
* The pool of a query is all its judged documents (``N`` of them), not only the retrieved ones.
* A grade map that is never applied fails silently in one case: unmapped 0/1/2 qrels read as
  grades 1/1/2 have no useful document, and every RA-nWG is NA (``n_valid = 0``).

Measures
--------
Values are per query; a NA is NaN, which :func:`ragnb.evaluation.evaluate.evaluate` leaves out of
the macro mean and counts out of ``n_valid``.

``RA-nWG@K``
    Rarity-aware normalised weighted gain: the weights ``w_g`` of the top K over the K largest
    weights of the pool; NA when that ideal is 0. Parameters ``a`` (rarity exponent), ``cap3``,
    ``cap4`` and the no-grade-5 fallback ``fb3``, ``fb4``, e.g. ``RA-nWG(a=0.5,cap3=0.3)@10``.
``N-Recall4+@K``, ``N-Recall5@K``
    Grade >= 4 (= 5) documents in the top K over ``min(K, R)``; NA when ``R = 0``.
``CompleteHit(rel=4)@K``
    Dallaire's Hit@K (Section 4.1): 1 when every document of grade >= ``rel`` is in the top K;
    NA when the query has none.
``Precision4+@K``
    Grade >= 4 documents in the top K over K.
``Harm@K``
    Judged documents of grade <= 2 in the top K over K (unjudged ones are not harm; show
    ``Judged@K`` beside it).
``RA-nWG-nov(beta=...)@K``
    RA-nWG with every repeat of a source weighted ``beta``: :mod:`ragnb.measures.novelty`.

References
----------
.. [1] E. Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs", arXiv:2511.09545, 2025, Sections 2.3-2.4 and 4.1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ragnb.errors import InputError
from ragnb.frames.schema import RunOrder, check_qrels
from ragnb.measures.base import Measure, MeasureFamily, ParamSpec, register_family
from ragnb.measures.functions import Qrels, Run, aggregate_values, fill_doc
from ragnb.measures.kernel import RankingArrays, as_qrels_frame, prepare

__all__ = [
    "BASE_UTILITY",
    "GRADED_FAMILIES",
    "GRADE_MAPS",
    "check_graded_scale",
    "complete_hit",
    "graded_measures",
    "harm_at_k",
    "map_arrays",
    "map_grades",
    "n_recall_4plus",
    "n_recall_5",
    "precision_4plus",
    "ra_nwg",
    "grade_map_record",
    "rarity_weights",
    "resolve_grade_map",
    "over_ideal",
    "weights_of",
]

#: Base (stationary) utilities b_1..b_5 of Dallaire's rubric, index ``g - 1``.
BASE_UTILITY = (0.0, 0.0, 0.1, 0.5, 1.0)

#: Documented default maps onto the 1-5 scale; pass your own dict to override, e.g.
#: ``map_grades(qrels, {**GRADE_MAPS["trec-dl"], 1: 2})``.
GRADE_MAPS: Mapping[str, Mapping[int, int]] = MappingProxyType(
    {
        # TREC Deep Learning: 3 perfectly relevant, 2 highly relevant, 1 related, 0 irrelevant.
        "trec-dl": MappingProxyType({3: 5, 2: 4, 1: 3, 0: 1}),
        # DBpedia-Entity v2: 2 highly relevant, 1 relevant, 0 irrelevant.
        "dbpedia-entity": MappingProxyType({2: 5, 1: 4, 0: 1}),
        # Binary qrels (BEIR's SciFact, NQ, ...): a relevant document answers, the rest do not.
        "binary": MappingProxyType({1: 5, 0: 1}),
    }
)


# ----------------------------------------------------------------------------- grade maps


#: How a scale that tops out at 3, 2 or 1 is usually called (the maps of GRADE_MAPS).
_SCALES = {3: "0-3 (TREC DL)", 2: "0-2 (DBpedia-Entity)", 1: "0-1 (binary)"}


def check_graded_scale(grades: np.ndarray, names: list[str], how: str) -> None:
    """Refuse to read a 0-3, 0-2 or 0-1 scale as Dallaire's 1-5 rubric without a map.

    A scale counts as 1-5 when its grades reach 4 or 5 (a grade <= 0 is then a judged document
    of utility 0, as grade 1). Grades above 5 are left to the graded measures' own check, which
    names the query.

    Parameters
    ----------
    grades : ndarray of int
        The qrels' grades (or their distinct values), all of them: a subset could look like
        another scale.
    names : list of str
        The graded measures asked for, named in the error.
    how : str
        How the caller gives a map (``"with grade_map=..."``), ending the error.

    Raises
    ------
    InputError
        On a scale whose grades are all <= 3 (column ``relevance``), naming the grades found,
        the scale and the maps of :data:`GRADE_MAPS`.

    Examples
    --------
    >>> check_graded_scale(np.array([1, 4, 5]), ["RA-nWG@10"], "with grade_map=...")
    """
    if not len(grades) or int(np.max(grades)) >= 4:
        return
    high = int(np.max(grades))
    scale = _SCALES.get(high, f"0-{high}")
    found = sorted(int(g) for g in np.unique(grades))
    raise InputError(
        f"graded measures {names} read Dallaire's 1-5 grades, but these qrels hold grades "
        f"{found}: a {scale} scale, not 1-5; give a grade map ("
        + ", ".join(f"{name!r}" for name in sorted(GRADE_MAPS))
        + f", a mapping {{grade: 1-5 grade}}, or '1-5' if these are 1-5 grades) {how}",
        column="relevance",
    )


def _graded_mean(m: Measure, qrels: Qrels, run: Run, order: RunOrder) -> float:
    """:func:`ragnb.measures.functions.mean_of` of a graded measure, once the qrels' scale is
    checked (:func:`check_graded_scale`), as :func:`ragnb.evaluation.evaluate.evaluate` checks
    it: both refuse a 0-3 scale without a map."""
    arrays = prepare(qrels, run, order=order, depth=m.depth)
    how = (
        "with ragnb.evaluate(qrels, run, measures, grade_map=...), or map the qrels first with "
        "ragnb.measures.map_grades(qrels, NAME or {grade: 1-5 grade})"
    )
    check_graded_scale(arrays.grade_levels, [m.name], how)
    return aggregate_values(m, m.compute(arrays))


def map_grades(qrels: Qrels, mapping: str | Mapping[int, int]) -> pd.DataFrame:
    """Map a qrels scale onto Dallaire's 1-5 scale.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (int), or ``{query_id: {doc_id: grade}}``.
    mapping : str or mapping of int to int
        A name of :data:`GRADE_MAPS` (``"trec-dl"``: 3/2/1/0 -> 5/4/3/1; ``"dbpedia-entity"``:
        2/1/0 -> 5/4/1) or ``{old grade: new grade}``. New grades must be integers <= 5 (a grade
        <= 0 is judged with utility 0, like 1).

    Returns
    -------
    DataFrame
        A copy of the qrels frame (other columns kept) with ``relevance`` mapped, int64.

    Raises
    ------
    InputError
        An unknown map name, a new grade that is not an integer <= 5, or a grade of the qrels the
        map lacks (naming the grade and a query holding it).

    Examples
    --------
    >>> qrels = {"q1": {"a": 3, "b": 0}, "q2": {"c": 1}}
    >>> map_grades(qrels, "trec-dl")["relevance"].tolist()
    [5, 1, 3]
    """
    name, table = _grade_table(mapping)
    if isinstance(qrels, pd.DataFrame):
        check_qrels(qrels)
        frame = qrels.copy()
    else:
        frame = as_qrels_frame(qrels)
    grades = frame["relevance"].to_numpy(dtype=np.int64)
    known = np.isin(grades, np.fromiter(table, dtype=np.int64, count=len(table)))
    if not known.all():
        bad = int(np.flatnonzero(~known)[0])
        raise InputError(
            f"grade {int(grades[bad])} has no entry in {name} {dict(sorted(table.items()))}; "
            "state where it goes on the 1-5 scale",
            query_id=str(frame["query_id"].iloc[bad]),
            column="relevance",
        )
    frame["relevance"] = pd.Series(grades, index=frame.index).map(table).astype(np.int64)
    return frame


def _grade_table(mapping: str | Mapping[int, int]) -> tuple[str, dict[int, int]]:
    """The map's name for messages and its ``{old grade: new grade}`` table, checked."""
    name = mapping if isinstance(mapping, str) else "the given map"
    if isinstance(mapping, str):
        if mapping not in GRADE_MAPS:
            raise InputError(f"unknown grade map {mapping!r}; known: {sorted(GRADE_MAPS)}")
        mapping = GRADE_MAPS[mapping]
    if not isinstance(mapping, Mapping):
        raise InputError(f"a grade map must be a name or a dict, got {type(mapping).__name__}")
    table: dict[int, int] = {}
    for old, new in mapping.items():
        ok = all(not isinstance(v, bool) and isinstance(v, int | np.integer) for v in (old, new))
        if not ok or new > 5:
            raise InputError(
                f"{name} maps {old!r} to {new!r}; grades map integers to integers <= 5"
            )
        table[int(old)] = int(new)
    return name, table


def map_arrays(arrays: RankingArrays, mapping: str | Mapping[int, int]) -> RankingArrays:
    """Arrays whose judged grades went through a grade map, without joining the run again.

    Parameters
    ----------
    arrays : RankingArrays
        From :func:`ragnb.measures.prepare` on the qrels before the map.
    mapping : str or mapping of int to int
        As :func:`map_grades` takes it.

    Returns
    -------
    RankingArrays
        Equal, array for array, to ``prepare(map_grades(qrels, mapping), run)`` with the same
        order and depth: the grade of every judged cell mapped (unjudged cells stay 0), the
        ideal ranking re-sorted from the mapped grade counts, the grade levels merged where the
        map sends two grades to one. Of the same class as ``arrays``, its further fields shared.

    Raises
    ------
    InputError
        As :func:`map_grades`: an unknown map name, a new grade that is not an integer <= 5, or
        a grade of the qrels the map lacks (naming the grade and the first query holding it).

    Examples
    --------
    >>> from ragnb.measures import prepare
    >>> arrays = prepare({"q1": {"a": 3, "b": 0, "c": 2}}, {"q1": {"b": 0.9, "x": 0.5, "a": 0.1}})
    >>> mapped = map_arrays(arrays, "trec-dl")
    >>> mapped.grades.tolist(), mapped.ideal.tolist(), mapped.grade_levels.tolist()
    ([[1, 0, 5]], [[5, 4, 1]], [1, 4, 5])
    """
    name, table = _grade_table(mapping)
    levels = arrays.grade_levels
    lacking = [i for i, g in enumerate(levels.tolist()) if g not in table]
    if lacking:
        row = int(np.flatnonzero(arrays.level_counts[:, lacking[0]])[0])
        raise InputError(
            f"grade {int(levels[lacking[0]])} has no entry in {name} "
            f"{dict(sorted(table.items()))}; state where it goes on the 1-5 scale",
            query_id=str(arrays.query_ids[row]),
            column="relevance",
        )
    new_of_level = np.array([table[g] for g in levels.tolist()], dtype=np.int64)
    new_levels, merged = np.unique(new_of_level, return_inverse=True)
    counts = np.zeros((arrays.n_queries, len(new_levels)), dtype=np.int64)
    for i, j in enumerate(merged.ravel().tolist()):
        counts[:, j] += arrays.level_counts[:, i]
    grades = np.zeros(arrays.grades.shape, dtype=np.int64)  # unjudged cells stay 0
    judged = np.flatnonzero(arrays.judged)
    grades.ravel()[judged] = _relabel(arrays.grades.ravel()[judged], levels, new_of_level)
    # each query's mapped grades descending: the levels from the top, each over its count
    ideal = np.zeros(arrays.ideal.shape, dtype=np.int64)
    position = np.arange(arrays.ideal.shape[-1], dtype=np.int64)
    end = np.zeros(arrays.n_queries, dtype=np.int64)
    for j in range(len(new_levels) - 1, -1, -1):
        start, end = end, end + counts[:, j]
        ideal[(position >= start[:, None]) & (position < end[:, None])] = new_levels[j]
    for a in (grades, ideal, new_levels, counts):
        a.setflags(write=False)
    return replace(arrays, grades=grades, ideal=ideal, grade_levels=new_levels, level_counts=counts)


def _relabel(grades: np.ndarray, levels: np.ndarray, new: np.ndarray) -> np.ndarray:
    """``new[i]`` where ``grades`` is ``levels[i]`` (every grade is one of the levels), by a
    table over the levels' range when it is small."""
    if not len(levels):
        return np.zeros(grades.shape, dtype=np.int64)
    low, high = int(levels[0]), int(levels[-1])
    if high - low < 2**20:
        table = np.zeros(high - low + 1, dtype=np.int64)
        table[levels - low] = new
        return table[grades - low]
    return new[np.searchsorted(levels, grades)]


# ----------------------------------------------------------------------------- weights


def rarity_weights(
    counts: ArrayLike,
    *,
    a: float = 1.0,
    cap3: float = 0.25,
    cap4: float = 1.0,
    fb3: float = 0.2,
    fb4: float = 1.0,
) -> np.ndarray:
    """Dallaire's rarity-aware weights w_1..w_5 from the grade counts of a pool.

    Parameters
    ----------
    counts : array-like of int, shape (..., 5)
        ``n_1..n_5``: judged documents of each grade in the pool of a query (grades <= 0 counted
        in ``n_1``).
    a : float >= 0, default 1
        Rarity exponent alpha: ``r_g = b_g / p_g**a`` with ``p_g = n_g / N``; 0 means no rarity.
    cap3, cap4 : float in [0, 1], default 0.25 and 1
        Caps on ``w3`` and ``w4``.
    fb3, fb4 : float in [0, 1], default 0.2 and 1
        ``w3`` and ``w4`` when the pool has no grade 5 (the fallback).

    Returns
    -------
    ndarray of float64, shape (..., 5)
        ``w_1..w_5``: ``w5 = 1``, ``w4 = min(r4 / r5, cap4)``, ``w3 = min(r3 / r5, cap3)``,
        ``w2 = w1 = 0``; ``r_g = 0`` when ``p_g = 0``; the fallback when ``n_5 = 0``.

    Notes
    -----
    Computed as ``r_g / r_5 = (b_g / b_5) (n_5 / n_g)**a`` (N cancels), which cannot overflow to
    inf/inf for a large ``a``. The weight of a grade absent from the pool never matters.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 2.4, "Counts, proportions, rarity" and "Weight
       normalization (relative to grade-5) with caps".

    Examples
    --------
    >>> # N = 12, n5 = 1, n4 = 2, n3 = 2: r5 = 1/(1/12) = 12, r4 = 0.5/(2/12) = 3,
    >>> # r3 = 0.1/(2/12) = 0.6; w4 = min(3/12, 1) = 0.25, w3 = min(0.6/12, 0.25) = 0.05
    >>> rarity_weights([4, 3, 2, 2, 1]).round(12).tolist()
    [0.0, 0.0, 0.05, 0.25, 1.0]
    >>> rarity_weights([4, 3, 2, 2, 0]).tolist()   # no grade 5: the fallback
    [0.0, 0.0, 0.2, 1.0, 1.0]
    """
    n = np.asarray(counts, dtype=np.float64)
    if n.shape[-1:] != (5,):
        raise InputError(f"counts must have a last axis of 5 grades, got shape {n.shape}")
    n5 = n[..., 4]
    has5 = n5 > 0

    def relative(g: int, cap: float, fallback: float) -> np.ndarray:
        ng = n[..., g - 1]
        ratio = np.zeros(np.broadcast(ng, n5).shape)
        np.divide(n5, ng, out=ratio, where=ng > 0)  # p_g = 0 gives r_g = 0
        with np.errstate(over="ignore"):
            rel = (BASE_UTILITY[g - 1] / BASE_UTILITY[4]) * ratio**a
        rel = np.where(ng > 0, rel, 0.0)
        return np.where(has5, np.minimum(rel, cap), fallback)

    zeros = np.zeros(n5.shape)
    return np.stack(
        [zeros, zeros, relative(3, cap3, fb3), relative(4, cap4, fb4), zeros + 1.0], axis=-1
    )


# ----------------------------------------------------------------------------- kernels


def _scale_counts(arrays: RankingArrays) -> np.ndarray:
    """``n_1..n_5`` per query, shape (n_queries, 5); grades <= 0 in ``n_1``; > 5 raise.
    Read-only, computed once per arrays."""
    return arrays.derived("scale counts", _count_scale)


def _count_scale(arrays: RankingArrays) -> np.ndarray:
    levels = arrays.grade_levels
    high = levels > 5
    if high.any():
        per_query = arrays.level_counts[:, high]
        row = int(np.flatnonzero(per_query.sum(axis=1))[0])
        grade = int(levels[high][np.flatnonzero(per_query[row])[0]])
        raise InputError(
            f"grade {grade} is outside the 1-5 scale the graded measures (RA-nWG, N-Recall, "
            "CompleteHit, Precision4+, Harm) read; map the qrels first, e.g. "
            "ragnb.measures.graded.map_grades(qrels, 'trec-dl') or with your own dict",
            query_id=str(arrays.query_ids[row]),
            column="relevance",
        )
    onehot = np.clip(levels, 1, 5)[:, None] == np.arange(1, 6)
    return arrays.level_counts @ onehot.astype(np.int64)


def _top_scale_counts(arrays: RankingArrays, k: int) -> np.ndarray:
    """Judged documents of each grade 1..5 in the top ``k``, shape (n_queries, 5); read-only,
    computed once per arrays and ``k``."""

    def count(a: RankingArrays) -> np.ndarray:
        grades = np.clip(a.grades[:, :k], 1, 5)
        judged = a.judged[:, :k]
        return np.stack([(judged & (grades == g)).sum(axis=1) for g in range(1, 6)], axis=1)

    return arrays.derived(("top scale counts", k), count)


def _ideal_take(weights: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """How many documents of each grade the best K-subset of the pool holds, (n_queries, 5).

    The best set takes grades by weight descending: w is not monotone in the grade (w3 > w4 when
    grade 4 is over five times as common as grade 3), so the grade-sorted ``ideal`` will not do.
    """
    order = np.argsort(-weights, axis=1, kind="stable")
    sorted_counts = np.take_along_axis(counts, order, axis=1)
    before = np.cumsum(sorted_counts, axis=1) - sorted_counts
    take_sorted = np.clip(k - before, 0, sorted_counts)
    take = np.empty_like(take_sorted)
    np.put_along_axis(take, order, take_sorted, axis=1)
    return take


def _ratio_or_na(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(np.shape(den), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def weights_of(
    arrays: RankingArrays, a: float, cap3: float, cap4: float, fb3: float, fb4: float
) -> tuple[np.ndarray, np.ndarray]:
    """Grade counts and rarity weights of each query's pool (Dallaire's RA-nWG).

    Parameters
    ----------
    arrays : RankingArrays
        Arrays of 1-5 grades (:func:`ragnb.measures.prepare` on mapped qrels).
    a, cap3, cap4, fb3, fb4 : float
        The rarity weights' parameters, as :func:`rarity_weights` takes them.

    Returns
    -------
    counts, weights : ndarray of shape (n_queries, 5)
        Judged documents of each grade 1..5 in each query's pool, and the weight of each grade.

    References
    ----------
    Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and Cost-Latency-Quality
    Trade-offs", arXiv 2511.09545, Section 2.4.
    """
    counts = _scale_counts(arrays)
    return arrays.derived(
        ("rarity weights", a, cap3, cap4, fb3, fb4),
        lambda _: (counts, rarity_weights(counts, a=a, cap3=cap3, cap4=cap4, fb3=fb3, fb4=fb4)),
    )


def over_ideal(obs: np.ndarray, w: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """An observed gain over the pool's ideal ``G_ideal(K)``, NaN when that is 0, at most 1.

    RA-nWG and RA-nWG-nov share this normaliser.

    Parameters
    ----------
    obs : ndarray of float64, shape (n_queries,)
        The observed gain ``G_obs(K)`` of each query's top K.
    w, counts : ndarray of shape (n_queries, 5)
        The weights and grade counts of each pool (:func:`weights_of`).
    k : int
        The cutoff K.

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [0, 1]; NaN where ``G_ideal(K)`` is 0.

    References
    ----------
    Dallaire, arXiv 2511.09545, Section 2.4 (RA-nWG).
    """
    ideal = (_ideal_take(w, counts, k) * w).sum(axis=1)
    # Both sums run over the grades in the same order, so an ideal top K gives exactly 1; the
    # clip only absorbs a last-bit difference when another set ties with the ideal.
    return np.minimum(_ratio_or_na(obs, ideal), 1.0)


def _ra_nwg(
    arrays: RankingArrays, k: int, *, a: float, cap3: float, cap4: float, fb3: float, fb4: float
) -> np.ndarray:
    """G_obs(K) / G_ideal(K), NaN when G_ideal(K) = 0; shape (n_queries,)."""
    counts, w = weights_of(arrays, a, cap3, cap4, fb3, fb4)
    return over_ideal((_top_scale_counts(arrays, k) * w).sum(axis=1), w, counts, k)


def _n_recall(threshold: int) -> Callable[..., np.ndarray]:
    def kernel(arrays: RankingArrays, k: int) -> np.ndarray:
        big_r = _scale_counts(arrays)[:, threshold - 1 :].sum(axis=1)
        found = _top_scale_counts(arrays, k)[:, threshold - 1 :].sum(axis=1)
        return _ratio_or_na(found, np.minimum(k, big_r))

    kernel.__doc__ = f"Grade >= {threshold} in the top K / min(K, R), NaN when R = 0."
    return kernel


def _complete_hit(arrays: RankingArrays, k: int, *, rel: int) -> np.ndarray:
    """1.0 if every grade >= rel document is in the top K, 0.0 if not, NaN if there are none."""
    big_r = _scale_counts(arrays)[:, rel - 1 :].sum(axis=1)
    found = _top_scale_counts(arrays, k)[:, rel - 1 :].sum(axis=1)
    return np.where(big_r > 0, (found == big_r).astype(np.float64), np.nan)


def _precision_4plus(arrays: RankingArrays, k: int) -> np.ndarray:
    """Grade >= 4 documents in the top K / K."""
    _scale_counts(arrays)
    return arrays.found(4, k) / k


def _harm(arrays: RankingArrays, k: int) -> np.ndarray:
    """Judged documents of grade <= 2 in the top K / K."""
    _scale_counts(arrays)
    harmful = arrays.judged[:, :k] & (arrays.grades[:, :k] <= 2)
    return harmful.sum(axis=1) / k


# ----------------------------------------------------------------------------- registry

A = ParamSpec("a", float, 1.0, 0.0, None, doc="rarity exponent: r_g = b_g / p_g**a; 0 = none")
CAP3 = ParamSpec("cap3", float, 0.25, 0.0, 1.0, doc="cap on w3 = r3 / r5")
CAP4 = ParamSpec("cap4", float, 1.0, 0.0, 1.0, doc="cap on w4 = r4 / r5")
FB3 = ParamSpec("fb3", float, 0.2, 0.0, 1.0, doc="w3 when the pool has no grade 5")
FB4 = ParamSpec("fb4", float, 1.0, 0.0, 1.0, doc="w4 when the pool has no grade 5")
REL4 = ParamSpec("rel", int, 4, 1, 5, doc="grade of the evidence set E(q) = {grade >= rel}")

_WEIGHT_PARAMS = (A, CAP3, CAP4, FB3, FB4)

register_family(
    MeasureFamily(
        "RA-nWG",
        _ra_nwg,
        params=_WEIGHT_PARAMS,
        summary="RA-nWG@K = sum of w_g over the top K / sum of the K largest w_g of the pool "
        "(NA if 0); rarity-aware weights (Dallaire 2025, Section 2.4)",
    )
)
register_family(
    MeasureFamily(
        "N-Recall4+",
        _n_recall(4),
        summary="N-Recall4+@K = (grade >= 4 in the top K) / min(K, R4+), NA if R4+ = 0",
    )
)
register_family(
    MeasureFamily(
        "N-Recall5",
        _n_recall(5),
        summary="N-Recall5@K = (grade 5 in the top K) / min(K, R5), NA if R5 = 0",
    )
)
register_family(
    MeasureFamily(
        "CompleteHit",
        _complete_hit,
        params=(REL4,),
        summary="CompleteHit@K = 1 if every grade >= rel document is in the top K (Dallaire's "
        "Hit@K), NA if there is none",
    )
)
register_family(
    MeasureFamily(
        "Precision4+", _precision_4plus, summary="Precision4+@K = (grade >= 4 in the top K) / K"
    )
)
register_family(
    MeasureFamily("Harm", _harm, summary="Harm@K = (judged with grade <= 2 in the top K) / K")
)

# ----------------------------------------------------------------------------- public functions


@fill_doc
def ra_nwg(
    qrels: Qrels,
    run: Run,
    k: int,
    *,
    a: float = 1.0,
    cap3: float = 0.25,
    cap4: float = 1.0,
    fb3: float = 0.2,
    fb4: float = 1.0,
    order: RunOrder = "score",
) -> float:
    """Mean RA-nWG@K: rarity-aware weighted gain of the top K over the pool's best K.

    Parameters
    ----------
    qrels : DataFrame or dict
        Grades on the 1-5 scale (see :func:`map_grades`); columns ``query_id``, ``doc_id``,
        ``relevance``, or ``{query_id: {doc_id: grade}}``.
    {{run, k}}
    a, cap3, cap4, fb3, fb4 : float
        Weight parameters, see :func:`rarity_weights` (the paper's defaults).
    {{order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries where RA-nWG is defined (NaN if none is).

    Notes
    -----
    ``G_obs(K) = sum of w_g(d) over the top K`` (unjudged documents and unfilled ranks weigh 0),
    ``G_ideal(K) = sum of the K largest w_g(d) over the judged pool``, RA-nWG@K =
    ``G_obs / G_ideal``, NA when ``G_ideal = 0`` (no document with a positive weight). Order-free
    within the top K. The K largest weights are taken by weight, not by grade: ``w3 > w4`` when
    grade 4 is over five times as common as grade 3 (with ``a = 1``).

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 2.3 and 2.4 ("Observed and ideal gains at cut K",
       "Main metric").

    Examples
    --------
    >>> # pool: a=5, b=4, c=3, d=1 (N = 4, one of each): r5 = 1/(1/4) = 4, r4 = 0.5*4 = 2,
    >>> # r3 = 0.1*4 = 0.4; w5 = 1, w4 = min(2/4, 1) = 0.5, w3 = min(0.4/4, 0.25) = 0.1
    >>> qrels = {"q1": {"a": 5, "b": 4, "c": 3, "d": 1}}
    >>> run = {"q1": {"b": 0.9, "x": 0.8, "c": 0.7}}     # top 2: b (0.5), x (unjudged, 0)
    >>> ra_nwg(qrels, run, 2)                            # 0.5 / (1 + 0.5)
    0.3333333333333333
    """
    m = Measure("RA-nWG", k, a=a, cap3=cap3, cap4=cap4, fb3=fb3, fb4=fb4)
    return _graded_mean(m, qrels, run, order)


@fill_doc
def n_recall_4plus(qrels: Qrels, run: Run, k: int, *, order: RunOrder = "score") -> float:
    """Mean N-Recall4+@K: grade >= 4 documents in the top K over ``min(K, R4+)``.

    {{Parameters: qrels, run, k, order}}

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries with ``R4+ > 0`` (NaN if none).

    Notes
    -----
    ``R4+ = n4 + n5`` counts the pool; the ``min(K, R)`` denominator lets a query with fewer than
    K good documents reach 1.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 2.4, "Complementary coverage and precision KPIs".

    Examples
    --------
    >>> qrels = {"q1": {"a": 5, "b": 4, "c": 4, "d": 2}, "q2": {"e": 3}}   # R4+ = 3; q2: NA
    >>> run = {"q1": {"a": 0.9, "d": 0.8, "b": 0.7}}
    >>> n_recall_4plus(qrels, run, 2)                    # q1: 1 / min(2, 3)
    0.5
    """
    return _graded_mean(Measure("N-Recall4+", k), qrels, run, order)


@fill_doc
def n_recall_5(qrels: Qrels, run: Run, k: int, *, order: RunOrder = "score") -> float:
    """Mean N-Recall5@K: grade 5 documents in the top K over ``min(K, R5)``, NA when ``R5 = 0``.

    {{Parameters: qrels, run, k, order}}

    {{Returns: mean}}

    {{References: ref_dallaire_2_4}}

    Examples
    --------
    >>> qrels = {"q1": {"a": 5, "b": 4, "c": 5}}
    >>> n_recall_5(qrels, {"q1": {"a": 0.9, "b": 0.8, "c": 0.7}}, 1)   # 1 / min(1, 2)
    1.0
    """
    return _graded_mean(Measure("N-Recall5", k), qrels, run, order)


def complete_hit(
    qrels: Qrels, run: Run, k: int, *, rel: int = 4, order: RunOrder = "score"
) -> float:
    """Mean CompleteHit@K: share of queries whose whole evidence set is in the top K.

    Parameters
    ----------
    qrels, run, k, order
        As for :func:`ra_nwg`.
    rel : int in [1, 5], default 4
        Evidence set ``E(q) = {d : grade(d) >= rel}``.

    Returns
    -------
    float in [0, 1]
        Macro mean over the queries with a non-empty ``E(q)`` (NA otherwise).

    Notes
    -----
    Dallaire's ``Hit@K = 1[E(q) ⊆ C_K(q)]`` (Section 4.1), the condition of Acc|Hit. Named
    CompleteHit here because ``Hit``/``HitRate`` usually means "at least one relevant"
    (``Success@K``). A query whose ``E(q)`` is larger than K scores 0.

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 4.1, "Evidence-coverage KPIs".

    Examples
    --------
    >>> qrels = {"q1": {"a": 5, "b": 4, "c": 2}, "q2": {"d": 4}}
    >>> run = {"q1": {"a": 0.9, "c": 0.8, "b": 0.7}, "q2": {"d": 1.0}}
    >>> complete_hit(qrels, run, 2), complete_hit(qrels, run, 3)   # q1 needs a and b
    (0.5, 1.0)
    """
    return _graded_mean(Measure("CompleteHit", k, rel=rel), qrels, run, order)


@fill_doc
def precision_4plus(qrels: Qrels, run: Run, k: int, *, order: RunOrder = "score") -> float:
    """Mean Precision4+@K: grade >= 4 documents in the top K over K.

    {{Parameters: qrels, run, k, order}}

    {{Returns: mean}}

    {{References: ref_dallaire_2_4}}

    Examples
    --------
    >>> precision_4plus({"q1": {"a": 5, "b": 3}}, {"q1": {"a": 0.9, "b": 0.8}}, 4)   # 1 / 4
    0.25
    """
    return _graded_mean(Measure("Precision4+", k), qrels, run, order)


@fill_doc
def harm_at_k(qrels: Qrels, run: Run, k: int, *, order: RunOrder = "score") -> float:
    """Mean Harm@K: judged documents of grade <= 2 in the top K over K (lower is better).

    {{Parameters: qrels, run, k, order}}

    {{Returns: mean}}

    Notes
    -----
    Unjudged documents are not counted as harm, so a run of unjudged documents scores 0: report
    ``Judged@K`` beside it. Judged grades <= 0 count as harm (grade 1).

    References
    ----------
    .. [1] Dallaire, arXiv:2511.09545, Section 2.4 (Harm@K).

    Examples
    --------
    >>> qrels = {"q1": {"a": 5, "b": 2, "c": 1}}
    >>> harm_at_k(qrels, {"q1": {"a": 0.9, "b": 0.8, "x": 0.7, "c": 0.6}}, 4)   # b, c: 2/4
    0.5
    """
    return _graded_mean(Measure("Harm", k), qrels, run, order)


GRADED_FAMILIES = ("RA-nWG", "N-Recall4+", "N-Recall5", "Precision4+", "Harm", "CompleteHit")


def graded_measures(cutoffs: list[int]) -> list[Measure]:
    """Dallaire's graded set measures at every cutoff (section 2.4); they read 1-5 grades."""
    return [Measure(f, k) for k in sorted(set(int(c) for c in cutoffs)) for f in GRADED_FAMILIES]


def resolve_grade_map(spec: str, qrels: pd.DataFrame) -> tuple[str, dict[int, int]] | None:
    """The grade map named by ``spec`` for these qrels, or None for no graded measures.

    Parameters
    ----------
    spec : str
        ``"auto"``, ``"none"``, a key of :data:`ragnb.measures.GRADE_MAPS`, or a YAML/JSON
        mapping such as ``"{2: 5, 1: 4, 0: 1}"``.
    qrels : DataFrame

    Returns
    -------
    (str, dict) or None
        The map's name (``"custom"`` for a written mapping) and the mapping.

    Raises
    ------
    InputError
        Unknown name, unreadable mapping, or ``"auto"`` on grades it cannot place.
    """
    spec = str(spec).strip()
    grades = set(int(g) for g in qrels["relevance"].unique())
    if spec == "none":
        return None
    if spec == "auto":
        if grades <= {0, 1}:
            return None
        if grades <= {0, 1, 2}:
            return "dbpedia-entity", dict(GRADE_MAPS["dbpedia-entity"])
        if grades <= {0, 1, 2, 3}:
            return "trec-dl", dict(GRADE_MAPS["trec-dl"])
        raise InputError(
            f"grade_map='auto' cannot place grades {sorted(grades)}; state a mapping onto 1-5",
            column="grade_map",
        )
    if spec in GRADE_MAPS:
        return spec, dict(GRADE_MAPS[spec])
    import yaml  # a mapping given as text only: imported here, not with the measures

    try:
        parsed = yaml.safe_load(spec)
    except yaml.YAMLError:
        parsed = None
    if not isinstance(parsed, dict) or not all(
        isinstance(k, int) and isinstance(v, int) for k, v in parsed.items()
    ):
        raise InputError(
            f"grade_map must be 'auto', 'none', one of {sorted(GRADE_MAPS)} or a mapping like "
            f"'{{2: 5, 1: 4, 0: 1}}', got {spec!r}",
            column="grade_map",
        )
    return "custom", parsed


def grade_map_record(grade_map: tuple[str, Mapping[int, int]] | None) -> dict[str, Any] | None:
    """A resolved grade map as a JSON-ready record for a report's provenance.

    Parameters
    ----------
    grade_map : (str, mapping of int to int) or None
        As returned by :func:`resolve_grade_map`.

    Returns
    -------
    dict or None
        ``{"name": name, "map": {"<grade>": mapped}}`` (keys as strings, as JSON has them), or
        None when no grade map applies.

    Examples
    --------
    >>> grade_map_record(("trec-dl", {3: 5, 0: 1}))
    {'name': 'trec-dl', 'map': {'3': 5, '0': 1}}
    """
    if grade_map is None:
        return None
    name, mapping = grade_map
    return {"name": name, "map": {str(k): v for k, v in mapping.items()}}
