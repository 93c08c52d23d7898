"""The evaluation engine: a run put in evaluation order and joined with its qrels by query.

Ordering and joining by query without hashing or sorting millions of strings: ids become UTF-8
byte buffers (:class:`Strings`), queries become groups of rows (:class:`Groups`), and compiled
kernels (:mod:`ragnb.groupsort`, imported on first use: numba costs about a second to import)
sort the hundred-odd rows of each query. :func:`index_run` and :func:`index_qrels` validate and
index a run and qrels; :func:`sort_run` builds the sorted frame from the run's index;
:func:`ragnb.measures.prepare` reads the indexes directly and never builds it. A run held as
dicts is joined with its qrels by look-ups (:func:`joined_ranks`).

Ids compare as strings by code point (Python's ``str`` order, which is the byte order of their
UTF-8 form and so trec_eval's ``strcmp``); ids that are not strings are compared as ``str(id)``.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice, repeat
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames import (
    RunOrder,
    as_str_ids,
    check_qrels,
    check_run,
    nested_parts,
    qrels_from_dict,
    run_from_dict,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "PLAIN_PYTHON_ROWS",
    "Groups",
    "JoinedRanks",
    "QrelsIndex",
    "RunIndex",
    "SortedRun",
    "Strings",
    "common_skip",
    "index_qrels",
    "index_run",
    "joined_ranks",
    "kernels",
    "sort_run",
]


@dataclass(frozen=True)
class SortedRun:
    """A run in evaluation order, with what the ordering policy did.

    Attributes
    ----------
    run : DataFrame
        Columns ``query_id``, ``doc_id``, ``score`` and ``rank`` (1-based, the evaluation order).
        Rows are grouped by query; queries appear in sorted order of ``query_id``.
    order : {"score", "file"}
        The policy applied.
    n_rank_disagreements : int
        Queries whose file ``rank`` column disagrees with the score order (only counted when the
        run has a ``rank`` column).
    """

    run: pd.DataFrame
    order: RunOrder
    n_rank_disagreements: int


def sort_run(run: pd.DataFrame, order: RunOrder = "score", *, warn: bool = True) -> SortedRun:
    """Put a run in evaluation order.

    Parameters
    ----------
    run : DataFrame
        A run frame (see module docstring).
    order : {"score", "file"}, default "score"
        ``"score"``: score descending, ties by ``doc_id`` descending, as trec_eval does; the file's
        rank column is ignored. ``"file"``: the file's ``rank`` column ascending if present, else
        the frame's row order.
    warn : bool, default True
        Emit a ``UserWarning`` when the file's ranks disagree with the score order.

    Returns
    -------
    SortedRun

    Raises
    ------
    InputError
        On a malformed run frame, or an unknown ``order``.

    Notes
    -----
    Ids compare as strings by code point (Python's ``str`` order, which is the byte order of their
    UTF-8 form and so trec_eval's ``strcmp``); ids that are not strings are compared as ``str(id)``.
    The work is done per query by compiled kernels (:mod:`ragnb.groupsort`), see
    :func:`index_run`.

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"],
    ...                     "score": [1.0, 2.0, 1.0]})
    >>> sort_run(run).run["doc_id"].tolist()
    ['b', 'c', 'a']
    """
    index = index_run(run, order)
    n_disagree = index.n_rank_disagreements
    if n_disagree and warn and order == "score":
        warnings.warn(
            f"{n_disagree} queries have a rank column that disagrees with their scores; "
            "ordering by score as trec_eval does (use order='file' to keep the file's order)",
            UserWarning,
            stacklevel=2,
        )
    out = run.reset_index(drop=True).take(index.order)
    if "rank" in out.columns:
        out = out.drop(columns=["rank"])
    out = out.reset_index(drop=True)
    for col in ("query_id", "doc_id"):
        out[col] = out[col].astype(str)
    out["rank"] = index.ranks()
    return SortedRun(run=out, order=order, n_rank_disagreements=n_disagree)


# ----------------------------------------------------------------------------- fast path
# Ordering and joining by query without hashing or sorting millions of strings: ids become UTF-8
# byte buffers, queries become groups of rows, and compiled kernels sort the hundred-odd rows of
# each query (ragnb.groupsort). prepare() uses the indexes directly and never builds the sorted
# frame; sort_run() builds it from the index.


@dataclass(frozen=True, eq=False)
class Strings:
    """A column of strings as UTF-8 bytes, see :mod:`ragnb.groupsort`.

    Attributes
    ----------
    data : ndarray of uint8
    offsets : ndarray of int64, shape (n + 1,)
        String ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    skip : int
        Leading bytes that every string shares (comparisons start after them).
    prefix : ndarray of uint64, shape (n,)
        Bytes ``skip .. skip + 7`` of each string, big-endian, zero-padded.
    """

    data: np.ndarray
    offsets: np.ndarray
    skip: int
    prefix: np.ndarray

    @classmethod
    def of(cls, data: np.ndarray, offsets: np.ndarray, skip: int | None = None) -> Strings:
        compiled = kernels()
        if skip is None:
            skip = int(compiled.common_prefix(data, offsets))
        return cls(data, offsets, skip, compiled.prefixes(data, offsets, skip))

    def raw(self, i: int) -> bytes:
        """The bytes of string ``i``."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def get(self, i: int) -> str:
        """String ``i``."""
        return self.raw(i).decode("utf-8", "surrogatepass")


