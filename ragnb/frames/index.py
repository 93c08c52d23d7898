"""The evaluation engine: a run put in evaluation order and joined with its qrels by query.

Ordering and joining by query without hashing or sorting millions of strings: ids become UTF-8
byte buffers (:class:`Strings`), queries become groups of rows (:class:`Groups`), and compiled
kernels (:mod:`ragnb.frames.groupsort`, imported on first use: numba costs about a second to import)
sort the hundred-odd rows of each query. :func:`index_run` and :func:`index_qrels` validate and
index a run and qrels; :func:`sort_run` builds the sorted frame from the run's index;
:func:`ragnb.measures.prepare` reads the indexes directly and never builds it. A run held as
dicts is joined with its qrels by look-ups (:func:`joined_ranks`).

Ids compare as strings by code point (Python's ``str`` order, which is the byte order of their
UTF-8 form and so trec_eval's ``strcmp``); ids that are not strings are compared as ``str(id)``.
"""

from __future__ import annotations

import importlib.util
import operator
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property, partial
from itertools import chain, islice, repeat
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.core.machine import usable_cores
from ragnb.errors import DuplicateEntry, InputError
from ragnb.frames.schema import (
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
    "COMPILED_ABOVE_ROWS",
    "PLAIN_ROWS_PER_PROCESS",
    "PLAIN_PYTHON_ROWS",
    "Groups",
    "JoinedRanks",
    "QrelsIndex",
    "RunIndex",
    "CodedRun",
    "SortedRun",
    "StringRun",
    "Strings",
    "common_skip",
    "index_coded_run",
    "grouped_qrels_index",
    "index_qrels",
    "index_run",
    "index_string_run",
    "join_coded",
    "join_strings",
    "joined_ranks",
    "kernels",
    "plain_kernels",
    "preload_kernels",
    "sort_run",
    "sorted_codes",
    "with_coded_docs",
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
    The work is done per query by compiled kernels (:mod:`ragnb.frames.groupsort`), see
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


# ----------------------------------------------------------------------------- fast path Ordering
# and joining by query without hashing or sorting millions of strings: ids become UTF-8 byte
# buffers, queries become groups of rows, and compiled kernels sort the hundred-odd rows of each
# query (ragnb.frames.groupsort). prepare() uses the indexes directly and never builds the sorted
# frame; sort_run() builds it from the index.


@dataclass(frozen=True, eq=False)
class Strings:
    """A column of strings as UTF-8 bytes, see :mod:`ragnb.frames.groupsort`.

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
        compiled = kernels(len(offsets) - 1)
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
    grades : ndarray of int64, shape (n_rows,)
        Grade of each row.
    keys : list or None
        The document ids of a dict of dicts as given, in row order (None for a frame): a dict
        run is joined with them by look-ups (:func:`joined_ranks`).
    str_keys : bool
        ``keys`` are all exactly ``str`` (so distinct dict keys are distinct ids).
    sort_docs : callable
        Returns ``(docs, by_doc)``, read through :attr:`docs` and :attr:`by_doc`; called once,
        on first use. Qrels that may hold a duplicate pair are sorted by :func:`index_qrels`
        itself (which raises on it); a dict of dicts with ``str_keys`` cannot, and a dict run
        joined by look-ups never reads them.
    """

    queries: Groups
    grades: np.ndarray
    keys: list | None
    str_keys: bool
    sort_docs: Callable[[], tuple[Strings, np.ndarray]]

    @cached_property
    def _sorted_docs(self) -> tuple[Strings, np.ndarray]:
        return self.sort_docs()

    @property
    def docs(self) -> Strings:
        """The document ids as UTF-8 bytes, in row order."""
        return self._sorted_docs[0]

    @property
    def by_doc(self) -> np.ndarray:
        """ndarray of int64, shape (n_rows,): the rows of each query by ``doc_id`` ascending."""
        return self._sorted_docs[1]


#: Run rows above which evaluating without numba warns that it is slow.
PLAIN_PYTHON_ROWS = 200_000

#: Rows up to which a kernel call runs as plain Python while the compiled kernels are not
#: loaded: numba's import and the load of its cached code (about a second on two cores) cost
#: more than the plain-Python kernels on this many rows.
COMPILED_ABOVE_ROWS = 20_000

#: Rows the plain-Python kernel calls of a process may take together before the compiled kernels
#: load: past it a process is doing more than one small command's work (a study evaluating a
#: hundred runs of ten thousand rows spends about a minute in plain Python, against a second
#: to load numba). About two seconds of plain Python at most (some 40 microseconds a row for
#: the ordering kernels on two cores).
PLAIN_ROWS_PER_PROCESS = 50_000

# Rows the plain-Python kernels have taken in this process (kernels() adds each call's).
_plain_rows = 0


def kernels(n_rows: int | None = None) -> ModuleType:
    """The kernels of :mod:`ragnb.frames.groupsort`, compiled (numba imported on first use) or
    as plain Python for a small input.

    Parameters
    ----------
    n_rows : int, optional
        The rows the call works on. Up to :data:`COMPILED_ABOVE_ROWS`, while the plain-Python
        calls of the process with this one take at most :data:`PLAIN_ROWS_PER_PROCESS` rows,
        and while :mod:`ragnb.frames.groupsort` is not imported, the plain-Python copy of the
        module is returned (:func:`plain_kernels`): a command on a small file never starts
        numba, and a process doing more work loads it once.

    Returns
    -------
    module
        :mod:`ragnb.frames.groupsort` (its ``COMPILED`` is False when numba is not installed: the
        kernels then run as plain Python) or its plain-Python copy; the results are the same.
    """
    global _plain_rows
    if (
        n_rows is not None
        and n_rows <= COMPILED_ABOVE_ROWS
        and _plain_rows + n_rows <= PLAIN_ROWS_PER_PROCESS
        and "ragnb.frames.groupsort" not in sys.modules
    ):
        _plain_rows += n_rows
        return plain_kernels()
    from ragnb.frames import groupsort

    return groupsort


def preload_kernels() -> threading.Thread | None:
    """Start loading the compiled kernels in a thread, for a caller about to parse a large input.

    numba's import and the load of its cached code (about a second on two cores, mostly Python
    holding the GIL) then overlap the parse (pyarrow's threads, which release it) instead of
    following it.

    Returns
    -------
    threading.Thread or None
        The loading thread (a daemon); None when the kernels are imported already or numba is
        not installed.
    """
    if "ragnb.frames.groupsort" in sys.modules or importlib.util.find_spec("numba") is None:
        return None
    thread = threading.Thread(target=_load_kernels, name="ragnb-kernels", daemon=True)
    thread.start()
    return thread


def _load_kernels() -> None:
    """Import the compiled kernels and load two of them with the argument types of every call
    (:func:`_read_only` arrays): the first load starts numba's compiler context."""
    compiled = kernels()
    data, offsets = _read_only(np.zeros(0, np.uint8)), _read_only(np.zeros(1, np.int64))
    compiled.prefixes(data, offsets, int(compiled.common_prefix(data, offsets)))


def plain_kernels() -> ModuleType:
    """:mod:`ragnb.frames.groupsort` as plain Python, numba not imported: a copy of the module
    loaded from its file under the name ``groupsort.PLAIN_NAME``, once per process."""
    name = "ragnb.frames.groupsort_plain"
    module = sys.modules.get(name)
    if module is None:
        source = importlib.util.find_spec("ragnb.frames.groupsort")
        assert source is not None and source.origin is not None  # a module of this package
        spec = importlib.util.spec_from_file_location(name, source.origin)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module = sys.modules.setdefault(name, module)
    return module


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
        score, file_key = _checked_order_keys(frame, order)
        queries = _group_by_id(frame["query_id"])
        docs = _string_buffers(frame["doc_id"])
        by_doc = _sorted_by_string(queries, docs, lambda: check_run(frame), "run")
    elif isinstance(run, Mapping):
        parts = _dict_parts(run, "score")
        if parts is None:  # a bad score (raises, naming it) or ids equal only as str
            return index_run(run_from_dict(run), order)
        _check_order(order)
        queries, docs, score, _ = parts
        file_key = None
        by_doc = _sorted_by_string(queries, docs, lambda: check_run(run_from_dict(run)), "run")
    else:
        raise InputError(f"run must be a DataFrame or a dict of dicts, got {type(run).__name__}")
    compiled = kernels(len(by_doc))
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
        str_keys = False
        sort_docs = _given((docs, by_doc))
    elif isinstance(qrels, Mapping):
        parts = _dict_groups(qrels, "relevance")
        if parts is None:  # a bad grade (raises, naming it) or ids equal only as str
            return index_qrels(qrels_from_dict(qrels))
        queries, grades, keys = parts
        str_keys = _all_str(keys)
        sort_docs = partial(_sorted_dict_docs, qrels, queries, keys)
        if not str_keys:  # ids equal only as str (7 and "7") are a duplicate pair: sort now
            sort_docs = _given(sort_docs())
    else:
        raise InputError(
            f"qrels must be a DataFrame or a dict of dicts, got {type(qrels).__name__}"
        )
    if len(grades) == 0:
        raise InputError("qrels hold no judgements; nothing to evaluate")
    return QrelsIndex(queries, grades, keys, str_keys, sort_docs)


def grouped_qrels_index(
    queries: Groups, grades: np.ndarray, data: np.ndarray, offsets: np.ndarray
) -> QrelsIndex:
    """Indexed qrels from a reader that grouped them itself, without a duplicate pair
    (:func:`ragnb.io.runscan.scan_qrels`).

    Parameters
    ----------
    queries : Groups
        The rows grouped by query (ids sorted, rows in row order within a group).
    grades : ndarray of int64, shape (n_rows,)
        Grade of each row.
    data, offsets : ndarray of uint8, ndarray of int64 (n_rows + 1,)
        The document ids' UTF-8 bytes, row after row.

    Returns
    -------
    QrelsIndex
        Its documents sorted within each query on first use (:attr:`QrelsIndex.sort_docs`).
    """

    def sort_docs() -> tuple[Strings, np.ndarray]:
        docs = Strings.of(data, offsets)
        return docs, _sorted_by_string(queries, docs, lambda: None, "qrels")

    return QrelsIndex(queries, grades, None, False, sort_docs)


def _given(value: tuple[Strings, np.ndarray]) -> Callable[[], tuple[Strings, np.ndarray]]:
    """A function returning ``value``, computed already."""
    return lambda: value


def _sorted_dict_docs(
    qrels: Mapping[str, Mapping[str, int]], queries: Groups, keys: list
) -> tuple[Strings, np.ndarray]:
    """The document strings of qrels given as dicts and their rows sorted by id in each query
    (on a duplicate pair, :func:`ragnb.frames.schema.qrels_from_dict`'s error)."""

    def raise_duplicate() -> None:
        check_qrels(qrels_from_dict(qrels))

    docs = _strings_from_list(keys)
    return docs, _sorted_by_string(queries, docs, raise_duplicate, "qrels")


def _dict_parts(
    nested: Mapping[str, Mapping[str, object]], column: str
) -> tuple[Groups, Strings, np.ndarray, list] | None:
    """Groups, document strings, converted values and document ids (as given) of
    ``{query: {doc: value}}``, in row order (``column``: ``"score"`` or ``"relevance"``).

    None when a value does not convert or two query ids are equal as ``str``: the caller then
    takes the checked path through a frame.
    """
    parts = _dict_groups(nested, column)
    if parts is None:
        return None
    groups, converted, docs = parts
    return groups, _strings_from_list(docs), converted, docs


def _dict_groups(
    nested: Mapping[str, Mapping[str, object]], column: str
) -> tuple[Groups, np.ndarray, list] | None:
    """:func:`_dict_parts` without the document strings: groups, values, document ids."""
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
    return _groups_from_segments(starts, heads, n), converted, docs


def _sorted_by_string(
    groups: Groups, docs: Strings, raise_duplicate: Callable[[], None], what: str
) -> np.ndarray:
    """Rows of each group by string ascending; on a (query, doc) pair seen twice call
    ``raise_duplicate`` (which names the first duplicate in row order), else raise here."""
    compiled = kernels(len(groups.rows))
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
        raise DuplicateEntry(what, str(docs.get(int(dup[g]))), query_id=str(groups.ids[g]))
    return by_doc


def _is_arrow_string(col: pd.Series) -> bool:
    dtype = col.dtype
    if isinstance(dtype, pd.StringDtype):
        return dtype.storage == "pyarrow"
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        t = dtype.pyarrow_dtype
        return bool(
            pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_dictionary(t)
        )
    return False


def _arrow_array(col: pd.Series) -> pa.Array:
    """The pyarrow array behind an arrow-backed string column, in one chunk."""
    import pyarrow as pa

    arr = pa.array(col.array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(pa.large_string())
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
    return Strings.of(*_arrow_buffers(arr))


def _arrow_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes and int64 offsets (read-only, not copied but for int32 offsets) of a
    string or large_string array without nulls."""
    import pyarrow as pa

    buffers = arr.buffers()
    off_type = np.int32 if pa.types.is_string(arr.type) else np.int64
    offsets = np.frombuffer(buffers[1], dtype=off_type)[arr.offset : arr.offset + len(arr) + 1]
    if buffers[2] is None or len(arr) == 0:
        data = np.zeros(0, dtype=np.uint8)
    else:
        data = np.frombuffer(buffers[2], dtype=np.uint8)
    return _read_only(data), _read_only(offsets.astype(np.int64, copy=False))


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
    return _groups_from_segments(*_segments(col), len(col))


def _segments(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Segments of consecutive rows with the same id: their first rows (int64) and ids."""
    n = len(col)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    coded = _dictionary_codes(col)
    if coded is not None:
        codes, dictionary = coded
        change = codes[1:] != codes[:-1]
    elif _is_arrow_string(col):
        import pyarrow.compute as pc

        arr = _arrow_array(col)
        change = pc.not_equal(arr[1:], arr[:-1]).fill_null(True).to_numpy(zero_copy_only=False)
    else:
        values = col.to_numpy()
        change = np.asarray(values[1:] != values[:-1], dtype=bool)
    starts = np.flatnonzero(np.concatenate(([True], change))).astype(np.int64)
    if coded is not None:
        import pyarrow as pa

        taken = dictionary.take(pa.array(codes[starts])).cast(pa.large_string())
        return starts, np.array(taken.to_pylist(), dtype=object)
    return starts, col.iloc[starts].to_numpy(dtype=object)


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


def _checked_order_keys(run: pd.DataFrame, order: RunOrder) -> tuple[np.ndarray, np.ndarray | None]:
    """Check a run frame (:func:`check_run` without its duplicate check) and ``order``; the
    order keys of its scores and of its ``rank`` column (None without one)."""
    check_run(run, duplicates=False)
    _check_order(order)
    file_key = _order_keys(run["rank"]) if "rank" in run.columns else None
    return _order_keys(run["score"]), file_key


def _check_order(order: str) -> None:
    if order not in ("score", "file"):
        raise InputError(f"unknown run order {order!r}; use 'score' or 'file'")


def _order_keys(col: pd.Series) -> np.ndarray:
    """float64 keys (or int64 ones exact as float64) that order and tie exactly as the column's
    values do; NaN / missing last."""
    dtype = col.dtype
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = col.to_numpy()
    kind = values.dtype.kind
    if kind == "b":
        return values.astype(np.float64)
    if kind in "iu" and values.dtype.itemsize <= 4:
        return values  # exact as float64 where the kernels read it: no copy
    if kind in "iu":
        if values.size == 0 or max(-int(values.min()), int(values.max())) < 2**53:
            return values  # exact as float64 where the kernels read it: no copy
        return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.float64)
    if kind == "f":
        values = values.astype(np.float64, copy=False)
        if not np.isnan(values).any():
            return values
        return np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.float64)
    codes, _ = pd.factorize(values, sort=True)
    return np.where(codes < 0, np.inf, codes).astype(np.float64)


