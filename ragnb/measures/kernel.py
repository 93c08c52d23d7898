"""Padded arrays shared by every measure, and the vectorised helpers the kernels use.

:func:`prepare` turns a qrels frame and a run frame into a :class:`RankingArrays` once; every
measure kernel then reads the same arrays, one row per query of the qrels, and returns one value per
query without a Python loop over queries.

Layout
------
Rows are the queries of the qrels, sorted by ``query_id`` (string order). Columns of the ranked
arrays are rank positions 0, 1, ..., ``depth - 1`` of the run in evaluation order (see
:func:`ragnb.frames.index.sort_run`). A position the run does not fill holds grade 0,
``judged=False`` and ``filled=False``; a retrieved document without a judgement holds grade 0,
``judged=False``, ``filled=True``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ragnb.core.validation import check_positive_int
from ragnb.errors import InputError
from ragnb.frames.index import (
    CodedRun,
    JoinedRanks,
    QrelsIndex,
    RunIndex,
    StringRun,
    common_skip,
    index_coded_run,
    index_qrels,
    index_run,
    index_string_run,
    join_coded,
    join_strings,
    joined_ranks,
    kernels,
    with_coded_docs,
)
from ragnb.frames.schema import RunOrder, check_qrels, check_run, qrels_from_dict, run_from_dict

__all__ = [
    "RankingArrays",
    "prepare",
    "prepare_ranked",
    "as_qrels_frame",
    "as_run_frame",
    "check_arrays",
    "cut_arrays",
    "dcg",
    "extend_arrays",
    "first_true",
    "ndcg_of",
    "query_rows",
    "ranked_cells",
    "row_steps",
    "safe_div",
    "sum_at",
    "top_k",
]

_Extended = TypeVar("_Extended", bound="RankingArrays")
_Derived = TypeVar("_Derived")


@dataclass(frozen=True, eq=False)
class RankingArrays:
    """A run joined with its qrels, as padded arrays, one row per query of the qrels.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n_queries,)
        The queries of the qrels, sorted.
    grades : ndarray of int64, shape (n_queries, depth)
        Grade of the document at each rank position; 0 where the document is unjudged or the
        position is unfilled.
    judged : ndarray of bool, shape (n_queries, depth)
        The document at this position has a judgement (any grade, including 0 and negatives).
    filled : ndarray of bool, shape (n_queries, depth)
        The run has a document at this position.
    ideal : ndarray of int64, shape (n_queries, ideal_depth)
        All judged grades of the query sorted descending; entries at and beyond ``n_judged`` are
        padding (0). Truncated to ``depth_cap`` columns when a cap is set.
    n_judged : ndarray of int64, shape (n_queries,)
        Judged documents per query (the length of the unpadded part of ``ideal``).
    n_retrieved : ndarray of int64, shape (n_queries,)
        Documents the run returns for the query (before any depth cap); 0 when the query is
        missing from the run.
    grade_levels : ndarray of int64, shape (n_levels,)
        The distinct grades of the qrels, ascending.
    level_counts : ndarray of int64, shape (n_queries, n_levels)
        Judged documents of each grade level per query; gives N_p for any relevance threshold
        without keeping every judgement (see :meth:`n_relevant`).
    order : {"score", "file"}
        The ordering policy applied to the run.
    depth_cap : int or None
        The largest rank the arrays keep (None: the whole run).
    n_rank_disagreements : int
        Queries whose file ``rank`` column disagrees with the score order.
    n_run_queries_without_qrels : int
        Queries of the run that have no qrels; they are left out of the arrays.
    """

    query_ids: np.ndarray
    grades: np.ndarray
    judged: np.ndarray
    filled: np.ndarray
    ideal: np.ndarray
    n_judged: np.ndarray
    n_retrieved: np.ndarray
    grade_levels: np.ndarray
    level_counts: np.ndarray
    order: RunOrder
    depth_cap: int | None
    n_rank_disagreements: int
    n_run_queries_without_qrels: int

    @property
    def n_queries(self) -> int:
        """Number of queries (rows)."""
        return int(self.query_ids.shape[0])

    @property
    def depth(self) -> int:
        """Number of rank positions held (columns of ``grades``)."""
        return int(self.grades.shape[1])

    @property
    def n_missing_from_run(self) -> int:
        """Queries of the qrels for which the run returns nothing."""
        return int((self.n_retrieved == 0).sum())

    def derived(self, key: Hashable, build: Callable[[RankingArrays], _Derived]) -> _Derived:
        """A value derived from these arrays, computed on first use and then shared.

        Parameters
        ----------
        key : hashable
            Names the value among the arrays' derived values; one key, one ``build``.
        build : callable
            ``build(arrays)`` returns an ndarray, or a tuple of them (and other values).

        Returns
        -------
        ndarray or tuple
            What the first ``build`` returned; every ndarray in it is made read-only, so that
            the measures reading it share it safely.

        Examples
        --------
        >>> arrays = prepare({"q1": {"a": 1}}, {"q1": {"a": 0.5, "b": 0.2}})
        >>> arrays.derived("n_filled", lambda a: a.filled.sum(axis=1)).tolist()
        [2]
        """
        cache = self.__dict__.setdefault("_derived", {})  # frozen: no __setattr__
        value = cache.get(key)
        if value is None:
            value = build(self)
            for a in value if isinstance(value, tuple) else (value,):
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)
            cache[key] = value
        return value

    def relevant(self, rel: int, k: int | None = None) -> np.ndarray:
        """Relevance mask of the top ``k`` positions.

        Parameters
        ----------
        rel : int
            A judged document with grade >= ``rel`` is relevant; unjudged documents and unfilled
            positions never are.
        k : int, optional
            Cutoff; default all ``depth`` positions. A ``k`` beyond ``depth`` gives ``depth``
            columns (the missing positions are non-relevant anyway).

        Returns
        -------
        ndarray of bool, shape (n_queries, min(k, depth))
            Read-only: the whole-depth mask of each ``rel`` is computed once per arrays and
            shared by every measure (a view of its first ``k`` columns). ``relevant(0)`` holds
            the documents trec_eval counts as judged (a grade >= 0).
        """
        mask = self.derived(("relevant", rel), lambda a: a.judged & (a.grades >= rel))
        return top_k(mask, k)

    def hits(self, rel: int, k: int | None = None) -> np.ndarray:
        """Relevant documents at or above each of the top ``k`` ranks (``relevant``'s running
        count).

        Returns
        -------
        ndarray of int64, shape (n_queries, min(k, depth))
            Read-only, shared like :meth:`relevant`; ``hits(rel)[:, i]`` is the number of
            relevant documents in the top ``i + 1``.
        """
        count = self.derived(("hits", rel), lambda a: np.cumsum(a.relevant(rel), axis=1))
        return top_k(count, k)

    def hits_at(self, rel: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """``hits(rel)[rows, cols]``, counted from the relevant cells (no dense running count).

        Parameters
        ----------
        rel : int
        rows, cols : ndarray of int
            Cells of the arrays, any order.

        Returns
        -------
        ndarray of int64, shape (len(rows),)
            Relevant documents of the row at or above each cell's rank.
        """
        dense = self.__dict__.get("_derived", {}).get(("hits", rel))
        if dense is not None:
            return dense[rows, cols]
        _, _, flat = self.derived(("cells", rel), partial(_cells_of, rel=rel))
        return np.searchsorted(flat, _flat(self, rows, cols), side="right") - self._first(rel)[rows]

    def cell_hits(self, rel: int) -> np.ndarray:
        """``hits(rel)`` at the relevant cells themselves (:meth:`relevant_cells`, whole depth):
        1, 2, ... along each row.

        Returns
        -------
        ndarray of int64, shape (n_cells,)
            Read-only, computed once per ``rel``.
        """

        def build(a: RankingArrays) -> np.ndarray:
            rows, _ = a.relevant_cells(rel)
            return np.arange(1, len(rows) + 1) - a._first(rel)[rows]

        return self.derived(("cell hits", rel), build)

    def _first(self, rel: int) -> np.ndarray:
        """Index of each row's first relevant cell among :meth:`relevant_cells`, shape
        (n_queries + 1,) (the last entry: the number of cells)."""
        return self.derived(("first cell", rel), lambda a: np.r_[0, np.cumsum(a.found(rel))])

    def found(self, rel: int, k: int | None = None) -> np.ndarray:
        """Relevant documents in the top ``k`` of each query (the last column of :meth:`hits`).

        Returns
        -------
        ndarray of int64, shape (n_queries,)
            Read-only, computed once per ``rel`` and cutoff.
        """
        width = self.depth if k is None else min(k, self.depth)
        if width == self.depth:
            return self.derived(
                ("found", rel, width),
                lambda a: np.bincount(a.relevant_cells(rel)[0], minlength=a.n_queries),
            )
        return self.derived(("found", rel, width), lambda a: a.relevant(rel, width).sum(axis=1))

    def precision_at_relevant(self, rel: int, k: int | None = None) -> np.ndarray:
        """P@i at each relevant rank i of the top ``k``, 0 at the other ranks.

        Returns
        -------
        ndarray of float64, shape (n_queries, min(k, depth))
            Read-only, shared like :meth:`relevant`: ``hits / i`` where rank ``i`` (1-based)
            holds a relevant document. Its row sums are the numerators of average precision.
        """

        def build(a: RankingArrays) -> np.ndarray:
            rows, cols = a.relevant_cells(rel)
            at_relevant = np.zeros((a.n_queries, a.depth))
            at_relevant[rows, cols] = a.cell_hits(rel) / (cols + 1)
            return at_relevant

        return top_k(self.derived(("precision_at_relevant", rel), build), k)

    def n_filled(self) -> np.ndarray:
        """Ranks the run fills per query, at most ``depth`` (the row sums of ``filled``).

        Returns
        -------
        ndarray of int64, shape (n_queries,)
            Read-only, computed once.
        """
        return self.derived("n_filled", lambda a: a.filled.sum(axis=1))

    def run_dcg(self, k: int | None = None, *, exp: bool = False) -> np.ndarray:
        """DCG of each query's top ``k``, as :func:`ndcg_of` computes it for the run.

        Parameters
        ----------
        k : int, optional
            The cutoff K; default all ``depth`` ranks.
        exp : bool, default False
            Gain ``max(grade, 0)`` or, with ``exp``, ``2^max(grade, 0) - 1``.

        Returns
        -------
        ndarray of float64, shape (n_queries,)
            Read-only, computed once per ``k`` and gain.
        """
        return self.derived(("run dcg", k, exp), lambda a: dcg(a._gains(a.grades, k, exp)))

    def ideal_dcg(self, k: int | None = None, *, exp: bool = False) -> np.ndarray:
        """DCG of the top ``k`` of each query's ideal ranking (the denominator of nDCG@K).

        Returns
        -------
        ndarray of float64, shape (n_queries,)
            Read-only, computed once per ``k`` and gain; as :meth:`run_dcg`.
        """
        return self.derived(("ideal dcg", k, exp), lambda a: dcg(a._gains(a.ideal, k, exp)))

    def _gains(self, grades: np.ndarray, k: int | None, exp: bool) -> np.ndarray:
        """:func:`ndcg_of`'s gains of the top ``k`` of ``grades`` (run or ideal): the same values,
        without a pass where the grade levels show it changes nothing (no negative grade), and
        ``2^g - 1`` read from a table of the levels' range."""
        levels = self.grade_levels
        top = top_k(grades, k)
        nonnegative = not len(levels) or int(levels[0]) >= 0
        gains = top if nonnegative else np.maximum(top, 0)
        if not exp:
            return gains
        high = max(int(levels[-1]), 0) if len(levels) else 0
        if high < 2**16:
            return (np.exp2(np.arange(high + 1, dtype=np.int64)) - 1.0)[gains]
        return np.exp2(gains) - 1.0

    def relevant_cells(self, rel: int, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of every True of ``relevant(rel, k)``, in row-major order.

        Returns
        -------
        rows, cols : ndarray of int64, shape (n_cells,)
            Read-only; the whole-depth cells are found once per ``rel`` and shared.
        """
        rows, cols, _ = self.derived(("cells", rel), partial(_cells_of, rel=rel))
        if k is None or k >= self.depth:
            return rows, cols
        inside = cols < k
        return rows[inside], cols[inside]

    def n_relevant(self, rel: int) -> np.ndarray:
        """N_p: judged documents with grade >= ``rel``, per query.

        Returns
        -------
        ndarray of int64, shape (n_queries,)
            Read-only, computed once per ``rel``.
        """
        return self.derived(
            ("n_relevant", rel), lambda a: a.level_counts[:, a.grade_levels >= rel].sum(axis=1)
        )


# ----------------------------------------------------------------------------- kernel helpers


def _cells_of(arrays: RankingArrays, rel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and row-major positions of the True cells of ``relevant(rel)``."""
    flat = np.flatnonzero(arrays.relevant(rel))
    rows = flat // max(arrays.depth, 1)
    return rows, flat - rows * arrays.depth, flat


def _flat(arrays: RankingArrays, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Row-major positions of cells, int64."""
    return rows.astype(np.int64) * arrays.depth + cols


def top_k(a: np.ndarray, k: int | None) -> np.ndarray:
    """The first ``k`` columns of a ranked array: the top ``k`` ranks of each query.

    Parameters
    ----------
    a : ndarray of shape (n_queries, depth)
        A ranked array of :class:`RankingArrays` (grades, judged, filled, ...).
    k : int or None
        The cutoff K; None for every column.

    Returns
    -------
    ndarray of shape (n_queries, min(k, depth))
        A view of ``a``.
    """
    return a if k is None else a[:, :k]


def _discount(n: int) -> np.ndarray:
    """trec_eval's DCG discount ``1 / log2(rank + 1)`` for ranks 1..n, shape (n,)."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def dcg(gains: np.ndarray) -> np.ndarray:
    """Discounted cumulative gain of each row, trec_eval's discount ``1 / log2(rank + 1)``.

    Parameters
    ----------
    gains : ndarray of shape (n_queries, width)
        The gain at each rank, in evaluation order.

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        ``sum_i gains[:, i] / log2(i + 2)``; 0 for a width of 0.

    References
    ----------
    Jarvelin and Kekalainen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4),
    2002 (DCG); trec_eval's ``ndcg`` measures.

    Examples
    --------
    >>> dcg(np.array([[3.0, 1.0]])).round(4)
    array([3.6309])
    """
    return gains @ _discount(gains.shape[1]) if gains.shape[1] else np.zeros(gains.shape[0])


def ndcg_of(
    grades: np.ndarray, ideal: np.ndarray, k: int | None, *, exp: bool = False
) -> np.ndarray:
    """nDCG of each row: DCG of the top ``k`` of ``grades`` over DCG of the top ``k`` of ``ideal``.

    Parameters
    ----------
    grades : ndarray of shape (n_queries, width)
        The grade at each rank of the run, in evaluation order.
    ideal : ndarray of shape (n_queries, width)
        The grades of the ideal ranking (judged grades sorted descending).
    k : int or None
        The cutoff K; None for the whole width.
    exp : bool, default False
        A grade gains ``max(grade, 0)`` (trec_eval's linear gain) or, with ``exp``,
        ``2^max(grade, 0) - 1`` (Burges et al., "Learning to rank using gradient descent",
        ICML 2005).

    Returns
    -------
    ndarray of float64, shape (n_queries,)
        In [0, 1] for an ideal ranking of the same grades; 0 where the ideal DCG is 0
        (:func:`safe_div`).
    """
    gains, best = (np.maximum(top_k(a, k), 0) for a in (grades, ideal))
    if exp:
        gains, best = np.exp2(gains) - 1.0, np.exp2(best) - 1.0
    return safe_div(dcg(gains), dcg(best))


def sum_at(
    cells: tuple[np.ndarray, np.ndarray], values: np.ndarray | float, shape: tuple[int, int]
) -> np.ndarray:
    """Row sums of an array of ``shape`` that holds ``values`` at ``cells`` and 0 elsewhere.

    A kernel that needs a term only at some cells (the relevant ranks, say) computes it there
    and sums here; the sum runs over the whole row as numpy sums a dense array, so the result
    is the same, to the bit, as ``np.where(mask, term, 0.0).sum(axis=1)``.

    Parameters
    ----------
    cells : (rows, cols)
        Integer arrays of the cells, as :meth:`RankingArrays.relevant_cells` gives them.
    values : ndarray of float64, shape (n_cells,), or float
        The term at each cell.
    shape : (n_queries, width)

    Returns
    -------
    ndarray of float64, shape (n_queries,)

    Examples
    --------
    >>> sum_at((np.array([0, 0, 1]), np.array([0, 2, 1])), np.array([1.0, 0.5, 2.0]), (2, 3))
    array([1.5, 2. ])
    """
    dense = np.zeros(shape, dtype=np.float64)
    dense[cells] = values
    return dense.sum(axis=1)


def row_steps(rows: np.ndarray, *, from_end: bool = False) -> list[np.ndarray]:
    """The cells of each step along the rows: every row's first cell, then every row's second...

    For loops that run along all rows at once (a running sum, a running maximum), one step a
    pass, over cells given row by row.

    Parameters
    ----------
    rows : ndarray of int, shape (n_cells,)
        The row of each cell, non-decreasing (row-major cells).
    from_end : bool, default False
        Count the steps from each row's last cell instead.

    Returns
    -------
    list of ndarray of int64
        Element ``t``: the indices of the cells that are ``t`` cells after (``from_end``: before)
        the first (last) cell of their row, ascending.

    Examples
    --------
    >>> [s.tolist() for s in row_steps(np.array([0, 0, 0, 2, 2]))]
    [[0, 3], [1, 4], [2]]
    """
    n = len(rows)
    if n == 0:
        return []
    new_row = np.r_[True, rows[1:] != rows[:-1]]
    if from_end:
        last = np.flatnonzero(np.r_[new_row[1:], True])
        step = np.repeat(last, np.diff(np.r_[-1, last])) - np.arange(n)
    else:
        first = np.flatnonzero(new_row)
        step = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
    small = step.astype(np.int16) if int(step.max()) < 2**15 else step  # a radix sort
    order = np.argsort(small, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(step))]
    return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def safe_div(num: ArrayLike, den: ArrayLike) -> np.ndarray:
    """``num / den`` as float64, 0 where ``den == 0`` (trec_eval's convention).

    Parameters
    ----------
    num, den : array_like
        Broadcastable numerators and denominators.

    Returns
    -------
    ndarray of float64
        Of the broadcast shape.

    Examples
    --------
    >>> safe_div([1, 2], [2, 0])
    array([0.5, 0. ])
    """
    num_a = np.asarray(num, dtype=np.float64)
    den_a = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num_a, den_a).shape, dtype=np.float64)
    np.divide(num_a, den_a, out=out, where=den_a != 0)
    return out


