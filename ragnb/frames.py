"""In-memory forms of qrels and runs, and the conversions between them.

ragnb keeps retrieval data in pandas frames with fixed column names (the ones ir_measures uses),
and converts to and from the ``{query_id: {doc_id: value}}`` dict form that ir_measures, ranx and
pytrec_eval accept.

Frames
------
qrels : DataFrame
    ``query_id`` (str), ``doc_id`` (str), ``relevance`` (int64, the grade; 0 is judged
    non-relevant, negative grades are allowed and count as non-relevant).
run : DataFrame
    ``query_id`` (str), ``doc_id`` (str), ``score`` (float64); optionally ``rank`` (int64, the
    rank column of a TREC file, 1-based) and ``tag`` (str, the system name of a TREC file).
corpus : DataFrame
    ``doc_id`` (str), ``title`` (str, may be empty), ``text`` (str).
queries : DataFrame
    ``query_id`` (str), ``text`` (str).

Ordering policy
---------------
A run is ordered as trec_eval orders it: by score descending, ties broken by ``doc_id``
descending (trec_eval's ``qsort`` on ``(sim, docno)``); the file's rank column is ignored. With
``order="file"`` the run keeps its own order (the ``rank`` column if present, else row order).
See :func:`sort_run`.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.validation import convert_entry, require_columns

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "QRELS_COLUMNS",
    "RUN_COLUMNS",
    "SortedRun",
    "qrels_from_dict",
    "qrels_to_dict",
    "run_from_dict",
    "run_to_dict",
    "sort_run",
    "check_qrels",
    "check_run",
]

QRELS_COLUMNS = ("query_id", "doc_id", "relevance")
RUN_COLUMNS = ("query_id", "doc_id", "score")

RunOrder = Literal["score", "file"]
_V = TypeVar("_V")


def qrels_to_dict(qrels: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Qrels frame to ``{query_id: {doc_id: relevance}}``.

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance``.

    Returns
    -------
    dict of str to dict of str to int
    """
    check_qrels(qrels)
    return _to_nested(qrels, "relevance", int)


