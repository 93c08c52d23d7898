"""Evaluate a run file larger than memory: blocks of whole queries, grouped out of core.

:func:`evaluate_file` gives the :class:`ragnb.evaluation.evaluate.EvaluationResult` that
:func:`ragnb.evaluation.evaluate.evaluate` gives on the same file read into memory (per-query values
bit-identical, aggregate equal), reading the run in blocks of whole queries. A run whose rows are
not grouped by query is first sorted by query out of core by DuckDB (``COPY (... ORDER BY query_id)
TO`` a temporary parquet file, under ``SET memory_limit`` with a spill folder); the grouped parquet
file is then read with ``pyarrow.parquet.ParquetFile.iter_batches`` and cut at query boundaries.
Each block is evaluated by :func:`ragnb.evaluation.evaluate.evaluate` against the qrels of its
queries, so every measure, ordering policy and grade map behaves as in memory.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import MissingExtra, require
from ragnb.core.validation import check_int_at_least
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import (
    SUBTOPIC_COLUMN,
    EvaluationResult,
    checked_grade_map,
    evaluate,
    result_from_values,
)
from ragnb.frames.index import index_qrels, sorted_codes
from ragnb.frames.schema import RunOrder, document_qrels
from ragnb.io.files import PARQUET_SUFFIXES
from ragnb.measures import Measure, parse_measures
from ragnb.measures.kernel import as_qrels_frame
from ragnb.measures.novelty import SourceOf

try:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
except ModuleNotFoundError as _e:  # the fast extra
    raise MissingExtra("pyarrow", "fast") from _e

__all__ = [
    "PARQUET_SUFFIXES",
    "evaluate_file",
    "iter_query_blocks",
    "read_qrels_columnar",
    "read_run_columnar",
]

#: Endings read as parquet runs; any other file is a TREC run (``.gz`` read by DuckDB).
#: Columns of a parquet run that the evaluation reads (``query_id``, ``doc_id``, ``score`` needed).
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


def evaluate_file(
    qrels: pd.DataFrame | Mapping[str, Mapping[str, int]],
    run_path: str | os.PathLike[str],
    measures: Iterable[str | Measure] | str | Measure,
    *,
    order: RunOrder = "score",
    grade_map: str | Mapping[int, int] | None = None,
    source_of: SourceOf = None,
    block_rows: int = 1_000_000,
    memory_limit: str = "1GB",
    temp_dir: str | os.PathLike[str] | None = None,
    ignore_self: bool = False,
) -> EvaluationResult:
    """Evaluate the run file ``run_path`` against ``qrels`` in blocks of whole queries.

    Parameters
    ----------
    qrels : DataFrame or dict
        As :func:`ragnb.evaluation.evaluate.evaluate` (held in memory).
    run_path : str or PathLike
        A TREC run ``qid Q0 docid rank score tag`` (optionally gzipped), or a parquet file
        (``.parquet`` / ``.pq``) with columns ``query_id``, ``doc_id``, ``score`` and optionally
        ``rank`` and ``source``. Rows need not be grouped by query.
    measures : list of str or Measure
        As :func:`ragnb.evaluation.evaluate.evaluate`.
    order, grade_map, source_of, ignore_self
        As :func:`ragnb.evaluation.evaluate.evaluate`. With ``order="file"`` the order within a
        query is the ``rank`` column (a TREC run always has one); the grouping sort does not keep
        the file order of rows with equal ranks.
    block_rows : int, default 1,000,000
        Target rows per block; a block always ends at a query boundary, so it holds at most
        ``block_rows`` plus the rows of one query.
    memory_limit : str, default "1GB"
        DuckDB's ``memory_limit`` for the grouping sort (it spills to ``temp_dir`` beyond).
    temp_dir : str or PathLike, optional
        Folder of the grouped copy and DuckDB's spill files (default: the system's temp folder);
        both are removed before returning. Needs about the run's size in parquet form free.

    Returns
    -------
    EvaluationResult
        Equal to ``evaluate(qrels, read_run(run_path), measures, ...)``: the same per-query
        values (bit-identical), aggregate, counts and warnings.

    Raises
    ------
    InputError
        A malformed TREC line (wrong column count, a rank or score not in trec_eval's syntax, a
        non-finite score) or a duplicate (query, document) pair, naming the file and line; a
        parquet run missing a column or holding a null or non-finite score, naming the file and
        query; anything :func:`ragnb.evaluation.evaluate.evaluate` raises.

    Notes
    -----
    Memory bound: about ``B * r + Q + n_q * (8 * n_m + s)`` bytes plus DuckDB's
    ``memory_limit`` during the grouping sort, where ``B`` is the block's rows (``block_rows``
    plus at most one query's rows), ``r`` the in-memory cost of a run row during evaluation
    (a few hundred bytes: ids as Python strings, the sorted and padded arrays), ``Q`` the qrels
    frame, ``n_q`` the number of evaluated queries, ``n_m`` the number of measures and ``s``
    the size of a query id string (the per-query values are kept to compute the means exactly
    as in memory; the returned long ``per_query`` table holds ``n_q * n_m`` rows). Nothing is
    proportional to the run's total rows. Measured in ``benchmarks/scale.py``.
    """
    path = Path(run_path)
    if not path.is_file():
        raise InputError("run file not found", path=path)
    block_rows = check_int_at_least(block_rows, "block_rows", 1)
    parsed = parse_measures(measures)
    qrels, grade_map = _checked_qrels(qrels, parsed, grade_map)
    if qrels.empty:
        raise InputError("the qrels hold no judgements; nothing to evaluate")
    qrels_qids = pa.array(qrels["query_id"].astype(str).to_numpy(dtype=object), pa.string())
    options: dict[str, Any] = {"order": order, "grade_map": grade_map, "source_of": source_of}
    if ignore_self:
        options["ignore_self"] = True
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    counts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragnb-stream-", dir=temp_dir) as tmp:
        if path.name.lower().endswith(PARQUET_SUFFIXES):
            grouped = path
            _parquet_columns(path)
        else:
            grouped = _sorted_parquet(path, Path(tmp), memory_limit)
        job = (path, qrels, qrels_qids, parsed, options, block_rows, parts, counts)
        try:
            seen = _stream(grouped, *job)
        except _NotGrouped:  # a parquet run whose rows are not grouped: sort it out of core
            seen = _stream(_sorted_parquet(path, Path(tmp), memory_limit), *job)
    missing = pc.invert(pc.is_in(qrels_qids, value_set=pa.array(list(seen), pa.string())))
    missing_np = missing.to_numpy(zero_copy_only=False)
    if missing_np.any():
        empty = pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
        empty = empty.astype({"query_id": object, "doc_id": object, "score": "float64"})
        _add_block(parts, counts, evaluate(qrels[missing_np], empty, parsed, **options))
    counts["queries_missing_from_run"] = int(missing_np.sum())
    qids = np.concatenate([p[0] for p in parts])
    values = np.concatenate([p[1] for p in parts])
    by_id = np.argsort(qids, kind="stable")
    in_both = len(qids) - counts["queries_missing_from_run"]
    counts["run_queries_without_qrels"] = len(seen) - in_both
    if counts["rank_disagreements"] and order == "score":
        warnings.warn(
            f"{counts['rank_disagreements']} queries have a rank column that disagrees with their "
            "scores; ordering by score as trec_eval does (use order='file' to keep the file's "
            "order)",
            UserWarning,
            stacklevel=2,
        )
    counts = {
        "queries_in_qrels": len(qids),
        "queries_missing_from_run": counts["queries_missing_from_run"],
        "run_queries_without_qrels": counts["run_queries_without_qrels"],
        "rank_disagreements": counts["rank_disagreements"],
        "order": order,
        "fe_short_runs": counts["fe_short_runs"],
        **({"self_retrieved_dropped": counts["self_retrieved_dropped"]} if ignore_self else {}),
    }
    return result_from_values(parsed, qids[by_id], values[by_id], counts)


class _NotGrouped(InputError):
    """A run's rows are not grouped by query (:func:`evaluate_file` then sorts a parquet run)."""


