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
See :func:`ragnb.frames.index.sort_run`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from itertools import chain
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd

from ragnb.core.validation import convert_entry, require_columns
from ragnb.errors import DuplicateEntry, InputError

__all__ = [
    "IMPORTANCE_COLUMN",
    "IMPORTANCE_LEVELS",
    "PREFS_COLUMNS",
    "SUBTOPIC_COLUMNS",
    "SUPPORT_GRADES",
    "check_prefs",
    "check_subtopic_qrels",
    "document_qrels",
    "QRELS_COLUMNS",
    "RUN_COLUMNS",
    "as_str_ids",
    "nested_parts",
    "qrels_from_dict",
    "qrels_to_dict",
    "run_from_dict",
    "run_to_dict",
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
    return _from_nested(qrels, "relevance", _qrels_from_dict_checked)


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
    return _from_nested(run, "score", _run_from_dict_checked)


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
    checked: Callable[[Any], pd.DataFrame],
) -> pd.DataFrame:
    """The frame of ``{query_id: {doc_id: value}}`` (:func:`nested_parts`), or
    ``checked(nested)`` (entry by entry, naming the first bad one) when a value does not
    convert."""
    parts = nested_parts(nested, column)
    if parts is None:
        return checked(nested)
    qids, sizes, docs, values = parts
    return _flat_frame(qids, sizes, docs, column, values)


def nested_parts(
    nested: Mapping[str, Mapping[str, Any]], column: str
) -> tuple[list[str], np.ndarray, list, np.ndarray] | None:
    """``{query_id: {doc_id: value}}`` flattened in dict order, values converted in one pass.

    Parameters
    ----------
    nested : mapping of str to mapping of str to value
        A run (scores) or qrels (grades) as dicts.
    column : {"score", "relevance"}
        ``"score"``: each value as ``float(value)``, float64; ``"relevance"``: integral numbers
        as int64 (Python bools excluded).

    Returns
    -------
    (query_ids, sizes, doc_ids, values) or None
        ``query_ids``: list of str, one per query; ``sizes``: int64 ndarray of shape
        (n_queries,), the entries of each query; ``doc_ids``: list of the document ids as given,
        length n; ``values``: ndarray of shape (n,). None when a value does not convert (a score
        that is not a finite number, a grade that is not an integer in the int64 range): the
        caller then converts entry by entry, naming the first bad one.
    """
    qids, sizes = _flatten(nested)
    convert = _float_scores if column == "score" else _integral_grades
    arr = convert(nested, int(sizes.sum()))
    if arr is None:
        return None
    return qids, sizes, _doc_ids(nested), arr


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
    doc_ids = as_str_ids(np.fromiter(docs, dtype=object, count=len(docs)))
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
        raise DuplicateEntry(what, str(row["doc_id"]), query_id=str(row["query_id"]))


def check_qrels(qrels: pd.DataFrame, *, duplicates: bool = True) -> None:
    """Validate a qrels frame (columns, integer grades, no duplicate pair).

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance``.
    duplicates : bool, default True
        Also look for a (query, document) pair given twice (False: the caller finds them more
        cheaply, as :func:`ragnb.frames.index.index_qrels` does while sorting).

    Raises
    ------
    InputError
        Naming the column, or the query and document of the first duplicate.
    """
    _check_qrels_values(qrels)
    if duplicates:
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
    """:func:`check_qrels` without the duplicate check."""
    require_columns(qrels, QRELS_COLUMNS, "qrels frame")
    _check_ids_present(qrels, "qrels frame")
    if not pd.api.types.is_integer_dtype(qrels["relevance"]):
        raise InputError("qrels grades must be integers", column="relevance")


