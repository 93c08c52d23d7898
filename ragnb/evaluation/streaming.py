"""Evaluate a run file larger than memory: blocks of whole queries, grouped out of core.

:func:`evaluate_file` gives the :class:`ragnb.evaluation.evaluate.EvaluationResult` that
:func:`ragnb.evaluation.evaluate.evaluate` gives on the same file read into memory (per-query values
bit-identical, aggregate equal), reading the run in blocks of whole queries
(:func:`ragnb.io.dispatch.iter_run_blocks`). A run whose rows are not grouped by query is first
sorted by query out of core by DuckDB (``COPY (... ORDER BY query_id) TO`` a temporary parquet
file, under ``SET memory_limit`` with a spill folder); the grouped parquet file is then read with
``pyarrow.parquet.ParquetFile.iter_batches`` and cut at query boundaries. Each block is evaluated
by :func:`ragnb.evaluation.evaluate.evaluate` against the qrels of its queries, so every measure,
ordering policy and grade map behaves as in memory.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.core.lazylibs import MissingExtra
from ragnb.core.validation import check_int_at_least
from ragnb.errors import InputError
from ragnb.evaluation.evaluate import (
    SUBTOPIC_COLUMN,
    EvaluationResult,
    checked_grade_map,
    checked_nuggets,
    evaluate,
    measure_labels,
    nugget_coverage,
    nugget_judgements,
    result_from_values,
)
from ragnb.frames.schema import RunOrder, document_qrels
from ragnb.io.columnar import QueryBlock
from ragnb.io.dispatch import iter_run_blocks
from ragnb.measures import Measure, parse_measures
from ragnb.measures.kernel import as_qrels_frame
from ragnb.measures.novelty import SourceOf

try:
    import pyarrow as pa
    import pyarrow.compute as pc
except ModuleNotFoundError as _e:  # the fast extra
    raise MissingExtra("pyarrow", "fast") from _e

__all__ = ["evaluate_file"]


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
    nuggets: pd.DataFrame | None = None,
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
    order, grade_map, source_of, ignore_self, nuggets
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
    measures = [measures] if isinstance(measures, str | Measure) else list(measures)
    parsed = parse_measures(measures)
    qrels, grade_map = _checked_qrels(qrels, parsed, grade_map)
    if qrels.empty:
        raise InputError("the qrels hold no judgements; nothing to evaluate")
    qrels_qids = pa.array(qrels["query_id"].astype(str).to_numpy(dtype=object), pa.string())
    options: dict[str, Any] = {"order": order, "grade_map": grade_map, "source_of": source_of}
    if ignore_self:
        options["ignore_self"] = True
    nuggets = None if nuggets is None else checked_nuggets(nuggets)
    options["nuggets"] = nuggets
    judged = nugget_judgements(qrels, parsed, nuggets)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    counts: dict[str, Any] = {}
    blocks = iter_run_blocks(path, block_rows, memory_limit=memory_limit, temp_dir=temp_dir)
    with contextlib.closing(blocks):  # the grouped copy is removed however the loop ends
        seen = _stream(blocks, path, qrels, qrels_qids, parsed, options, parts, counts)
    missing = pc.invert(pc.is_in(qrels_qids, value_set=pa.array(list(seen), pa.string())))
    missing_np = missing.to_numpy(zero_copy_only=False)
    if missing_np.any():
        empty = pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
        empty = empty.astype({"query_id": object, "doc_id": object, "score": "float64"})
        _add_block(parts, counts, evaluate(qrels[missing_np], empty, parsed, **options))
    # queries, not judgements: a missing query has a row per judged document
    counts["queries_missing_from_run"] = len(pd.unique(qrels["query_id"].to_numpy()[missing_np]))
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
        **(nugget_coverage(qids, judged) if judged is not None else {}),
    }
    labels = measure_labels(measures, parsed)
    return result_from_values(parsed, qids[by_id], values[by_id], counts, labels)


def _stream(
    blocks: Iterator[QueryBlock | None],
    source: Path,
    qrels: pd.DataFrame,
    qrels_qids: pa.Array,
    parsed: list[Measure],
    options: dict[str, Any],
    parts: list[tuple[np.ndarray, np.ndarray]],
    counts: dict[str, Any],
) -> set[str]:
    """Evaluate the run's ``blocks`` into ``parts`` / ``counts``; the run's query ids. A None
    block (the run is read again, grouped) voids what came before."""
    seen: set[str] = set()
    _reset(parts, counts, parsed, seen)
    for item in blocks:
        if item is None:
            _reset(parts, counts, parsed, seen)
            continue
        block, block_qids = item
        seen.update(block_qids)
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


def _reset(
    parts: list[tuple[np.ndarray, np.ndarray]],
    counts: dict[str, Any],
    parsed: list[Measure],
    seen: set[str],
) -> None:
    """Empty what :func:`_stream` gathers."""
    parts.clear()
    seen.clear()
    counts.clear()
    counts.update(rank_disagreements=0)
    counts["fe_short_runs"] = {m.name: 0 for m in parsed if m.family == "F_e"}


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