def first_true(mask: np.ndarray) -> np.ndarray:
    """1-based position of the first True of each row, 0 when the row has none.

    Parameters
    ----------
    mask : ndarray of bool, shape (n_queries, width)

    Returns
    -------
    ndarray of int64, shape (n_queries,)
        In [0, width].

    Examples
    --------
    >>> first_true(np.array([[False, True], [False, False]]))
    array([2, 0])
    """
    if mask.shape[1] == 0:
        return np.zeros(mask.shape[0], dtype=np.int64)
    first = mask.argmax(axis=1) + 1
    return np.where(mask.any(axis=1), first, 0)


# ----------------------------------------------------------------------------- preparation


def as_qrels_frame(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """Validate qrels given as a frame or ``{query_id: {doc_id: grade}}``; ids as str."""
    if isinstance(qrels, pd.DataFrame):
        check_qrels(qrels)
        df = qrels
    elif isinstance(qrels, Mapping):
        df = qrels_from_dict(qrels)
    else:
        raise InputError(
            f"qrels must be a DataFrame or a dict of dicts, got {type(qrels).__name__}"
        )
    if len(df) == 0:
        raise InputError("qrels hold no judgements; nothing to evaluate")
    return pd.DataFrame(
        {
            "query_id": df["query_id"].astype(str).to_numpy(dtype=object),
            "doc_id": df["doc_id"].astype(str).to_numpy(dtype=object),
            "relevance": df["relevance"].to_numpy(dtype=np.int64),
        }
    )


def as_run_frame(run: pd.DataFrame | Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """A run given as a frame or ``{query_id: {doc_id: score}}`` (validated by sort_run)."""
    if isinstance(run, pd.DataFrame):
        return run
    if isinstance(run, Mapping):
        return run_from_dict(run)
    raise InputError(f"run must be a DataFrame or a dict of dicts, got {type(run).__name__}")


def ranked_cells(
    arrays: RankingArrays,
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    order: RunOrder,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The rows of ``run`` that fill a cell of ``arrays``, for arrays that carry more per cell.

    Parameters
    ----------
    arrays : RankingArrays
        Arrays :func:`prepare` built from the same run.
    run : DataFrame or dict
        The run, as :func:`prepare` takes it.
    order : {"score", "file"}
        The ordering policy the arrays were built with.

    The run is put in evaluation order as row numbers (:func:`ragnb.frames.index.index_run`, as
    :func:`prepare` orders it; no sorted copy of the frame); a row is kept when its query is one
    of ``arrays.query_ids`` and its rank is within ``arrays.depth``, and only the kept rows are
    taken from the frame.

    Returns
    -------
    ranked : DataFrame
        The kept rows of the run (its columns but ``score`` and ``rank``, values as given), in
        evaluation order.
    rows, cols : ndarray of int64, shape (len(ranked),)
        The cell of each kept row: its query's row of the arrays and its rank - 1.
    """
    frame = as_run_frame(run)
    index = index_run(frame, order)
    groups = index.queries
    ranks = index.ranks()
    row_of_group = pd.Index(arrays.query_ids).get_indexer(groups.ids).astype(np.int64)
    rows = np.repeat(row_of_group, groups.sizes)
    keep = np.flatnonzero((ranks <= arrays.depth) & (rows >= 0))
    columns = [c for c in frame.columns if c not in ("score", "rank")]
    ranked = frame[columns].take(index.order[keep])
    return ranked, rows[keep], ranks[keep] - 1


def cut_arrays(arrays: RankingArrays, depth: int | None) -> RankingArrays:
    """The arrays of the top ``depth`` ranks only, as :func:`prepare` with ``depth`` gives them.

    Parameters
    ----------
    arrays : RankingArrays
        From :func:`prepare` (or with mapped grades); not a subclass with further fields.
    depth : int or None
        The ranks kept; None keeps ``arrays`` as they are.

    Returns
    -------
    RankingArrays
        The ranked arrays and the ideal ranking cut at ``depth`` (views), ``depth_cap`` set;
        the counts (``n_judged``, ``n_retrieved``, ``level_counts``) unchanged.

    Examples
    --------
    >>> arrays = prepare({"q1": {"a": 1, "b": 2}}, {"q1": {"a": 0.5, "b": 0.2, "c": 0.1}})
    >>> cut = cut_arrays(arrays, 1)
    >>> cut.grades.tolist(), cut.ideal.tolist(), cut.depth_cap, cut.n_retrieved.tolist()
    ([[1]], [[2]], 1, [3])
    """
    if depth is None:
        return arrays
    cap = depth if arrays.depth_cap is None else min(depth, arrays.depth_cap)
    return replace(
        arrays,
        grades=arrays.grades[:, :depth],
        judged=arrays.judged[:, :depth],
        filled=arrays.filled[:, :depth],
        ideal=arrays.ideal[:, :depth],
        depth_cap=cap,
    )


def extend_arrays(arrays: RankingArrays, cls: type[_Extended], **extra: np.ndarray) -> _Extended:
    """``arrays`` as the subclass ``cls`` of RankingArrays, with further per-cell arrays.

    Parameters
    ----------
    arrays : RankingArrays
        The arrays of :func:`prepare`.
    cls : type
        A dataclass subclass of :class:`RankingArrays` whose further fields are ``extra``'s.
    **extra : ndarray
        The further fields, usually of shape (n_queries, depth); made read-only in place.

    Returns
    -------
    cls
        Sharing every array of ``arrays``.
    """
    for a in extra.values():
        a.setflags(write=False)
    values: dict[str, Any] = {f.name: getattr(arrays, f.name) for f in fields(RankingArrays)}
    return cls(**values | extra)


def prepare(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    *,
    order: RunOrder = "score",
    depth: int | None = None,
) -> RankingArrays:
    """Join a run with its qrels into padded arrays shared by all measures.

    Parameters
    ----------
    qrels : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``relevance`` (int), or ``{query_id: {doc_id: grade}}``.
    run : DataFrame or dict
        Columns ``query_id``, ``doc_id``, ``score``, or ``{query_id: {doc_id: score}}``.
    order : {"score", "file"}, default "score"
        Ordering policy, see :func:`ragnb.frames.index.sort_run` (``"score"`` is trec_eval's: score
        descending, ties by ``doc_id`` descending).
    depth : int, optional
        Keep only the top ``depth`` ranks (the largest cutoff the measures need); default the whole
        run. ``n_retrieved`` always counts the whole run.

    Returns
    -------
    RankingArrays
        One row per query of the qrels (sorted). Run queries without qrels are dropped and
        counted in ``n_run_queries_without_qrels``.

    Raises
    ------
    InputError
        On malformed or empty qrels, a malformed run, an unknown ``order`` or a bad ``depth``.

    Notes
    -----
    No frame is sorted and no string column is hashed or sorted as a whole: both inputs are grouped
    by query as row numbers (:func:`ragnb.frames.index.index_run`, ``index_qrels``), and each
    query's ranked documents are matched with its judgements by merging the two lists sorted by
    ``doc_id``, in compiled code (:mod:`ragnb.frames.groupsort`). A run whose ``doc_id`` is arrow
    strings (the columnar TREC reader's) is joined query by query on the chunk holding it
    (:func:`ragnb.frames.index.join_strings`), a dictionary-coded one as integer codes. Dicts of
    dicts are read directly, without building frames.

    Examples
    --------
    >>> qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
    >>> run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}, "q9": {"a": 1.0}}
    >>> arrays = prepare(qrels, run)
    >>> arrays.grades.tolist(), arrays.judged.tolist()
    ([[2, 0, 0]], [[True, False, True]])
    >>> arrays.ideal.tolist(), arrays.n_relevant(1).tolist(), arrays.n_run_queries_without_qrels
    ([[2, 1, 0]], [2], 1)
    """
    depth = check_positive_int(depth, "depth", allow_none=True)
    qrels_index = index_qrels(qrels)
    if order == "score" and isinstance(run, Mapping):  # a dict run: its judgements looked up
        ranks = joined_ranks(run, qrels_index)
        if ranks is not None:
            return _arrays_from_ranks(qrels_index, ranks, depth=depth)
    if isinstance(run, pd.DataFrame):  # doc ids as arrow strings, or coded: joined per query
        strings = index_string_run(run, order)
        if strings is not None:
            return _prepare_coded(qrels_index, strings, run, order=order, depth=depth)
        run = with_coded_docs(run)  # arrow strings of queries not consecutive: coded
        coded = index_coded_run(run, order)
        if coded is not None:
            return _prepare_coded(qrels_index, coded, run, order=order, depth=depth)
    run_index = index_run(run, order)
    return _prepare_arrays(qrels_index, run_index, order=order, depth=depth)


def _prepare_coded(
    qrels: QrelsIndex,
    run: CodedRun | StringRun,
    frame: pd.DataFrame,
    *,
    order: RunOrder,
    depth: int | None,
) -> RankingArrays:
    """The padded arrays of a run whose doc ids are dictionary-coded (:func:`join_coded`) or
    arrow strings with each query's rows consecutive (:func:`join_strings`)."""
    groups = qrels.queries
    n_q = len(groups.ids)
    row_of_group = pd.Index(groups.ids).get_indexer(run.query_ids).astype(np.int64)
    known = row_of_group >= 0
    n_retrieved = np.zeros(n_q, dtype=np.int64)
    n_retrieved[row_of_group[known]] = run.size[known]
    full_depth = int(n_retrieved.max()) if n_q else 0
    width = full_depth if depth is None else min(depth, full_depth)
    options: dict[str, Any] = {
        "by_file": order == "file",
        "raise_duplicate": lambda: check_run(frame),
    }
    if isinstance(run, StringRun):
        joined = join_strings(qrels, run, row_of_group, width, **options)
    else:
        joined = join_coded(qrels, run, row_of_group, width, **options)
    grades, judged, filled, n_disagree = joined
    n_without = int((~known).sum())
    return _finish(qrels, grades, judged, filled, n_retrieved, order, depth, n_disagree, n_without)


def _arrays_from_ranks(
    qrels: QrelsIndex, ranks: JoinedRanks, *, depth: int | None
) -> RankingArrays:
    """The padded arrays from the rank of each judgement in a dict run (no join needed)."""
    found = ranks.group_of >= 0
    n_retrieved = np.zeros(len(qrels.queries.ids), dtype=np.int64)
    n_retrieved[found] = ranks.run.size[ranks.group_of[found]]
    n_without = len(ranks.run.ids) - int(found.sum())
    return prepare_ranked(qrels, n_retrieved, ranks.rank, n_without, depth=depth)


def prepare_ranked(
    qrels: QrelsIndex,
    n_retrieved: np.ndarray,
    rank: np.ndarray,
    n_run_queries_without_qrels: int,
    *,
    depth: int | None = None,
) -> RankingArrays:
    """The padded arrays of a run given by where each judgement stands in it.

    The measures read only the grade at each rank and how many documents each query returns,
    so a run joined with its qrels as it is read (:func:`ragnb.io.runscan.scan_run`) needs no
    other column.

    Parameters
    ----------
    qrels : QrelsIndex
        The qrels (:func:`ragnb.frames.index.index_qrels`).
    n_retrieved : ndarray of int64, shape (n_qrels_queries,)
        Documents the run returns for each query of the qrels (0: not in the run).
    rank : ndarray of int64, shape (n_judgements,)
        0-based rank of each judgement in its query's evaluation order (score descending,
        ties by document id descending), -1 when not retrieved; in the layout of
        ``qrels.queries.rows``.
    n_run_queries_without_qrels : int
        Queries of the run without judgements (left out of the arrays).
    depth : int, optional
        As :func:`prepare`.

    Returns
    -------
    RankingArrays
        The arrays :func:`prepare` builds from the same run (order ``"score"``).
    """
    depth = check_positive_int(depth, "depth", allow_none=True)
    groups = qrels.queries
    n_q = len(groups.ids)
    full_depth = int(n_retrieved.max()) if n_q else 0
    width = full_depth if depth is None else min(depth, full_depth)
    q_row = np.repeat(np.arange(n_q, dtype=np.int64), groups.sizes)
    hit = (rank >= 0) & (rank < width)
    grades = np.zeros((n_q, width), dtype=np.int64)
    judged = np.zeros((n_q, width), dtype=bool)
    cell = q_row[hit] * width + rank[hit]  # flat positions: one index for both
    grades.ravel()[cell] = qrels.grades[groups.rows[hit]]
    judged.ravel()[cell] = True
    filled = np.arange(width, dtype=np.int64) < n_retrieved[:, None]
    n_without = n_run_queries_without_qrels
    return _finish(qrels, grades, judged, filled, n_retrieved, "score", depth, 0, n_without)


def _prepare_arrays(
    qrels: QrelsIndex,
    run: RunIndex,
    *,
    order: RunOrder,
    depth: int | None,
) -> RankingArrays:
    """Join indexed qrels and an indexed run into the padded arrays."""
    groups = qrels.queries
    n_q = len(groups.ids)

    # Run query groups -> rows of the arrays (the qrels' queries, sorted).
    run_groups = run.queries
    row_of_group = pd.Index(groups.ids).get_indexer(run_groups.ids).astype(np.int64)
    known = row_of_group >= 0
    n_without = int((~known).sum())
    n_retrieved = np.zeros(n_q, dtype=np.int64)
    n_retrieved[row_of_group[known]] = run_groups.sizes[known]
    full_depth = int(n_retrieved.max()) if n_q else 0
    width = full_depth if depth is None else min(depth, full_depth)

    # Each query's top `width` ranks, joined with its judgements (a merge by doc_id).
    run_docs, qrels_docs = common_skip(run.docs, qrels.docs)
    grades = np.zeros((n_q, width), dtype=np.int64)
    judged = np.zeros((n_q, width), dtype=bool)
    filled = np.zeros((n_q, width), dtype=bool)
    compiled = kernels(len(run.by_doc) + len(qrels.by_doc))
    compiled.run_chunks(
        compiled.join_grades,
        len(run_groups.ids),
        run.by_doc,
        run.order,
        run_groups.starts,
        run_docs.data,
        run_docs.offsets,
        run_docs.prefix,
        row_of_group,
        qrels.by_doc,
        groups.starts,
        qrels_docs.data,
        qrels_docs.offsets,
        qrels_docs.prefix,
        qrels.grades,
        run_docs.skip,
        np.empty(len(run.order), dtype=np.int64),
        grades,
        judged,
        filled,
    )

    skipped = (run.n_rank_disagreements, n_without)
    return _finish(qrels, grades, judged, filled, n_retrieved, order, depth, *skipped)


def _finish(
    qrels: QrelsIndex,
    grades: np.ndarray,
    judged: np.ndarray,
    filled: np.ndarray,
    n_retrieved: np.ndarray,
    order: RunOrder,
    depth: int | None,
    n_rank_disagreements: int,
    n_without: int,
) -> RankingArrays:
    """The ideal ranking and grade levels of the qrels, and the arrays as one object."""
    groups = qrels.queries
    n_judged = groups.sizes.astype(np.int64)
    max_judged = int(n_judged.max())
    ideal_width = max_judged if depth is None else min(depth, max_judged)
    levels, level_counts, ideal = _levels_and_ideal(qrels, n_judged, ideal_width)

    arrays = (grades, judged, filled, ideal, n_judged, n_retrieved, levels, level_counts)
    for a in arrays:
        a.setflags(write=False)
    query_ids = groups.ids.copy()
    query_ids.setflags(write=False)
    return RankingArrays(
        query_ids=query_ids,
        grades=grades,
        judged=judged,
        filled=filled,
        ideal=ideal,
        n_judged=n_judged,
        n_retrieved=n_retrieved,
        grade_levels=levels,
        level_counts=level_counts,
        order=order,
        depth_cap=depth,
        n_rank_disagreements=n_rank_disagreements,
        n_run_queries_without_qrels=n_without,
    )


def _levels_and_ideal(
    qrels: QrelsIndex, n_judged: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct grades (ascending), their count per query (n_q, n_levels), and the ideal
    ranking (n_q, width): each query's grades descending, zero-padded. Counted when the grades
    span a small range (the usual 0-3), sorted otherwise."""
    groups = qrels.queries
    n_q = len(groups.ids)
    rows = groups.rows
    in_order = len(rows) == len(qrels.grades) and bool((rows[1:] > rows[:-1]).all())
    grades = qrels.grades if in_order else qrels.grades[rows]  # every row once: in order, as is
    low, high = int(grades.min()), int(grades.max())
    span = high - low + 1
    if span * n_q > 4 * len(grades) + 4096:
        q_row = np.repeat(np.arange(n_q, dtype=np.int64), n_judged)
        levels, level_of = np.unique(grades, return_inverse=True)
        counts = np.bincount(q_row * len(levels) + level_of.ravel(), minlength=n_q * len(levels))
        level_counts = counts.reshape(n_q, len(levels)).astype(np.int64)
        s_grade = _descending_within(q_row, grades)
        s_pos = np.arange(len(q_row), dtype=np.int64) - np.repeat(groups.starts[:-1], n_judged)
        ideal = np.zeros((n_q, width), dtype=np.int64)
        in_ideal = s_pos < width
        ideal[q_row[in_ideal], s_pos[in_ideal]] = s_grade[in_ideal]
        return levels.astype(np.int64), level_counts, ideal
    starts = groups.starts[:-1]  # every query of the qrels has a judgement
    counts = np.stack(
        [np.add.reduceat(grades == low + v, starts, dtype=np.int32) for v in range(span)], 1
    ).reshape(n_q, span)
    present = counts.any(axis=0)
    levels = (np.flatnonzero(present) + low).astype(np.int64)
    level_counts = counts[:, present].astype(np.int64)
    # position p of a query holds the first level from the top whose counts reach past p:
    # written level after level in place (one array of the ideal's size, not several)
    reach = np.cumsum(level_counts[:, ::-1], axis=1)
    pos = np.arange(width, dtype=np.int64)
    descending = levels[::-1]
    ideal = np.full((n_q, width), descending[0] if len(levels) else 0, dtype=np.int64)
    for j in range(len(levels) - 1):
        ideal[pos >= reach[:, j : j + 1]] = descending[j + 1]
    ideal[pos >= reach[:, -1:]] = 0
    return levels, level_counts, ideal


def _descending_within(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` sorted descending within each group; ``group`` is sorted (non-decreasing)."""
    if len(values) == 0:
        return values.copy()
    low, high = int(values.min()), int(values.max())
    span = high - low + 1
    if span * (int(group[-1]) + 1) < 2**62:  # one packed int64 key, one fast sort
        key = group * span + (high - values)
        key.sort()
        return high - key % span
    return values[np.lexsort((-values, group))]


def check_arrays(arrays: Any) -> RankingArrays:
    """``arrays`` when it is a :class:`RankingArrays`, the input of every measure kernel.

    Parameters
    ----------
    arrays : object
        What a caller passed as the prepared run and qrels (:func:`ragnb.measures.prepare`).

    Returns
    -------
    RankingArrays
        ``arrays`` itself.

    Raises
    ------
    InputError
        When ``arrays`` is anything else (the message names its type).
    """
    if not isinstance(arrays, RankingArrays):
        raise InputError(
            f"expected RankingArrays from ragnb.measures.prepare, got {type(arrays).__name__}"
        )
    return arrays


#: The fields of :class:`RankingArrays` with one entry (row) per query.
PER_QUERY_FIELDS = (
    "query_ids",
    "grades",
    "judged",
    "filled",
    "ideal",
    "n_judged",
    "n_retrieved",
    "level_counts",
)


def query_rows(arrays: RankingArrays, start: int, stop: int) -> RankingArrays:
    """The queries ``start`` to ``stop - 1`` of plain arrays, as arrays of their own (views).

    Every measure's value for a query reads that query's row alone, so a measure computed on
    consecutive blocks of queries equals the measure computed on all of them; blocks keep the
    measures' temporaries (several float arrays of shape (queries, depth)) small.

    Parameters
    ----------
    arrays : RankingArrays
        Plain arrays of :func:`prepare` (not a subclass with further per-cell fields).
    start, stop : int
        Query rows, ``0 <= start <= stop``; ``stop`` past the end is cut.

    Returns
    -------
    RankingArrays
        Same depth, grade levels, order and counts; the rows' arrays are views of ``arrays``'.

    Raises
    ------
    InputError
        On arrays of a subclass of :class:`RankingArrays`.
    """
    if type(arrays) is not RankingArrays:
        raise InputError(f"query_rows takes plain RankingArrays, got {type(arrays).__name__}")
    rows = slice(start, stop)
    return replace(arrays, **{f: getattr(arrays, f)[rows] for f in PER_QUERY_FIELDS})
