"""Readers of the text files a user brings: BEIR corpus and queries, TREC qrels and runs, and
query lists as plain text or CSV (:func:`read_query_file`).

The writers, BEIR folders, JSON, YAML and parquet files are :mod:`ragnb.io.files`'s. Readers return
the frames documented in :mod:`ragnb.frames.schema`; every malformed input raises
:class:`ragnb.errors.InputError` naming the file and the 1-based line.

Formats
-------
BEIR ``corpus.jsonl`` / ``queries.jsonl``
    One JSON object a line: ``_id``, ``text`` (and ``title`` for documents). Thakur et al.,
    "BEIR", NeurIPS 2021 Datasets and Benchmarks.
TREC qrels
    ``qid iter docid rel``, whitespace-separated (the ``iter`` column is ignored); BEIR's TSV
    form ``query-id<TAB>corpus-id<TAB>score`` with an optional header line.
TREC diversity qrels (:func:`read_diversity_qrels`)
    ``qid subtopic docid rel``, whitespace-separated, as the TREC Web track's diversity qrels
    (ndeval's input): the second column is the subtopic a judgement is about, so a document
    judged for several subtopics has several lines. Read only when asked for: ordinary TREC
    qrels put an iteration number there, usually 0.
TREC run
    ``qid Q0 docid rank score tag``, whitespace-separated. TREC qrels and runs may be gzipped
    (a name ending in ``.gz``). With ``as_trec_eval=True`` both are read as trec_eval 10.0
    reads them (:func:`c_atol` grades, :func:`c_atof` scores, its comment and blank-line
    rules); by default ragnb is stricter about numbers and lenient about comments and blank
    lines.
ranx JSON (``.json``, ``.json.gz``) and LZ4 (``.lz4``)
    ``{query_id: {doc_id: grade}}`` (qrels) or ``{query_id: {doc_id: score}}`` (run), as
    ranx's ``Qrels.save`` / ``Run.save`` write them; :func:`read_qrels` and :func:`read_run`
    choose the form by the file name (:func:`ranx_file_kind`).
Query list (:func:`read_query_file`)
    ``.txt``: one query a line; ``.csv``: columns ``query_id,text`` or ``text`` alone;
    ``.jsonl``: BEIR queries. Queries without an id get ``q`` followed by the first 12 hex digits
    of the SHA-256 of their text.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ragnb.core.docstrings import fill_frame_doc
from ragnb.errors import InputError, RagnbError
from ragnb.frames.schema import QRELS_COLUMNS

__all__ = [
    "ENCODING",
    "JSON_SUFFIXES",
    "STDIN",
    "QUERY_FILE_SUFFIXES",
    "c_atof",
    "c_atol",
    "check_file",
    "iter_json_lines",
    "iter_json_objects",
    "iter_run_lines",
    "iter_trec_eval_fields",
    "no_rows_error",
    "open_text",
    "query_id_of",
    "ranx_file_kind",
    "read_corpus",
    "read_diversity_qrels",
    "read_qrels",
    "read_qrels_jg",
    "read_queries",
    "read_query_file",
    "read_ranx_qrels",
    "read_ranx_run",
    "read_run",
    "read_zscores",
]

#: Text encoding of every file ragnb reads: UTF-8, a leading byte-order mark stripped (a BOM
#: would otherwise become part of the first query id).
ENCODING = "utf-8-sig"
#: The file name that stands for the standard input (trec_eval's ``-``).
STDIN = "-"


def _is_comment(line: str) -> bool:
    """trec_eval 10.0 skips a line whose first non-blank character is ``#``."""
    return line.lstrip().startswith("#")


def _note_extra_text(path: Path, n_lines: int, first: int, after: str) -> None:
    """Warn once that ``n_lines`` lines (the first at line ``first``) carry text after the
    ``after`` column (``"sixth"`` of a run, trec_eval ignores it; ``"fourth"`` of qrels, trec_eval
    rejects the line), which is ignored."""
    if n_lines:
        how = "as trec_eval ignores it" if after == "sixth" else "(trec_eval 10.0 rejects it)"
        _note(
            path,
            f"{n_lines} line(s) carry text after the {after} column (first on line "
            f"{first}); it is ignored, {how}",
        )


def _note(path: Path, message: str) -> None:
    warnings.warn(f"{path}: {message}", UserWarning, stacklevel=4)


def check_file(path: str | os.PathLike[str]) -> None:
    """Refuse a folder where a file is read, naming it (and, in a BEIR folder, its qrels).

    Parameters
    ----------
    path : str or PathLike
        The path given as a file; ``-`` (the standard input) and paths that do not exist pass
        (opening them says what is wrong).

    Raises
    ------
    InputError
        ``path`` is a folder.
    """
    if str(path) == STDIN or not os.path.isdir(path):
        return
    qrels = sorted(Path(path).glob("qrels/*.tsv"))
    hint = f" (a BEIR folder: its qrels are {', '.join(map(str, qrels))})" if qrels else ""
    raise InputError(f"a folder, not a file; give the path of a file{hint}", path=path)


def no_rows_error(path: str | os.PathLike[str], what: str) -> InputError:
    """The error of a file that holds no ``what`` (judgements, rankings, documents), naming the
    file and what its lines are.

    Parameters
    ----------
    path : str or PathLike
    what : str
        What the file should hold, plural (``"judgements"``).

    Returns
    -------
    InputError
        ``it is empty``; ``only a header line`` (naming the header's line: BEIR's
        ``query-id corpus-id score``); or ``its N lines are blank or comments`` (naming the
        last line).
    """
    n_lines, header = 0, None
    with contextlib.suppress(OSError, UnicodeDecodeError, RagnbError):
        if str(path) != STDIN:
            with open_text(Path(path)) as f:
                for n_lines, line in enumerate(f, start=1):  # noqa: B007
                    first = line.split()[:1]
                    if first and first[0].lower() in ("query-id", "query_id", "qid"):
                        header = n_lines
    if header is not None:
        return InputError(f"the file holds no {what}, only a header line", path=path, line=header)
    if not n_lines:
        return InputError(f"the file holds no {what}: it is empty", path=path)
    return InputError(
        f"the file holds no {what}: its {n_lines} line(s) are blank or comments",
        path=path,
        line=n_lines,
    )


