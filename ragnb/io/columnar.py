"""The columnar readers of TREC runs and qrels (pyarrow, DuckDB) and the blocks of a run too
large for memory; the ``fast`` extra.

:func:`read_run_columnar` and :func:`read_qrels_columnar` read what
:func:`ragnb.io.readers.read_run` and :func:`ragnb.io.readers.read_qrels` read, into
arrow-backed columns: a plain file (single spaces, six or four fields) is parsed by pyarrow's CSV
reader (a run's query ids dictionary-coded, its document ids as parsed), any other by DuckDB (a
run's ids dictionary-coded), and a malformed line is named by the Python
readers. A run larger than memory is read in blocks of whole queries (:func:`iter_query_blocks`),
from a parquet copy grouped by query by DuckDB's out-of-core sort (:func:`group_by_query`).
Which reader reads a file is decided by :mod:`ragnb.io.dispatch`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import MissingExtra, require
from ragnb.errors import InputError
from ragnb.frames.index import index_qrels, sorted_codes
from ragnb.io.files import PARQUET_SUFFIXES
from ragnb.io.readers import iter_run_lines, open_text, read_qrels

try:
    import pyarrow as pa
    import pyarrow.compute as pc
except ModuleNotFoundError as _e:  # the fast extra
    raise MissingExtra("pyarrow", "fast") from _e

__all__ = [
    "QueryBlock",
    "RunNotGrouped",
    "group_by_query",
    "iter_query_blocks",
    "parquet_run_columns",
    "query_blocks",
    "read_parquet_run",
    "read_qrels_columnar",
    "read_run_columnar",
]

_RUN_COLUMNS = ("query_id", "doc_id", "score", "rank", "source")
#: trec_eval's integer and number syntax (as :func:`ragnb.io.readers.read_run`), for DuckDB's RE2.
_INTEGER_RE = r"[+-]?[0-9]+"
#: A line's fields: split on single spaces when the line holds no other white space (the common
#: case, several times faster), else on runs of C's white space (``isspace``: RE2's ``\s`` and
#: the vertical tab). Only spaces are trimmed (trimming the others costs several times the
#: read): a line starting with another white space character gets an empty first field, which
#: the readers treat as a line to hand to the Python reader.
_SPLIT = (
    "CASE WHEN contains(trim(text), '  ') OR contains(trim(text), chr(9)) "
    "OR contains(trim(text), chr(10)) OR contains(trim(text), chr(11)) "
    "OR contains(trim(text), chr(12)) OR contains(trim(text), chr(13)) "
    "THEN string_split_regex(trim(text), '[\\s\\v]+') "
    "ELSE string_split(trim(text), ' ') END"
)
_DECIMAL_RE = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"


def group_by_query(path: str | os.PathLike[str], folder: Path, memory_limit: str) -> Path:
    """A parquet copy of the run ``path`` sorted by ``query_id``: DuckDB's out-of-core sort.

    Parameters
    ----------
    path : str or PathLike
        A TREC run (gzipped if the name ends in ``.gz``) or a parquet run (``.parquet``,
        ``.pq``).
    folder : Path
        Where the copy (``grouped.parquet``) and DuckDB's spill files (``spill/``) go.
    memory_limit : str
        DuckDB's ``memory_limit``, e.g. ``"1GB"``; the sort spills to ``folder`` beyond it.

    Returns
    -------
    Path
        The copy: columns ``query_id``, ``doc_id``, ``score``, ``rank`` and, for a TREC run, the
        ``ok`` flag of each line (6 columns or more, integer rank, finite score).

    Raises
    ------
    InputError
        When DuckDB cannot read the file, naming it; a parquet run missing a needed column.
    """
    path, tmp = Path(path), folder
    if path.name.lower().endswith(PARQUET_SUFFIXES):
        columns = parquet_run_columns(path)
        source = f"read_parquet('{_quoted(path)}')"
        select = ", ".join(columns)
    else:
        source = _trec_source(path)
        select = "query_id, doc_id, score, rank, ok"
    duckdb = require("duckdb")

    out = tmp / "grouped.parquet"
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute(f"SET temp_directory = '{_quoted(tmp / 'spill')}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute(
            f"COPY (SELECT {select} FROM {source} ORDER BY query_id) TO '{_quoted(out)}' "
            "(FORMAT parquet, ROW_GROUP_SIZE 262144)"
        )
    except duckdb.Error as exc:
        raise InputError(f"cannot read the run: {exc}", path=path) from exc
    finally:
        con.close()
    return out


def _lines(path: Path) -> str:
    """DuckDB's view of a text file: one row ``text`` per line."""
    return (
        f"read_csv('{_quoted(path)}', columns={{'text': 'VARCHAR'}}, header=false, "
        "delim='\x01', quote='', escape='', auto_detect=false, strict_mode=false)"
    )