def _stream(
    grouped: Path,
    source: Path,
    qrels: pd.DataFrame,
    qrels_qids: pa.Array,
    parsed: list[Measure],
    options: dict[str, Any],
    block_rows: int,
    parts: list[tuple[np.ndarray, np.ndarray]],
    counts: dict[str, Any],
) -> set[str]:
    """Evaluate the blocks of ``grouped`` into ``parts`` / ``counts`` (reset first); the run's
    query ids. Raises :class:`_NotGrouped` when ``grouped`` is ``source`` and is not grouped."""
    parts.clear()
    counts.update(rank_disagreements=0)
    counts["fe_short_runs"] = {m.name: 0 for m in parsed if m.family == "F_e"}
    seen: set[str] = set()
    for block, block_qids in _blocks(grouped, block_rows, source, seen):
        mine = pc.is_in(qrels_qids, value_set=pa.array(block_qids, pa.string()))
        mine_np = mine.to_numpy(zero_copy_only=False)
        if not mine_np.any():
            continue
        try:
            with warnings.catch_warnings():  # the rank warning is given once, for the whole run
                warnings.filterwarnings("ignore", "[0-9]+ queries have a rank column", UserWarning)
                res = evaluate(qrels[mine_np], block, parsed, **options)
        except InputError as exc:
            raise InputError(str(exc), path=source) from exc
        _add_block(parts, counts, res)
    return seen


