"""Nugget files: the nuggets and their assignments a person corrects, read back, and the nugget
qrels they make.

A run folder's nuggets (:data:`NUGGET_FILES`: ``nuggets.csv`` and ``nugget_assignments.csv``,
written by :func:`~ragnb.judge.nuggets.export_nuggets` and
:func:`~ragnb.judge.nuggets.export_assignments`, notebook 02 and ``ragnb golden``) are UTF-8 CSV
files. :func:`read_nuggets` and :func:`read_assignments` read each back, naming the file, line
and column of anything wrong; :func:`read_nugget_folder` reads both from a folder, and
:func:`read_nugget_qrels` turns them into nugget qrels (:func:`nugget_qrels`), which
:func:`ragnb.evaluation.evaluate.evaluate` reads for ``NuggetRecall@K`` (``nuggets=``).

========================= =========================================================================
frame                     columns
========================= =========================================================================
nuggets                   ``query_id``, ``nugget_id``, ``text``, ``importance`` (``vital`` or
                          ``okay``), ``status`` (``ok``, or why the importance is a default)
assignments               ``query_id``, ``nugget_id``, ``doc_id``, ``label`` (``support``,
                          ``partial_support``, ``not_support``; empty where no valid answer
                          was given, read as ``not_support``), ``status``
nugget qrels              ``query_id``, ``subtopic`` (the nugget id), ``doc_id``, ``relevance``
                          (2 support, 1 partial support, 0 otherwise), ``importance``
========================= =========================================================================
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import IMPORTANCE_COLUMN, IMPORTANCE_LEVELS, SUPPORT_GRADES
from ragnb.io.files import cell_from_spreadsheet

__all__ = [
    "ASSIGNMENT_COLUMNS",
    "NUGGET_COLUMNS",
    "NUGGET_FILES",
    "kept_assignments",
    "nugget_qrels",
    "read_assignments",
    "read_nugget_folder",
    "read_nugget_qrels",
    "read_nuggets",
]

#: Columns of the nuggets and assignments frames (and files).
NUGGET_COLUMNS = ("query_id", "nugget_id", "text", "importance", "status")
ASSIGNMENT_COLUMNS = ("query_id", "nugget_id", "doc_id", "label", "status")
#: The files of a run folder's nuggets and their assignments (notebook 02 and ``ragnb golden``
#: write them; ``ragnb evaluate --nuggets`` and the CLQ sweep read them).
NUGGET_FILES = {"nuggets": "nuggets.csv", "assignments": "nugget_assignments.csv"}


def nugget_qrels(
    nuggets: pd.DataFrame,
    assignments: pd.DataFrame,
    *,
    path: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Nugget qrels for :func:`ragnb.evaluation.evaluate.evaluate` (``NuggetRecall@K``).

    Parameters
    ----------
    nuggets : DataFrame
        Columns ``query_id``, ``nugget_id``, ``importance`` (and ``line``, as
        :func:`read_nuggets` gives it, for the errors).
    assignments : DataFrame
        Columns ``query_id``, ``nugget_id``, ``doc_id``, ``label`` (empty: not assessed, read
        as ``not_support``).
    path : str or PathLike, optional
        The nuggets file, named in the errors about the nuggets.

    Returns
    -------
    DataFrame
        ``query_id``, ``subtopic`` (the nugget id), ``doc_id``, ``relevance`` (int64: 2
        support, 1 partial support, 0 otherwise), ``importance``; one row per assignment.

    Raises
    ------
    InputError
        An assignment of a nugget not in ``nuggets``, a label that is not one of
        :data:`ragnb.measures.nuggets.SUPPORT_GRADES`, a nugget without any assignment row
        (it could never count), or no nugget at all.

    Examples
    --------
    >>> nuggets = pd.DataFrame({"query_id": ["q", "q"], "nugget_id": ["n01", "n02"],
    ...                         "importance": ["vital", "okay"]})
    >>> assignments = pd.DataFrame({"query_id": ["q", "q"], "nugget_id": ["n01", "n02"],
    ...                             "doc_id": ["d1", "d1"], "label": ["support", ""]})
    >>> nugget_qrels(nuggets, assignments)["relevance"].tolist()
    [2, 0]
    """
    for frame, what, cols in (
        (nuggets, "nuggets", ("query_id", "nugget_id", "importance")),
        (assignments, "assignments", ("query_id", "nugget_id", "doc_id", "label")),
    ):
        for col in cols:
            if col not in frame.columns:
                raise InputError(f"{what} have no column {col!r}", column=col)
    if len(nuggets) == 0:
        raise InputError("no nuggets: nothing to evaluate", path=path)
    keys = nuggets[["query_id", "nugget_id"]].astype(str)
    importance = dict(
        zip(
            zip(keys["query_id"], keys["nugget_id"], strict=True),
            nuggets["importance"],
            strict=True,
        )
    )
    grades = {**SUPPORT_GRADES, "": 0}
    rows = []
    for q, n, d, label in zip(
        *(assignments[c].astype(str) for c in ("query_id", "nugget_id", "doc_id")),
        assignments["label"].fillna("").astype(str).str.strip(),
        strict=True,
    ):
        if (q, n) not in importance:
            raise InputError(
                f"an assignment names nugget {n!r}, not among the nuggets (a deleted nugget? "
                "delete its assignment rows too)",
                query_id=q,
                column="nugget_id",
            )
        if label not in grades:
            raise InputError(
                f"label {label!r} of nugget {n!r} and passage {d!r} is not one of "
                f"{list(SUPPORT_GRADES)}",
                query_id=q,
                column="label",
            )
        rows.append((q, n, d, grades[label], importance[(q, n)]))
    assessed = {(q, n) for q, n, *_ in rows}
    lines = nuggets["line"].tolist() if "line" in nuggets.columns else [None] * len(nuggets)
    line_of = dict(zip(zip(keys["query_id"], keys["nugget_id"], strict=True), lines, strict=True))
    for (q, n), line in line_of.items():
        if (q, n) not in assessed:
            raise InputError(
                f"nugget {n!r} has no assignment row, so it could never count: assign it "
                "(assign_nuggets) or add its rows to the assignments",
                path=path,
                line=line,
                query_id=q,
                column="nugget_id",
            )
    out = pd.DataFrame(
        rows, columns=["query_id", "subtopic", "doc_id", "relevance", IMPORTANCE_COLUMN]
    )
    out["relevance"] = out["relevance"].astype(np.int64)
    return out