# ----------------------------------------------------------------------- dictionary-coded runs
# A run whose doc_id column is dictionary-coded (pandas' categorical, or arrow's dictionary type,
# as the columnar TREC reader gives it) holds one int32 code per row and each distinct id once.
# With the distinct ids sorted, a code orders and ties as its id does, so a query's documents are
# sorted, checked for duplicates and joined with the qrels as integers, one query at a time in
# compiled code (groupsort.coded_join), straight into the padded arrays: no string per row, no
# index array over all rows. Ten million rows take about 40 MB of codes and 80 MB of scores.


@dataclass(frozen=True, eq=False)
class CodedRun:
    """A validated run whose document ids are codes into their distinct values, sorted.

    Attributes
    ----------
    query_ids : ndarray of str (object), shape (n_groups,)
        The distinct query ids, sorted.
    first, size : ndarray of int64, shape (n_groups,)
        Query ``g`` holds ``size[g]`` rows from position ``first[g]`` of ``rows`` (of the rows
        themselves when ``rows`` is None: each query's rows are consecutive).
    rows : ndarray of int64, shape (n_rows,), or None
        Row numbers query after query, when some query's rows are not consecutive.
    codes : ndarray of int32, shape (n_rows,)
        Position of each row's ``doc_id`` in ``dictionary``.
    dictionary : pyarrow.LargeBinaryArray
        The distinct document ids as UTF-8, ascending by byte (so by code point).
    score : ndarray of float64 (or of integers exact as float64), shape (n_rows,)
        Keys ordering as the scores do.
    file_key : ndarray like ``score``, or None
        Keys of the ``rank`` column, when the run has one.
    """

    query_ids: np.ndarray
    first: np.ndarray
    size: np.ndarray
    rows: np.ndarray | None
    codes: np.ndarray
    dictionary: pa.Array
    score: np.ndarray
    file_key: np.ndarray | None