def common_skip(a: Strings, b: Strings) -> tuple[Strings, Strings]:
    """Both columns with prefixes from the same byte, so that the kernels can compare them.

    Parameters
    ----------
    a, b : Strings
        Two id columns (a run's and its qrels' documents).

    Returns
    -------
    (Strings, Strings)
        ``a`` and ``b``, each rebuilt only when its ``skip`` differs from the shared one.
    """
    x = a.raw(0) if len(a.offsets) > 1 else b""
    y = b.raw(0) if len(b.offsets) > 1 else b""
    shared = 0
    while shared < min(len(x), len(y)) and x[shared] == y[shared]:
        shared += 1
    skip = min(a.skip, b.skip, shared)
    a = a if a.skip == skip else Strings.of(a.data, a.offsets, skip)
    b = b if b.skip == skip else Strings.of(b.data, b.offsets, skip)
    return a, b


@dataclass(frozen=True, eq=False)
class Groups:
    """Rows grouped by query.

    Attributes
    ----------
    ids : ndarray of str (object), shape (n_groups,)
        The distinct query ids (as ``str``), sorted.
    rows : ndarray of int64, shape (n_rows,)
        Row numbers, group after group; in row order within a group.
    starts : ndarray of int64, shape (n_groups + 1,)
        Group ``g`` is ``rows[starts[g]:starts[g + 1]]``.
    """

    ids: np.ndarray
    rows: np.ndarray
    starts: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        """Rows per group, int64 of shape (n_groups,)."""
        return np.diff(self.starts)


@dataclass(frozen=True, eq=False)
class RunIndex:
    """A validated run in evaluation order, as row numbers (no frame is built).

    Attributes
    ----------
    queries : Groups
        Rows grouped by ``query_id``.
    docs : Strings
        ``doc_id`` of each row.
    by_doc : ndarray of int64, shape (n_rows,)
        Rows of each query by ``doc_id`` ascending (the layout of ``queries.rows``).
    order : ndarray of int64, shape (n_rows,)
        Rows of each query in evaluation order (the layout of ``queries.rows``).
    n_rank_disagreements : int
        Queries whose ``rank`` column disagrees with the score order.
    """

    queries: Groups
    docs: Strings
    by_doc: np.ndarray
    order: np.ndarray
    n_rank_disagreements: int

    def ranks(self) -> np.ndarray:
        """1-based rank of each position of ``order``, int64 of shape (n_rows,)."""
        starts = self.queries.starts
        n = int(starts[-1])
        return np.arange(1, n + 1, dtype=np.int64) - np.repeat(starts[:-1], self.queries.sizes)


@dataclass(frozen=True, eq=False)
class QrelsIndex:
    """Validated qrels grouped by query.

    Attributes
    ----------
    queries : Groups
    docs : Strings
    by_doc : ndarray of int64, shape (n_rows,)
        Rows of each query by ``doc_id`` ascending.
    grades : ndarray of int64, shape (n_rows,)
        Grade of each row.
    keys : list or None
        The document ids of a dict of dicts as given, in row order (None for a frame): a dict
        run is joined with them by look-ups (:func:`joined_ranks`).
    """

    queries: Groups
    docs: Strings
    by_doc: np.ndarray
    grades: np.ndarray
    keys: list | None = None


