"""Which reader reads a run or qrels file: by its name, its format and its size.

Every command and the evaluation read runs and qrels through this module, so the policy lives in
one place:

* **format**, by the file name: ``-`` (the standard input) and TREC text (``.gz`` gunzipped) are
  TREC runs and qrels; ``.json``, ``.json.gz`` and ``.lz4`` are ranx's files
  (:func:`ragnb.io.readers.ranx_file_kind`); ``.parquet`` and ``.pq`` are parquet runs
  (:data:`ragnb.io.files.PARQUET_SUFFIXES`).
* **in memory**: TREC text is read by the columnar readers of :mod:`ragnb.io.columnar` when the
  ``fast`` extra is installed (pyarrow parsing, arrow-backed ids: several times faster and
  leaner than Python objects), DuckDB reading those that pyarrow's CSV reader does not take;
  such a file of at most :data:`PYTHON_READS_BYTES` (whose reading costs less than DuckDB's
  start), the standard input, ranx files, and every file without the extra by
  :func:`ragnb.io.readers.read_run` / :func:`ragnb.io.readers.read_qrels`; parquet runs by
  :func:`ragnb.io.columnar.read_parquet_run`.
* **streamed** (:func:`read_in_blocks`): a parquet run, a run file above
  :data:`STREAM_ABOVE_BYTES`, or any run when asked (``stream=True``, ``ragnb evaluate
  --stream``) is read in blocks of whole queries (:func:`iter_run_blocks`), never whole.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
import warnings
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ragnb.core.lazylibs import MissingExtra
from ragnb.errors import DuplicateEntry, InputError
from ragnb.frames.index import preload_kernels
from ragnb.io.files import PARQUET_SUFFIXES
from ragnb.io.readers import (
    STDIN,
    check_file,
    no_rows_error,
    ranx_file_kind,
    read_diversity_qrels,
    read_qrels,
    read_run,
)

if TYPE_CHECKING:
    from ragnb.io.columnar import QueryBlock

__all__ = [
    "PYTHON_READS_BYTES",
    "STREAM_ABOVE_BYTES",
    "QrelsFile",
    "RunFile",
    "file_format",
    "iter_run_blocks",
    "locate_duplicate",
    "open_run",
    "read_in_blocks",
    "read_qrels_file",
    "read_run_file",
    "scans_qrels",
    "scans_run",
]

#: Run files above this size (bytes) are read in blocks of whole queries (1 GiB).
STREAM_ABOVE_BYTES = 1 << 30

#: TREC files up to this size (bytes) that pyarrow's CSV reader does not take (tabs, comments,
#: text after the last column) are read by the Python readers, not by DuckDB, whose start costs
#: more than reading them (1 MiB).
PYTHON_READS_BYTES = 1 << 20


def file_format(path: str | os.PathLike[str]) -> str:
    """The format of a run or qrels file by its name.

    Returns
    -------
    str
        ``"stdin"`` for ``-``, ``"parquet"`` (``.parquet``, ``.pq``), ``"json"`` (``.json``,
        ``.json.gz``), ``"lz4"`` (ranx's LZ4 form) or ``"trec"`` (anything else: TREC or BEIR
        text, gunzipped if the name ends in ``.gz``).
    """
    if str(path) == STDIN:
        return "stdin"
    if Path(path).name.lower().endswith(PARQUET_SUFFIXES):
        return "parquet"
    return ranx_file_kind(path)


def scans_run(path: str | os.PathLike[str]) -> bool:
    """Whether the run file ``path`` can be joined with its qrels as its bytes are read
    (:func:`ragnb.io.runscan.scan_run`, which reads the common layout and declines the rest).

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    bool
        True for an uncompressed TREC file larger than :data:`PYTHON_READS_BYTES` (a smaller
        one is read faster than numba starts) when numba is installed.
    """
    return scans_qrels(path) and not _small(path) and importlib.util.find_spec("numba") is not None


def scans_qrels(path: str | os.PathLike[str]) -> bool:
    """Whether the qrels file ``path`` can be read by :func:`ragnb.io.runscan.scan_qrels`
    (which reads the common layout and declines the rest): an uncompressed TREC file.

    Parameters
    ----------
    path : str or PathLike

    Returns
    -------
    bool
    """
    return (
        file_format(path) == "trec"
        and not str(path).lower().endswith(".gz")
        and os.path.isfile(path)
    )


def read_in_blocks(path: str | os.PathLike[str], *, stream: bool = False) -> bool:
    """Whether the run file ``path`` is read in blocks of whole queries rather than whole.

    Parameters
    ----------
    path : str or PathLike
    stream : bool, default False
        Always read in blocks (``ragnb evaluate --stream``).

    Returns
    -------
    bool
        True with ``stream``, for a parquet run, and for a file larger than
        :data:`STREAM_ABOVE_BYTES`.
    """
    return bool(
        stream
        or file_format(path) == "parquet"
        or (os.path.isfile(path) and os.path.getsize(path) > STREAM_ABOVE_BYTES)
    )


@dataclass(frozen=True)
class RunFile:
    """A run file as the dispatcher opened it.

    Attributes
    ----------
    path : str
        The file.
    frame : DataFrame or None
        The run (columns ``query_id``, ``doc_id``, ``score`` and, as the format has them,
        ``rank``, ``tag``, ``source``); None when the run is read in blocks
        (:func:`iter_run_blocks`).
    tag : str or None
        The tag of the last line of a TREC run (trec_eval's ``runid``); None for other formats,
        an empty run, or a run read in blocks.
    notes : tuple of str
        What the columnar reader counted and ignored (lines with text after the sixth column),
        each starting with the path; the Python readers' warnings when they read a file of at
        most :data:`PYTHON_READS_BYTES`. The Python readers say it in a ``UserWarning`` for the
        standard input and without the ``fast`` extra.
    """

    path: str
    frame: pd.DataFrame | None
    tag: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def streamed(self) -> bool:
        """True when the run is read in blocks of whole queries (:func:`iter_run_blocks`)."""
        return self.frame is None


@dataclass(frozen=True)
class QrelsFile:
    """A qrels file read in memory: ``path``, ``frame`` (columns ``query_id``, ``doc_id``,
    ``relevance``; diversity qrels also ``subtopic``) and ``notes`` (as :class:`RunFile`'s)."""

    path: str
    frame: pd.DataFrame
    notes: tuple[str, ...] = ()


def _extra_text_note(path: str | os.PathLike[str], n_lines: int, column: str) -> tuple[str, ...]:
    if not n_lines:
        return ()
    return (
        f"{path}: {n_lines} line(s) carry text after the {column} column; it is ignored, as "
        "trec_eval ignores it",
    )


def open_run(
    path: str | os.PathLike[str],
    *,
    stream: bool = False,
    as_trec_eval: bool = False,
    rank: bool = True,
) -> RunFile:
    """Open a run file: read in memory, or left to be read in blocks (:func:`read_in_blocks`).

    Parameters
    ----------
    path : str or PathLike
        A TREC run (``-`` the standard input), a ranx JSON or LZ4 run, or a parquet run.
    stream : bool, default False
        Read it in blocks whatever its size (``ragnb evaluate --stream``).
    as_trec_eval, rank
        As :func:`read_run_file`.

    Returns
    -------
    RunFile
        With ``frame`` None when the run is to be read in blocks.
    """
    check_file(path)
    if read_in_blocks(path, stream=stream):
        if os.path.isfile(path) and not os.path.getsize(path):
            raise no_rows_error(path, "rankings")
        return RunFile(str(path), None)
    return read_run_file(path, as_trec_eval=as_trec_eval, rank=rank)


def read_run_file(
    path: str | os.PathLike[str], *, as_trec_eval: bool = False, rank: bool = True
) -> RunFile:
    """Read a run file in memory with the reader its format and the installed extras call for.

    Parameters
    ----------
    path : str or PathLike
        A TREC run (``-`` the standard input; ``.gz`` gunzipped), a ranx JSON or LZ4 run, or a
        parquet run.
    as_trec_eval : bool, default False
        Read as trec_eval 10.0 reads (``ragnb trec-eval``): a TREC run the columnar reader does
        not take (a rank that is not an integer, a score in C's ``atof`` syntax) is read by
        ``read_run(path, as_trec_eval=True)``. Only TREC runs.
    rank : bool, default True
        Read the ``rank`` column; False leaves it out where the columnar reader reads the file
        (trec_eval orders by score and reads no rank).

    Returns
    -------
    RunFile
        The run in memory: TREC text with the ``fast`` extra as arrow columns
        (:func:`ragnb.io.columnar.read_run_columnar`; a file of at most
        :data:`PYTHON_READS_BYTES` that pyarrow's CSV reader does not take as
        :func:`ragnb.io.readers.read_run` reads it, its warnings as notes), else as
        :func:`ragnb.io.readers.read_run` reads it; parquet by
        :func:`ragnb.io.columnar.read_parquet_run`.

    Raises
    ------
    InputError
        A malformed file, naming the file and line (or query); with ``as_trec_eval`` a file that
        is not a TREC run; a folder; a run without a ranking line (empty, or blank and comment
        lines only).
    MissingExtra
        A parquet run without pyarrow.
    """
    check_file(path)
    kind = file_format(path)
    if as_trec_eval and kind not in ("trec", "stdin"):
        raise InputError(
            "trec_eval 10.0 reads TREC runs (qid Q0 docid rank score tag), not a "
            f"{'parquet' if kind == 'parquet' else 'ranx'} file",
            path=str(path),
        )
    if kind == "parquet":
        from ragnb.io.columnar import read_parquet_run

        return _not_empty(RunFile(str(path), read_parquet_run(path)))
    small = kind == "trec" and _small(path)
    if kind == "trec":
        if not small and os.path.isfile(path):  # the evaluation's kernels load while it parses
            preload_kernels()
        try:
            from ragnb.io.columnar import read_run_columnar

            read = read_run_columnar(path, rank=rank, duckdb=not small)
        except MissingExtra:
            pass
        except InputError:
            if not as_trec_eval:
                raise
        else:
            if read is not None:
                frame, info = read
                notes = _extra_text_note(path, info["extra_text_lines"], "sixth")
                return _not_empty(RunFile(str(path), frame, info["tag"], notes))
    with _warnings_as_notes(small) as caught:
        frame = read_run(path, as_trec_eval=as_trec_eval)
    tag = str(frame["tag"].iloc[-1]) if len(frame) and "tag" in frame.columns else None
    return _not_empty(RunFile(str(path), frame, tag, tuple(caught)))


def _small(path: str | os.PathLike[str]) -> bool:
    """A file of at most :data:`PYTHON_READS_BYTES` bytes."""
    return os.path.isfile(path) and os.path.getsize(path) <= PYTHON_READS_BYTES


@contextlib.contextmanager
def _warnings_as_notes(record: bool) -> Generator[list[str], None, None]:
    """With ``record``, the Python readers' warnings (text after the last column, numbers read
    as C reads them) as the notes the columnar readers give, in a list; else an empty list and
    the warnings as they are."""
    notes: list[str] = []
    if not record:
        yield notes
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield notes
    notes.extend(str(w.message) for w in caught)


def _not_empty(run: RunFile) -> RunFile:
    """``run``, unless it holds no ranking (an error naming the file and its lines)."""
    if run.frame is not None and run.frame.empty:
        raise no_rows_error(run.path, "rankings")
    return run


def locate_duplicate(path: str | os.PathLike[str], error: DuplicateEntry) -> InputError:
    """The error of a pair given twice in the run file ``path``, naming the file and line.

    The columnar readers leave the check of duplicate (query, document) pairs to the join with
    the qrels, which sees frames, not lines; the file is read again here, line by line
    (:func:`ragnb.io.readers.iter_run_lines`), to name the line that repeats a pair.

    Parameters
    ----------
    path : str or PathLike
        The run file the frame was read from.
    error : DuplicateEntry
        The error the join raised.

    Returns
    -------
    InputError
        ``path, line N, query Q: duplicate entry for doc D (first on line M)`` for a TREC run;
        ``error``'s words with the file for other formats.
    """
    if file_format(path) == "trec":
        try:
            read_run(path)
        except InputError as located:
            if located.path is not None:
                return located
    return InputError(error.message, path=path, query_id=error.query_id)


def read_qrels_file(
    path: str | os.PathLike[str], *, as_trec_eval: bool = False, diversity: bool = False
) -> QrelsFile:
    """Read a qrels file in memory with the reader its format and the installed extras call for.

    Parameters
    ----------
    path : str or PathLike
        TREC qrels (``-`` the standard input; ``.gz`` gunzipped), BEIR qrels ``.tsv``, or ranx
        JSON or LZ4 qrels.
    as_trec_eval : bool, default False
        Read as trec_eval 10.0 reads (``read_qrels(path, as_trec_eval=True)``).
    diversity : bool, default False
        Read TREC diversity qrels ``qid subtopic docid rel``
        (:func:`ragnb.io.readers.read_diversity_qrels`; ``ragnb evaluate --qrels-format
        diversity``). Never guessed: ordinary TREC qrels have the same four columns.

    Returns
    -------
    QrelsFile
        TREC qrels with the ``fast`` extra as arrow columns
        (:func:`ragnb.io.columnar.read_qrels_columnar`, which hands any file it does not take to
        :func:`ragnb.io.readers.read_qrels`); the rest as ``read_qrels`` reads them; diversity
        qrels with their ``subtopic`` column.

    Raises
    ------
    InputError
        A malformed file, naming the file and line; a folder; a file without a judgement
        (empty, only BEIR's header line, or blank and comment lines), naming its lines;
        ``diversity`` with ``as_trec_eval`` or a file that is not TREC text.
    """
    check_file(path)
    if diversity:
        if as_trec_eval or file_format(path) not in ("trec", "stdin"):
            raise InputError(
                "diversity qrels are TREC text (qid subtopic docid rel), not a ranx file, and "
                "trec_eval does not read them",
                path=str(path),
            )
        return QrelsFile(str(path), read_diversity_qrels(path))
    qrels = None
    small = file_format(path) == "trec" and _small(path)
    if file_format(path) == "trec":
        try:
            from ragnb.io.columnar import read_qrels_columnar
        except MissingExtra:
            pass
        else:
            read = read_qrels_columnar(path, as_trec_eval=as_trec_eval, duckdb=not small)
            if read is not None:
                frame, extra = read
                qrels = QrelsFile(str(path), frame, _extra_text_note(path, extra, "fourth"))
    if qrels is None:
        with _warnings_as_notes(small) as notes:
            frame = read_qrels(path, as_trec_eval=as_trec_eval)
        qrels = QrelsFile(str(path), frame, tuple(notes))
    if qrels.frame.empty:
        raise no_rows_error(path, "judgements")
    return qrels


def iter_run_blocks(
    path: str | os.PathLike[str],
    block_rows: int,
    *,
    memory_limit: str = "1GB",
    temp_dir: str | os.PathLike[str] | None = None,
) -> Generator[QueryBlock | None, None, None]:
    """A run file in blocks of whole queries, grouped by query out of core when needed.

    A parquet run is read as it is; a TREC run (and a parquet run whose rows turn out not to be
    grouped by query) is first sorted by query by DuckDB into a temporary parquet copy
    (:func:`ragnb.io.columnar.group_by_query`), which is removed when the iteration ends (close
    the generator, e.g. with :func:`contextlib.closing`, when stopping early).

    Parameters
    ----------
    path : str or PathLike
        A TREC run (optionally gzipped) or a parquet run (``.parquet``, ``.pq``) with columns
        ``query_id``, ``doc_id``, ``score`` and optionally ``rank`` and ``source``.
    block_rows : int
        Target rows per block (:func:`ragnb.io.columnar.iter_query_blocks`).
    memory_limit : str, default "1GB"
        DuckDB's ``memory_limit`` for the grouping sort.
    temp_dir : str or PathLike, optional
        Folder of the grouped copy and DuckDB's spill files (default: the system's temp folder).

    Yields
    ------
    QueryBlock or None
        ``(run, query_ids)`` blocks; no query is split between two. A ``None`` means that the
        parquet run is not grouped by query: the blocks before it are void, and the run is read
        again, grouped, from its first query.

    Raises
    ------
    InputError
        As :func:`ragnb.io.columnar.iter_query_blocks` and
        :func:`ragnb.io.columnar.group_by_query`, naming ``path``.
    MissingExtra
        Without the ``fast`` extra (pyarrow, DuckDB).
    """
    from ragnb.io.columnar import RunNotGrouped, group_by_query, parquet_run_columns, query_blocks

    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="ragnb-stream-", dir=temp_dir) as tmp:
        if file_format(path) == "parquet":
            parquet_run_columns(path)
            with contextlib.suppress(RunNotGrouped):
                yield from query_blocks(path, block_rows, source=path, done=set())
                return
            yield None  # not grouped: read again from a grouped copy
        grouped = group_by_query(path, Path(tmp), memory_limit)
        yield from query_blocks(grouped, block_rows, source=path, done=set())