def _read_rows(path: str | os.PathLike[str], required: Sequence[str]) -> list[dict[str, Any]]:
    """The records of a UTF-8 CSV as dicts with their ``line`` (the header is line 1)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text; save the CSV as UTF-8", path=path) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader, [])]
        for col in required:
            if col not in header:
                raise InputError(
                    f"missing column {col!r}; the header has {header}",
                    path=path,
                    line=1,
                    column=col,
                )
        rows, start = [], reader.line_num + 1
        for fields in reader:
            if any(f.strip() for f in fields):
                if len(fields) != len(header):
                    raise InputError(
                        f"{len(fields)} cells where the header has {len(header)}",
                        path=path,
                        line=start,
                    )
                rows.append({"line": start, **dict(zip(header, fields, strict=True))})
            start = reader.line_num + 1
    except csv.Error as e:
        raise InputError(f"malformed CSV ({e})", path=path, line=start) from None
    return rows


def _check_cells(
    rows: list[dict[str, Any]], path: Any, ids: Sequence[str], allowed: dict[str, Sequence[str]]
) -> None:
    """Ids non-empty without spaces, each key once, cells of ``allowed`` among their values."""
    seen: dict[tuple[str, ...], int] = {}
    for row in rows:
        for col in ids:
            row[col] = row[col].strip()
            if not row[col] or any(c.isspace() for c in row[col]):
                raise InputError(
                    f"{row[col]!r} is empty or holds white space: not an id",
                    path=path,
                    line=row["line"],
                    column=col,
                )
        for col, values in allowed.items():
            row[col] = row[col].strip()
            if row[col] not in values:
                raise InputError(
                    f"{row[col]!r} is not one of {[v for v in values if v]}",
                    path=path,
                    line=row["line"],
                    column=col,
                )
        key = tuple(row[c] for c in ids)
        if key in seen:
            raise InputError(
                f"{key} is also on line {seen[key]}", path=path, line=row["line"], column=ids[-1]
            )
        seen[key] = row["line"]


def read_nuggets(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A nuggets CSV, as :func:`~ragnb.judge.nuggets.export_nuggets` writes it and perhaps
    corrected by a person, read back.

    Parameters
    ----------
    path : str or PathLike
        UTF-8 CSV with at least ``query_id``, ``nugget_id``, ``text``, ``importance``.

    Returns
    -------
    DataFrame
        :data:`NUGGET_COLUMNS` (``status`` "edited" where the file has none) plus ``line``.

    Raises
    ------
    InputError
        Naming the file, line and column: a missing column, a row of another cell count, an
        empty id or text, an importance other than vital or okay, a nugget given twice, text
        that is not UTF-8.
    FileNotFoundError
        When ``path`` does not exist.
    """
    rows = _read_rows(path, NUGGET_COLUMNS[:4])
    _check_cells(rows, path, ("query_id", "nugget_id"), {"importance": IMPORTANCE_LEVELS})
    for row in rows:
        row["text"] = cell_from_spreadsheet(row["text"].strip())
        if not row["text"]:
            raise InputError("empty nugget text", path=path, line=row["line"], column="text")
        row.setdefault("status", "edited")
    return pd.DataFrame(rows, columns=[*NUGGET_COLUMNS, "line"]).astype(object)