#: Run rows above which evaluating without numba warns that it is slow.
PLAIN_PYTHON_ROWS = 200_000


def kernels() -> ModuleType:
    """The compiled kernels, :mod:`ragnb.groupsort` (numba is imported on first use).

    Returns
    -------
    module
        :mod:`ragnb.groupsort`; its ``COMPILED`` is False when numba is not installed (the
        kernels then run as plain Python, with the same results).
    """
    from ragnb import groupsort

    return groupsort


def index_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    order: RunOrder,
) -> RunIndex:
    """Validate a run (frame or dict of dicts) and put it in evaluation order.

    Same policy, validation and error messages as :func:`sort_run` (run_from_dict's for a
    dict), without building the sorted frame.

    Parameters
    ----------
    run : DataFrame or dict
        A run frame, or ``{query_id: {doc_id: score}}``.
    order : {"score", "file"}
        As :func:`sort_run`.

    Returns
    -------
    RunIndex

    Warns
    -----
    RuntimeWarning
        When more than :data:`PLAIN_PYTHON_ROWS` rows are ordered without numba.

    Raises
    ------
    InputError
        On a malformed run or an unknown ``order``.
    """
    if isinstance(run, pd.DataFrame):
        frame = run
        check_run(frame, duplicates=False)
        queries = _group_by_id(frame["query_id"])
        docs = _string_buffers(frame["doc_id"])
        score = _order_keys(frame["score"])
        file_key = _order_keys(frame["rank"]) if "rank" in frame.columns else None
        by_doc = _sorted_by_string(queries, docs, lambda: check_run(frame), "run")
    elif isinstance(run, Mapping):
        parts = _dict_parts(run, "score")
        if parts is None:  # a bad score (raises, naming it) or ids equal only as str
            return index_run(run_from_dict(run), order)
        queries, docs, score, _ = parts
        file_key = None
        by_doc = _sorted_by_string(queries, docs, lambda: check_run(run_from_dict(run)), "run")
    else:
        raise InputError(f"run must be a DataFrame or a dict of dicts, got {type(run).__name__}")
    if order not in ("score", "file"):
        raise InputError(f"unknown run order {order!r}; use 'score' or 'file'")
    compiled = kernels()
    if not compiled.COMPILED and len(by_doc) > PLAIN_PYTHON_ROWS:
        warnings.warn(
            f"a run of {len(by_doc):,} rows is evaluated by the plain-Python kernels (numba is "
            "not installed): minutes where the compiled ones take seconds; "
            'pip install "ragnb[fast]"',
            RuntimeWarning,
            stacklevel=3,
        )
    n_groups = len(queries.ids)
    out = np.empty(len(by_doc), dtype=np.int64)
    disagree = np.zeros(n_groups, dtype=np.bool_)
    compiled.run_chunks(
        compiled.rank_order,
        n_groups,
        by_doc,
        queries.rows,
        queries.starts,
        score,
        np.zeros(0, dtype=np.float64) if file_key is None else file_key,
        file_key is not None,
        order == "file",
        out,
        disagree,
    )
    return RunIndex(queries, docs, by_doc, out, int(disagree.sum()))


