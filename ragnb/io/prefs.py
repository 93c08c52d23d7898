"""Readers of preference judgements: trec_eval 10.0's ``prefs`` and ``qrels_prefs`` files.

Formats
-------
``prefs`` (``trec_eval -R prefs``, :func:`read_prefs`)
    ``qid jg jsg docno rel_level``: five fields a line. A judgment group (``jg``) holds the
    preferences of one user for one information need; within it, each judgment subgroup
    (``jsg``) states that a document of higher ``rel_level`` is preferred to one of lower
    ``rel_level`` (only their order counts, except that 0 means non-relevant). Several subgroups
    make a partial order, closed under transitivity; different groups may disagree.
``qrels_prefs`` (``trec_eval -R qrels_prefs``, :func:`read_qrels_prefs`)
    A TREC qrels file ``qid iter docno rel`` read as preferences: ``iter`` is the judgment
    group, every line is in subgroup ``"0"``, the grade is the ``rel_level``.

Both are read as trec_eval 10.0 reads them (``get_prefs.c``, ``get_qrels_prefs.c``): fields
separated by C white space, exactly five (four) a line, so a blank line or a line with text after
the ``rel_level`` is rejected; the ``rel_level`` read by C's ``atof``
(:func:`ragnb.io.readers.c_atof`: ``abc`` is 0, ``2x`` 2); a line starting with ``#`` in its
first column is a comment, except right after another comment, where trec_eval reads it as a
judgement. Each rejected line is an error naming the file and line, as is a comment as the last
line (trec_eval reads past the end of the file there) and a NaN ``rel_level`` (trec_eval's order
is undefined then). Files may be gzipped (a name ending in ``.gz``); ``-`` reads the standard
input.

References
----------
.. [1] trec_eval 10.0, ``get_prefs.c``, ``get_qrels_prefs.c`` and ``formats.c`` (the format's
   description), https://github.com/usnistgov/trec_eval
"""

from __future__ import annotations

import math
import os
import re
import warnings
from pathlib import Path

import pandas as pd

from ragnb.errors import InputError
from ragnb.frames.schema import PREFS_COLUMNS
from ragnb.io.readers import c_atof, no_rows_error, open_text

__all__ = ["read_prefs", "read_qrels_prefs"]

#: C's ``isspace`` in the "C" locale: the characters trec_eval separates fields with.
_C_FIELD = re.compile(r"[^ \t\n\v\f\r]+")
#: A plain decimal number (what ``atof`` reads whole); others are counted in a note.
_PLAIN = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
#: A byte that is not UTF-8, as ``errors="surrogateescape"`` reads it.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
#: The fields of each format's lines.
_LAYOUT = {
    "prefs": ("qid", "jg", "jsg", "docno", "rel_level"),
    "qrels_prefs": ("qid", "iter", "docno", "rel"),
}