def index_coded_run(run: pd.DataFrame, order: RunOrder) -> CodedRun | None:
    """Validate a run frame whose ``doc_id`` column is dictionary-coded and index it by query.

    Parameters
    ----------
    run : DataFrame
        A run frame; ``doc_id`` categorical or of an arrow dictionary type.
    order : {"score", "file"}
        As :func:`sort_run`.

    Returns
    -------
    CodedRun or None
        None when ``doc_id`` is not dictionary-coded, or two of its distinct values are the same
        id as ``str`` (:func:`index_run` then takes the run).

    Raises
    ------
    InputError
        As :func:`check_run` (without the duplicate check, made by :func:`join_coded`), and on an
        unknown ``order``.
    """
    coded = _dictionary_codes(run["doc_id"])
    if coded is None:
        return None
    score, file_key = _checked_order_keys(run, order)
    codes, dictionary = coded
    ids, first, size, rows = _spans(run["query_id"])
    return CodedRun(ids, first, size, rows, codes, dictionary, score, file_key)


def join_coded(
    qrels: QrelsIndex,
    run: CodedRun,
    row_of_group: np.ndarray,
    width: int,
    *,
    by_file: bool,
    raise_duplicate: Callable[[], None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Each query's top ``width`` ranks joined with its judgements, as padded arrays.

    Parameters
    ----------
    qrels : QrelsIndex
    run : CodedRun
    row_of_group : ndarray of int64, shape (n_groups,)
        The qrels query (array row) of each run query; -1: not in the qrels (skipped).
    width : int
        Ranks kept (columns of the arrays).
    by_file : bool
        Order by the ``rank`` column (else by score, ties by ``doc_id`` descending).
    raise_duplicate : callable
        Called on a (query, document) pair given twice; it should raise naming the pair.

    Returns
    -------
    grades : ndarray of int64, shape (n_queries, width)
    judged, filled : ndarray of bool, shape (n_queries, width)
    n_rank_disagreements : int
        Queries whose ``rank`` column disagrees with the score order.

    Raises
    ------
    InputError
        On a duplicate pair, when ``raise_duplicate`` did not raise.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    q = qrels.queries
    n_q = len(q.ids)
    # the qrels' documents as codes of the run's dictionary (-1: never retrieved), each query's
    # by document id: the order of by_doc, in which the codes ascend
    docs = qrels.docs
    qdocs = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(docs.offsets) - 1,
        [None, pa.py_buffer(docs.offsets), pa.py_buffer(docs.data)],
    )
    found = pc.fill_null(pc.index_in(qdocs, value_set=run.dictionary), -1).to_numpy()
    code = found.astype(np.int64)[qrels.by_doc]
    keep = code >= 0
    kept = np.bincount(np.repeat(np.arange(n_q), q.sizes)[keep], minlength=n_q)
    q_starts = np.concatenate(([0], np.cumsum(kept))).astype(np.int64)
    compiled = kernels(len(run.codes))
    n_groups = len(run.query_ids)
    grades = np.zeros((n_q, width), dtype=np.int64)
    judged = np.zeros((n_q, width), dtype=bool)
    filled = np.zeros((n_q, width), dtype=bool)
    disagree = np.zeros(n_groups, dtype=np.bool_)
    dup = np.full(n_groups, -1, dtype=np.int64)
    no_rows = np.zeros(0, dtype=np.int64)
    compiled.run_chunks(
        compiled.coded_join,
        n_groups,
        run.first,
        run.size,
        no_rows if run.rows is None else run.rows,
        run.rows is not None,
        run.codes,
        run.score,
        np.zeros(0, dtype=np.float64) if run.file_key is None else run.file_key,
        run.file_key is not None,
        by_file,
        row_of_group,
        code[keep],
        qrels.grades[qrels.by_doc][keep],
        q_starts,
        grades,
        judged,
        filled,
        disagree,
        dup,
    )
    if (dup >= 0).any():
        raise_duplicate()
        g = int(np.flatnonzero(dup >= 0)[0])  # ids equal only as str, e.g. 7 and "7"
        doc = run.dictionary[int(run.codes[dup[g]])].as_py().decode("utf-8", "surrogatepass")
        raise DuplicateEntry("run", doc, query_id=str(run.query_ids[g]))
    return grades, judged, filled, int(disagree.sum())


# -------------------------------------------------------------- runs whose ids are arrow strings
# A run read by pyarrow's CSV reader holds its document ids as strings in chunks. When each
# query's rows are consecutive, each query is ordered, checked for a repeated id and joined with
# its judgements on the buffers of the chunk holding it (a query across two chunks on a copy of
# its rows), in compiled code (groupsort.string_join), the chunks shared among threads: the ids are
# neither hashed into a dictionary of the run nor sorted, and compared as strings only where two
# scores tie.


@dataclass(frozen=True, eq=False)
class StringRun:
    """A validated run whose document ids are arrow strings and whose queries are each one run
    of consecutive rows.

    Attributes
    ----------
    query_ids : ndarray of str (object), shape (n_groups,)
        The distinct query ids, sorted.
    first, size : ndarray of int64, shape (n_groups,)
        Query ``g`` holds rows ``first[g] .. first[g] + size[g] - 1``.
    doc_ids : pyarrow.ChunkedArray
        The document ids (string or large_string, no nulls), as the frame holds them.
    score : ndarray of float64 (or of integers exact as float64), shape (n_rows,)
        Keys ordering as the scores do.
    file_key : ndarray like ``score``, or None
        Keys of the ``rank`` column, when the run has one.
    """

    query_ids: np.ndarray
    first: np.ndarray
    size: np.ndarray
    doc_ids: pa.ChunkedArray
    score: np.ndarray
    file_key: np.ndarray | None


def index_string_run(run: pd.DataFrame, order: RunOrder) -> StringRun | None:
    """Validate a run frame whose ``doc_id`` column is arrow strings and index it by query.

    Parameters
    ----------
    run : DataFrame
        A run frame; ``doc_id`` of an arrow string type (``pd.ArrowDtype(pa.string())`` or
        ``large_string``).
    order : {"score", "file"}
        As :func:`sort_run`.

    Returns
    -------
    StringRun or None
        None when ``doc_id`` is not arrow strings or holds a missing value, or when some query's
        rows are not consecutive (:func:`index_coded_run` then takes the run).

    Raises
    ------
    InputError
        As :func:`check_run` (without the duplicate check, made by :func:`join_strings`), and on
        an unknown ``order``.
    """
    dtype = run["doc_id"].dtype if "doc_id" in run.columns else None
    if not isinstance(dtype, pd.ArrowDtype):
        return None
    import pyarrow as pa

    if not (
        pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype)
    ):
        return None
    score, file_key = _checked_order_keys(run, order)
    ids, first, size, rows = _spans(run["query_id"])
    if rows is not None:
        return None
    docs = pa.array(run["doc_id"].array)
    docs = docs if isinstance(docs, pa.ChunkedArray) else pa.chunked_array([docs])
    return StringRun(ids, first, size, docs, score, file_key)