def index_qrels(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> QrelsIndex:
    """Validate qrels (frame or dict of dicts) and group them by query, documents sorted.

    Parameters
    ----------
    qrels : DataFrame or dict
        A qrels frame, or ``{query_id: {doc_id: grade}}``.

    Returns
    -------
    QrelsIndex

    Raises
    ------
    InputError
        As :func:`check_qrels` (or :func:`qrels_from_dict`), and on qrels without judgements.
    """
    if isinstance(qrels, pd.DataFrame):
        frame = qrels
        check_qrels(frame, duplicates=False)
        queries = _group_by_id(frame["query_id"])
        docs = _string_buffers(frame["doc_id"])
        grades = np.array(frame["relevance"].to_numpy(dtype=np.int64), dtype=np.int64)
        keys: list | None = None
        by_doc = _sorted_by_string(queries, docs, lambda: check_qrels(frame), "qrels")
    elif isinstance(qrels, Mapping):
        parts = _dict_parts(qrels, "relevance")
        if parts is None:  # a bad grade (raises, naming it) or ids equal only as str
            return index_qrels(qrels_from_dict(qrels))
        queries, docs, grades, keys = parts
        by_doc = _sorted_by_string(
            queries, docs, lambda: check_qrels(qrels_from_dict(qrels)), "qrels"
        )
    else:
        raise InputError(
            f"qrels must be a DataFrame or a dict of dicts, got {type(qrels).__name__}"
        )
    if len(grades) == 0:
        raise InputError("qrels hold no judgements; nothing to evaluate")
    return QrelsIndex(queries, docs, by_doc, grades, keys)


def _dict_parts(
    nested: Mapping[str, Mapping[str, object]], column: str
) -> tuple[Groups, Strings, np.ndarray, list] | None:
    """Groups, document strings, converted values and document ids (as given) of
    ``{query: {doc: value}}``, in row order (``column``: ``"score"`` or ``"relevance"``).

    None when a value does not convert or two query ids are equal as ``str``: the caller then
    takes the checked path through a frame.
    """
    parts = nested_parts(nested, column)
    if parts is None:
        return None
    qids, sizes, docs, converted = parts
    if len(set(qids)) != len(qids):
        return None
    n = int(sizes.sum())
    keep = sizes > 0  # a query with no entries has no rows
    starts = (np.cumsum(sizes) - sizes)[keep]
    heads = np.array(qids, dtype=object)[keep]
    return _groups_from_segments(starts, heads, n), _strings_from_list(docs), converted, docs


def _sorted_by_string(
    groups: Groups, docs: Strings, raise_duplicate: Callable[[], None], what: str
) -> np.ndarray:
    """Rows of each group by string ascending; on a (query, doc) pair seen twice call
    ``raise_duplicate`` (which names the first duplicate in row order), else raise here."""
    compiled = kernels()
    n_groups = len(groups.ids)
    by_doc = np.empty(len(groups.rows), dtype=np.int64)
    dup = np.empty(n_groups, dtype=np.int64)
    compiled.run_chunks(
        compiled.doc_order,
        n_groups,
        groups.rows,
        groups.starts,
        docs.data,
        docs.offsets,
        docs.prefix,
        docs.skip,
        by_doc,
        dup,
    )
    if (dup >= 0).any():
        raise_duplicate()
        g = int(np.flatnonzero(dup >= 0)[0])  # ids equal only as str, e.g. 7 and "7"
        raise InputError(
            f"duplicate ({what}) entry for doc_id {docs.get(int(dup[g]))!r}",
            query_id=str(groups.ids[g]),
        )
    return by_doc


def _is_arrow_string(col: pd.Series) -> bool:
    dtype = col.dtype
    if isinstance(dtype, pd.StringDtype):
        return dtype.storage == "pyarrow"
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
    return False


def _arrow_array(col: pd.Series) -> pa.Array:
    """The pyarrow array behind an arrow-backed string column, in one chunk."""
    import pyarrow as pa

    arr = pa.array(col.array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr


def _string_buffers(col: pd.Series) -> Strings:
    """A column of ids as UTF-8 bytes; a value that is not a str counts as ``str(value)``."""
    if _is_arrow_string(col):
        arr = _arrow_array(col)
        if not arr.null_count:
            return _strings_from_arrow(arr)
    return _strings_from_objects(col.to_numpy(dtype=object))


def _strings_from_list(values: list) -> Strings:
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # without the fast extra: Python's own encoder
        return _encode_strings(as_str_ids(np.fromiter(values, object, len(values))))

    try:
        arr = pa.array(values, type=pa.large_string())
    except (pa.ArrowException, UnicodeError):  # not all str, or lone surrogates
        return _strings_from_objects(np.fromiter(values, dtype=object, count=len(values)))
    return _strings_from_arrow(arr)


def _strings_from_objects(values: np.ndarray) -> Strings:
    values = as_str_ids(values)
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # without the fast extra: Python's own encoder
        return _encode_strings(values)
    try:
        arr = pa.array(values, type=pa.large_string())
    except (pa.ArrowException, UnicodeError):  # lone surrogates are not valid UTF-8
        return _encode_strings(values)
    return _strings_from_arrow(arr)


def _strings_from_arrow(arr: pa.Array) -> Strings:
    """Buffers of a pyarrow string array without nulls (not copied)."""
    import pyarrow as pa

    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    buffers = arr.buffers()
    off_type = np.int32 if pa.types.is_string(arr.type) else np.int64
    offsets = np.frombuffer(buffers[1], dtype=off_type)[arr.offset : arr.offset + len(arr) + 1]
    if buffers[2] is None or len(arr) == 0:
        data = np.zeros(0, dtype=np.uint8)
    else:
        data = np.frombuffer(buffers[2], dtype=np.uint8)
    return Strings.of(_read_only(data), _read_only(offsets.astype(np.int64, copy=False)))


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` flagged read-only: the kernels then see one array type (and compile once)."""
    if a.flags.writeable:
        a = a.view()
        a.setflags(write=False)
    return a


def _encode_strings(values: np.ndarray) -> Strings:
    """UTF-8 keeping lone surrogates (``surrogatepass``): byte order stays code point order."""
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return Strings.of(_read_only(data), _read_only(offsets))


def _group_by_id(col: pd.Series) -> Groups:
    """Group rows by ``str(id)``: groups in sorted id order, rows in row order within a group.

    Consecutive rows with the same id (a run written query after query) form a segment; only the
    segments' first ids are converted and sorted, so the cost is one pass over the rows plus a
    sort of the queries.
    """
    n = len(col)
    if n == 0:
        return _groups_from_segments(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object), 0)
    if _is_arrow_string(col):
        import pyarrow.compute as pc

        arr = _arrow_array(col)
        change = pc.not_equal(arr[1:], arr[:-1]).fill_null(True).to_numpy(zero_copy_only=False)
    else:
        values = col.to_numpy()
        change = np.asarray(values[1:] != values[:-1], dtype=bool)
    starts = np.flatnonzero(np.concatenate(([True], change))).astype(np.int64)
    heads = col.iloc[starts].to_numpy(dtype=object)
    return _groups_from_segments(starts, heads, n)


def _groups_from_segments(starts: np.ndarray, heads: np.ndarray, n: int) -> Groups:
    """Groups from segments of consecutive rows: segment ``j`` starts at row ``starts[j]``, ends
    where the next starts (or at ``n``) and has the id ``heads[j]``."""
    # ids sorted by Python's sort, whose str comparisons beat pandas' sort of objects
    values = as_str_ids(heads).tolist()
    if all(map(operator.lt, values, islice(values, 1, None))):  # one segment per id, in order
        ids = np.array(values, dtype=object)
        return Groups(ids, np.arange(n, dtype=np.int64), np.append(starts, n).astype(np.int64))
    uniques = sorted(set(values))
    ids = np.array(uniques, dtype=object)
    position = dict(zip(uniques, range(len(uniques)), strict=True))
    codes = np.fromiter(map(position.__getitem__, values), np.int64, len(values))
    if len(codes) < 2 or bool((np.diff(codes) > 0).all()):  # one segment per id, in order
        return Groups(ids, np.arange(n, dtype=np.int64), np.append(starts, n).astype(np.int64))
    lengths = np.diff(np.append(starts, n))
    by_code = np.argsort(codes, kind="stable")
    seg_start, seg_len = starts[by_code], lengths[by_code]
    new_start = np.cumsum(seg_len) - seg_len
    rows = np.repeat(seg_start - new_start, seg_len) + np.arange(n, dtype=np.int64)
    sizes = np.bincount(codes, weights=lengths, minlength=len(ids)).astype(np.int64)
    return Groups(ids, rows, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))


def _order_keys(col: pd.Series) -> np.ndarray:
    """float64 keys that order and tie exactly as the column's values do; NaN / missing last."""
    dtype = col.dtype
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = col.to_numpy()
    kind = values.dtype.kind
    if kind == "b" or (kind in "iu" and values.dtype.itemsize <= 4):
        return values.astype(np.float64)
    if kind in "iu":
        if values.size == 0 or np.abs(values.astype(np.float64)).max() < 2.0**53:
            return values.astype(np.float64)
        return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.float64)
    if kind == "f":
        values = values.astype(np.float64)
        if not np.isnan(values).any():
            return values
        return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.float64)
    codes, _ = pd.factorize(values, sort=True)
    return np.where(codes < 0, np.inf, codes).astype(np.float64)


# ------------------------------------------------------------------ dict runs, joined by look-ups
# A run held as dicts is already a hash table per query: its judged documents are found by looking
# each judged id up in its query's dict (as many look-ups as judgements), and each one's rank
# follows from the scores alone, 1 + (scores above it) + (equal scores whose id is greater,
# trec_eval's tie order), so the run's ten million ids are never converted to strings or sorted;
# only the few documents whose score ties with a judged one are compared, as str. The run is read
# in one pass, query by query (its ids' types, its scores, then its judged documents' scores while
# its dict is still in the CPU cache): reading ten million scattered Python objects is what costs.
# Applies when every document id of the run and of the qrels is a str, every query of the run is a
# dict, no judged id is empty and the order is by score; otherwise joined_ranks returns None and
# the caller takes the general path, which raises its errors. The arrays are identical to the
# general path's (tests/test_dictjoin.py).
@dataclass(frozen=True, eq=False)
class _Read:
    """The run read query by query (its non-empty queries, in dict order).

    Attributes
    ----------
    ids : ndarray of str (object), shape (n_groups,)
    dicts : list of dict
        Each query's documents.
    values : ndarray of float64
        Query after query, the query's scores in dict order, then the scores looked up for its
        judgements (NaN: not retrieved).
    first, size : ndarray of int64, shape (n_groups,)
        Query ``g``'s scores are ``values[first[g]:first[g] + size[g]]``.
    starts : ndarray of int64, shape (n_groups + 1,)
        Cumulated sizes: the queries' bounds in the joined layout.
    """

    ids: np.ndarray
    dicts: list[dict]
    values: np.ndarray
    first: np.ndarray
    size: np.ndarray
    starts: np.ndarray


@dataclass(frozen=True, eq=False)
class JoinedRanks:
    """Where each judgement of the qrels stands in a dict run (:func:`joined_ranks`).

    Attributes
    ----------
    run : _Read
        The run's non-empty queries (dict order), their sizes and scores.
    group_of : ndarray of int64, shape (n_qrels_groups,)
        The run group of each qrels query (-1: missing from the run).
    rank : ndarray of int64, shape (n_qrels_rows,)
        0-based rank of each judgement in its query's evaluation order (score descending, ties
        by id descending), -1 when not retrieved; in the layout of ``qrels.queries.rows``.
    """

    run: _Read
    group_of: np.ndarray
    rank: np.ndarray


def joined_ranks(run: Mapping[str, Mapping[str, float]], qrels: QrelsIndex) -> JoinedRanks | None:
    """The rank of each judgement of ``qrels`` in a dict run, or None where it does not apply.

    Parameters
    ----------
    run : dict of dict
        ``{query_id: {doc_id: score}}``, scores convertible to float64 (finite).
    qrels : QrelsIndex
        From a dict of dicts (``qrels.keys`` set).

    Returns
    -------
    JoinedRanks or None
        None when the run or the qrels do not qualify or a score is not a number (the general
        path then raises, naming it).
    """
    keys = qrels.keys
    inner: list[Any] = list(run.values())
    if keys is None or not all(map(isinstance, inner, repeat(dict))):
        return None
    if not _all_str(keys) or bool((np.diff(qrels.docs.offsets) == 0).any()):
        return None
    qids = [str(q) for q in run.keys()]
    if len(set(qids)) != len(qids):
        return None
    q = qrels.queries
    grouped = np.asarray(keys, dtype=object)  # judged ids, qrels group after group
    if not bool((np.diff(q.rows) > 0).all()):
        grouped = grouped[q.rows]
    where = dict(zip(q.ids.tolist(), range(len(q.ids)), strict=True))
    group = np.fromiter(map(where.get, qids, repeat(-1)), np.int64, len(qids))
    read = _read(inner, qids, group, grouped, q.starts)
    if read is None:
        return None
    (read_run, j_score), group_of = read
    return _ranked(read_run, j_score, group_of, grouped, qrels.queries)


def _all_str(values: Iterable[object]) -> bool:
    """Every value is exactly a ``str`` (so distinct dict keys are distinct ids)."""
    return set(map(type, values)) <= {str}


def _read(
    inner: list[dict],
    qids: list[str],
    group: np.ndarray,
    grouped: np.ndarray,
    q_starts: np.ndarray,
) -> tuple[tuple[_Read, np.ndarray], np.ndarray] | None:
    """One pass over the run: ``(read run, judged scores in qrels layout), group_of`` (the run
    group of each qrels group, -1: none); None on an id that is not a str or a bad score."""
    sizes = np.fromiter(map(len, inner), np.int64, len(inner))
    n_judged = np.where(group >= 0, np.diff(q_starts)[group], 0)
    block = sizes + n_judged
    offset = np.cumsum(block) - block
    lists = grouped.tolist()
    bounds = q_starts.tolist()
    types: set[type] = set()
    nans = repeat(float("nan"))  # one endless supply for every look-up

    def entries() -> Iterator[Iterable[object]]:
        for d, i in zip(inner, group.tolist(), strict=True):
            types.update(map(type, d))
            yield d.values()
            if i >= 0:
                yield map(d.get, lists[bounds[i] : bounds[i + 1]], nans)

    try:
        values = np.fromiter(chain.from_iterable(entries()), np.float64, int(block.sum()))
    except (TypeError, ValueError, OverflowError):
        return None
    if not types <= {str}:
        return None
    # the judged documents' scores, back in the qrels' layout
    hit = np.flatnonzero(group >= 0)
    m = n_judged[hit]
    src = np.repeat(offset[hit] + sizes[hit] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    dst = np.repeat(q_starts[group[hit]] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    j_score = np.full(int(q_starts[-1]), np.nan)
    j_score[dst] = values[src]
    if int(np.isnan(values).sum()) != int(np.isnan(values[src]).sum()):
        return None  # a NaN score
    if bool(np.isinf(values).any()):
        return None  # an infinite score
    keep = np.flatnonzero(sizes)  # a query with no entries has no rows
    read = _Read(
        np.array([qids[k] for k in keep.tolist()], dtype=object),
        [inner[k] for k in keep.tolist()],
        values,
        offset[keep],
        sizes[keep],
        np.concatenate(([0], np.cumsum(sizes[keep]))).astype(np.int64),
    )
    group_of = np.full(len(q_starts) - 1, -1, dtype=np.int64)
    kept = group[keep]
    group_of[kept[kept >= 0]] = np.flatnonzero(kept >= 0)
    return (read, j_score), group_of


def _ranked(
    run: _Read, j_score: np.ndarray, group_of: np.ndarray, grouped: np.ndarray, q: Groups
) -> JoinedRanks:
    """Rank each judgement found in the run: scores above it, plus tied ones with greater ids."""
    above = np.full(len(j_score), -1, dtype=np.int64)
    tied = np.zeros(len(j_score), dtype=np.int64)
    compiled = kernels()
    args = (run.first, run.size, run.values, group_of, q.starts, j_score, above, tied)
    compiled.run_chunks(compiled.count_above, len(q.ids), *args)
    _break_ties(run, grouped, j_score, above, tied, q.starts, group_of)
    return JoinedRanks(run, group_of, above)


def _break_ties(
    run: _Read,
    grouped: np.ndarray,
    j_score: np.ndarray,
    above: np.ndarray,
    tied: np.ndarray,
    q_starts: np.ndarray,
    group_of: np.ndarray,
) -> None:
    """Add to ``above`` the documents that tie with a judged one and have a greater id."""
    cases = np.flatnonzero(tied > 1)
    if not len(cases):
        return
    groups = group_of[np.searchsorted(q_starts, cases, side="right") - 1]
    # the ids of the run groups concerned, in dict order
    affected, slot = np.unique(groups, return_inverse=True)
    m = run.size[affected]
    base = np.cumsum(m) - m
    ids = chain.from_iterable(run.dicts[g] for g in affected.tolist())
    flat = np.fromiter(ids, dtype=object, count=int(m.sum()))
    # every score of those groups against each case's score
    m = run.size[groups]
    case = np.repeat(np.arange(len(cases)), m)
    local = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
    hit = run.values[np.repeat(run.first[groups], m) + local] == j_score[cases][case]
    case, local = case[hit], local[hit]
    found = flat[base[slot.reshape(-1)[case]] + local]
    greater = np.greater(found, grouped[cases][case]).astype(bool)
    above[cases] += np.bincount(case[greater], minlength=len(cases))