def read_assignments(path: str | os.PathLike[str]) -> pd.DataFrame:
    """An assignments CSV, as :func:`~ragnb.judge.nuggets.export_assignments` writes it and
    perhaps corrected, read back.

    Parameters
    ----------
    path : str or PathLike
        UTF-8 CSV with at least ``query_id``, ``nugget_id``, ``doc_id``, ``label``.

    Returns
    -------
    DataFrame
        :data:`ASSIGNMENT_COLUMNS` (``status`` "edited" where the file has none) plus ``line``.

    Raises
    ------
    InputError
        Naming the file, line and column: a missing column, an empty id, a label other than
        ``support``, ``partial_support``, ``not_support`` or empty, a triple given twice.
    FileNotFoundError
        When ``path`` does not exist.
    """
    rows = _read_rows(path, ASSIGNMENT_COLUMNS[:4])
    labels = (*SUPPORT_GRADES, "")
    _check_cells(rows, path, ("query_id", "nugget_id", "doc_id"), {"label": labels})
    for row in rows:
        row.setdefault("status", "edited")
    return pd.DataFrame(rows, columns=[*ASSIGNMENT_COLUMNS, "line"]).astype(object)


def read_nugget_folder(folder: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The nuggets and assignments of a folder: its ``nuggets.csv`` and
    ``nugget_assignments.csv`` (:data:`NUGGET_FILES`, written by notebook 02 and ``ragnb golden``
    and perhaps corrected by a person); assignments of nuggets no longer in the nuggets file (a
    person deleted them) are left out.

    Parameters
    ----------
    folder : str or PathLike
        A golden set's run folder, or any folder holding the two files.

    Returns
    -------
    nuggets : DataFrame
        As :func:`read_nuggets`.
    assignments : DataFrame
        As :func:`read_assignments`, the rows of deleted nuggets left out
        (:func:`kept_assignments`).

    Raises
    ------
    InputError
        A folder that is not there or a missing file (named), or what :func:`read_nuggets` and
        :func:`read_assignments` raise.
    """
    base = Path(folder)
    need = sorted(NUGGET_FILES.values())
    if not base.is_dir():
        raise InputError(f"not a folder: nugget judgements are a folder holding {need}", path=base)
    paths = {k: base / name for k, name in NUGGET_FILES.items()}
    for path in paths.values():
        if not path.is_file():
            raise InputError(f"not found: nugget qrels need {need}", path=path)
    nuggets = read_nuggets(paths["nuggets"])
    return nuggets, kept_assignments(nuggets, read_assignments(paths["assignments"]))


def read_nugget_qrels(folder: str | os.PathLike[str]) -> pd.DataFrame:
    """The nugget qrels of a folder's nugget files (:func:`read_nugget_folder`), as
    :func:`nugget_qrels` gives them.

    Parameters
    ----------
    folder : str or PathLike
        A golden set's run folder, or any folder holding the two files.

    Returns
    -------
    DataFrame
        ``query_id``, ``subtopic``, ``doc_id``, ``relevance``, ``importance``.

    Raises
    ------
    InputError
        What :func:`read_nugget_folder` and :func:`nugget_qrels` raise.
    """
    return nugget_qrels(*read_nugget_folder(folder), path=Path(folder) / NUGGET_FILES["nuggets"])


def kept_assignments(nuggets: pd.DataFrame, assignments: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``assignments`` whose nugget is in ``nuggets`` (a person may delete a nugget
    from the nuggets file and leave its assignment rows), renumbered from 0."""
    held = pd.MultiIndex.from_frame(nuggets[["query_id", "nugget_id"]].astype(str))
    of = pd.MultiIndex.from_frame(assignments[["query_id", "nugget_id"]].astype(str))
    return assignments[of.isin(held)].reset_index(drop=True)
