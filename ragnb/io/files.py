"""Reading and writing files: BEIR folders, TREC qrels and runs, JSON, parquet, atomically.

This module and :mod:`ragnb.io.readers` (the readers of corpus, queries, qrels, runs and query
lists) are the only ones of ragnb that touch files holding user data. Readers return the frames
documented in :mod:`ragnb.frames.schema`; every malformed input raises
:class:`ragnb.errors.InputError` naming the file and the 1-based line. Writers write to a temporary
file in the target folder and rename it over the target, so a crash never leaves a half-written file
and never loses the old one.

Formats
-------
BEIR folder
    ``corpus.jsonl`` (``_id``, ``title`` optional, ``text``), ``queries.jsonl`` (``_id``,
    ``text``), ``qrels/<split>.tsv`` (``query-id  corpus-id  score``, tab-separated, with or
    without the header line). Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks.
TREC qrels
    ``qid iter docid rel``, whitespace-separated (the ``iter`` column is ignored).
TREC run
    ``qid Q0 docid rank score tag``, whitespace-separated.
ranx JSON / LZ4
    ``{query_id: {doc_id: value}}`` as ranx's ``Run.save`` / ``Qrels.save`` write it
    (``.json``, ``.json.gz``, ``.lz4``): :func:`write_run` and :func:`write_qrels` choose it by
    the file name, as :func:`ragnb.io.readers.read_run` and :func:`ragnb.io.readers.read_qrels` do.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import require
from ragnb.errors import InputError
from ragnb.frames.schema import RUN_COLUMNS, check_run
from ragnb.io.readers import (
    ENCODING,
    iter_json_objects,
    open_text,
    ranx_file_kind,
    read_corpus,
    read_qrels,
    read_queries,
)

__all__ = [
    "PARQUET_SUFFIXES",
    "cell_from_spreadsheet",
    "cell_for_spreadsheet",
    "AppendLog",
    "BeirDataset",
    "append_parquet",
    "atomic_path",
    "atomic_write",
    "remove_stale_temporaries",
    "TEMP_SUFFIX",
    "read_grade_map",
    "read_parquet",
    "write_parquet",
    "read_beir",
    "write_ranx_qrels",
    "write_ranx_run",
    "read_json",
    "write_json",
    "write_qrels",
    "write_run",
    "write_jsonl",
    "read_records",
    "write_records",
]


# --------------------------------------------------------------------------------------------
# atomic writes


#: The ending of the temporary files :func:`atomic_write` writes beside their target
#: (``.<name>.<random>.ragnb.tmp``), which :func:`remove_stale_temporaries` looks for.
TEMP_SUFFIX = ".ragnb.tmp"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was. The temporary
    file (``.<name>.<random>.ragnb.tmp``) is locked (``flock``) while it is written, so the
    temporary files a killed process left (their lock died with it) are told from those a live
    process is writing: the next write of ``path`` removes the former
    (:func:`remove_stale_temporaries` removes them from a whole folder) and never the latter.

    Parameters
    ----------
    path : str or PathLike
        The final file.
    mode : {"w", "wb"}
        Text (UTF-8, ``\\n`` line ends) or binary.
    """
    with atomic_path(path) as tmp:
        if "b" in mode:
            f: IO[Any] = open(tmp, mode)
        else:
            f = open(tmp, mode, encoding="utf-8", newline="\n")
        with f:
            yield f


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The path of a temporary file beside ``path``, for a writer that opens files by name; on
    success it is renamed over ``path``.

    The same temporary file, lock and clean-up as :func:`atomic_write` (which writes through
    it): on an exception the temporary file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str or PathLike
        The final file.

    Yields
    ------
    Path
        The temporary file (empty), to be written by name (truncating it keeps the lock).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(path)
    fd, tmp = _locked_temporary(path)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        yield Path(tmp)
        os.fsync(fd)  # the writer's data, whichever handle wrote it
        os.replace(tmp, path)  # still locked: no cleaner takes it before it is renamed
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    finally:
        os.close(fd)


def _locked_temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path``, open and locked: ``(fd, name)``."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
        _lock(fd, block=True)
        try:  # a cleaner may have taken it between its creation and the lock: make another
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)