def _checked_qrels(
    qrels: Any, parsed: list[Measure], grade_map: Any
) -> tuple[pd.DataFrame, str | Mapping[int, int] | None]:
    """The qrels as a frame, and the grade map each block gets: the graded-scale check is done
    once on all qrels (a block's subset could look like another scale), then stated as done."""
    frame = qrels if isinstance(qrels, pd.DataFrame) else as_qrels_frame(qrels)
    if grade_map is not None:
        return frame, grade_map
    plain = document_qrels(frame) if SUBTOPIC_COLUMN in frame.columns else frame
    return frame, checked_grade_map(plain, parsed, grade_map)


def _add_block(
    parts: list[tuple[np.ndarray, np.ndarray]], counts: dict[str, Any], res: EvaluationResult
) -> None:
    """Keep a block's per-query values ``(query ids, (n_q, n_m) values)`` and add its counts."""
    n_m = len(res.measures)
    n_q = len(res.per_query) // n_m
    values = res.per_query["value"].to_numpy().reshape(n_m, n_q).T
    parts.append((res.per_query["query_id"].to_numpy(dtype=object)[:n_q], values))
    c = res.counts
    counts["rank_disagreements"] += c["rank_disagreements"]
    for name, n in c["fe_short_runs"].items():
        counts["fe_short_runs"][name] += n
    counts["self_retrieved_dropped"] = counts.get("self_retrieved_dropped", 0) + c.get(
        "self_retrieved_dropped", 0
    )