def with_coded_docs(run: pd.DataFrame) -> pd.DataFrame:
    """``run`` with an arrow string ``doc_id`` column dictionary-coded (each distinct id once,
    sorted, :func:`sorted_codes`), for :func:`index_coded_run`: the path of a run whose queries
    are not each one run of consecutive rows. Any other frame is returned as it is."""
    dtype = run["doc_id"].dtype if "doc_id" in run.columns else None
    if not isinstance(dtype, pd.ArrowDtype):
        return run
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (
        pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(dtype.pyarrow_dtype)
    ):
        return run
    docs = pa.array(run["doc_id"].array)
    chunks = docs.chunks if isinstance(docs, pa.ChunkedArray) else [docs]
    if any(c.null_count for c in chunks):
        return run
    coded = sorted_codes([pc.dictionary_encode(c) for c in chunks if len(c)])
    ids = pa.DictionaryArray.from_arrays(coded.indices, coded.dictionary.cast(pa.large_string()))
    frame = run.copy(deep=False)  # the other columns shared, not copied
    frame["doc_id"] = pd.Series(ids, dtype=pd.ArrowDtype(ids.type), index=run.index)
    return frame


def join_strings(
    qrels: QrelsIndex,
    run: StringRun,
    row_of_group: np.ndarray,
    width: int,
    *,
    by_file: bool,
    raise_duplicate: Callable[[], None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`join_coded` for a run whose document ids are arrow strings (:class:`StringRun`).

    Parameters, Returns and Raises are :func:`join_coded`'s. Each chunk of ``run.doc_ids`` is
    one task of a thread pool (the compiled kernel releases the GIL), with the queries whose rows
    it holds; a query across chunks is a task of its own, on a copy of its rows.
    """
    q = qrels.queries
    n_q, n_groups = len(q.ids), len(run.query_ids)
    docs = qrels.docs
    grades = np.zeros((n_q, width), dtype=np.int64)
    judged = np.zeros((n_q, width), dtype=bool)
    filled = np.zeros((n_q, width), dtype=bool)
    disagree = np.zeros(n_groups, dtype=np.bool_)
    dup = np.full(n_groups, -1, dtype=np.int64)
    compiled = kernels(len(run.score))
    file_key = np.zeros(0, dtype=np.float64) if run.file_key is None else run.file_key
    common = (
        run.first,
        run.size,
        (run.score, file_key),
        (run.file_key is not None, by_file),
        row_of_group,
        (q.rows, q.starts, docs.data, docs.offsets, qrels.grades),
        (grades, judged, filled, disagree, dup),
    )

    def task(piece: tuple[pa.Array, int, np.ndarray]) -> None:
        arr, base, groups = piece
        data, offsets = _arrow_buffers(arr)
        compiled.string_join(data, offsets, base, groups, *common)

    pieces = _pieces(run)
    if len(pieces) < 2 or not compiled.COMPILED:
        for piece in pieces:
            task(piece)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(usable_cores()) as pool:
            for _ in pool.map(task, pieces):
                pass
    if (dup >= 0).any():
        raise_duplicate()
        g = int(np.flatnonzero(dup >= 0)[0])
        doc = run.doc_ids[int(dup[g])].as_py()
        raise DuplicateEntry("run", doc, query_id=str(run.query_ids[g]))
    return grades, judged, filled, int(disagree.sum())


def _pieces(run: StringRun) -> list[tuple[pa.Array, int, np.ndarray]]:
    """The tasks of :func:`join_strings`: (strings, row of the first, queries) for each chunk
    with the queries it holds whole, then for each query across chunks, its rows copied."""
    chunks = run.doc_ids.chunks
    bounds = np.cumsum([0] + [len(c) for c in chunks]).astype(np.int64)
    last = run.first + run.size - 1
    c_first = np.searchsorted(bounds, run.first, side="right") - 1
    whole = c_first == np.searchsorted(bounds, last, side="right") - 1
    inside = np.flatnonzero(whole)
    by_chunk = inside[np.argsort(c_first[inside], kind="stable")]
    cuts = np.searchsorted(c_first[by_chunk], np.arange(len(chunks) + 1))
    pieces = [
        (chunks[k], int(bounds[k]), by_chunk[cuts[k] : cuts[k + 1]])
        for k in range(len(chunks))
        if cuts[k + 1] > cuts[k]
    ]
    for g in np.flatnonzero(~whole):
        rows = run.doc_ids.slice(int(run.first[g]), int(run.size[g])).combine_chunks()
        pieces.append((rows, int(run.first[g]), np.array([g], dtype=np.int64)))
    return pieces


def _dictionary_codes(col: pd.Series) -> tuple[np.ndarray, pa.Array] | None:
    """The codes (int32, one per row) and sorted distinct values (UTF-8, large_binary) of a
    categorical or arrow-dictionary column of ids compared as ``str``; None for another column
    or one with a missing value (values equal as ``str``, such as 7 and "7", share a code)."""
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        try:
            import pyarrow as pa
        except ModuleNotFoundError:
            return None
        codes = col.cat.codes.to_numpy()
        if (codes < 0).any():
            return None
        values = as_str_ids(col.cat.categories.to_numpy(dtype=object))
        try:
            dictionary = pa.array(values, type=pa.large_string())
        except (pa.ArrowException, UnicodeError):  # lone surrogates: the string path
            return None
        return _codes_of(
            sorted_codes([pa.DictionaryArray.from_arrays(codes.astype(np.int32), dictionary)])
        )
    if isinstance(dtype, pd.ArrowDtype) and _is_string_dictionary(dtype.pyarrow_dtype):
        import pyarrow as pa

        arr = pa.array(col.array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        if any(c.null_count or c.dictionary.null_count for c in chunks):
            return None
        return _codes_of(sorted_codes([c for c in chunks if len(c)]))
    return None


def sorted_codes(chunks: list[pa.DictionaryArray]) -> pa.DictionaryArray:
    """Dictionary-coded ids, each chunk with its own dictionary, as one array whose dictionary
    holds every distinct id once, ascending, so that codes order and tie as the ids do.

    Parameters
    ----------
    chunks : list of pyarrow.DictionaryArray
        Chunks of one column of ids (string, large_string or binary values), without nulls. The
        list is emptied as the chunks are mapped, so that each can be freed once read.

    Returns
    -------
    pyarrow.DictionaryArray
        int32 indices, one per row of the chunks in order, into the distinct values as
        large_binary (UTF-8), ascending by byte: code point order, Python's ``str`` order and
        trec_eval's ``strcmp``.

    Notes
    -----
    One hash table of the distinct values maps every distinct dictionary (consecutive chunks
    may share one) onto them; the rows are then mapped by a take per chunk. Peak memory: the
    chunks plus 4 bytes a row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not chunks:
        return pa.DictionaryArray.from_arrays(
            pa.array([], pa.int32()), pa.array([], pa.large_binary())
        )
    # runs of chunks sharing a dictionary (pyarrow's dictionary_encode of a chunked array)
    shared: list[pa.Array] = []
    of_chunk = []
    for c in chunks:
        d = c.dictionary.cast(pa.large_binary())
        if not shared or not (d is shared[-1] or d.equals(shared[-1])):
            shared.append(d)
        of_chunk.append(len(shared) - 1)
    if len(shared) == 1 and _ascending(shared[0]):  # already one sorted set (the reader's)
        indices = pa.chunked_array([c.indices.cast(pa.int32()) for c in chunks])
        chunks.clear()
        indices = indices.chunk(0) if indices.num_chunks == 1 else indices.combine_chunks()
        return pa.DictionaryArray.from_arrays(indices, shared[0])
    values = pc.unique(pa.chunked_array(shared))
    values = values.take(pc.sort_indices(values))
    # where each value of each dictionary is among ``values``: one hash table
    mapped = np.asarray(
        pc.index_in(pa.chunked_array(shared), value_set=values).to_numpy(), dtype=np.int32
    )
    base = np.cumsum([0] + [len(d) for d in shared])
    codes = np.empty(sum(len(c) for c in chunks), dtype=np.int32)
    at = 0
    for k in of_chunk:
        chunk = chunks.pop(0)
        indices = chunk.indices.to_numpy(zero_copy_only=False)
        table = mapped[base[k] : base[k + 1]]  # every index in range: "clip" checks no bound
        np.take(table, indices, out=codes[at : at + len(indices)], mode="clip")
        at += len(indices)
        del chunk, indices
    return pa.DictionaryArray.from_arrays(pa.array(codes), values)


def _ascending(values: pa.Array) -> bool:
    """Each value byte-wise below the next (so distinct and sorted): one comparison pass."""
    import pyarrow.compute as pc

    return len(values) < 2 or bool(pc.all(pc.less(values[:-1], values[1:])).as_py())


def _codes_of(arr: pa.DictionaryArray) -> tuple[np.ndarray, pa.Array]:
    """The int32 codes and large_binary dictionary of :func:`sorted_codes`' output."""
    return np.asarray(arr.indices.to_numpy(zero_copy_only=False), dtype=np.int32), arr.dictionary


def _is_string_dictionary(t: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_dictionary(t)
        and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))
    )


