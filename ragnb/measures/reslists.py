"""trec_eval's view of a ranking: the relevance list and the judged-level counts of each query.

trec_eval's measures (``m_*.c``) read, per query, the list of the retrieved documents' qrels
values in rank order (``results_rel_list`` of ``form_res_rels.c``), where a document absent
from the qrels is ``-1`` (``RELVALUE_NONPOOL``) and a document judged with a negative value is
``-2`` (``RELVALUE_UNJUDGED``), and the number of judged documents at each level ``0, 1, ...``
(``rel_levels``). The functions here build both from :class:`RankingArrays`, so that the
trec_eval families of :mod:`ragnb.measures.sets` and :mod:`ragnb.measures.gains` read the same
arrays as every other measure.

References
----------
.. [1] trec_eval 10.0, ``form_res_rels.c`` and ``gain_init.c``,
   https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ragnb.measures.kernel import RankingArrays

__all__ = [
    "NONPOOL",
    "PADDING",
    "UNJUDGED",
    "gain_levels",
    "gains_of",
    "level_counts",
    "level_index",
    "rel_lists",
]

#: A retrieved document absent from the qrels (trec_eval's ``RELVALUE_NONPOOL``).
NONPOOL = -1
#: A retrieved document judged with a negative value (trec_eval's ``RELVALUE_UNJUDGED``).
UNJUDGED = -2
#: A rank the run does not fill.
PADDING = -3


def rel_lists(arrays: RankingArrays) -> np.ndarray:
    """trec_eval's relevance list of every query.

    Parameters
    ----------
    arrays : RankingArrays

    Returns
    -------
    ndarray of int64, shape (n_queries, depth)
        The qrels value of the document at each rank, :data:`NONPOOL` (-1) for a document
        without a judgement, :data:`UNJUDGED` (-2) for a negative judgement and :data:`PADDING`
        (-3) beyond the run's end. Read-only, built once per arrays.

    Examples
    --------
    >>> from ragnb.measures import prepare
    >>> arrays = prepare({"q": {"a": 2, "b": -1}}, {"q": {"a": 3.0, "x": 2.0, "b": 1.0}})
    >>> rel_lists(arrays).tolist()
    [[2, -1, -2]]
    """
    return arrays.derived("rel_lists", _rel_lists)


def _rel_lists(arrays: RankingArrays) -> np.ndarray:
    grades = arrays.grades.astype(np.int64, copy=False)
    if (arrays.grade_levels < 0).any():
        grades = np.where(grades < 0, UNJUDGED, grades)
    out = np.where(arrays.judged, grades, NONPOOL)
    return np.where(arrays.filled, out, PADDING)


def level_index(arrays: RankingArrays) -> np.ndarray:
    """Where each rank's relevance value stands among the levels of :func:`level_counts`.

    Parameters
    ----------
    arrays : RankingArrays

    Returns
    -------
    ndarray of int64, shape (n_queries, depth)
        The index of the value of :func:`rel_lists` in ``levels``; ``n_levels`` for a value >= 0
        that is no level, ``n_levels + 1`` for :data:`NONPOOL`, :data:`UNJUDGED` and
        :data:`PADDING`. A per-level table with those two further columns, indexed by it, gives
        a value at every rank. Read-only, built once per arrays.

    Examples
    --------
    >>> from ragnb.measures import prepare
    >>> arrays = prepare({"q": {"a": 2, "b": 0}}, {"q": {"a": 3.0, "x": 2.0, "b": 1.0}})
    >>> level_index(arrays).tolist()  # levels 0, 2
    [[1, 3, 0]]
    """
    return arrays.derived("level index", _level_index)


def _level_index(arrays: RankingArrays) -> np.ndarray:
    levels, _ = level_counts(arrays)
    n = len(levels)
    grades = arrays.grades
    every = arrays.grade_levels  # the judged grades >= 0 are levels; the others go to n + 1
    low = min(int(every[0]), 0) if len(every) else 0
    high = max(int(every[-1]), 0) if len(every) else 0
    if high - low < 2**20:  # a table from grade - low to the index
        table = np.full(high - low + 1, n + 1, dtype=np.int64)
        table[levels - low] = np.arange(n)
        return np.where(arrays.judged, table[grades - low] if low else table[grades], n + 1)
    at = np.clip(np.searchsorted(levels, grades), 0, max(n - 1, 0))
    known = (levels[at] == grades) if n else np.zeros(grades.shape, dtype=bool)
    return np.where(arrays.judged & (grades >= 0), np.where(known, at, n), n + 1)


def level_counts(arrays: RankingArrays) -> tuple[np.ndarray, np.ndarray]:
    """Judged documents at each non-negative level, as trec_eval's ``rel_levels``.

    Returns
    -------
    levels : ndarray of int64, shape (n_levels,)
        The distinct grades >= 0 of the qrels, ascending.
    counts : ndarray of int64, shape (n_queries, n_levels)
        Judged documents of each level per query.
    """
    keep = arrays.grade_levels >= 0
    return arrays.grade_levels[keep].astype(np.int64), arrays.level_counts[:, keep]


def gain_levels(
    levels: np.ndarray, counts: np.ndarray, gains: Mapping[int, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The gain of each level and the ideal ranking's gains, as trec_eval's ``setup_gains``.

    Parameters
    ----------
    levels, counts
        From :func:`level_counts`.
    gains : mapping of int to float, optional
        Gain of a level (``ndcg.1=3,2=9`` gives ``{1: 3.0, 2: 9.0}``); a level not named gains
        its own value, a negative qrels value gains 0.

    Returns
    -------
    level_gain : ndarray of float64, shape (n_levels,)
        The gain of each entry of ``levels``.
    ideal : ndarray of float64, shape (n_queries, n_judged_max)
        Each query's judged documents' gains sorted descending, positive gains only (0 after).
    """
    gains = dict(gains or {})
    level_gain = np.array([float(gains.get(int(lv), float(lv))) for lv in levels], dtype=float)
    n_queries = counts.shape[0]
    per_query = counts.sum(axis=1) if counts.size else np.zeros(n_queries, dtype=np.int64)
    width = int(per_query.max()) if n_queries else 0
    ideal = np.zeros((n_queries, width))
    order = np.argsort(-level_gain, kind="stable")
    # every query's gains in level order, one flat run, then each put at its place in its row
    sorted_counts = counts[:, order].ravel()
    values = np.repeat(np.tile(level_gain[order], n_queries), sorted_counts)
    rows = np.repeat(np.arange(n_queries), per_query)
    starts = np.cumsum(per_query) - per_query
    ideal[rows, np.arange(len(values)) - np.repeat(starts, per_query)] = np.maximum(values, 0.0)
    return level_gain, ideal


def gains_of(rels: np.ndarray, levels: np.ndarray, level_gain: np.ndarray) -> np.ndarray:
    """The gain of each entry of a relevance list (trec_eval's ``get_gain``); 0 for -1, -2, -3.

    Returns
    -------
    ndarray of float64, same shape as ``rels``
    """
    out = np.zeros(rels.shape, dtype=np.float64)
    for level, gain in zip(levels, level_gain, strict=True):
        out[rels == level] = gain
    return out