def _fields(path: Path) -> str:
    """DuckDB's view of a TREC file: a list ``p`` of the whitespace-split fields of every line
    that is neither blank nor a ``#`` comment, in file order."""
    return (
        f"SELECT {_SPLIT} AS p FROM {_lines(path)} "
        "WHERE trim(text) <> '' AND NOT starts_with(trim(text), '#')"
    )


def _trec_source(path: Path) -> str:
    """DuckDB's view of a TREC run: one row per non-blank line, split on whitespace, with an
    ``ok`` flag (6 columns or more, integer rank, finite score in trec_eval's syntax); ``#``
    comment lines are skipped."""
    split = _fields(path)
    ok = (  # trec_eval reads six columns and ignores the rest
        f"len(p) >= 6 AND p[1] <> '' AND regexp_full_match(p[4], '{_INTEGER_RE}') "
        f"AND regexp_full_match(p[5], '{_DECIMAL_RE}') "
        "AND isfinite(TRY_CAST(p[5] AS DOUBLE)) AND TRY_CAST(p[4] AS BIGINT) IS NOT NULL"
    )
    return (
        f"(SELECT p[1] AS query_id, p[3] AS doc_id, TRY_CAST(p[5] AS DOUBLE) AS score, "
        f"TRY_CAST(p[4] AS BIGINT) AS rank, p[6] AS tag, len(p) AS n_columns, ({ok}) AS ok "
        f"FROM ({split}))"
    )