def _spans(col: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The query ids (sorted), each query's first position and size, and the row numbers query
    after query when some query's rows are not consecutive (None when each is one segment)."""
    starts, heads = _segments(col)
    n = len(col)
    values = as_str_ids(heads).tolist()
    uniques = sorted(set(values))
    if len(uniques) == len(values):  # each query one segment: no row numbers needed
        position = dict(zip(values, range(len(values)), strict=True))
        segment = np.fromiter(map(position.__getitem__, uniques), np.int64, len(uniques))
        lengths = np.diff(np.append(starts, n))
        return np.array(uniques, dtype=object), starts[segment], lengths[segment], None
    groups = _groups_from_segments(starts, heads, n)
    return groups.ids, groups.starts[:-1].copy(), groups.sizes, groups.rows


# ------------------------------------------------------------------ dict runs, joined by look-ups
# A run held as dicts is already a hash table per query: its judged documents are found by looking
# each judged id up in its query's dict (as many look-ups as judgements), and each one's rank
# follows from the scores alone, 1 + (scores above it) + (equal scores whose id is greater,
# trec_eval's tie order), so the run's ten million ids are never converted to strings or sorted;
# only the few documents whose score ties with a judged one are compared, as str. The run is read
# in one pass, query by query (its ids' types, its scores, then its judged documents' scores while
# its dict is still in the CPU cache): reading ten million scattered Python objects is what costs.
# Applies when every document id of the run is a str (numpy's str_, a subclass, too) and every one
# of the qrels exactly a str, every query of the run is a dict, no judged id is empty and the order
# is by score; otherwise joined_ranks returns None and the caller takes the general path, which
# raises its errors. The arrays are identical to the general path's (tests/test_dictjoin.py).
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
    if not qrels.str_keys or "" in keys:  # an empty judged id: the general path names it
        return None
    if _all_str(run.keys()):  # distinct keys: distinct ids
        qids = list(run.keys())
    else:
        qids = [str(q) for q in run.keys()]
        if len(set(qids)) != len(qids):
            return None
    q = qrels.queries
    grouped = keys  # judged ids, qrels group after group
    if not bool((np.diff(q.rows) > 0).all()):
        grouped = list(map(keys.__getitem__, q.rows.tolist()))
    judged_qids = q.ids.tolist()
    if qids == judged_qids:  # the same queries in the same order (the usual case)
        group = np.arange(len(qids), dtype=np.int64)
    else:
        where = dict(zip(judged_qids, range(len(judged_qids)), strict=True))
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
    grouped: list[str],
    q_starts: np.ndarray,
) -> tuple[tuple[_Read, np.ndarray], np.ndarray] | None:
    """One pass over the run: ``(read run, judged scores in qrels layout), group_of`` (the run
    group of each qrels group, -1: none); None on an id that is not a str or a bad score."""
    sizes = np.fromiter(map(len, inner), np.int64, len(inner))
    n_judged = np.where(group >= 0, np.diff(q_starts)[group], 0)
    block = sizes + n_judged
    offset = np.cumsum(block) - block
    bounds = q_starts.tolist()
    nans = repeat(float("nan"))  # one endless supply for every look-up
    join = "".join  # raises TypeError on an id that is not a str: the cheapest check in C

    def entries() -> Iterator[Iterable[object]]:
        for d, i in zip(inner, group.tolist(), strict=True):
            join(d)
            yield d.values()
            if i >= 0:
                yield map(d.get, grouped[bounds[i] : bounds[i + 1]], nans)

    try:
        values = np.fromiter(chain.from_iterable(entries()), np.float64, int(block.sum()))
    except (TypeError, ValueError, OverflowError):  # an id not a str, a score not a number
        return None
    # the judged documents' scores, back in the qrels' layout
    hit = np.flatnonzero(group >= 0)
    m = n_judged[hit]
    src = np.repeat(offset[hit] + sizes[hit] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    dst = np.repeat(q_starts[group[hit]] - (np.cumsum(m) - m), m) + np.arange(int(m.sum()))
    j_score = np.full(int(q_starts[-1]), np.nan)
    j_score[dst] = values[src]
    # the only values not finite are the look-ups' NaN (not retrieved): else a NaN or an
    # infinite score
    if int(np.count_nonzero(~np.isfinite(values))) != int(np.isnan(j_score[dst]).sum()):
        return None
    keep = np.flatnonzero(sizes)  # a query with no entries has no rows
    if len(keep) == len(sizes):
        ids, dicts = np.array(qids, dtype=object), inner
    else:
        ids = np.array([qids[k] for k in keep.tolist()], dtype=object)
        dicts = [inner[k] for k in keep.tolist()]
    read = _Read(
        ids,
        dicts,
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
    run: _Read, j_score: np.ndarray, group_of: np.ndarray, grouped: list[str], q: Groups
) -> JoinedRanks | None:
    """Rank each judgement found in the run: scores above it, plus tied ones with greater ids;
    None when ties are too many for :func:`_break_ties`."""
    above = np.full(len(j_score), -1, dtype=np.int64)
    tied = np.zeros(len(j_score), dtype=np.int64)
    compiled = kernels(len(run.values))
    args = (run.first, run.size, run.values, group_of, q.starts, j_score, above, tied)
    compiled.run_chunks(compiled.count_above, len(q.ids), *args)
    if not _break_ties(run, grouped, j_score, above, tied, q.starts, group_of):
        return None
    return JoinedRanks(run, group_of, above)


#: Tied documents in a run group up to which :func:`_break_ties` finds their ids one by one.
_FEW_TIES = 8
#: Comparisons of tied scores :func:`_break_ties` always makes (more: at most 4 per score).
_TIE_COMPARISONS = 1_000_000


def _break_ties(
    run: _Read,
    grouped: list[str],
    j_score: np.ndarray,
    above: np.ndarray,
    tied: np.ndarray,
    q_starts: np.ndarray,
    group_of: np.ndarray,
) -> bool:
    """Add to ``above`` the documents that tie with a judged one and have a greater id.

    Each tied judgement's score is compared with every score of its group: False (nothing
    done) when that is more than :data:`_TIE_COMPARISONS` comparisons and four times the run's
    scores (many judged documents tied with many others, as in a run of equal scores), which
    the general path sorts instead.
    """
    cases = np.flatnonzero(tied > 1)
    if not len(cases):
        return True
    groups = group_of[np.searchsorted(q_starts, cases, side="right") - 1]
    # every score of those groups against each case's score
    m = int(run.size[groups].sum())
    if m > max(_TIE_COMPARISONS, 4 * len(run.values)):
        return False
    counts = tied[cases]
    out_starts = np.concatenate(([0], np.cumsum(counts)))
    local = np.empty(int(out_starts[-1]), dtype=np.int64)
    compiled = kernels(m)
    args = (run.first, run.size, run.values, groups, j_score[cases], out_starts, local)
    compiled.run_chunks(compiled.tied_positions, len(cases), *args)
    case = np.repeat(np.arange(len(cases)), counts)
    # the ids of the tied documents: a dict's key at a position, found by islice (which skips
    # the keys before it in C) in a group with a few ties, from a list of the group's ids in a
    # group with more (so that the work stays within a few passes over each group)
    dicts = run.dicts
    g_hit = groups[case]
    many = np.flatnonzero(np.bincount(g_hit) > _FEW_TIES).tolist()
    listed = {g: list(dicts[g]) for g in many}
    tied_ids = (
        listed[g][p] if g in listed else next(islice(dicts[g], p, None))
        for g, p in zip(g_hit.tolist(), local.tolist(), strict=True)
    )
    found = np.fromiter(tied_ids, dtype=object, count=len(case))
    judged = np.array([grouped[c] for c in cases.tolist()], dtype=object)[case]
    greater = np.greater(found, judged).astype(bool)
    above[cases] += np.bincount(case[greater], minlength=len(cases))
    return True