def check_run(run: pd.DataFrame, *, duplicates: bool = True) -> None:
    """Validate a run frame (columns, numeric non-NaN scores, no duplicate pair).

    Parameters
    ----------
    run : DataFrame
        Columns ``query_id``, ``doc_id``, ``score``.
    duplicates : bool, default True
        Also look for a (query, document) pair given twice (False: the caller finds them more
        cheaply, as :func:`ragnb.frames.index.index_run` does while sorting).

    Raises
    ------
    InputError
        Naming the column, or the query and document at fault.
    """
    _check_run_values(run)
    if duplicates:
        _check_duplicates(run, "run")


def _check_run_values(run: pd.DataFrame) -> None:
    """:func:`check_run` without the duplicate check."""
    require_columns(run, RUN_COLUMNS, "run frame")
    _check_ids_present(run, "run frame")
    if not pd.api.types.is_numeric_dtype(run["score"]):
        raise InputError("run scores must be numeric", column="score")
    nan = run["score"].isna()
    if nan.any():
        row = run[nan].iloc[0]
        raise InputError(f"score of {row['doc_id']!r} is NaN", query_id=str(row["query_id"]))


def as_str_ids(values: np.ndarray) -> np.ndarray:
    """Ids as ``str``: each value ``str(value)`` unless it already is a str.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Ids of any type (object array).

    Returns
    -------
    ndarray of str (object), shape (n,)
        ``values`` itself when every value already is a str.
    """
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values
    return np.fromiter((v if isinstance(v, str) else str(v) for v in values), object, len(values))


#: Columns of a subtopic qrels frame.
SUBTOPIC_COLUMNS = ("query_id", "subtopic", "doc_id", "relevance")
#: The optional column of a subtopic qrels frame naming each subtopic's importance, its values.
IMPORTANCE_COLUMN = "importance"
IMPORTANCE_LEVELS = ("vital", "okay")
#: A nugget's assignment label -> its grade in nugget qrels (subtopic qrels whose subtopics are
#: nuggets, :mod:`ragnb.measures.nuggets`).
SUPPORT_GRADES = {"support": 2, "partial_support": 1, "not_support": 0}


def check_subtopic_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    """A subtopic qrels frame checked: string ids, integer grades, each subtopic judged once.

    Raises
    ------
    InputError
        Not a frame, missing columns, non-integer grades, a missing id, a (query, subtopic,
        document) judged twice, no judgement, or a subtopic both vital and okay.
    """
    if not isinstance(qrels, pd.DataFrame):
        raise InputError(
            f"subtopic qrels must be a DataFrame with columns {list(SUBTOPIC_COLUMNS)}, got "
            f"{type(qrels).__name__}"
        )
    require_columns(qrels, SUBTOPIC_COLUMNS, "subtopic qrels frame")
    if not pd.api.types.is_integer_dtype(qrels["relevance"]):
        raise InputError("subtopic qrels grades must be integers", column="relevance")
    frame = pd.DataFrame({c: qrels[c] for c in SUBTOPIC_COLUMNS})
    frame[IMPORTANCE_COLUMN] = _importance(qrels)
    for col in ("query_id", "subtopic", "doc_id"):
        if frame[col].isna().any():
            row = int(np.flatnonzero(frame[col].isna().to_numpy())[0])
            raise InputError(f"subtopic qrels row {row} has no {col}", column=col)
        frame[col] = frame[col].astype(str)
    dup = frame.duplicated(["query_id", "subtopic", "doc_id"])
    if dup.any():
        row = frame[dup].iloc[0]
        raise InputError(
            f"subtopic qrels judge doc {row['doc_id']!r} twice for subtopic {row['subtopic']!r}",
            query_id=row["query_id"],
        )
    if len(frame) == 0:
        raise InputError("subtopic qrels hold no judgements; nothing to evaluate")
    levels = frame.groupby(["query_id", "subtopic"], sort=False)[IMPORTANCE_COLUMN].nunique()
    if (levels > 1).any():
        query_id, subtopic = levels.index[int(np.flatnonzero(levels.to_numpy() > 1)[0])]
        raise InputError(
            f"subtopic {subtopic!r} is both vital and okay; give it one importance",
            query_id=query_id,
            column=IMPORTANCE_COLUMN,
        )
    return frame