def qrels_from_dict(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """``{query_id: {doc_id: relevance}}`` to a qrels frame.

    Raises
    ------
    InputError
        If a grade is not an integer.
    """
    return _from_nested(qrels, "relevance", _integral_grades, _qrels_from_dict_checked)


def _qrels_from_dict_checked(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    rows = []
    for qid, docs in qrels.items():
        for did, rel in docs.items():
            # a number, not a string that looks like one ("1.0" is text, as in trec_eval's API)
            integral = (
                isinstance(rel, numbers.Real)
                and not isinstance(rel, bool)
                and math.isfinite(rel)
                and float(rel).is_integer()
            )
            if not integral:
                raise InputError(f"grade of {did!r} is not an integer: {rel!r}", query_id=str(qid))
            if not -(2**63) <= int(rel) < 2**63:
                raise InputError(
                    f"grade of {did!r} is outside the 64-bit integer range: {rel!r}",
                    query_id=str(qid),
                )
            rows.append((str(qid), str(did), int(rel)))
    return _frame(rows, QRELS_COLUMNS, {"relevance": "int64"})


def run_to_dict(run: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Run frame to ``{query_id: {doc_id: score}}``."""
    check_run(run)
    return _to_nested(run, "score", float)


def run_from_dict(run: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """``{query_id: {doc_id: score}}`` to a run frame.

    Raises
    ------
    InputError
        If a score is NaN, infinite or not a number, naming the query and document (as a run
        file's reader names the file and line).
    """
    return _from_nested(run, "score", _float_scores, _run_from_dict_checked)


def _run_from_dict_checked(run: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    rows = []
    for qid, docs in run.items():
        for did, score in docs.items():
            value = convert_entry(float, score, qid, did, "score", "a number")
            if np.isnan(value):
                raise InputError(f"score of {did!r} is NaN", query_id=str(qid))
            if not np.isfinite(value):
                raise InputError(f"score of {did!r} is not finite: {value!r}", query_id=str(qid))
            rows.append((str(qid), str(did), value))
    return _frame(rows, RUN_COLUMNS, {"score": "float64"})


def _to_nested(
    frame: pd.DataFrame, column: str, cast: Callable[[Any], _V]
) -> dict[str, dict[str, _V]]:
    """``{query_id: {doc_id: cast(value)}}`` of a checked frame's ``column``, in row order."""
    out: dict[str, dict[str, _V]] = {}
    for qid, did, value in zip(
        frame["query_id"].to_numpy(),
        frame["doc_id"].to_numpy(),
        frame[column].to_numpy(),
        strict=True,
    ):
        out.setdefault(str(qid), {})[str(did)] = cast(value)
    return out


def _from_nested(
    nested: Mapping[str, Mapping[str, Any]],
    column: str,
    values: Callable[[Mapping[str, Mapping[str, object]], int], np.ndarray | None],
    checked: Callable[[Any], pd.DataFrame],
) -> pd.DataFrame:
    """The frame of ``{query_id: {doc_id: value}}``: ``values(nested, n)`` as ``column``, or
    ``checked(nested)`` (entry by entry, naming the first bad one) when ``values`` gives None."""
    qids, sizes = _flatten(nested)
    arr = values(nested, int(sizes.sum()))
    if arr is None:
        return checked(nested)
    return _flat_frame(qids, sizes, _doc_ids(nested), column, arr)


def _flatten(nested: Mapping[str, Mapping[str, object]]) -> tuple[list[str], np.ndarray]:
    """``str`` query ids and entries per query (int64), in dict order."""
    qids = [str(q) for q in nested.keys()]
    sizes = np.fromiter(map(len, nested.values()), dtype=np.int64, count=len(qids))
    return qids, sizes


def _doc_ids(nested: Mapping[str, Mapping[str, object]]) -> list:
    """Document ids of all entries, in dict order."""
    return list(chain.from_iterable(entries.keys() for entries in nested.values()))


def _values(nested: Mapping[str, Mapping[str, object]]) -> Iterator[object]:
    """Values of all entries, in dict order."""
    return chain.from_iterable(entries.values() for entries in nested.values())


def _float_scores(nested: Mapping[str, Mapping[str, object]], n: int) -> np.ndarray | None:
    """Scores as float64 (each ``float(score)``), None when one is not a number, NaN or
    infinite."""
    try:
        arr = np.fromiter(_values(nested), dtype=np.float64, count=n)
    except (TypeError, ValueError, OverflowError):
        return None
    return arr if np.isfinite(arr).all() else None


def _integral_grades(nested: Mapping[str, Mapping[str, object]], n: int) -> np.ndarray | None:
    """Grades as int64 when every one is an integral number (Python bools excluded), else None."""
    values = list(_values(nested))
    types = set(map(type, values))
    if types <= {int}:  # the usual case, read directly
        try:
            return np.fromiter(values, dtype=np.int64, count=len(values))
        except OverflowError:
            return None
    try:
        arr = np.array(values)
    except (TypeError, ValueError):
        return None
    if arr.ndim != 1 or arr.dtype.kind not in "fiu" or bool in types:
        return None
    if arr.dtype.kind == "f":
        if not (np.isfinite(arr).all() and (arr == np.floor(arr)).all()):
            return None
        if arr.size and np.abs(arr).max() >= 2.0**63:
            return None
    elif arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        return None
    return arr.astype(np.int64)


def _flat_frame(
    qids: list[str], sizes: np.ndarray, docs: list, name: str, values: np.ndarray
) -> pd.DataFrame:
    doc_ids = _as_str_objects(np.fromiter(docs, dtype=object, count=len(docs)))
    return pd.DataFrame(
        {
            "query_id": pd.Series(np.repeat(np.array(qids, dtype=object), sizes), dtype=object),
            "doc_id": pd.Series(doc_ids, dtype=object),
            name: pd.Series(values, dtype=values.dtype),
        }
    )


def _frame(rows: list[tuple], columns: tuple[str, ...], dtypes: dict[str, str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(columns))
    for col in columns:
        df[col] = df[col].astype(dtypes.get(col, "object"))
    return df


def _check_duplicates(df: pd.DataFrame, what: str) -> None:
    dup = df.duplicated(["query_id", "doc_id"], keep="first")
    if dup.any():
        row = df[dup].iloc[0]
        raise InputError(
            f"duplicate ({what}) entry for doc_id {row['doc_id']!r}",
            query_id=str(row["query_id"]),
        )


def check_qrels(qrels: pd.DataFrame) -> None:
    """Validate a qrels frame (columns, integer grades, no duplicate pair).

    Raises
    ------
    InputError
        Naming the column, or the query and document of the first duplicate.
    """
    _check_qrels_values(qrels)
    _check_duplicates(qrels, "qrels")


def _check_ids_present(frame: pd.DataFrame, what: str) -> None:
    """Raise when a ``query_id`` or ``doc_id`` is missing (None, NaN): ``str()`` would read it as
    the id "None" or "nan"."""
    for col in ("query_id", "doc_id"):
        missing = frame[col].isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            other = "doc_id" if col == "query_id" else "query_id"
            raise InputError(
                f"{what} row {row} has no {col} (a missing value, not an id; {other} "
                f"{frame[other].iloc[row]!r})",
                column=col,
            )


def _check_qrels_values(qrels: pd.DataFrame) -> None:
    """:func:`check_qrels` without the duplicate check (which the sorting kernels do cheaply)."""
    require_columns(qrels, QRELS_COLUMNS, "qrels frame")
    _check_ids_present(qrels, "qrels frame")
    if not pd.api.types.is_integer_dtype(qrels["relevance"]):
        raise InputError("qrels grades must be integers", column="relevance")


def check_run(run: pd.DataFrame) -> None:
    """Validate a run frame (columns, numeric non-NaN scores, no duplicate pair).

    Raises
    ------
    InputError
        Naming the column, or the query and document at fault.
    """
    _check_run_values(run)
    _check_duplicates(run, "run")


def _check_run_values(run: pd.DataFrame) -> None:
    """:func:`check_run` without the duplicate check (which the sorting kernels do cheaply)."""
    require_columns(run, RUN_COLUMNS, "run frame")
    _check_ids_present(run, "run frame")
    if not pd.api.types.is_numeric_dtype(run["score"]):
        raise InputError("run scores must be numeric", column="score")
    nan = run["score"].isna()
    if nan.any():
        row = run[nan].iloc[0]
        raise InputError(f"score of {row['doc_id']!r} is NaN", query_id=str(row["query_id"]))


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
    The work is done per query by compiled kernels (:mod:`ragnb._groupsort`), see
    :func:`_index_run`.

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"],
    ...                     "score": [1.0, 2.0, 1.0]})
    >>> sort_run(run).run["doc_id"].tolist()
    ['b', 'c', 'a']
    """
    index = _index_run(run, order)
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
# each query (ragnb._groupsort). prepare() uses the indexes directly and never builds the sorted
# frame; sort_run() builds it from the index.


@dataclass(frozen=True, eq=False)
class _Strings:
    """A column of strings as UTF-8 bytes, see :mod:`ragnb._groupsort`.

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
    def of(cls, data: np.ndarray, offsets: np.ndarray, skip: int | None = None) -> _Strings:
        kernels = _groupsort()
        if skip is None:
            skip = int(kernels.common_prefix(data, offsets))
        return cls(data, offsets, skip, kernels.prefixes(data, offsets, skip))

    def raw(self, i: int) -> bytes:
        """The bytes of string ``i``."""
        return self.data[self.offsets[i] : self.offsets[i + 1]].tobytes()

    def get(self, i: int) -> str:
        """String ``i``."""
        return self.raw(i).decode("utf-8", "surrogatepass")


def _common_skip(a: _Strings, b: _Strings) -> tuple[_Strings, _Strings]:
    """Both columns with prefixes from the same byte, so that the kernels can compare them."""
    x = a.raw(0) if len(a.offsets) > 1 else b""
    y = b.raw(0) if len(b.offsets) > 1 else b""
    shared = 0
    while shared < min(len(x), len(y)) and x[shared] == y[shared]:
        shared += 1
    skip = min(a.skip, b.skip, shared)
    a = a if a.skip == skip else _Strings.of(a.data, a.offsets, skip)
    b = b if b.skip == skip else _Strings.of(b.data, b.offsets, skip)
    return a, b


@dataclass(frozen=True, eq=False)
class _Groups:
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
class _RunIndex:
    """A validated run in evaluation order, as row numbers (no frame is built).

    Attributes
    ----------
    queries : _Groups
        Rows grouped by ``query_id``.
    docs : _Strings
        ``doc_id`` of each row.
    by_doc : ndarray of int64, shape (n_rows,)
        Rows of each query by ``doc_id`` ascending (the layout of ``queries.rows``).
    order : ndarray of int64, shape (n_rows,)
        Rows of each query in evaluation order (the layout of ``queries.rows``).
    n_rank_disagreements : int
        Queries whose ``rank`` column disagrees with the score order.
    """

    queries: _Groups
    docs: _Strings
    by_doc: np.ndarray
    order: np.ndarray
    n_rank_disagreements: int

    def ranks(self) -> np.ndarray:
        """1-based rank of each position of ``order``, int64 of shape (n_rows,)."""
        starts = self.queries.starts
        n = int(starts[-1])
        return np.arange(1, n + 1, dtype=np.int64) - np.repeat(starts[:-1], self.queries.sizes)


@dataclass(frozen=True, eq=False)
class _QrelsIndex:
    """Validated qrels grouped by query.

    Attributes
    ----------
    queries : _Groups
    docs : _Strings
    by_doc : ndarray of int64, shape (n_rows,)
        Rows of each query by ``doc_id`` ascending.
    grades : ndarray of int64, shape (n_rows,)
        Grade of each row.
    keys : list or None
        The document ids of a dict of dicts as given, in row order (None for a frame): a dict
        run is joined with them by look-ups (:mod:`ragnb._dictjoin`).
    """

    queries: _Groups
    docs: _Strings
    by_doc: np.ndarray
    grades: np.ndarray
    keys: list | None = None


#: Run rows above which evaluating without numba warns that it is slow.
PLAIN_PYTHON_ROWS = 200_000


def _groupsort() -> ModuleType:
    """The compiled kernels (numba is imported on first use)."""
    from ragnb import _groupsort

    return _groupsort


def _index_run(
    run: pd.DataFrame | Mapping[str, Mapping[str, float]],
    order: RunOrder,
) -> _RunIndex:
    """Validate a run (frame or dict of dicts) and put it in evaluation order.

    Same policy, validation and error messages as :func:`sort_run` (run_from_dict's for a
    dict), without building the sorted frame.

    Raises
    ------
    InputError
        On a malformed run or an unknown ``order``.
    """
    if isinstance(run, pd.DataFrame):
        frame = run
        _check_run_values(frame)
        queries = _group_by_id(frame["query_id"])
        docs = _string_buffers(frame["doc_id"])
        score = _order_keys(frame["score"])
        file_key = _order_keys(frame["rank"]) if "rank" in frame.columns else None
        by_doc = _sorted_by_string(queries, docs, lambda: _check_duplicates(frame, "run"), "run")
    elif isinstance(run, Mapping):
        parts = _dict_parts(run, _float_scores)
        if parts is None:  # a bad score (raises, naming it) or ids equal only as str
            return _index_run(run_from_dict(run), order)
        queries, docs, score, _ = parts
        file_key = None
        by_doc = _sorted_by_string(
            queries, docs, lambda: _check_duplicates(run_from_dict(run), "run"), "run"
        )
    else:
        raise InputError(f"run must be a DataFrame or a dict of dicts, got {type(run).__name__}")
    if order not in ("score", "file"):
        raise InputError(f"unknown run order {order!r}; use 'score' or 'file'")
    kernels = _groupsort()
    if not kernels.COMPILED and len(by_doc) > PLAIN_PYTHON_ROWS:
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
    kernels.run_chunks(
        kernels.rank_order,
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
    return _RunIndex(queries, docs, by_doc, out, int(disagree.sum()))


def _index_qrels(qrels: pd.DataFrame | Mapping[str, Mapping[str, int]]) -> _QrelsIndex:
    """Validate qrels (frame or dict of dicts) and group them by query, documents sorted.

    Raises
    ------
    InputError
        As :func:`check_qrels` (or :func:`qrels_from_dict`), and on qrels without judgements.
    """
    if isinstance(qrels, pd.DataFrame):
        frame = qrels
        _check_qrels_values(frame)
        queries = _group_by_id(frame["query_id"])
        docs = _string_buffers(frame["doc_id"])
        grades = np.array(frame["relevance"].to_numpy(dtype=np.int64), dtype=np.int64)
        keys: list | None = None
        by_doc = _sorted_by_string(
            queries, docs, lambda: _check_duplicates(frame, "qrels"), "qrels"
        )
    elif isinstance(qrels, Mapping):
        parts = _dict_parts(qrels, _integral_grades)
        if parts is None:  # a bad grade (raises, naming it) or ids equal only as str
            return _index_qrels(qrels_from_dict(qrels))
        queries, docs, grades, keys = parts
        by_doc = _sorted_by_string(
            queries, docs, lambda: _check_duplicates(qrels_from_dict(qrels), "qrels"), "qrels"
        )
    else:
        raise InputError(
            f"qrels must be a DataFrame or a dict of dicts, got {type(qrels).__name__}"
        )
    if len(grades) == 0:
        raise InputError("qrels hold no judgements; nothing to evaluate")
    return _QrelsIndex(queries, docs, by_doc, grades, keys)


def _dict_parts(
    nested: Mapping[str, Mapping[str, object]],
    convert: Callable[[Mapping[str, Mapping[str, object]], int], np.ndarray | None],
) -> tuple[_Groups, _Strings, np.ndarray, list] | None:
    """Groups, document strings, converted values and document ids (as given) of
    ``{query: {doc: value}}``, in row order.

    None when ``convert`` rejects the values or two query ids are equal as ``str``: the caller then
    takes the checked path through a frame.
    """
    qids, sizes = _flatten(nested)
    n = int(sizes.sum())
    converted = convert(nested, n)
    if converted is None or len(set(qids)) != len(qids):
        return None
    keep = sizes > 0  # a query with no entries has no rows
    starts = (np.cumsum(sizes) - sizes)[keep]
    heads = np.array(qids, dtype=object)[keep]
    docs = _doc_ids(nested)
    return _groups_from_segments(starts, heads, n), _strings_from_list(docs), converted, docs


def _sorted_by_string(
    groups: _Groups, docs: _Strings, raise_duplicate: Callable[[], None], what: str
) -> np.ndarray:
    """Rows of each group by string ascending; on a (query, doc) pair seen twice call
    ``raise_duplicate`` (which names the first duplicate in row order), else raise here."""
    kernels = _groupsort()
    n_groups = len(groups.ids)
    by_doc = np.empty(len(groups.rows), dtype=np.int64)
    dup = np.empty(n_groups, dtype=np.int64)
    kernels.run_chunks(
        kernels.doc_order,
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


def _as_str_objects(values: np.ndarray) -> np.ndarray:
    """An object array of ``str`` (each value ``str(value)`` unless it already is a str)."""
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return np.fromiter((v if isinstance(v, str) else str(v) for v in values), object, len(values))


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


def _string_buffers(col: pd.Series) -> _Strings:
    """A column of ids as UTF-8 bytes; a value that is not a str counts as ``str(value)``."""
    if _is_arrow_string(col):
        arr = _arrow_array(col)
        if not arr.null_count:
            return _strings_from_arrow(arr)
    return _strings_from_objects(col.to_numpy(dtype=object))


def _strings_from_list(values: list) -> _Strings:
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # without the fast extra: Python's own encoder
        return _encode_strings(_as_str_objects(np.fromiter(values, object, len(values))))

    try:
        arr = pa.array(values, type=pa.large_string())
    except (pa.ArrowException, UnicodeError):  # not all str, or lone surrogates
        return _strings_from_objects(np.fromiter(values, dtype=object, count=len(values)))
    return _strings_from_arrow(arr)


def _strings_from_objects(values: np.ndarray) -> _Strings:
    values = _as_str_objects(values)
    try:
        import pyarrow as pa
    except ModuleNotFoundError:  # without the fast extra: Python's own encoder
        return _encode_strings(values)
    try:
        arr = pa.array(values, type=pa.large_string())
    except (pa.ArrowException, UnicodeError):  # lone surrogates are not valid UTF-8
        return _encode_strings(values)
    return _strings_from_arrow(arr)


def _strings_from_arrow(arr: pa.Array) -> _Strings:
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
    return _Strings.of(_read_only(data), _read_only(offsets.astype(np.int64, copy=False)))


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` flagged read-only: the kernels then see one array type (and compile once)."""
    if a.flags.writeable:
        a = a.view()
        a.setflags(write=False)
    return a


def _encode_strings(values: np.ndarray) -> _Strings:
    """UTF-8 keeping lone surrogates (``surrogatepass``): byte order stays code point order."""
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return _Strings.of(_read_only(data), _read_only(offsets))


def _group_by_id(col: pd.Series) -> _Groups:
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


def _groups_from_segments(starts: np.ndarray, heads: np.ndarray, n: int) -> _Groups:
    """Groups from segments of consecutive rows: segment ``j`` starts at row ``starts[j]``, ends
    where the next starts (or at ``n``) and has the id ``heads[j]``."""
    # ids sorted by Python's sort, whose str comparisons beat pandas' sort of objects
    values = _as_str_objects(heads).tolist()
    if all(map(operator.lt, values, islice(values, 1, None))):  # one segment per id, in order
        ids = np.array(values, dtype=object)
        return _Groups(ids, np.arange(n, dtype=np.int64), np.append(starts, n).astype(np.int64))
    uniques = sorted(set(values))
    ids = np.array(uniques, dtype=object)
    position = dict(zip(uniques, range(len(uniques)), strict=True))
    codes = np.fromiter(map(position.__getitem__, values), np.int64, len(values))
    if len(codes) < 2 or bool((np.diff(codes) > 0).all()):  # one segment per id, in order
        return _Groups(ids, np.arange(n, dtype=np.int64), np.append(starts, n).astype(np.int64))
    lengths = np.diff(np.append(starts, n))
    by_code = np.argsort(codes, kind="stable")
    seg_start, seg_len = starts[by_code], lengths[by_code]
    new_start = np.cumsum(seg_len) - seg_len
    rows = np.repeat(seg_start - new_start, seg_len) + np.arange(n, dtype=np.int64)
    sizes = np.bincount(codes, weights=lengths, minlength=len(ids)).astype(np.int64)
    return _Groups(ids, rows, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))


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