def read_prefs(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read trec_eval's preference judgements ``qid jg jsg docno rel_level`` (``-R prefs``).

    Parameters
    ----------
    path : str or PathLike
        The file, read as trec_eval 10.0 reads it (see the module docstring); ``.gz``
        gunzipped; ``-`` reads the standard input.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``judgment_group``, ``judgment_subgroup``, ``doc_id`` (str) and
        ``rel_level`` (float64), one row per judgement line, in file order. A ``UserWarning``
        counts the ``rel_level`` fields that are not plain numbers and the ``#`` lines read as
        judgements.

    Raises
    ------
    InputError
        A line of other than five fields, a NaN ``rel_level``, a comment as the last line, a
        byte that is not UTF-8, or no judgement; each naming the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "prefs.txt"
    >>> _ = p.write_text("# user 1\\nq1 u1 s1 d1 2\\nq1 u1 s1 d2 1\\n")
    >>> read_prefs(p).values.tolist()
    [['q1', 'u1', 's1', 'd1', 2.0], ['q1', 'u1', 's1', 'd2', 1.0]]
    """
    return _read(Path(path), "prefs")


def read_qrels_prefs(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read TREC qrels ``qid iter docno rel`` as preference judgements (``-R qrels_prefs``).

    Parameters
    ----------
    path : str or PathLike
        The qrels, read as trec_eval 10.0's ``get_qrels_prefs.c`` reads them (see the module
        docstring; the grade by C's ``atof``, so ``1.5`` stays 1.5).

    Returns
    -------
    DataFrame
        As :func:`read_prefs`: ``judgment_group`` is the ``iter`` field, ``judgment_subgroup``
        ``"0"`` on every row, ``rel_level`` the grade.

    Raises
    ------
    InputError
        As :func:`read_prefs`, for lines of other than four fields.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"
    >>> _ = p.write_text("q1 0 d1 1\\nq1 0 d2 0\\n")
    >>> read_qrels_prefs(p).values.tolist()
    [['q1', '0', '0', 'd1', 1.0], ['q1', '0', '0', 'd2', 0.0]]
    """
    return _read(Path(path), "qrels_prefs")


def _read(path: Path, form: str) -> pd.DataFrame:
    """The judgements of a ``prefs`` or ``qrels_prefs`` file as a frame."""
    rows = _rows(path, form)
    if not rows:
        raise no_rows_error(path, "preference judgements")
    frame = pd.DataFrame(rows, columns=list(PREFS_COLUMNS), dtype=object)
    frame["rel_level"] = frame["rel_level"].astype("float64")
    return frame


def _rows(path: Path, form: str) -> list[tuple[str, str, str, str, float]]:
    """The lines of the file as ``(qid, jg, jsg, docno, rel_level)``, checked as trec_eval
    reads them."""
    layout = _LAYOUT[form]
    rows: list[tuple[str, str, str, str, float]] = []
    odd: list[int] = []
    read_comments: list[int] = []
    comment = False  # the line before was a comment trec_eval skipped
    lineno = 0
    with open_text(path, newline="\n", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.isascii() and _NOT_UTF8.search(line):
                raise InputError("not UTF-8 text", path=path, line=lineno)
            if line.startswith("#") and not comment:
                comment = True
                continue
            if comment and line.startswith("#"):
                read_comments.append(lineno)
            comment = False
            fields = _C_FIELD.findall(line)
            if len(fields) != len(layout):
                raise InputError(
                    f"expected {len(layout)} fields ({' '.join(layout)}), found {len(fields)}; "
                    "trec_eval 10.0 rejects the line (it reads no blank line, no comment after "
                    "white space, nothing after the last field)",
                    path=path,
                    line=lineno,
                )
            level = fields[-1]
            value = c_atof(level)
            if math.isnan(value):
                raise InputError(
                    f"rel_level {level!r} is NaN: trec_eval 10.0 orders such judgements "
                    "arbitrarily",
                    path=path,
                    line=lineno,
                    column="rel_level",
                )
            if not _PLAIN.fullmatch(level):
                odd.append(lineno)
            qid, group, *sub, doc = fields[:-1]
            rows.append((qid, group, sub[0] if sub else "0", doc, value))
    if comment:
        raise InputError(
            "a comment as the last line: trec_eval 10.0 reads past the end of the file after "
            "it (and crashes); remove the line or put a judgement after it",
            path=path,
            line=lineno,
        )
    _notes(path, odd, read_comments)
    return rows


def _notes(path: Path, odd: list[int], read_comments: list[int]) -> None:
    """One ``UserWarning`` each for rel_levels read by ``atof`` and ``#`` lines read as
    judgements."""
    if odd:
        warnings.warn(
            f"{path}: {len(odd)} rel_level(s) are not plain numbers (first on line {odd[0]}); "
            "read as C's atof reads them, as trec_eval 10.0 does",
            UserWarning,
            stacklevel=4,
        )
    if read_comments:
        warnings.warn(
            f"{path}: {len(read_comments)} line(s) starting with '#' right after a comment line "
            f"(first on line {read_comments[0]}) are read as judgements, as trec_eval 10.0 reads "
            "them",
            UserWarning,
            stacklevel=4,
        )