def read_run_columnar(
    path: str | os.PathLike[str], *, rank: bool = True, duckdb: bool = True
) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Read a TREC run with DuckDB into arrow-backed columns: the lean, multi-threaded reader.

    Parameters
    ----------
    path : str or PathLike
        A TREC run ``qid Q0 docid rank score tag`` (gzipped if the name ends in ``.gz``); read
        as :func:`ragnb.io.readers.read_run` reads it (``#`` comments skipped, text after the sixth
        column ignored).
    rank : bool, default True
        Read the ``rank`` column. False leaves it out, and unchecked where the file is read by
        pyarrow, as trec_eval 10.0 does (it orders by score and reads no rank).
    duckdb : bool, default True
        Read a file that pyarrow's CSV reader does not take with DuckDB; False returns None
        for it instead (the caller reads it otherwise).

    Returns
    -------
    run : DataFrame
        Columns ``query_id`` (arrow strings, dictionary-coded: an int32 code per row and each
        distinct id once), ``doc_id`` (arrow strings: as pyarrow's CSV reader parsed them, in its
        chunks, for a plain file; dictionary-coded for a file DuckDB reads), ``score``
        (float64), ``rank`` (int32 or int64, unless ``rank`` is False), in file order.
    info : dict
        ``tag``: the tag of the last line (trec_eval's ``runid``), None for an empty file;
        ``extra_text_lines``: lines with text after the sixth column.

    Raises
    ------
    InputError
        A malformed line, naming the file and line (the file is then rescanned by
        :func:`ragnb.io.readers.iter_run_lines` for the message). Duplicate (query, document) pairs
        are left to :func:`ragnb.measures.prepare`, which names the query and document.

    Notes
    -----
    About 20 bytes a row (a code, the score, the rank) beside the document ids' text (each
    distinct one once when coded), against several hundred for
    :func:`ragnb.io.readers.read_run`'s Python objects. :func:`ragnb.measures.prepare` joins
    each query on the chunk holding its document ids
    (:func:`ragnb.frames.index.join_strings`), dictionary-coded ids as integers.
    """
    path = Path(path)
    fast = _plain_trec_run(path, rank)
    if fast is not None or not duckdb:
        return fast
    db = require("duckdb")
    con = db.connect(":memory:")
    try:
        table = con.sql(
            "SELECT query_id, doc_id, score, rank, tag, n_columns, ok FROM " + _trec_source(path)
        ).to_arrow_table()
    except db.Error as exc:
        _raise_trec_line(path, None)  # a bad line (bytes that are not UTF-8) named, if any
        raise InputError(f"cannot read the run: {exc}", path=path) from exc
    finally:
        con.close()
    if len(table) and not pc.all(table["ok"]).as_py():
        bad = pc.index(table["ok"], False).as_py()
        _raise_trec_line(path, str(table["query_id"][bad].as_py()))
    extra = int(pc.sum(pc.greater(table["n_columns"], 6)).as_py() or 0)
    info = {
        "tag": table["tag"][-1].as_py() if len(table) else None,
        "extra_text_lines": extra,
    }
    columns: dict[str, Any] = {}
    for c in ("query_id", "doc_id"):
        coded = pc.dictionary_encode(table[c].combine_chunks())
        columns[c] = pd.Series(coded, dtype=pd.ArrowDtype(coded.type))
    columns["score"] = table["score"].to_numpy()
    if rank:
        columns["rank"] = table["rank"].to_numpy()
    return pd.DataFrame(columns), info


def _csv_options(names: list[str], types: dict[str, Any]) -> tuple[Any, Any, Any]:
    """pyarrow's CSV options for a TREC file whose lines are ``names`` split by single spaces,
    reading the columns ``types`` names: (read, parse, convert)."""
    from pyarrow import csv

    return (
        csv.ReadOptions(column_names=names, block_size=1 << 22),
        csv.ParseOptions(
            delimiter=" ",
            quote_char=False,
            double_quote=False,
            escape_char=False,
            ignore_empty_lines=False,  # blank lines: the general readers (qrels reject them)
        ),
        csv.ConvertOptions(
            column_types=types,
            include_columns=list(types),
            null_values=[],
            strings_can_be_null=False,
        ),
    )


def _plain_table(path: Path, names: list[str], types: dict[str, Any]) -> pa.Table | None:
    """The columns ``types`` names of a TREC file whose every line is ``names`` split by single
    spaces, parsed by pyarrow's CSV reader (several times faster than DuckDB's line splitting):
    None for any other file, and for ids that hold an empty field, a control character or a
    leading ``#`` (a comment line), which the general readers take with trec_eval's meaning.
    Id columns typed as dictionaries stay so (one code per row; each chunk's distinct ids are
    checked); every column keeps pyarrow's chunks."""
    from pyarrow import csv

    try:
        table = csv.read_csv(path, *_csv_options(names, types))
    except (pa.ArrowInvalid, OSError):  # another layout, a bad line, or not readable this way
        return None
    if not len(table) or any(not _plain_ids(table[c].chunks, c) for c in ("query_id", "doc_id")):
        return None
    return table


def _plain_ids(chunks: list[pa.Array], column: str) -> bool:
    """No chunk of the id column ``column`` holds a null or an id that :func:`_odd_ids` finds
    (a dictionary chunk: its distinct ids checked)."""
    for chunk in chunks:
        if chunk.null_count:
            return False
        values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
        if _odd_ids(values, column == "query_id"):
            return False
    return True


