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

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ragnb.errors import InputError

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
    out: dict[str, dict[str, int]] = {}
    for qid, did, rel in zip(
        qrels["query_id"].to_numpy(),
        qrels["doc_id"].to_numpy(),
        qrels["relevance"].to_numpy(),
        strict=True,
    ):
        out.setdefault(str(qid), {})[str(did)] = int(rel)
    return out


def qrels_from_dict(qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """``{query_id: {doc_id: relevance}}`` to a qrels frame.

    Raises
    ------
    InputError
        If a grade is not an integer.
    """
    rows = []
    for qid, docs in qrels.items():
        for did, rel in docs.items():
            try:
                integral = not isinstance(rel, bool) and float(rel).is_integer()
            except (TypeError, ValueError):
                integral = False
            if not integral:
                raise InputError(f"grade of {did!r} is not an integer: {rel!r}", query_id=str(qid))
            rows.append((str(qid), str(did), int(rel)))
    return _frame(rows, QRELS_COLUMNS, {"relevance": "int64"})


def run_to_dict(run: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Run frame to ``{query_id: {doc_id: score}}``."""
    check_run(run)
    out: dict[str, dict[str, float]] = {}
    for qid, did, score in zip(
        run["query_id"].to_numpy(), run["doc_id"].to_numpy(), run["score"].to_numpy(), strict=True
    ):
        out.setdefault(str(qid), {})[str(did)] = float(score)
    return out


def run_from_dict(run: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """``{query_id: {doc_id: score}}`` to a run frame.

    Raises
    ------
    InputError
        If a score is NaN or not a number.
    """
    rows = []
    for qid, docs in run.items():
        for did, score in docs.items():
            try:
                value = float(score)
            except (TypeError, ValueError):
                raise InputError(
                    f"score of {did!r} is not a number: {score!r}", query_id=str(qid)
                ) from None
            if np.isnan(value):
                raise InputError(f"score of {did!r} is NaN", query_id=str(qid))
            rows.append((str(qid), str(did), value))
    return _frame(rows, RUN_COLUMNS, {"score": "float64"})


def _frame(rows: list[tuple], columns: tuple[str, ...], dtypes: dict[str, str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(columns))
    for col in columns:
        df[col] = df[col].astype(dtypes.get(col, "object"))
    return df


def _require_columns(df: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(
            f"{what} frame lacks column(s) {missing}; it has {list(df.columns)}",
            column=missing[0],
        )


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
    _require_columns(qrels, QRELS_COLUMNS, "qrels")
    if not pd.api.types.is_integer_dtype(qrels["relevance"]):
        raise InputError("qrels grades must be integers", column="relevance")
    _check_duplicates(qrels, "qrels")


def check_run(run: pd.DataFrame) -> None:
    """Validate a run frame (columns, numeric non-NaN scores, no duplicate pair).

    Raises
    ------
    InputError
        Naming the column, or the query and document at fault.
    """
    _require_columns(run, RUN_COLUMNS, "run")
    if not pd.api.types.is_numeric_dtype(run["score"]):
        raise InputError("run scores must be numeric", column="score")
    nan = run["score"].isna()
    if nan.any():
        row = run[nan].iloc[0]
        raise InputError(f"score of {row['doc_id']!r} is NaN", query_id=str(row["query_id"]))
    _check_duplicates(run, "run")


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

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"],
    ...                     "score": [1.0, 2.0, 1.0]})
    >>> sort_run(run).run["doc_id"].tolist()
    ['b', 'c', 'a']
    """
    check_run(run)
    if order not in ("score", "file"):
        raise InputError(f"unknown run order {order!r}; use 'score' or 'file'")
    df = run.reset_index(drop=True).copy()
    df["query_id"] = df["query_id"].astype(str)
    df["doc_id"] = df["doc_id"].astype(str)
    df["_row"] = np.arange(len(df))
    by_score = df.sort_values(
        ["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable"
    )
    n_disagree = 0
    if "rank" in df.columns and len(df):
        by_file = df.sort_values(["query_id", "rank", "_row"], kind="stable")
        a = by_score.groupby("query_id", sort=True)["_row"].apply(tuple)
        b = by_file.groupby("query_id", sort=True)["_row"].apply(tuple)
        n_disagree = int((a != b).sum())
        if n_disagree and warn and order == "score":
            warnings.warn(
                f"{n_disagree} queries have a rank column that disagrees with their scores; "
                "ordering by score as trec_eval does (use order='file' to keep the file's order)",
                UserWarning,
                stacklevel=2,
            )
    if order == "score":
        out = by_score
    elif "rank" in df.columns:
        out = df.sort_values(["query_id", "rank", "_row"], kind="stable")
    else:
        out = df.sort_values(["query_id", "_row"], kind="stable")
    out = out.drop(columns=["_row"] + (["rank"] if "rank" in out.columns else []))
    out = out.reset_index(drop=True)
    out["rank"] = out.groupby("query_id", sort=False).cumcount().astype("int64") + 1
    return SortedRun(run=out, order=order, n_rank_disagreements=n_disagree)