def open_text(path: Path, *, newline: str | None = None, errors: str = "strict") -> IO[str]:
    """``path`` opened for reading text in :data:`ENCODING`, gunzipped if it ends in ``.gz``;
    ``-`` is the standard input (left open when the caller closes what this returns).

    Parameters
    ----------
    path : Path
    newline : {None, "\\n"}, default None
        As :func:`open`'s: None splits lines at ``\\n``, ``\\r\\n`` and a lone ``\\r``;
        ``"\\n"`` at ``\\n`` only, as trec_eval does (a lone ``\\r`` is white space to it).
        The standard input keeps its own setting.
    errors : str, default "strict"
        As :func:`open`'s; ``"surrogateescape"`` reads bytes that are not UTF-8 as lone
        surrogates (U+DC80 to U+DCFF), so that the caller can name the line or keep the bytes.

    Returns
    -------
    file object
        A text file; the caller closes it (``with open_text(path) as f``).

    Raises
    ------
    InputError
        ``path`` is a folder (:func:`check_file`).
    OSError
        When the file cannot be opened.
    """
    if str(path) == STDIN:
        return contextlib.nullcontext(sys.stdin)  # type: ignore[return-value]
    check_file(path)
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rt", encoding=ENCODING, newline=newline, errors=errors)
    return path.open(encoding=ENCODING, newline=newline, errors=errors)


#: A byte that is not UTF-8, as ``errors="surrogateescape"`` reads it.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _check_utf8(line: str, path: Path, lineno: int) -> None:
    """InputError naming the file and line when ``line`` holds a byte that is not UTF-8."""
    if not line.isascii():
        bad = _NOT_UTF8.search(line)
        if bad:
            raise InputError(
                f"not UTF-8 text (byte 0x{ord(bad.group()) - 0xDC00:02x})", path=path, line=lineno
            )


def iter_json_lines(
    lines: Iterable[str], path: str | os.PathLike[str], message: str = "malformed JSON: {error.msg}"
) -> Iterator[tuple[int, Any]]:
    """Parse JSON lines one at a time (JSONL), blank lines skipped.

    Parameters
    ----------
    lines : iterable of str
        An open text file or any lines.
    path : str or PathLike
        The file the lines come from, named in errors.
    message : str, default "malformed JSON: {error.msg}"
        Text of the error, formatted with ``error``, the :class:`json.JSONDecodeError`.

    Yields
    ------
    (int, object)
        The 1-based line number and the parsed value (any JSON value).

    Raises
    ------
    InputError
        On a line that is not JSON, naming ``path`` and the line.
    """
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(message.format(error=e), path=path, line=lineno) from None
        yield lineno, obj


def iter_json_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL file, one a line (blank lines skipped).

    Parameters
    ----------
    path : Path
        A ``.jsonl`` file, optionally gzipped (``.gz``).

    Yields
    ------
    (int, dict)
        The 1-based line number and the object.

    Raises
    ------
    InputError
        On a line that is not JSON or not an object, naming ``path`` and the line.
    """
    with open_text(path) as f:
        for lineno, obj in iter_json_lines(f, path):
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            yield lineno, obj


def _field(obj: dict[str, Any], name: str, path: Path, lineno: int, default: Any = None) -> str:
    if name not in obj or obj[name] is None:
        if default is not None:
            return default
        raise InputError(f"missing field {name!r}", path=path, line=lineno, column=name)
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, str | int):  # JSON true is no id
        raise InputError(
            f"field {name!r} must be a string, got {type(value).__name__}",
            path=path,
            line=lineno,
            column=name,
        )
    if name == "_id" and (not str(value) or _WHITESPACE.search(str(value))):
        raise InputError(
            f"_id {value!r} is empty or holds white space, which TREC run and qrels files "
            "cannot carry",
            path=path,
            line=lineno,
            column=name,
        )
    return str(value)


_WHITESPACE = re.compile(r"\s")


def _beir_rows(path: Path, fields: dict[str, str | None]) -> list[tuple[str, ...]]:
    """``(_id, *fields)`` of each object of a BEIR JSONL file, in file order.

    ``fields`` maps a field name to its default where absent (None: required). A duplicate
    ``_id`` is an error naming both lines.
    """
    rows = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_json_objects(path):
        key = _field(obj, "_id", path, lineno)
        if key in seen:
            raise InputError(
                f"duplicate _id {key!r} (first on line {seen[key]})", path=path, line=lineno
            )
        seen[key] = lineno
        rows.append((key, *(_field(obj, name, path, lineno, d) for name, d in fields.items())))
    return rows


def read_corpus(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a BEIR ``corpus.jsonl``.

    Parameters
    ----------
    path : str or PathLike
        One JSON object per line with ``_id``, ``text`` and optionally ``title``.

    Returns
    -------
    DataFrame
        Columns ``doc_id``, ``title`` (``""`` when absent), ``text``; file order.

    Raises
    ------
    InputError
        Malformed JSON, a missing ``_id`` or ``text``, or a duplicate ``_id`` (file and line).
    """
    path = Path(path)
    rows = _beir_rows(path, {"title": "", "text": None})
    if not rows:
        raise no_rows_error(path, "documents")
    return pd.DataFrame(rows, columns=["doc_id", "title", "text"], dtype=object)