def _odd_ids(arr: pa.Array, comment_sign: bool) -> bool:
    """Ids (a string or large_string array) the general readers must read: an empty one, one
    holding a tab, ``\f`` or ``\r``, or (``comment_sign``) one starting with ``#``."""
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], width)[arr.offset : arr.offset + len(arr) + 1]
    if not len(arr):
        return False
    if (np.diff(offsets) == 0).any():
        return True
    data = np.frombuffer(arr.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    if (data < 14).any():
        return True
    return bool(comment_sign and (data[offsets[:-1] - offsets[0]] == ord("#")).any())


def _plain_trec_run(path: Path, rank: bool) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """:func:`read_run_columnar` of a plain run (see :func:`_plain_table`) with finite scores.

    pyarrow's streaming CSV reader parses the file in a thread (less work than its whole-file
    reader, on one core) while this one checks each block as it comes and copies its document
    ids out of pyarrow's pool (so that the pool's pages of the parse go back to the system)."""
    # a block's queries repeat (a dictionary per block is small), its documents do not
    types = {"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string()}
    types["score"] = pa.float64()
    if rank:  # a rank beyond int32 (never seen) sends the file to the general reader
        types["rank"] = pa.int32()
    chunks = _checked_blocks(path, types)
    if chunks is None:
        return None
    tag = _last_tag(path)
    if tag is None:
        return None
    columns: dict[str, Any] = {}
    coded = sorted_codes(chunks.pop("query_id"))  # one sorted dictionary (each id held once)
    ids = pa.DictionaryArray.from_arrays(coded.indices, coded.dictionary.cast(pa.large_string()))
    columns["query_id"] = pd.Series(ids, dtype=pd.ArrowDtype(ids.type))
    # the documents as parsed: each query is joined on the chunk holding it
    docs = pa.chunked_array(chunks.pop("doc_id"), pa.string())
    columns["doc_id"] = pd.Series(docs, dtype=pd.ArrowDtype(docs.type), copy=False)
    for c in list(chunks):
        columns[c] = pd.Series(_concatenated(chunks.pop(c)), copy=False)
    pa.default_memory_pool().release_unused()  # the parser's buffers, kept by the allocator
    return pd.DataFrame(columns, copy=False), {"tag": tag, "extra_text_lines": 0}


def _checked_blocks(path: Path, types: dict[str, Any]) -> dict[str, list[pa.Array]] | None:
    """The chunks of each column of a plain run, checked block by block as the streaming reader
    parses them in a thread (ids as :func:`_plain_table`, finite scores); None at the first block
    that fails, or when the file is not read this way."""
    from pyarrow import csv

    names = ["query_id", "q0", "doc_id", "rank", "score", "tag"]
    try:
        reader = csv.open_csv(path, *_csv_options(names, types))
    except (pa.ArrowInvalid, OSError):  # another layout, a bad line, or not readable this way
        return None
    chunks: dict[str, list[pa.Array]] = {c: [] for c in types}
    try:
        for n, batch in enumerate(_in_thread(reader), start=1):
            for c in types:
                chunks[c].append(batch.column(c))
            if not (
                _plain_ids([chunks["query_id"][-1]], "query_id")
                and _plain_ids([chunks["doc_id"][-1]], "doc_id")
                and np.isfinite(chunks["score"][-1].to_numpy()).all()
            ):
                return None  # trec_eval's number syntax or odd ids: the general reader
            chunks["doc_id"][-1] = _copied(chunks["doc_id"][-1])
            del batch
            if n % 16 == 0:  # the copied blocks' pages back to the system as the copies grow
                pa.default_memory_pool().release_unused()
    except (pa.ArrowInvalid, OSError):
        return None
    return chunks if chunks["score"] and any(len(c) for c in chunks["score"]) else None


#: Parsed blocks :func:`_in_thread` keeps ready ahead of its caller.
_BLOCKS_AHEAD = 4


def _in_thread(reader: Any) -> Iterator[pa.RecordBatch]:
    """The batches of a pyarrow RecordBatchReader, read by a thread of their own (pyarrow lets
    the GIL go while it parses) while the caller works on the previous ones. Closing the
    iterator early stops the thread after the block it is reading."""
    import queue
    import threading

    # a few blocks ahead at most: a parse faster than the checks would otherwise hold the whole
    # file's batches in pyarrow's pool at once
    out: queue.Queue[Any] = queue.Queue(maxsize=_BLOCKS_AHEAD)
    stop = threading.Event()

    def read() -> None:
        try:
            for batch in reader:
                if stop.is_set():
                    break
                out.put(batch)
            out.put(None)
        except BaseException as exc:  # handed to the caller
            out.put(exc)
        finally:
            reader.close()

    thread = threading.Thread(target=read, name="ragnb-csv", daemon=True)
    thread.start()
    try:
        while (item := out.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # a reader blocked on a full queue: make room until it ends
            try:
                out.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()


def _copied(chunk: pa.Array) -> pa.Array:
    """A string array without nulls copied into numpy's memory (out of pyarrow's pool)."""
    n = len(chunk)
    offsets = np.frombuffer(chunk.buffers()[1], np.int32)[chunk.offset : chunk.offset + n + 1]
    data = np.frombuffer(chunk.buffers()[2] or b"", np.uint8)[offsets[0] : offsets[-1]]
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(data.copy())
    )


def _concatenated(chunks: list[pa.Array]) -> np.ndarray:
    """The numeric chunks as one array; the list is emptied as they are copied."""
    out = np.empty(sum(len(c) for c in chunks), dtype=chunks[0].type.to_pandas_dtype())
    at = 0
    while chunks:
        values = chunks.pop(0).to_numpy()
        out[at : at + len(values)] = values
        at += len(values)
    return out


def _last_tag(path: Path) -> str | None:
    """The sixth field of the last line of a plain run (every line six fields split by single
    spaces, as :func:`_plain_table` found), read from the end of the file; None when it is not
    UTF-8."""
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        back = min(size, 1 << 12)
        while True:
            f.seek(size - back)
            # lines end as pyarrow's CSV reader ends them: \n, \r\n or \r
            lines = re.split(rb"\r\n|\n|\r", f.read(back).rstrip(b"\r\n"))
            if len(lines) > 1 or back == size:
                break
            back = min(size, back * 8)
    try:
        return lines[-1].split(b" ")[5].decode("utf-8")
    except (IndexError, UnicodeDecodeError):
        return None


def _plain_trec_qrels(path: Path) -> pd.DataFrame | None:
    """:func:`read_qrels_columnar` of plain qrels (see :func:`_plain_table`) without a
    duplicate (query, document) pair."""
    ids = pa.large_string()
    table = _plain_table(
        path,
        ["query_id", "iteration", "doc_id", "relevance"],
        {"query_id": ids, "doc_id": ids, "relevance": pa.int64()},
    )
    if table is None:
        return None
    frame = pd.DataFrame(
        {
            "query_id": pd.Series(table["query_id"].combine_chunks(), dtype=pd.ArrowDtype(ids)),
            "doc_id": pd.Series(table["doc_id"].combine_chunks(), dtype=pd.ArrowDtype(ids)),
            "relevance": table["relevance"].to_numpy(),
        }
    )
    del table  # the parser's chunks, copied
    try:  # the evaluation's own index finds a duplicate pair fastest
        index_qrels(frame)
    except InputError:
        return None  # the reader that names the duplicate's lines
    pa.default_memory_pool().release_unused()  # the chunks and the index, kept by the allocator
    return frame


def read_qrels_columnar(
    path: str | os.PathLike[str], *, as_trec_eval: bool = False, duckdb: bool = True
) -> tuple[pd.DataFrame, int] | None:
    """Read TREC qrels ``qid iter docid rel`` with DuckDB into arrow-backed columns.

    Parameters
    ----------
    path : str or PathLike
        TREC qrels (gzipped if the name ends in ``.gz``), read as
        :func:`ragnb.io.readers.read_qrels` reads them: ``#`` comments skipped, text after the
        fourth column ignored.
    as_trec_eval : bool, default False
        Read as ``read_qrels(path, as_trec_eval=True)`` does (trec_eval 10.0's reading): a file
        with any line other than four fields and an integer grade (a comment, a blank line,
        extra text) is handed to it.
    duckdb : bool, default True
        As :func:`read_run_columnar`'s: False returns None for a file that pyarrow's CSV reader
        does not take.

    Returns
    -------
    qrels : DataFrame
        Columns ``query_id``, ``doc_id`` (arrow strings), ``relevance`` (int64), file order.
    extra_text_lines : int
        Lines with text after the fourth column.

    Raises
    ------
    InputError
        A file that is not TREC qrels of integer grades or holds a duplicate pair: the file is
        then read by :func:`ragnb.io.readers.read_qrels`, whose error names the file and line (and
        which reads BEIR's three-column form).
    """
    path = Path(path)
    fast = _plain_trec_qrels(path)
    if fast is not None:
        return fast, 0
    if not duckdb:
        return None
    db = require("duckdb")
    split = _fields(path)
    query = (
        "SELECT p[1] AS query_id, p[3] AS doc_id, TRY_CAST(p[4] AS BIGINT) AS relevance, "
        f"len(p) AS n_columns, (len(p) >= 4 AND regexp_full_match(p[4], '{_INTEGER_RE}') AND "
        f"TRY_CAST(p[4] AS BIGINT) IS NOT NULL) AS ok FROM ({split})"
    )
    con = db.connect(":memory:")
    try:
        table = con.sql(query).to_arrow_table()
        n_lines = con.sql(f"SELECT count(*) FROM {_lines(path)}").fetchall()[0][0]
        dup = con.sql(
            f"SELECT count(*) FROM (SELECT p[1], p[3] FROM ({split}) GROUP BY 1, 2 "
            "HAVING count(*) > 1)"
        ).fetchall()[0]
    except db.Error:  # bytes that are not UTF-8: the reader that names the line
        return read_qrels(path, as_trec_eval=as_trec_eval), 0
    finally:
        con.close()
    extra = int(pc.sum(pc.greater(table["n_columns"], 4)).as_py() or 0)
    odd = as_trec_eval and (extra or n_lines != len(table))  # comments, blank lines, extra text
    if odd or not len(table) or not pc.all(table["ok"]).as_py() or (dup and dup[0]):
        # the reader that names the line (or reads BEIR's form, or trec_eval's comments)
        return read_qrels(path, as_trec_eval=as_trec_eval), 0
    strings = pd.ArrowDtype(pa.string())
    frame = pd.DataFrame(
        {
            "query_id": pd.Series(table["query_id"].combine_chunks(), dtype=strings),
            "doc_id": pd.Series(table["doc_id"].combine_chunks(), dtype=strings),
            "relevance": table["relevance"].to_numpy(),
        }
    )
    return frame, extra


def _parquet() -> Any:
    """``pyarrow.parquet``, imported on first use (a TREC file's reading does not need it)."""
    import pyarrow.parquet as pq

    return pq


def _quoted(path: Path) -> str:
    """A path inside a single-quoted SQL string."""
    return str(path).replace("'", "''")


def parquet_run_columns(path: str | os.PathLike[str]) -> list[str]:
    """The run columns a parquet file holds (of ``query_id``, ``doc_id``, ``score``, ``rank``,
    ``source``); InputError naming the file when it is unreadable or lacks one of the first
    three."""
    path = Path(path)
    try:
        names = _parquet().ParquetFile(path).schema_arrow.names
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable parquet file: {exc}", path=path) from exc
    for needed in _RUN_COLUMNS[:3]:
        if needed not in names:
            raise InputError(f"parquet run has no {needed!r} column", path=path, column=needed)
    return [c for c in _RUN_COLUMNS if c in names]


def read_parquet_run(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A parquet run in memory.

    Parameters
    ----------
    path : str or PathLike
        Parquet file with columns ``query_id``, ``doc_id``, ``score`` and optionally ``rank``
        and ``source`` (other columns are not read).

    Returns
    -------
    DataFrame
        Those columns, ids as str, ``score`` float64, in file order.

    Raises
    ------
    InputError
        An unreadable file, a missing column, or a null or non-finite score, naming the file
        (and the query of the score). Duplicate (query, document) pairs are left to the
        evaluation, which names the query and document.
    """
    path = Path(path)
    table = _parquet().read_table(path, columns=parquet_run_columns(path))
    finite = pc.is_finite(pc.cast(table.column("score"), pa.float64()))
    if finite.null_count or not pc.all(finite).as_py():
        q = table.column("query_id").filter(pc.invert(pc.fill_null(finite, False)))[0]
        raise InputError("score is null or not finite", path=path, query_id=str(q))
    frame = table.to_pandas()
    frame["score"] = frame["score"].astype("float64")
    return frame


def iter_query_blocks(
    path: str | os.PathLike[str], block_rows: int, *, source: str | os.PathLike[str] | None = None
) -> Iterator[pd.DataFrame]:
    """Blocks of whole queries from a parquet run whose rows are grouped by query.

    Parameters
    ----------
    path : str or PathLike
        Parquet file with ``query_id``, ``doc_id``, ``score`` (optionally ``rank``, ``source``,
        and the ``ok`` column of the TREC conversion), rows grouped by query.
    block_rows : int
        Target rows per block; a block is cut at the last query boundary once it holds that many
        rows, so it holds at most ``block_rows`` plus one query's rows.
    source : str or PathLike, optional
        The file to name in errors (default ``path``), e.g. the TREC file the parquet came from.

    Yields
    ------
    DataFrame
        Columns ``query_id``, ``doc_id``, ``score`` (float64) and ``rank`` / ``source`` when
        present; no query is split between two blocks.

    Raises
    ------
    InputError
        A query whose rows are not contiguous, a null or non-finite score, a duplicate (query,
        document) pair, or (for a TREC source) a malformed line, naming the file and the query
        or line.
    """
    named = Path(source) if source is not None else Path(path)
    for block in query_blocks(path, block_rows, source=named, done=set()):
        yield block.run


class QueryBlock(NamedTuple):
    """A block of whole queries of a run: ``run``, the run frame, and ``query_ids``, its
    queries in file order."""

    run: pd.DataFrame
    query_ids: list[str]


class RunNotGrouped(InputError):
    """A run's rows are not grouped by query (:func:`query_blocks` of a parquet run)."""


def query_blocks(
    path: str | os.PathLike[str], block_rows: int, *, source: Path, done: set[Any]
) -> Iterator[QueryBlock]:
    """:func:`iter_query_blocks`'s blocks with their query ids, which are added to ``done``.

    Raises
    ------
    RunNotGrouped
        A query of a block is in ``done`` or twice in the block, naming ``source``.
    InputError
        As :func:`iter_query_blocks`.
    """
    pending: list[pa.RecordBatch] = []
    held = 0
    batches = _parquet().ParquetFile(Path(path)).iter_batches(batch_size=min(block_rows, 1 << 20))
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        if held < block_rows:
            continue
        table = pa.Table.from_batches(pending)
        ids = table.column("query_id")
        other = np.flatnonzero(pc.not_equal(ids, ids[len(ids) - 1]).to_numpy(zero_copy_only=False))
        if not len(other):  # one query so far: keep reading until it ends
            continue
        cut = int(other[-1]) + 1  # the last query's first row
        yield _block(table.slice(0, cut), source, done)
        rest = table.slice(cut)
        pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield _block(pa.Table.from_batches(pending), source, done)


def _block(table: pa.Table, source: Path, done: set[Any]) -> QueryBlock:
    """Check one block: the run frame :func:`~ragnb.evaluation.evaluate.evaluate` reads, ids."""
    names = table.column_names
    if "ok" in names and not pc.all(table.column("ok")).as_py():
        bad = table.filter(pc.invert(table.column("ok")))
        _raise_trec_line(source, str(bad.column("query_id")[0]))
    ids = table.column("query_id").combine_chunks()
    first = np.zeros(1, dtype=np.int64)
    if len(ids) > 1:
        change = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1))
        first = np.concatenate([first, np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1])
    starts = ids.take(pa.array(first)).to_pylist()
    unique = set(starts)
    if len(unique) != len(starts) or not done.isdisjoint(unique):
        q = next(q for i, q in enumerate(starts) if q in done or q in starts[:i])
        raise RunNotGrouped("the run's rows are not grouped by query", path=source, query_id=str(q))
    done.update(unique)
    finite = pc.is_finite(table.column("score"))
    if finite.null_count or not pc.all(finite).as_py():
        q = ids.filter(pc.invert(pc.fill_null(finite, False)))[0]
        raise InputError("score is null or not finite", path=source, query_id=str(q))
    frame = table.select([c for c in _RUN_COLUMNS if c in names]).to_pandas()
    if "ok" in names:  # a parquet run's duplicates are reported by evaluate (file and query)
        dup = frame.duplicated(["query_id", "doc_id"])
        if dup.any():
            row = frame[dup].iloc[0]
            _raise_trec_duplicate(source, str(row["query_id"]), str(row["doc_id"]))
    return QueryBlock(frame, starts)


def _raise_trec_line(path: Path, query_id: str | None) -> None:
    """Rescan a TREC run (error path only) and raise read_run's error for its first bad line;
    with ``query_id`` None, return when every line reads."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes of the reading that failed come later
        for _ in iter_run_lines(path):
            pass
    if query_id is not None:
        raise InputError("malformed line", path=path, query_id=query_id)


def _raise_trec_duplicate(path: Path, query_id: str, doc_id: str) -> None:
    """Rescan a TREC run (error path only) for the two lines of a duplicate pair."""
    first = None
    with open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.split()
            if len(parts) >= 6 and parts[0] == query_id and parts[2] == doc_id:
                if first is not None:
                    raise InputError(
                        f"duplicate entry for doc {doc_id!r} (first on line {first})",
                        path=path,
                        line=lineno,
                        query_id=query_id,
                    )
                first = lineno
    raise InputError(f"duplicate entry for doc {doc_id!r}", path=path, query_id=query_id)