def _sorted_parquet(path: Path, tmp: Path, memory_limit: str) -> Path:
    """A parquet copy of the run ``path`` sorted by ``query_id`` in ``tmp``: DuckDB's out-of-core
    sort (spilling to ``tmp`` beyond ``memory_limit``)."""
    if path.name.lower().endswith(PARQUET_SUFFIXES):
        columns = _parquet_columns(path)
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
    path: str | os.PathLike[str], *, rank: bool = True
) -> tuple[pd.DataFrame, dict[str, Any]]:
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

    Returns
    -------
    run : DataFrame
        Columns ``query_id``, ``doc_id`` (arrow strings, dictionary-coded: an int32 code per row
        and each distinct id once), ``score`` (float64), ``rank`` (int32 or int64, unless
        ``rank`` is False), in file order.
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
    About 20 bytes a row (two codes, the score and the rank) beside each distinct id's text,
    against several hundred for :func:`ragnb.io.readers.read_run`'s Python objects;
    :func:`ragnb.measures.prepare` joins dictionary-coded ids as integers.
    """
    path = Path(path)
    fast = _plain_trec_run(path, rank)
    if fast is not None:
        return fast
    duckdb = require("duckdb")
    con = duckdb.connect(":memory:")
    try:
        table = con.sql(
            "SELECT query_id, doc_id, score, rank, tag, n_columns, ok FROM " + _trec_source(path)
        ).to_arrow_table()
    except duckdb.Error as exc:
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


def _plain_table(path: Path, names: list[str], types: dict[str, Any]) -> pa.Table | None:
    """The columns ``types`` names of a TREC file whose every line is ``names`` split by single
    spaces, parsed by pyarrow's CSV reader (several times faster than DuckDB's line splitting):
    None for any other file, and for ids that hold an empty field, a control character or a
    leading ``#`` (a comment line), which the general readers take with trec_eval's meaning.
    Id columns typed as dictionaries stay so (one code per row; each chunk's distinct ids are
    checked); every column keeps pyarrow's chunks."""
    from pyarrow import csv

    try:
        table = csv.read_csv(
            path,
            read_options=csv.ReadOptions(column_names=names, block_size=1 << 22),
            parse_options=csv.ParseOptions(
                delimiter=" ",
                quote_char=False,
                double_quote=False,
                escape_char=False,
                ignore_empty_lines=False,  # blank lines: the general readers (qrels reject them)
            ),
            convert_options=csv.ConvertOptions(
                column_types=types,
                include_columns=list(types),
                null_values=[],
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, OSError):  # another layout, a bad line, or not readable this way
        return None
    if not len(table) or any(table[c].null_count for c in table.column_names):
        return None
    for column in ("query_id", "doc_id"):
        chunks = table[column].chunks
        if pa.types.is_dictionary(table[column].type):
            chunks = [chunk.dictionary for chunk in chunks]
        if any(_odd_ids(chunk, column == "query_id") for chunk in chunks):
            return None
    return table


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
    """:func:`read_run_columnar` of a plain run (see :func:`_plain_table`) with finite scores."""
    # a chunk's queries repeat (a dictionary per chunk is small), its documents do not
    types = {"query_id": pa.dictionary(pa.int32(), pa.string()), "doc_id": pa.string()}
    types["score"] = pa.float64()
    if rank:  # a rank beyond int32 (never seen) sends the file to the general reader
        types["rank"] = pa.int32()
    table = _plain_table(path, ["query_id", "q0", "doc_id", "rank", "score", "tag"], types)
    if table is None or not all(np.isfinite(c.to_numpy()).all() for c in table["score"].chunks):
        return None  # trec_eval's number syntax decides: the general reader
    tag = _last_tag(path)
    if tag is None:
        return None
    # column by column, chunk by chunk, each freed once copied: one column's copy at a time
    chunks = {c: table[c].chunks for c in table.column_names}
    del table
    columns: dict[str, Any] = {}
    for c in ("query_id", "doc_id"):  # one sorted dictionary per column (each id held once)
        if c == "doc_id":
            chunks[c] = _dictionary_encoded(chunks.pop(c))
        coded = sorted_codes(chunks.pop(c))
        values = coded.dictionary.cast(pa.large_string())
        ids = pa.DictionaryArray.from_arrays(coded.indices, values)
        columns[c] = pd.Series(ids, dtype=pd.ArrowDtype(ids.type))
    for c in list(chunks):
        columns[c] = pd.Series(_concatenated(chunks.pop(c)))
    pa.default_memory_pool().release_unused()  # the parser's buffers, kept by the allocator
    return pd.DataFrame(columns, copy=False), {"tag": tag, "extra_text_lines": 0}


def _dictionary_encoded(chunks: list[pa.Array]) -> list[pa.DictionaryArray]:
    """The string chunks dictionary-encoded, each half of them by one thread (a hash table
    each; :func:`ragnb.frames.index.sorted_codes` merges the two dictionaries)."""
    from concurrent.futures import ThreadPoolExecutor

    def encoded(part: list[pa.Array]) -> list[pa.DictionaryArray]:
        return pc.dictionary_encode(pa.chunked_array(part)).chunks if part else []

    half = len(chunks) // 2
    parts = [chunks[:half], chunks[half:]]
    chunks.clear()
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(encoded, parts)
    return first + second


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
    try:  # the evaluation's own index finds a duplicate pair fastest
        index_qrels(frame)
    except InputError:
        return None  # the reader that names the duplicate's lines
    return frame


def read_qrels_columnar(
    path: str | os.PathLike[str], *, as_trec_eval: bool = False
) -> tuple[pd.DataFrame, int]:
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
    from ragnb.io.readers import read_qrels

    path = Path(path)
    fast = _plain_trec_qrels(path)
    if fast is not None:
        return fast, 0
    duckdb = require("duckdb")
    split = _fields(path)
    query = (
        "SELECT p[1] AS query_id, p[3] AS doc_id, TRY_CAST(p[4] AS BIGINT) AS relevance, "
        f"len(p) AS n_columns, (len(p) >= 4 AND regexp_full_match(p[4], '{_INTEGER_RE}') AND "
        f"TRY_CAST(p[4] AS BIGINT) IS NOT NULL) AS ok FROM ({split})"
    )
    con = duckdb.connect(":memory:")
    try:
        table = con.sql(query).to_arrow_table()
        n_lines = con.sql(f"SELECT count(*) FROM {_lines(path)}").fetchall()[0][0]
        dup = con.sql(
            f"SELECT count(*) FROM (SELECT p[1], p[3] FROM ({split}) GROUP BY 1, 2 "
            "HAVING count(*) > 1)"
        ).fetchall()[0]
    except duckdb.Error:  # bytes that are not UTF-8: the reader that names the line
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


def _quoted(path: Path) -> str:
    """A path inside a single-quoted SQL string."""
    return str(path).replace("'", "''")


def _parquet_columns(path: Path) -> list[str]:
    """The run columns a parquet file holds; InputError when a needed one is missing."""
    try:
        names = pq.ParquetFile(path).schema_arrow.names
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable parquet file: {exc}", path=path) from exc
    for needed in _RUN_COLUMNS[:3]:
        if needed not in names:
            raise InputError(f"parquet run has no {needed!r} column", path=path, column=needed)
    return [c for c in _RUN_COLUMNS if c in names]


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
    for frame, _ in _blocks(Path(path), block_rows, named, set()):
        yield frame


def _blocks(
    path: Path, block_rows: int, source: Path, done: set[Any]
) -> Iterator[tuple[pd.DataFrame, list[str]]]:
    """:func:`iter_query_blocks`'s blocks with their query ids, adding those to ``done``."""
    pending: list[pa.RecordBatch] = []
    held = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=min(block_rows, 1 << 20)):
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


def _block(table: pa.Table, source: Path, done: set[Any]) -> tuple[pd.DataFrame, list[str]]:
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
        raise _NotGrouped("the run's rows are not grouped by query", path=source, query_id=str(q))
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
    return frame, starts


def _raise_trec_line(path: Path, query_id: str | None) -> None:
    """Rescan a TREC run (error path only) and raise read_run's error for its first bad line;
    with ``query_id`` None, return when every line reads."""
    from ragnb.io.readers import iter_run_lines

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes of the reading that failed come later
        for _ in iter_run_lines(path):
            pass
    if query_id is not None:
        raise InputError("malformed line", path=path, query_id=query_id)


def _raise_trec_duplicate(path: Path, query_id: str, doc_id: str) -> None:
    """Rescan a TREC run (error path only) for the two lines of a duplicate pair."""
    from ragnb.io.readers import open_text

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