def read_queries(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a BEIR ``queries.jsonl``.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``text``; file order.

    Raises
    ------
    InputError
        Malformed JSON, a missing ``_id`` or ``text``, or a duplicate ``_id`` (file and line).
    """
    path = Path(path)
    rows = _beir_rows(path, {"text": None})
    return pd.DataFrame(rows, columns=["query_id", "text"], dtype=object)


_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
#: A decimal number as C's strtod reads it in trec_eval, ASCII only: no "1_5" (Python's int and
#: float take underscores), no full-width or other non-ASCII digits, no "inf" or "nan".
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INT64 = (-(2**63), 2**63 - 1)


#: C's ``isspace`` in the "C" locale: the characters trec_eval separates fields with.
_C_FIELD = re.compile(r"[^ \t\n\v\f\r]+")
_C_LONG = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", re.ASCII)
#: The longest prefix C's ``strtod`` reads: a hexadecimal or decimal number, inf or nan.
_C_DOUBLE = re.compile(
    r"[ \t\n\v\f\r]*(?P<num>[+-]?(?:"
    r"(?P<hex>0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)"
    r"|(?P<special>inf(?:inity)?|nan(?:\([0-9a-z_]*\))?)"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?))",
    re.ASCII | re.IGNORECASE,
)


def c_atol(text: str) -> int:
    """C's ``atol`` (glibc ``strtol``): the leading integer of ``text``, 0 when there is none.

    trec_eval 10.0 reads a qrels grade so (``get_qrels.c``): ``"1.7"`` is 1, ``"abc"`` 0. A
    value outside the 64-bit range saturates, as ``strtol`` does.

    Parameters
    ----------
    text : str

    Returns
    -------
    int
        In [-2**63, 2**63 - 1].

    Examples
    --------
    >>> c_atol("23.4"), c_atol("-2x"), c_atol("high"), c_atol("+7")
    (23, -2, 0, 7)
    """
    match = _C_LONG.match(text)
    if match is None:
        return 0
    return min(max(int(match.group(1)), _INT64[0]), _INT64[1])


def c_atof(text: str) -> float:
    """C's ``atof`` (glibc ``strtod``): the number at the start of ``text``, 0.0 when none.

    trec_eval 10.0 reads a run's score so (``get_trec_results.c``): ``"1e-1x"`` is 0.1,
    ``"0x10"`` 16, ``"1_5"`` 1, ``"inf"`` infinity, ``"abc"`` 0. A decimal too large for a
    double is infinite, as ``strtod``'s ``HUGE_VAL``.

    Parameters
    ----------
    text : str

    Returns
    -------
    float
        May be infinite or NaN (``"nan"``).

    Examples
    --------
    >>> c_atof("1e-1x"), c_atof("0x1.8p1"), c_atof("1_5"), c_atof("-.5"), c_atof("score")
    (0.1, 3.0, 1.0, -0.5, 0.0)
    """
    match = _C_DOUBLE.match(text)
    if match is None:
        return 0.0
    number = match.group("num")
    if match.group("hex") is None:
        return float(number.split("(")[0])
    try:
        return float.fromhex(number)
    except OverflowError:
        return -math.inf if number.startswith("-") else math.inf


def _parse_int(token: str, what: str, column: str, path: Path, lineno: int) -> int:
    # int() alone would also take "1_0" (10) and non-ASCII digits, which trec_eval does not
    if not _INTEGER.fullmatch(token):
        raise InputError(
            f"{what} is not an integer: {token!r}", path=path, line=lineno, column=column
        )
    value = int(token)
    if not _INT64[0] <= value <= _INT64[1]:
        raise InputError(
            f"{what} {token} is outside the 64-bit integer range",
            path=path,
            line=lineno,
            column=column,
        )
    return value


def _parse_score(token: str, path: Path, lineno: int) -> float:
    """A finite run score in trec_eval's number syntax; InputError naming file and line."""
    if not _DECIMAL.fullmatch(token):
        special = token.lower().lstrip("+-")
        what = (
            "score is NaN"
            if special == "nan"
            else f"score is not finite: {token!r}"
            if special in ("inf", "infinity")
            else f"score is not a number: {token!r}"
        )
        raise InputError(what, path=path, line=lineno, column="score")
    value = float(token)
    if not math.isfinite(value):
        raise InputError(
            f"score {token} is not finite (overflows a double)",
            path=path,
            line=lineno,
            column="score",
        )
    return value


def _parse_grade(token: str, path: Path, lineno: int) -> int:
    return _parse_int(token, "grade", "relevance", path, lineno)


def _note_pair(
    seen: dict[tuple[str, str], int], qid: str, did: str, what: str, path: Path, lineno: int
) -> None:
    """Record the pair ``(qid, did)`` at ``lineno`` in ``seen``; a pair seen before is an
    InputError ``duplicate {what} doc ... (first on line N)`` naming file, line and query."""
    key = (qid, did)
    if key in seen:
        raise InputError(
            f"duplicate {what} doc {did!r} (first on line {seen[key]})",
            path=path,
            line=lineno,
            query_id=qid,
        )
    seen[key] = lineno


def _qrels_frame(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    """``(query_id, doc_id, grade)`` rows as a qrels frame: ids object, ``relevance`` int64."""
    df = pd.DataFrame(rows, columns=list(QRELS_COLUMNS))
    df["query_id"] = df["query_id"].astype(object)
    df["doc_id"] = df["doc_id"].astype(object)
    df["relevance"] = df["relevance"].astype("int64")
    return df


@fill_frame_doc
def read_qrels(path: str | os.PathLike[str], *, as_trec_eval: bool = False) -> pd.DataFrame:
    """Read qrels in BEIR TSV form (3 columns, header optional) or TREC form (4 columns).

    Parameters
    ----------
    path : str or PathLike
        BEIR: ``query-id<TAB>corpus-id<TAB>score``; TREC: ``qid iter docid rel``. The form is
        taken from the number of columns of the first data line (4 or more: TREC). Comment
        lines (first non-blank character ``#``) and blank lines are skipped; text after the
        fourth TREC column is ignored and the lines that carry some are counted in one
        ``UserWarning``. ``-`` reads the standard input.
    as_trec_eval : bool, default False
        Read the lines trec_eval 10.0 reads, with its meaning, and reject the others
        (``get_qrels.c``, ``ragnb trec-eval`` reads so): TREC form only, exactly four fields
        separated by C white space; the grade as C's ``atol`` reads it (:func:`c_atol`:
        ``1.7`` is 1, ``abc`` 0, counted in a ``UserWarning``); a line starting with ``#`` in
        its first column is a comment, except right after a comment line, where trec_eval
        reads it as a judgement (query ``#``; counted in a ``UserWarning``).

    {{Returns: qrels_file_frame}}

    Raises
    ------
    InputError
        Wrong number of columns, a non-integer grade, a duplicate (query, document) pair, or a
        byte that is not UTF-8, naming the file and line. With ``as_trec_eval``: a line that
        is not four fields (a blank line, an indented comment, a BEIR line, text after the
        grade), a duplicate pair, a byte that is not UTF-8, and a comment as the last line
        (trec_eval 10.0 reads past the end of the file there and crashes), each naming the
        file and line.

    Notes
    -----
    A name ending in ``.json``, ``.json.gz`` or ``.lz4`` is read as ranx's qrels
    (:func:`read_ranx_qrels`); any other ending in ``.gz`` is gunzipped first.
    """
    path = Path(path)
    if ranx_file_kind(path) != "trec":
        return read_ranx_qrels(path)
    if as_trec_eval:
        return _qrels_frame([(q, d, g) for q, _, d, g in _trec_eval_qrels_rows(path)])
    rows: list[tuple[str, str, int]] = []
    seen: dict[tuple[str, str], int] = {}
    ncols = None
    extra, first_extra = 0, 0
    with open_text(path, errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            _check_utf8(line, path, lineno)
            if _is_comment(line):
                continue
            parts = line.split("\t") if "\t" in line else line.split()
            parts = [p.strip() for p in parts]
            if not any(parts):
                continue
            if ncols is None:
                if len(parts) < 3:
                    raise InputError(
                        f"expected 3 (BEIR) or 4 (TREC) columns, found {len(parts)}",
                        path=path,
                        line=lineno,
                    )
                ncols = min(len(parts), 4)
                if ncols == 3 and parts[0].lower() in ("query-id", "query_id", "qid"):
                    continue  # BEIR header line
            if ncols == 4 and len(parts) > 4:  # trec_eval reads four columns
                parts = line.split()
                extra, first_extra = extra + 1, first_extra or lineno
                parts = parts[:4]
            if len(parts) != ncols:
                raise InputError(
                    f"expected {ncols} columns like the first line, found {len(parts)}",
                    path=path,
                    line=lineno,
                )
            qid, did, grade = (
                (parts[0], parts[1], parts[2]) if ncols == 3 else (parts[0], parts[2], parts[3])
            )
            rel = _parse_grade(grade, path, lineno)
            if ncols == 4 and (qid, did) in seen:
                _raise_duplicate(path, lineno, parts[1], seen[(qid, did)], qid, did)
            _note_pair(seen, qid, did, "judgement of", path, lineno)
            rows.append((qid, did, rel))
    _note_extra_text(path, extra, first_extra, "fourth")
    return _qrels_frame(rows)


def _raise_duplicate(path: Path, lineno: int, second: str, first: int, qid: str, did: str) -> None:
    """A TREC qrels pair judged twice (error path only): when the two lines' second columns
    differ, the error says the file may be diversity qrels and how to read it."""
    hint = ""
    with open_text(path, errors="surrogateescape") as f:
        for n, line in enumerate(f if str(path) != STDIN else (), start=1):
            if n == first:
                fields = line.split()
                if len(fields) > 1 and fields[1] != second:
                    hint = (
                        f"; the two lines differ in the second column ({fields[1]!r}, "
                        f"{second!r}): if it is a subtopic, these are TREC diversity qrels (qid "
                        "subtopic docid rel): read them with --qrels-format diversity "
                        "(read_diversity_qrels in Python)"
                    )
                break
    raise InputError(
        f"duplicate judgement of doc {did!r} (first on line {first}){hint}",
        path=path,
        line=lineno,
        query_id=qid,
    )


def read_diversity_qrels(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read TREC diversity qrels ``qid subtopic docid rel`` (the TREC Web track's, ndeval's).

    The second column is the subtopic (an intent of the query) a judgement is about: a document
    relevant to three subtopics has three lines. :func:`ragnb.evaluation.evaluate.evaluate` reads
    the frame for ``alpha-nDCG@K``, and the largest grade of each document over its subtopics
    for every other measure. Ordinary TREC qrels (``qid iter docid rel``) have the same shape
    with an iteration number in the second column, so no rule tells the two apart by their
    content: this reader is called only when asked (``ragnb evaluate --qrels-format
    diversity``, :func:`ragnb.io.dispatch.read_qrels_file` with ``diversity=True``).

    Parameters
    ----------
    path : str or PathLike
        Whitespace-separated, four columns a line (text after the fourth column is ignored and
        counted in one ``UserWarning``); comment lines (first non-blank character ``#``) and
        blank lines are skipped; gunzipped if the name ends in ``.gz``; ``-`` reads the
        standard input.

    Returns
    -------
    DataFrame
        ``query_id``, ``subtopic``, ``doc_id`` (str), ``relevance`` (int64), file order.

    Raises
    ------
    InputError
        Fewer than four columns, a grade that is not an integer, the same (query, subtopic,
        document) judged twice, a byte that is not UTF-8, or no judgement; naming the file and
        line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "div.qrels"
    >>> _ = p.write_text("1 1 d1 1\\n1 2 d1 1\\n1 2 d2 0\\n")
    >>> read_diversity_qrels(p).values.tolist()
    [['1', '1', 'd1', 1], ['1', '2', 'd1', 1], ['1', '2', 'd2', 0]]
    """
    path = Path(path)
    rows: list[tuple[str, str, str, int]] = []
    seen: dict[tuple[str, str, str], int] = {}
    extra, first_extra = 0, 0
    with open_text(path, errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            _check_utf8(line, path, lineno)
            if _is_comment(line) or not line.strip():
                continue
            parts = line.split()
            if len(parts) < 4:
                raise InputError(
                    f"expected 4 columns (qid subtopic docid rel), found {len(parts)}",
                    path=path,
                    line=lineno,
                )
            if len(parts) > 4:
                extra, first_extra = extra + 1, first_extra or lineno
            qid, subtopic, did = parts[0], parts[1], parts[2]
            rel = _parse_grade(parts[3], path, lineno)
            key = (qid, subtopic, did)
            if key in seen:
                raise InputError(
                    f"doc {did!r} judged twice for subtopic {subtopic!r} (first on line "
                    f"{seen[key]})",
                    path=path,
                    line=lineno,
                    query_id=qid,
                )
            seen[key] = lineno
            rows.append((qid, subtopic, did, rel))
    if not rows:
        raise InputError("the file holds no judgements", path=path)
    _note_extra_text(path, extra, first_extra, "fourth")
    frame = pd.DataFrame(
        rows, columns=["query_id", "subtopic", "doc_id", "relevance"], dtype=object
    )
    frame["relevance"] = frame["relevance"].astype("int64")
    return frame


def read_qrels_jg(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read qrels with judgment groups, trec_eval 10.0's ``qrels_jg`` format (``-R qrels_jg``).

    ``qid jg docid rel``: the TREC qrels layout whose second field names the judgment group
    (the set of judgements of one assessor or user). Read as :func:`read_qrels` reads TREC
    qrels with ``as_trec_eval`` (``get_qrels_jg.c`` reads lines as ``get_qrels.c`` does), except
    that a document may be judged once in each group.

    Parameters
    ----------
    path : str or PathLike
        The file (``.gz`` gunzipped); ``-`` reads the standard input.

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``judgment_group``, ``doc_id`` (str) and ``relevance`` (int64), in
        file order.

    Raises
    ------
    InputError
        As ``read_qrels(path, as_trec_eval=True)``, a duplicate being the same document twice
        in one query's group; each error names the file and line.
    """
    rows = _trec_eval_qrels_rows(Path(path), groups=True)
    frame = pd.DataFrame(rows, columns=["query_id", "judgment_group", "doc_id", "relevance"])
    for col in ("query_id", "judgment_group", "doc_id"):
        frame[col] = frame[col].astype(object)
    frame["relevance"] = frame["relevance"].astype("int64")
    return frame


def read_zscores(path: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """The means and standard deviations of a trec_eval ``-Z`` file, by (query, measure name).

    trec_eval 10.0's ``get_zscores.c``: a line holds exactly four fields split by white space,
    ``qid measure_name mean stddev``; the numbers are read by C's ``atof``.

    Parameters
    ----------
    path : str or PathLike
        The file.

    Returns
    -------
    dict
        ``{(qid, measure_name): (mean, stddev)}``; of two lines for the same pair, the first.

    Raises
    ------
    InputError
        An unreadable or empty file, or a line of another shape, naming the file and line.
    """
    check_file(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(f"trec-eval: cannot read the zscores file: {exc}", path=path) from None
    if not data:  # get_zscores.c: a file of size 0 cannot be read
        raise InputError(
            "trec-eval: the zscores file is empty (trec_eval 10.0 stops too: 'Cannot read "
            "zscores file')",
            path=path,
        )
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for lineno, line in enumerate(lines, start=1):
        fields = line.split()  # C's isspace: space, \t, \r, \v, \f
        if len(fields) != 4:
            raise InputError("trec-eval: malformed zscores line", path=path, line=lineno)
        qid, name, mean, sd = (f.decode("utf-8", "surrogateescape") for f in fields)
        out.setdefault((qid, name), (c_atof(mean), c_atof(sd)))
    return out


def iter_trec_eval_fields(
    path: Path,
    layout: Sequence[str],
    read_comments: list[int],
    ends: str = "nothing after the last field",
) -> Iterator[tuple[int, list[str]]]:
    """The fields of each line trec_eval 10.0 reads from a judgement file, in file order.

    trec_eval (``get_qrels.c``, ``get_prefs.c``, ``get_qrels_prefs.c``) skips a line starting
    with ``#`` unless the line before was such a skipped comment, splits the others on C white
    space and rejects a line with another number of fields.

    Parameters
    ----------
    path : Path
        The file, gunzipped first if the name ends in ``.gz``; ``-`` reads the standard input.
    layout : sequence of str
        The names of the fields, in order (``("qid", "iter", "docid", "rel")``).
    read_comments : list of int
        Receives the numbers of the lines starting with ``#`` that are read as data (those right
        after a skipped comment), for the caller's note.
    ends : str, default "nothing after the last field"
        What else the error on a line of another length says trec_eval does not read.

    Yields
    ------
    (int, list of str)
        The line number (from 1) and the ``len(layout)`` fields of the line.

    Raises
    ------
    InputError
        A byte that is not UTF-8, a line with other than ``len(layout)`` fields, or a comment
        as the last line (trec_eval reads past the end of the file after it), naming the file
        and line.
    """
    comment = False  # the line before was a comment trec_eval skipped
    lineno = 0
    with open_text(path, newline="\n", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            _check_utf8(line, path, lineno)
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
                    f"white space, {ends})",
                    path=path,
                    line=lineno,
                )
            yield lineno, fields
    if comment:
        raise InputError(
            "a comment as the last line: trec_eval 10.0 reads past the end of the file after "
            "it (and crashes); remove the line or put a judgement after it",
            path=path,
            line=lineno,
        )


def _trec_eval_qrels_rows(path: Path, groups: bool = False) -> list[tuple[str, str, str, int]]:
    """The judgements ``(qid, iteration, docid, grade)`` of a TREC qrels file as trec_eval
    10.0's ``get_qrels.c`` reads them; with ``groups``, the iteration field is a judgment group
    and a document may be judged once per group (``get_qrels_jg.c``)."""
    rows: list[tuple[str, str, str, int]] = []
    seen: dict[tuple[str, str], int] = {}
    odd_grades: list[int] = []
    read_comments: list[int] = []
    layout = ("qid", "iter", "docid", "rel")
    lines = iter_trec_eval_fields(
        path, layout, read_comments, "no BEIR form, nothing after the grade"
    )
    for lineno, (qid, group, did, grade) in lines:
        if not _INTEGER.fullmatch(grade):
            odd_grades.append(lineno)
        if groups:  # a document once per judgment group
            first = seen.setdefault((qid, f"{group}\x00{did}"), lineno)
            if first != lineno:
                raise InputError(
                    f"duplicate judgement of doc {did!r} in judgment group {group!r} "
                    f"(first on line {first})",
                    path=path,
                    line=lineno,
                    query_id=qid,
                )
        else:
            _note_pair(seen, qid, did, "judgement of", path, lineno)
        rows.append((qid, group, did, c_atol(grade)))
    if odd_grades:
        _note(
            path,
            f"{len(odd_grades)} grade(s) are not integers (first on line "
            f"{odd_grades[0]}); read as C's atol reads them, as trec_eval 10.0 does",
        )
    if read_comments:
        _note(
            path,
            f"{len(read_comments)} line(s) starting with '#' right after a comment "
            f"line (first on line {read_comments[0]}) are read as judgements, as trec_eval "
            "10.0 reads them",
        )
    return rows


def iter_run_lines(
    path: str | os.PathLike[str], *, as_trec_eval: bool = False
) -> Iterator[tuple[int, str, str, int, float, str]]:
    """The lines of a TREC run file ``qid Q0 docid rank score tag``, checked, in file order.

    :func:`read_run` reads through this; it reads one line at a time, so a caller can check a
    file larger than memory.

    Parameters
    ----------
    path : str or PathLike
        A TREC run, whitespace-separated, gunzipped first if the name ends in ``.gz``.
    as_trec_eval : bool, default False
        Read every line trec_eval 10.0 reads, with its meaning (``get_trec_results.c``,
        ``ragnb trec-eval`` reads so): fields separated by C white space; the rank, which
        trec_eval ignores, as C's ``atol`` reads it (:func:`c_atol`, 0 for ``"x"``); the score
        as C's ``atof`` reads it (:func:`c_atof`: ``"1_5"`` is 1, ``"abc"`` 0, ``"inf"``
        infinity). The lines whose rank or score is not a plain number are counted in a
        ``UserWarning``.

    Yields
    ------
    tuple
        ``(line, query_id, doc_id, rank, score, tag)``: the 1-based line number, the rank as a
        64-bit int and the score as a float (finite unless ``as_trec_eval``). Blank lines and
        comment lines (first non-blank character ``#``) are skipped; text after the sixth
        column is ignored and the lines that carry some are counted in one ``UserWarning``, as
        trec_eval 10.0 reads runs.

    Raises
    ------
    InputError
        A line with fewer than 6 columns (trec_eval 10.0 rejects it too), a rank that is not a
        64-bit integer, a score that is not a finite number in trec_eval's syntax, or a byte
        that is not UTF-8, naming the file and line. With ``as_trec_eval`` only the first and
        the last, and a NaN score (trec_eval's
        order is undefined then: its comparison finds NaN equal to every score). Duplicate
        (query, document) pairs are not checked here (:func:`read_run` does).
    """
    path = Path(path)
    extra, first_extra = 0, 0
    odd: list[int] = []
    newline = "\n" if as_trec_eval else None
    with open_text(path, newline=newline, errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            _check_utf8(line, path, lineno)
            parts = _C_FIELD.findall(line) if as_trec_eval else line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < 6:
                raise InputError(
                    f"expected 6 columns (qid Q0 docid rank score tag), found {len(parts)}",
                    path=path,
                    line=lineno,
                )
            if len(parts) > 6:  # trec_eval reads six columns and ignores the rest
                extra, first_extra = extra + 1, first_extra or lineno
            qid, _, did, rank_s, score_s, tag = parts[:6]
            if as_trec_eval:
                rank, score = _trec_eval_rank_score(rank_s, score_s, path, lineno, odd)
            else:
                rank = _parse_int(rank_s, "rank", "rank", path, lineno)
                score = _parse_score(score_s, path, lineno)
            yield lineno, qid, did, rank, score, tag
    _note_extra_text(path, extra, first_extra, "sixth")
    if odd:
        _note(
            path,
            f"{len(odd)} line(s) hold a rank or score that is not a plain number "
            f"(first on line {odd[0]}); the score is read as C's atof reads it and the rank "
            "ignored, as trec_eval 10.0 does",
        )


def _trec_eval_rank_score(
    rank: str, score: str, path: Path, lineno: int, odd: list[int]
) -> tuple[int, float]:
    """The rank (C's atol) and score (C's atof) of a run line as trec_eval reads them; a line
    whose fields are not plain numbers is appended to ``odd``; a NaN score is an error."""
    value = c_atof(score)
    if math.isnan(value):
        raise InputError(
            f"score {score!r} is NaN: trec_eval 10.0 orders such a run arbitrarily (NaN compares "
            "equal to every score)",
            path=path,
            line=lineno,
            column="score",
        )
    if not (_INTEGER.fullmatch(rank) and _DECIMAL.fullmatch(score)):
        odd.append(lineno)
    return c_atol(rank), value


def read_run(path: str | os.PathLike[str], *, as_trec_eval: bool = False) -> pd.DataFrame:
    """Read a TREC run file ``qid Q0 docid rank score tag``.

    Parameters
    ----------
    path : str or PathLike
    as_trec_eval : bool, default False
        Read every line trec_eval 10.0 reads, with its meaning (see :func:`iter_run_lines`).

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id``, ``score`` (float64), ``rank`` (int64), ``tag``; file
        order. Evaluation orders by score (see :func:`ragnb.frames.index.sort_run`).

    Raises
    ------
    InputError
        Wrong number of columns, a non-integer rank, a score that is not a finite number in
        trec_eval's syntax (no underscores, ASCII digits, no inf or NaN), or a duplicate
        (query, document) pair, naming the file and line; with ``as_trec_eval`` only what
        trec_eval 10.0 rejects (and a NaN score, see :func:`iter_run_lines`). A file without
        a ranking line (empty, or blank and comment lines only), and a folder.

    Notes
    -----
    A name ending in ``.json``, ``.json.gz`` or ``.lz4`` is read as a ranx run
    (:func:`read_ranx_run`: columns ``query_id``, ``doc_id``, ``score`` only); any other ending
    in ``.gz`` is gunzipped first.
    """
    path = Path(path)
    if ranx_file_kind(path) != "trec":
        return read_ranx_run(path)
    qids: list[str] = []
    dids: list[str] = []
    ranks: list[int] = []
    scores: list[float] = []
    tags: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, qid, did, rank, score, tag in iter_run_lines(path, as_trec_eval=as_trec_eval):
        _note_pair(seen, qid, did, "entry for", path, lineno)
        qids.append(qid)
        dids.append(did)
        ranks.append(rank)
        scores.append(score)
        tags.append(tag)
    if not qids:
        raise no_rows_error(path, "rankings")
    return pd.DataFrame(
        {
            "query_id": pd.Series(qids, dtype=object),
            "doc_id": pd.Series(dids, dtype=object),
            "score": pd.Series(scores, dtype="float64"),
            "rank": pd.Series(ranks, dtype="int64"),
            "tag": pd.Series(tags, dtype=object),
        }
    )


# --------------------------------------------------------------------------------------------
# ranx's files: JSON {query_id: {doc_id: value}}, gzipped JSON, and LZ4


#: Endings read as ranx JSON by :func:`read_qrels` and :func:`read_run`.
JSON_SUFFIXES = (".json", ".json.gz")


def ranx_file_kind(path: str | os.PathLike[str]) -> str:
    """The kind of a qrels or run file by its name: ``"json"``, ``"lz4"`` or ``"trec"``.

    ``.json`` and ``.json.gz`` are ranx JSON, ``.lz4`` ranx's LZ4 form; anything else
    (``.trec``, ``.txt``, ``.tsv``, ``.gz``...) is TREC or BEIR text, gunzipped if it ends in
    ``.gz`` (ranx's ``.gz`` kind is gzipped TREC too).
    """
    name = Path(path).name.lower()
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(".lz4"):
        return "lz4"
    return "trec"


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses a key given twice (``json`` keeps the last one)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(RagnbError, ValueError):
    pass


def _load_ranx(path: Path) -> Any:
    """The dict of dicts in a ranx JSON (``.json``, ``.json.gz``) or LZ4 (``.lz4``) file."""
    if ranx_file_kind(path) == "lz4":
        try:
            import cbor2
            import lz4.frame
        except ImportError:
            raise InputError("reading ranx .lz4 files needs lz4 and cbor2", path=path) from None
        try:
            with lz4.frame.open(path, mode="r") as f:  # ranx compresses twice (ranx/io.py)
                return cbor2.loads(lz4.frame.decompress(f.read()))
        except (RuntimeError, ValueError, EOFError, cbor2.CBORDecodeError) as e:
            raise InputError(f"not a ranx LZ4 file: {e}", path=path) from None
    with open_text(path) as f:
        text = f.read()
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg}", path=path, line=e.lineno) from None
    except _DuplicateKey as e:
        raise InputError(f"key {e.args[0]!r} appears twice in one object", path=path) from None


def _ranx_items(path: Path, what: str) -> Iterator[tuple[str, str, Any]]:
    """``(query_id, doc_id, value)`` of a ranx file, in file order, shapes checked."""
    obj = _load_ranx(path)
    if not isinstance(obj, dict):
        raise InputError(
            f"expected a JSON object {{query_id: {{doc_id: {what}}}}}, got {type(obj).__name__}",
            path=path,
        )
    for qid, docs in obj.items():
        if not isinstance(docs, dict):
            raise InputError(
                f"expected an object {{doc_id: {what}}}, got {type(docs).__name__}",
                path=path,
                query_id=str(qid),
            )
        for did, value in docs.items():
            for name, key in (("query_id", qid), ("doc_id", did)):
                if not str(key) or _WHITESPACE.search(str(key)):
                    raise InputError(
                        f"{name} {key!r} is empty or holds white space",
                        path=path,
                        query_id=str(qid),
                        column=name,
                    )
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(
                    f"{what} of doc {did!r} is not a number: {value!r}",
                    path=path,
                    query_id=str(qid),
                )
            yield str(qid), str(did), value


def _ranx_rows(
    path: Path, what: str, column: str, convert: Callable[[int | float], Any]
) -> list[tuple[str, str, Any]]:
    """``(query_id, doc_id, convert(value))`` of each item of :func:`_ranx_items`; a value that
    ``convert`` refuses (a ValueError saying what the value is not) is an InputError naming the
    file, the query and ``column``."""
    rows = []
    for qid, did, value in _ranx_items(path, what):
        try:
            rows.append((qid, did, convert(value)))
        except ValueError as e:
            raise InputError(
                f"{what} of doc {did!r} is not {e}: {value!r}",
                path=path,
                query_id=qid,
                column=column,
            ) from None
    return rows


def _ranx_grade(value: int | float) -> int:
    """A ranx grade as an int (``1.0`` is accepted); ValueError unless a 64-bit integer."""
    if (isinstance(value, float) and not value.is_integer()) or not (
        _INT64[0] <= value <= _INT64[1]
    ):
        raise ValueError("an integer")
    return int(value)


def _ranx_score(value: int | float) -> float:
    """A ranx score as a float; ValueError unless finite (an int too large for a double too)."""
    try:
        score = float(value)
    except OverflowError:
        score = math.inf
    if not math.isfinite(score):
        raise ValueError("finite")
    return score


@fill_frame_doc
def read_ranx_qrels(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read qrels saved by ranx's ``Qrels.save("x.json")``: ``{query_id: {doc_id: grade}}``.

    Parameters
    ----------
    path : str or PathLike
        ``.json``, ``.json.gz`` (the same JSON, gzipped) or ``.lz4`` (ranx's CBOR in LZ4,
        needs ``lz4`` and ``cbor2``).

    {{Returns: qrels_file_frame}}

    Raises
    ------
    InputError
        Malformed JSON (naming the line), a shape other than an object of objects, a key given
        twice, an empty id or one with white space, or a grade that is not an integer (``1.0``
        is accepted), naming the file and query.

    References
    ----------
    Bassani (2022), ranx, ``Qrels.save`` / ``Qrels.from_file`` (ranx 0.3.21).
    """
    return _qrels_frame(_ranx_rows(Path(path), "grade", "relevance", _ranx_grade))


def read_ranx_run(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a run saved by ranx's ``Run.save("x.json")``: ``{query_id: {doc_id: score}}``.

    Parameters
    ----------
    path : str or PathLike
        ``.json``, ``.json.gz`` or ``.lz4`` (ranx's CBOR in LZ4, needs ``lz4`` and ``cbor2``).

    Returns
    -------
    DataFrame
        Columns ``query_id``, ``doc_id``, ``score`` (float64, the file's values exactly), file
        order (ranx writes each query's documents by score descending). A ranx file carries no
        run name, so there is no ``tag`` column.

    Raises
    ------
    InputError
        Malformed JSON, a wrong shape, a key given twice, a bad id, or a score that is not a
        finite number, naming the file and query.

    References
    ----------
    Bassani (2022), ranx, ``Run.save`` / ``Run.from_file`` (ranx 0.3.21).
    """
    rows = _ranx_rows(Path(path), "score", "score", _ranx_score)
    return pd.DataFrame(
        {
            "query_id": pd.Series([r[0] for r in rows], dtype=object),
            "doc_id": pd.Series([r[1] for r in rows], dtype=object),
            "score": pd.Series([r[2] for r in rows], dtype="float64"),
        }
    )


# --------------------------------------------------------------------------------------------
# query lists: plain text, CSV or BEIR JSONL

#: File endings :func:`read_query_file` reads (optionally gzipped: ``.txt.gz``, ...).
QUERY_FILE_SUFFIXES = (".txt", ".csv", ".jsonl")


def query_id_of(text: str) -> str:
    """The id :func:`read_query_file` gives a query without one: ``q`` and the first 12 hex
    digits of the SHA-256 of its UTF-8 text (white space at either end stripped).

    The id depends on the text alone, so it does not move when lines are added, removed or
    reordered, and a golden set's stages and cached judgements stay valid.

    Examples
    --------
    >>> query_id_of("what is BM25?")
    'qfa0b94db3d1f'
    >>> query_id_of("  what is BM25?\\n") == query_id_of("what is BM25?")
    True
    """
    return "q" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:12]


def _check_query_rows(rows: list[tuple[str, str, int]], path: Path) -> pd.DataFrame:
    """``(query_id, text, line)`` rows as a queries frame; a duplicate id is an error naming both
    lines (for generated ids: the same text twice)."""
    if not rows:
        raise InputError("the file holds no queries", path=path)
    seen: dict[str, int] = {}
    for qid, text, lineno in rows:
        if qid in seen:
            what = f"query id {qid!r}" if qid != query_id_of(text) else f"query {text!r}"
            raise InputError(
                f"duplicate {what} (first on line {seen[qid]})", path=path, line=lineno
            )
        seen[qid] = lineno
    frame = pd.DataFrame([(q, t) for q, t, _ in rows], columns=["query_id", "text"], dtype=object)
    return frame


def _text_queries(path: Path) -> list[tuple[str, str, int]]:
    rows = []
    with open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            text = line.strip()
            if text:
                rows.append((query_id_of(text), text, lineno))
    return rows


def _csv_queries(path: Path) -> list[tuple[str, str, int]]:
    rows: list[tuple[str, str, int]] = []
    with open_text(path) as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return rows
        names = [h.strip().lower() for h in header]
        if (
            "text" not in names
            or not set(names) <= {"query_id", "text"}
            or len(set(names)) < len(names)
        ):
            raise InputError(
                f"the header must be 'query_id,text' or 'text', found {','.join(header)!r}",
                path=path,
                line=1,
            )
        i_text = names.index("text")
        i_id = names.index("query_id") if "query_id" in names else None
        for record in reader:
            lineno = reader.line_num
            if not record or not any(c.strip() for c in record):
                continue
            if len(record) != len(names):
                raise InputError(
                    f"expected {len(names)} fields ({','.join(names)}), found {len(record)}",
                    path=path,
                    line=lineno,
                )
            text = record[i_text].strip()
            if not text:
                raise InputError("empty query text", path=path, line=lineno, column="text")
            qid = record[i_id].strip() if i_id is not None else query_id_of(text)
            if not qid or _WHITESPACE.search(qid):
                raise InputError(
                    f"query_id {qid!r} is empty or holds white space, which TREC run and qrels "
                    "files cannot carry",
                    path=path,
                    line=lineno,
                    column="query_id",
                )
            rows.append((qid, text, lineno))
    return rows


def read_query_file(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read queries from a plain text, CSV or BEIR JSONL file (the form taken from the ending).

    Parameters
    ----------
    path : str or PathLike
        ``.txt``: one query a line (blank lines skipped; every query gets a generated id);
        ``.csv``: a header ``query_id,text`` or ``text`` (ids generated), quoted as RFC 4180
        (a comma inside a query needs quotes); ``.jsonl``: BEIR ``queries.jsonl``
        (:func:`read_queries`). Each may be gzipped (``.txt.gz``). UTF-8, a leading byte-order
        mark ignored.

    Returns
    -------
    DataFrame
        ``query_id``, ``text``, file order. Generated ids are :func:`query_id_of` the text: a
        hash, stable when lines are added, removed or reordered.

    Raises
    ------
    InputError
        An unknown ending, no query, a CSV header other than the two forms, a row with the wrong
        number of fields, an empty text, an id that is empty or holds white space, a duplicate
        id or (generated ids) the same query twice, text that is not UTF-8; each naming the
        file and the 1-based line.
    FileNotFoundError
        When the file does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "q.txt"
    >>> _ = p.write_text("what is BM25?\\n\\nhow do I sort a list\\n")
    >>> read_query_file(p)["query_id"].tolist()
    ['qfa0b94db3d1f', 'qb8d8dd83ce36']
    """
    path = Path(path)
    suffix = path.suffix if path.suffix != ".gz" else Path(path.stem).suffix
    if suffix not in QUERY_FILE_SUFFIXES:
        raise InputError(
            f"a query file ends in one of {list(QUERY_FILE_SUFFIXES)} (or those and .gz), got "
            f"{path.name!r}",
            path=path,
        )
    if not path.is_file():
        raise FileNotFoundError(f"query file {path} not found")
    try:
        if suffix == ".jsonl":
            frame = read_queries(path)
            if frame.empty:
                raise InputError("the file holds no queries", path=path)
            return frame
        rows = _text_queries(path) if suffix == ".txt" else _csv_queries(path)
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", path=path) from None
    except csv.Error as e:
        raise InputError(f"malformed CSV: {e}", path=path) from None
    return _check_query_rows(rows, path)