def _importance(qrels: pd.DataFrame) -> pd.Series:
    """The ``importance`` column checked (``"vital"`` where absent)."""
    if IMPORTANCE_COLUMN not in qrels.columns:
        return pd.Series(IMPORTANCE_LEVELS[0], index=qrels.index, dtype=object)
    values = qrels[IMPORTANCE_COLUMN]
    bad = ~values.isin(IMPORTANCE_LEVELS).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"subtopic qrels row {row}: importance {values.iloc[row]!r} is not one of "
            f"{list(IMPORTANCE_LEVELS)}",
            column=IMPORTANCE_COLUMN,
        )
    return values.astype(object)


def document_qrels(subtopic_qrels: pd.DataFrame) -> pd.DataFrame:
    """Document-level qrels of subtopic qrels: each (query, document) with its largest grade.

    Parameters
    ----------
    subtopic_qrels : DataFrame
        Columns ``query_id``, ``subtopic``, ``doc_id``, ``relevance``.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id`` (str), ``relevance`` (int64), sorted by query and document.

    Raises
    ------
    InputError
        Missing columns, non-integer grades, or a (query, subtopic, document) judged twice.
    """
    frame = check_subtopic_qrels(subtopic_qrels)
    out = frame.groupby(["query_id", "doc_id"], sort=True, as_index=False)["relevance"].max()
    out["relevance"] = out["relevance"].astype(np.int64)
    return out


#: Columns of a preference judgements frame (trec_eval's ``prefs`` and ``qrels_prefs`` files,
#: :mod:`ragnb.io.prefs`; the measures of :mod:`ragnb.measures.prefs`).
PREFS_COLUMNS = ("query_id", "judgment_group", "judgment_subgroup", "doc_id", "rel_level")


def check_prefs(prefs: pd.DataFrame) -> pd.DataFrame:
    """A preference judgements frame checked: string ids, numeric rel_levels, no NaN.

    Parameters
    ----------
    prefs : DataFrame
        Columns :data:`PREFS_COLUMNS`: ``query_id``, ``judgment_group``, ``judgment_subgroup``,
        ``doc_id`` (ids, read as str) and ``rel_level`` (a number; higher is preferred).

    Returns
    -------
    DataFrame
        Those columns only, ids as str, ``rel_level`` float64, the row order kept.

    Raises
    ------
    InputError
        Not a frame, missing columns, a missing id, a ``rel_level`` that is not a number or is
        NaN (trec_eval 10.0's order of such judgements is undefined), or no row.
    """
    if not isinstance(prefs, pd.DataFrame):
        raise InputError(
            f"preference judgements must be a DataFrame with columns {list(PREFS_COLUMNS)}, got "
            f"{type(prefs).__name__}"
        )
    require_columns(prefs, PREFS_COLUMNS, "preference judgements frame")
    frame = pd.DataFrame({c: prefs[c] for c in PREFS_COLUMNS}).reset_index(drop=True)
    for col in PREFS_COLUMNS[:4]:
        if frame[col].isna().any():
            row = int(np.flatnonzero(frame[col].isna().to_numpy())[0])
            raise InputError(f"preference judgements row {row} has no {col}", column=col)
        frame[col] = as_str_ids(frame[col].to_numpy(dtype=object))
    level = frame["rel_level"]
    if not pd.api.types.is_numeric_dtype(level) or pd.api.types.is_bool_dtype(level):
        raise InputError("preference rel_levels must be numbers", column="rel_level")
    frame["rel_level"] = level.astype(np.float64)
    if frame["rel_level"].isna().any():
        row = frame[frame["rel_level"].isna()].iloc[0]
        raise InputError(
            f"rel_level of doc {row['doc_id']!r} is NaN",
            query_id=row["query_id"],
            column="rel_level",
        )
    if len(frame) == 0:
        raise InputError("preference judgements hold no row; nothing to evaluate")
    return frame