def _lock(fd: int, *, block: bool) -> bool:
    """Take the exclusive ``flock`` of ``fd``; False when another open file holds it (only
    with ``block=False``). Without ``fcntl`` (Windows) every lock is granted."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _remove_if_stale(leftover: Path) -> bool:
    """Remove ``leftover``, a temporary file of :func:`atomic_write`, unless a live process
    holds its lock (is writing it now); True when removed."""
    try:
        fd = os.open(leftover, os.O_RDONLY)
    except (FileNotFoundError, IsADirectoryError):
        return False
    try:
        if not _lock(fd, block=False):
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)
            return True
        return False
    finally:
        os.close(fd)


def _remove_leftovers(path: Path) -> None:
    """Remove the temporary files that an interrupted :func:`atomic_write` of ``path`` left
    (those of earlier versions, ``.<name>.<random>.tmp``, too); not those being written."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        _remove_if_stale(leftover)


def remove_stale_temporaries(
    folder: str | os.PathLike[str], *, recursive: bool = False
) -> list[Path]:
    """Remove the temporary files that :func:`atomic_write` calls killed mid-write left in
    ``folder``: a run folder opened again starts without them.

    Only ragnb's temporary files (``.<name>.<random>.ragnb.tmp``) are looked at, and of them
    only those no live process is writing (their lock is free: their writer is gone).

    Parameters
    ----------
    folder : str or PathLike
        A folder (a missing one holds nothing).
    recursive : bool, default False
        Look in its subfolders too.

    Returns
    -------
    list of Path
        The files removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    pattern = f".*{TEMP_SUFFIX}"
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    removed = [p for p in sorted(found) if _remove_if_stale(p)]
    if removed:
        logging.getLogger("ragnb.io.files").info(
            "%s: removed %d temporary files an interrupted write left", folder, len(removed)
        )
    return removed


class AppendLog:
    """A file that only grows by whole lines, safe against a killed process.

    Each :meth:`append` is one ``write(2)`` on a file opened ``O_APPEND``: the line lands whole at
    the end, or not at all, even if the process is killed (SIGKILL) right after. Used for
    ledgers and logs that must survive crashes; opened on first use, after :meth:`repair`.

    Parameters
    ----------
    path : str or PathLike
    fsync : bool, default False
        ``fsync`` after every line (survives a power loss too, at a cost per line).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._fd: int | None = None

    def repair(self) -> int:
        """Move a torn last line (no newline: a write cut short) to ``<path>.torn``, truncate the
        file after its last newline so the next line starts fresh, warn; 1 if moved, else 0."""
        if not self.path.exists():
            return 0
        with self.path.open("r+b") as f:
            end = f.seek(0, os.SEEK_END)
            if end == 0 or (f.seek(end - 1) >= 0 and f.read(1) == b"\n"):
                return 0
            data = os.pread(f.fileno(), end, 0)
            cut = data.rfind(b"\n") + 1
            with self.path.with_name(self.path.name + ".torn").open("ab") as q:
                q.write(data[cut:] + b"\n")
            f.truncate(cut)
        logging.getLogger("ragnb.io.files").warning(
            "%s: torn last line (%d bytes) moved to %s.torn", self.path, end - cut, self.path.name
        )
        return 1

    def append(self, line: str) -> None:
        """Append ``line`` (a trailing newline is added when missing)."""
        data = (line if line.endswith("\n") else line + "\n").encode("utf-8")
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.repair()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if self.fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (reopened by the next :meth:`append`)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` as indented UTF-8 JSON, atomically."""
    with atomic_write(path) as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, sort_keys=False, default=str)
        f.write("\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file; a syntax error names the file and line."""
    path = Path(path)
    text = path.read_text(encoding=ENCODING)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"malformed JSON: {e.msg}", path=path, line=e.lineno) from None


def read_yaml(path: str | os.PathLike[str], *, name: str | None = None) -> Any:
    """Read a YAML file with ``yaml.safe_load``; a syntax error names the file and line.

    Parameters
    ----------
    path : str or PathLike
        A UTF-8 YAML file (JSON is YAML too).
    name : str, optional
        How an error names the file; default ``path``. A shipped file passes a name relative to
        the package (``"ragnb/llm/prices.yaml"``), so no error carries a local path.

    Returns
    -------
    Any
        The document: a dict, a list, a scalar, or None for an empty file.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    InputError
        ``"malformed YAML: ..."``, naming the file and the line of the problem.
    """
    import yaml

    text = Path(path).read_text(encoding=ENCODING)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        raise InputError(f"malformed YAML: {e}", path=name or str(path), line=line) from None


def read_grade_map(path: str | os.PathLike[str]) -> dict[int, int]:
    """A grade map ``{grade: 1-5 grade}`` from a YAML or JSON file (``{3: 5, 2: 4, 1: 3, 0: 1}``).

    Raises
    ------
    InputError
        When the file is not a mapping of integers to integers (naming the file).
    FileNotFoundError
        When the file does not exist.
    """
    import yaml

    path = Path(path)
    try:
        parsed = yaml.safe_load(path.read_text(encoding=ENCODING))
    except yaml.YAMLError as e:
        raise InputError(f"not YAML or JSON: {e}", path=path) from None
    ok = isinstance(parsed, dict) and all(
        isinstance(k, int) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in parsed.items()
    )
    if not ok:
        raise InputError(
            "a grade map is a mapping of integer grades, like {2: 5, 1: 4, 0: 1}", path=path
        )
    return {int(k): int(v) for k, v in parsed.items()}


#: Leading characters a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell_for_spreadsheet(text: str) -> str:
    """``text`` with a ``'`` before a leading ``=``, ``+``, ``-``, ``@``, tab or carriage
    return, so that a spreadsheet opening a CSV file shows the cell rather than runs it as a
    formula (OWASP, "CSV Injection"); :func:`cell_from_spreadsheet` undoes it.

    Examples
    --------
    >>> cell_for_spreadsheet("=1+1"), cell_from_spreadsheet("'=1+1"), cell_for_spreadsheet("a")
    ("'=1+1", '=1+1', 'a')
    """
    return "'" + text if text[:1] in _FORMULA_STARTS else text


def cell_from_spreadsheet(text: str) -> str:
    """The text :func:`cell_for_spreadsheet` was given (a ``'`` it added is taken off)."""
    return text[1:] if text[:1] == "'" and text[1:2] in _FORMULA_STARTS else text


def write_table_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a DataFrame as UTF-8 CSV without its index, atomically."""
    with atomic_write(path) as f:
        frame.to_csv(f, index=False)


def read_author_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a user's author table for the proper-name diagnostics: a CSV file.

    Parameters
    ----------
    path : str or PathLike
        CSV with a header row holding at least ``author``, ``title``, ``topic`` (other columns
        are kept).

    Returns
    -------
    DataFrame
        Every column as str; ``attrs["source"]`` is the path.

    Raises
    ------
    InputError
        If the file is missing or unreadable, a column is missing, or a cell of those columns is
        empty (the line of the file is named; line 1 is the header).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(
            "author table not found (give 'default', 'scifact' or a CSV path)", path=path
        )
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding=ENCODING)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable CSV: {e}", path=path) from None
    for col in ("author", "title", "topic"):
        if col not in frame.columns:
            raise InputError(
                f"missing column {col!r}; the header has {list(frame.columns)}",
                path=path,
                line=1,
                column=col,
            )
        empty = frame[col].str.strip() == ""
        if empty.any():
            row = int(np.flatnonzero(empty.to_numpy())[0])
            raise InputError(f"empty {col}", path=path, line=row + 2, column=col)
    frame.attrs["source"] = str(path)
    return frame


def write_jsonl(
    records: Iterable[dict[str, Any]], path: str | os.PathLike[str], *, compact: bool = False
) -> None:
    """Write one JSON object per line, atomically; ``compact`` leaves out the spaces after
    ``,`` and ``:`` (the form OpenTelemetry's OTLP JSON files use)."""
    separators = (",", ":") if compact else None
    with atomic_write(path) as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False, separators=separators))
            f.write("\n")


# --------------------------------------------------------------------------------------------
# TREC and BEIR writers, BEIR folders (the readers are in ragnb.io.readers)


def _check_ids(frame: pd.DataFrame, pattern: str, what: str) -> None:
    """Raise if a ``query_id`` or ``doc_id`` is empty or matches ``pattern``: such an id would
    write a line that cannot be read back."""
    for col in ("query_id", "doc_id"):
        ids = frame[col].astype(str)
        bad = (ids == "") | ids.str.contains(pattern, regex=True)
        if bad.any():
            i = int(bad.to_numpy().argmax())
            raise InputError(
                f"{col} {ids.iloc[i]!r} cannot be written to a {what} file (empty or white space)",
                query_id=str(frame["query_id"].iloc[i]),
                column=col,
            )


def write_run(run: pd.DataFrame, path: str | os.PathLike[str], tag: str | None = None) -> None:
    """Write a run as a TREC run file, atomically, ranks in trec_eval's score order.

    Scores are written with Python's shortest round-trip ``repr``, so reading the file back
    gives the same float64 values bit for bit.

    Parameters
    ----------
    run : DataFrame
        Columns ``query_id``, ``doc_id``, ``score``; ``tag`` is used when ``tag`` is None.
    path : str or PathLike
    tag : str, optional
        The system name written in the last column (no white space). Default: the run's ``tag``
        column, else ``"ragnb"``.

    Raises
    ------
    InputError
        On a malformed run frame, a score that is not finite, or an id or tag that is empty
        or holds white space.

    Notes
    -----
    A name ending in ``.json``, ``.json.gz`` or ``.lz4`` writes ranx's form instead
    (:func:`write_ranx_run`; ``tag`` is then not written).
    """
    from ragnb.frames.index import sort_run

    if ranx_file_kind(path) != "trec":
        write_ranx_run(run, path)
        return
    check_run(run)
    _check_ids(run, r"\s", "TREC run")
    if tag is None:
        tag = str(run["tag"].iloc[0]) if "tag" in run.columns and len(run) else "ragnb"
    if not tag or any(c.isspace() for c in tag):
        raise InputError(f"run tag must be one word, got {tag!r}")
    scores = run["score"].to_numpy(dtype="float64")
    if not np.isfinite(scores).all():
        bad = run.iloc[int(np.flatnonzero(~np.isfinite(scores))[0])]
        raise InputError(
            f"score {bad['score']} of doc {bad['doc_id']!r} is not finite: a TREC run cannot "
            "carry it (trec_eval's readers take finite numbers)",
            query_id=str(bad["query_id"]),
            column="score",
        )
    ordered = sort_run(run[list(RUN_COLUMNS)], warn=False).run
    with atomic_write(path) as f:
        for qid, did, rank, score in zip(
            ordered["query_id"], ordered["doc_id"], ordered["rank"], ordered["score"], strict=True
        ):
            f.write(f"{qid} Q0 {did} {rank} {float(score)!r} {tag}\n")


def write_qrels(qrels: pd.DataFrame, path: str | os.PathLike[str], form: str | None = None) -> None:
    """Write qrels atomically, as TREC (``qid 0 docid rel``), BEIR TSV with header, or ranx.

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance``.
    path : str or PathLike
    form : {"trec", "beir", "ranx"}, optional
        Default: ``"ranx"`` (:func:`write_ranx_qrels`) for a name ending in ``.json``,
        ``.json.gz`` or ``.lz4``, else ``"trec"``.

    Raises
    ------
    InputError
        On a malformed qrels frame, an unknown ``form``, or an id that is empty or holds white
        space (TREC, ranx) or a tab, a line break or surrounding white space (BEIR).
    """
    from ragnb.frames.schema import check_qrels

    if form is None:
        form = "trec" if ranx_file_kind(path) == "trec" else "ranx"
    if form == "ranx":
        write_ranx_qrels(qrels, path)
        return
    check_qrels(qrels)
    if form not in ("trec", "beir"):
        raise InputError(f"unknown qrels form {form!r}; use 'trec', 'beir' or 'ranx'")
    if form == "trec":
        _check_ids(qrels, r"\s", "TREC qrels")
    else:
        _check_ids(qrels, r"^\s|\s$|[\t\r\n]", "BEIR qrels")
    with atomic_write(path) as f:
        if form == "beir":
            f.write("query-id\tcorpus-id\tscore\n")
        for qid, did, rel in zip(
            qrels["query_id"], qrels["doc_id"], qrels["relevance"], strict=True
        ):
            if form == "trec":
                f.write(f"{qid} 0 {did} {int(rel)}\n")
            else:
                f.write(f"{qid}\t{did}\t{int(rel)}\n")


def _write_ranx(nested: dict[str, dict[str, Any]], path: Path) -> None:
    """``nested`` as ranx JSON (``.json``: ``orjson`` with ``OPT_INDENT_2``'s layout;
    ``.json.gz``: the same gzipped, mtime 0) or ranx LZ4 (``.lz4``), atomically."""
    if path.name.lower().endswith(".lz4"):
        try:
            import cbor2
            import lz4.frame
        except ImportError:
            raise InputError("writing ranx .lz4 files needs lz4 and cbor2", path=path) from None
        inner = lz4.frame.compress(cbor2.dumps(nested), compression_level=16)
        with atomic_write(path, "wb") as f:  # ranx/io.py: a compressed frame in an LZ4 file
            f.write(lz4.frame.compress(inner))
        return
    data = json.dumps(nested, indent=2, ensure_ascii=False).encode("utf-8")
    with atomic_write(path, "wb") as f:
        if path.name.lower().endswith(".gz"):
            import gzip

            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
                z.write(data)
        else:
            f.write(data)


def _nested(frame: pd.DataFrame, column: str, cast: type) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for qid, did, value in zip(frame["query_id"], frame["doc_id"], frame[column], strict=True):
        out.setdefault(str(qid), {})[str(did)] = cast(value)
    return out


def write_ranx_run(run: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a run as ranx does (``Run.save``): ``{query_id: {doc_id: score}}``, atomically.

    Documents are written in trec_eval's order (score descending, ties by ``doc_id``
    descending, :func:`ragnb.frames.index.sort_run`); scores as Python's shortest round-trip
    ``repr``, so ranx's ``Run.from_file`` and :func:`ragnb.io.readers.read_run` give the same
    float64 values. The run's ``tag`` is not kept (ranx's JSON has no name).

    Parameters
    ----------
    run : DataFrame
        Columns ``query_id``, ``doc_id``, ``score``.
    path : str or PathLike
        ``.json``, ``.json.gz`` (gzipped JSON) or ``.lz4`` (ranx's CBOR in LZ4; needs ``lz4``
        and ``cbor2``).

    Raises
    ------
    InputError
        On a malformed run frame, a score that is not finite (JSON has no such number), or an
        id that is empty or holds white space (ranx's TREC export could not carry it).

    References
    ----------
    Bassani (2022), ranx, ``Run.save`` (ranx 0.3.21, ``ranx/io.py``).
    """
    from ragnb.frames.index import sort_run

    check_run(run)
    _check_ids(run, r"\s", "ranx run")
    scores = run["score"].to_numpy(dtype="float64")
    if not np.isfinite(scores).all():
        bad = run.iloc[int(np.flatnonzero(~np.isfinite(scores))[0])]
        raise InputError(
            f"score {bad['score']} of doc {bad['doc_id']!r} is not finite: JSON cannot carry it",
            query_id=str(bad["query_id"]),
            column="score",
        )
    ordered = sort_run(run[list(RUN_COLUMNS)], warn=False).run
    _write_ranx(_nested(ordered, "score", float), Path(path))


def write_ranx_qrels(qrels: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write qrels as ranx does (``Qrels.save``): ``{query_id: {doc_id: grade}}``, atomically.

    Parameters
    ----------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id``, ``relevance``; written grouped by query, documents in
        frame order.
    path : str or PathLike
        ``.json``, ``.json.gz`` or ``.lz4``.

    Raises
    ------
    InputError
        On a malformed qrels frame or an id that is empty or holds white space.

    References
    ----------
    Bassani (2022), ranx, ``Qrels.save`` (ranx 0.3.21).
    """
    from ragnb.frames.schema import check_qrels

    check_qrels(qrels)
    _check_ids(qrels, r"\s", "ranx qrels")
    _write_ranx(_nested(qrels, "relevance", int), Path(path))


@dataclass
class BeirDataset:
    """A dataset in BEIR layout, loaded.

    Attributes
    ----------
    path : Path
        The folder.
    name : str
        The folder's name.
    split : str
        The qrels split loaded.
    corpus, queries, qrels : DataFrame
        See :mod:`ragnb.frames.schema`. ``queries`` holds every query of ``queries.jsonl``.
    meta : dict
        Contents of ``recipe.json`` beside the data, if any (how the dataset was built).
    """

    path: Path
    name: str
    split: str
    corpus: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def judged_queries(self) -> pd.DataFrame:
        """The queries that have qrels in this split, in ``queries.jsonl`` order."""
        ids = set(self.qrels["query_id"])
        return self.queries[self.queries["query_id"].isin(ids)].reset_index(drop=True)

    @property
    def has_qrels(self) -> bool:
        """False when there is no label: a folder read with ``qrels="optional"`` that has no
        ``qrels/<split>.tsv`` (corpus and queries alone; ``qrels`` is an empty frame), or an
        empty qrels file."""
        return not self.qrels.empty

    def summary(self) -> dict[str, Any]:
        """Counts for a report: documents, queries, judged queries, pairs, grades.

        The path is shown as :func:`ragnb.core.paths.display_path` does (relative to the project,
        ``~/...``, or the folder's name): reports and manifests name no absolute local path.
        """
        from ragnb.core.paths import display_path

        grades = self.qrels["relevance"].value_counts().sort_index()
        return {
            "dataset": self.name,
            "path": display_path(self.path),
            "split": self.split,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "judged_queries": int(self.qrels["query_id"].nunique()),
            "qrels_pairs": len(self.qrels),
            "grades": {int(k): int(v) for k, v in grades.items()},
        }


def read_beir(
    path: str | os.PathLike[str],
    split: str = "test",
    *,
    qrels: str = "required",
    queries: str = "required",
) -> BeirDataset:
    """Read a BEIR folder.

    Parameters
    ----------
    path : str or PathLike
        Folder holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.
    split : str, default "test"
    qrels : {"required", "optional"}, default "required"
        ``"optional"``: a folder without ``qrels/<split>.tsv`` (corpus and queries alone) gives
        an empty ``qrels`` frame and :attr:`BeirDataset.has_qrels` False.
    queries : {"required", "optional"}, default "required"
        ``"optional"``: a folder without ``queries.jsonl`` (a corpus whose queries come from
        another file) gives an empty ``queries`` frame.

    Returns
    -------
    BeirDataset

    Raises
    ------
    FileNotFoundError
        If the folder or one of its files is missing (the message lists what the folder holds).
    InputError
        On malformed content, or qrels that name a query missing from ``queries.jsonl``.
    """
    path = Path(path)
    if not path.is_dir():
        parent = path.parent
        have = sorted(x.name for x in parent.iterdir())[:20] if parent.is_dir() else []
        raise FileNotFoundError(f"no BEIR dataset folder at {path}; {parent} holds {have}")
    for name, value in (("qrels", qrels), ("queries", queries)):
        if value not in ("required", "optional"):
            raise InputError(f"{name} must be 'required' or 'optional', got {value!r}")
    qrels_path = path / "qrels" / f"{split}.tsv"
    no_qrels = qrels == "optional" and not qrels_path.exists()
    no_queries = queries == "optional" and not (path / "queries.jsonl").exists()
    needed = [path / "corpus.jsonl"]
    needed += [] if no_queries else [path / "queries.jsonl"]
    needed += [] if no_qrels else [qrels_path]
    for p in needed:
        if not p.exists():
            have = sorted(str(x.relative_to(path)) for x in path.rglob("*") if x.is_file())
            raise FileNotFoundError(f"{p} not found; the folder holds {have[:20]}")
    corpus = read_corpus(path / "corpus.jsonl")
    query_frame = (
        pd.DataFrame({"query_id": pd.Series(dtype=object), "text": pd.Series(dtype=object)})
        if no_queries
        else read_queries(path / "queries.jsonl")
    )
    labels = (
        pd.DataFrame({c: pd.Series(dtype=object) for c in ("query_id", "doc_id")}).assign(
            relevance=pd.Series(dtype="int64")
        )
        if no_qrels
        else read_qrels(qrels_path)
    )
    missing = set(labels["query_id"]) - set(query_frame["query_id"])
    if missing:
        qid = sorted(missing)[0]
        raise InputError(
            f"{len(missing)} qrels queries are not in queries.jsonl", path=qrels_path, query_id=qid
        )
    meta = read_json(path / "recipe.json") if (path / "recipe.json").exists() else {}
    return BeirDataset(path, path.name, split, corpus, query_frame, labels, meta)


#: File name endings read as parquet (with the ``fast`` extra's pyarrow).
PARQUET_SUFFIXES = (".parquet", ".pq")


def read_parquet(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A parquet file as a frame; an empty frame when the file does not exist.

    Raises
    ------
    MissingExtra
        Without pyarrow (``pip install "ragnb[fast]"``).
    """
    path = Path(path)
    if not path.exists():
        return pd.DataFrame()
    require("pyarrow")
    return pd.read_parquet(path)


def write_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` as parquet atomically (temporary file, then rename).

    Raises
    ------
    MissingExtra
        Without pyarrow (``pip install "ragnb[fast]"``), before anything is written.
    """
    require("pyarrow")
    with atomic_write(path, "wb") as f:
        frame.to_parquet(f, index=False)


def append_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> pd.DataFrame:
    """Append ``frame``'s rows to a parquet file: read, concatenate, write a temporary file,
    rename, so a kill loses only ``frame``.

    Parameters
    ----------
    frame : DataFrame
        Rows to append (an empty frame leaves the file's rows as they are).
    path : str or PathLike
        The parquet file; created when missing.

    Returns
    -------
    DataFrame
        The file's rows after the append.
    """
    old = read_parquet(path)
    frames = [f for f in (old, frame) if len(f)]
    new = pd.concat(frames, ignore_index=True) if frames else frame
    write_parquet(new, path)
    return new


# --------------------------------------------------------------------------------------------
# tables of records: jsonl, json, csv or parquet


def _json_cell(value: Any, path: Path, line: int, column: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise InputError(
            f"cell is not a JSON list: {value[:40]!r}", path=path, line=line, column=column
        ) from None


def read_records(path: str | os.PathLike[str], *, json_columns: Iterable[str] = ()) -> pd.DataFrame:
    """A table of records from a ``.jsonl``, ``.json``, ``.csv`` or ``.parquet`` file.

    Parameters
    ----------
    path : str or PathLike
        ``.jsonl`` (one object a line), ``.json`` (a list of objects, or one object a line),
        ``.csv`` or ``.parquet``; the text forms may be gzipped (``.jsonl.gz``, ...).
    json_columns : iterable of str, optional
        Columns of a CSV file whose cells are JSON text (lists), parsed.

    Returns
    -------
    DataFrame
        With ``attrs["path"]`` the file read.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    InputError
        On malformed JSON (naming the line), a ``.json`` file that is not a list, a CSV cell of
        ``json_columns`` that is not JSON, or an unknown suffix.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    if suffix in (".json", ".json.gz"):
        with open_text(path) as f:
            if f.read(1) == "{":
                suffix = ".jsonl"
    if suffix in (".jsonl", ".jsonl.gz"):
        frame = pd.DataFrame([obj for _, obj in iter_json_objects(path)])
    elif suffix in (".json", ".json.gz"):
        with open_text(path) as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise InputError(f"malformed JSON: {e.msg}", path=path, line=e.lineno) from None
        if not isinstance(data, list):
            raise InputError("a .json file of records must hold a list of objects", path=path)
        frame = pd.DataFrame(data)
    elif suffix in (".csv", ".csv.gz"):
        frame = pd.read_csv(path, keep_default_na=False)
        for col in set(json_columns) & set(frame.columns):
            frame[col] = [_json_cell(v, path, i + 2, col) for i, v in enumerate(frame[col])]
    elif suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        raise InputError(
            f"unknown file type {suffix!r}; use .jsonl, .json, .csv or .parquet", path=path
        )
    frame.attrs["path"] = str(path)
    return frame


def write_records(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` atomically as ``.jsonl`` (one object a line) or ``.parquet``.

    Returns
    -------
    Path
        ``path``, the file written.

    Raises
    ------
    InputError
        For another suffix.
    """
    path = Path(path)
    if path.suffix == ".parquet":
        write_parquet(frame, path)
    elif path.suffix == ".jsonl":
        with atomic_write(path) as f:
            f.write(frame.to_json(orient="records", lines=True, force_ascii=False))
    else:
        raise InputError(f"write .jsonl or .parquet, not {path.suffix!r}", path=path)
    return path
