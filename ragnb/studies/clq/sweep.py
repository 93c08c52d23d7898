"""Run a cost-latency-quality sweep: resumable, cached, one timed configuration at a time.

Data flows one way: a BEIR dataset (optionally capped) -> chunks per chunker -> embeddings per
(embedder, dim, chunker) -> an index per (..., kind, backend, graph parameters) -> for each
:class:`~ragnb.studies.clq.grid.SweepConfig`: timed retrieval, optional near-duplicate suppression
and reranking per query -> the chunk run collapsed to documents (best chunk) -> measures, PROC,
latency, cost -> one row appended to ``results.parquet``.

Resumable: every finished configuration is appended atomically
(:func:`ragnb.io.files.append_parquet`: read, concat, write a temporary file, rename), so an
interruption loses at most the configuration being measured; on restart the configurations
whose ``(config_id, dataset_key)`` is already in the table are skipped. Embeddings go through
:class:`ragnb.embed.CachedEmbedder` (SQLite) and are also kept as ``.npy`` files under
``<out_dir>/embeddings``; indexes are stored under ``<out_dir>/indexes`` and shared by every
configuration that searches them.

The state one call shares and the build executors are in :mod:`ragnb.studies.clq.state`; measuring
one configuration is :mod:`ragnb.studies.clq.config_run`; notebook 04's study is
:mod:`ragnb.studies.clq.study`.

Building embeddings and indexes may use an :class:`~ragnb.studies.clq.state.Executor` (serial by
default, a thread pool with :class:`~ragnb.studies.clq.state.ThreadExecutor`). Latency is always
measured serially, one configuration at a time, after warm-up queries, with
:func:`time.perf_counter`.

References
----------
Dallaire, arXiv:2511.09545, sections 3.1-3.3 (what is metered and how), 3.5 (the sweep) and 5.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.io.files import BeirDataset, append_parquet, read_parquet
from ragnb.studies.clq.config_run import measure_config, memory_rows, recall_rows
from ragnb.studies.clq.cost import CostModel
from ragnb.studies.clq.grid import DEFAULTED_AXES, SweepConfig, SweepGrid
from ragnb.studies.clq.ray_executor import RayExecutor, make_executor
from ragnb.studies.clq.state import (
    Executor,
    SerialExecutor,
    SweepState,
    ThreadExecutor,
    fingerprint,
    quality_measures,
)

__all__ = [
    "Executor",
    "RayExecutor",
    "SerialExecutor",
    "SweepResult",
    "ThreadExecutor",
    "cap_dataset",
    "quality_measures",
    "run_sweep",
]

RESULTS = "results.parquet"
RECALL = "recall.parquet"
MEMORY = "memory.parquet"
PER_QUERY = "per_query.parquet"


# ----------------------------------------------------------------------------- data


def cap_dataset(
    dataset: BeirDataset, *, max_docs: int = 0, max_queries: int = 0, seed: int = 0
) -> tuple[BeirDataset, str]:
    """A smaller dataset: sampled judged queries, every document they judge, sampled others.

    Parameters
    ----------
    dataset : BeirDataset
    max_docs : int, default 0
        Documents to keep (0: all). Every judged document of the kept queries is kept even
        beyond the cap; the rest is a uniform sample.
    max_queries : int, default 0
        Judged queries to keep (0: all), sampled uniformly.
    seed : int

    Returns
    -------
    dataset : BeirDataset
        Same path and name; ``meta["cap"]`` records the cap.
    note : str
        A sentence stating the cap (empty when nothing was cut).
    """
    rng = np.random.default_rng(seed)
    qrels = dataset.qrels
    judged = list(dict.fromkeys(qrels["query_id"]))
    notes = []
    if max_queries and len(judged) > max_queries:
        keep_q = set(rng.choice(np.asarray(judged, dtype=object), max_queries, replace=False))
        qrels = qrels[qrels["query_id"].isin(keep_q)].reset_index(drop=True)
        notes.append(f"{max_queries} of {len(judged)} judged queries (sampled, seed {seed})")
    corpus = dataset.corpus
    if max_docs and len(corpus) > max_docs:
        must = set(qrels["doc_id"])
        is_must = corpus["doc_id"].isin(must).to_numpy()
        others = np.flatnonzero(~is_must)
        n_more = max(0, max_docs - int(is_must.sum()))
        pick = rng.choice(others, min(n_more, len(others)), replace=False)
        keep = is_must.copy()
        keep[pick] = True
        corpus = corpus[keep].reset_index(drop=True)
        notes.append(
            f"{len(corpus)} of {len(dataset.corpus)} documents (every judged document of the "
            f"kept queries, {int(is_must.sum())}, plus a uniform sample; seed {seed})"
        )
    if not notes:
        return dataset, ""
    meta = {**dataset.meta, "cap": {"max_docs": max_docs, "max_queries": max_queries, "seed": seed}}
    capped = BeirDataset(
        dataset.path, dataset.name, dataset.split, corpus, dataset.queries, qrels, meta
    )
    return capped, "Capped for time: " + "; ".join(notes) + "."


# ----------------------------------------------------------------------------- result


@dataclass
class SweepResult:
    """What a sweep produced (the tables also live in ``out_dir``).

    Attributes
    ----------
    results : DataFrame
        One row per configuration of the grid on this dataset (also earlier runs' rows): the
        configuration's fields (see :class:`SweepConfig`), ``config_id``, ``label``,
        ``family``, ``dataset_key``; quality (the measures of :func:`quality_measures`,
        ``quality`` = the headline measure, ``proc``, ``pct_proc`` and ``proc_<measure>``);
        latency in ms (``rewrite_*``, ``embed_p50_ms``, ``embed_p95_ms``, ``search_*``,
        ``rerank_*``, ``latency_p50_ms``, ``latency_p95_ms``, over queries after warm-up); index
        ``build_seconds`` and memory bytes (``mem_vectors``, ``mem_graph``, ``mem_total``,
        ``est_1m_total``, ``est_10m_total``); cost in US dollars per 1,000 queries
        (``cost_*_usd``, see :meth:`ragnb.studies.clq.cost.CostModel.per_1k`); token means
        (``tokens_per_candidate``, ``chunk_tokens``); ``mean_pool`` and ``escalated``
        (dynamic K); ``rewriter`` and, for rewritten configurations, ``rewrite_input_tokens``,
        ``rewrite_output_tokens`` (LLM, per query) and ``rewritten_share``; ``n_queries``,
        ``n_chunks``.
    recall : DataFrame
        Approximate-search recall of the exact top K against efSearch, per index:
        ``index_label``, ``index``, ``backend``, ``embedder``, ``dim``, ``chunker``, ``k``,
        ``ef_search``, ``recall``, ``latency_ms_p50``, ``latency_ms_p95``.
    memory : DataFrame
        Per index, :func:`ragnb.studies.clq.index_measures.memory_table` rows with the index's
        identity.
    per_query : DataFrame
        ``config_id``, ``query_id``, ``total_ms``, the headline measure ``quality``.
    n_evaluated : int
        Configurations measured by this call.
    n_skipped : int
        Configurations found already finished in ``out_dir``.
    n_index_builds : int
        Indexes built by this call.
    n_embedded_texts : int
        Texts the embedding backends embedded by this call (cache misses).
    notes : list of str
    """

    grid: SweepGrid
    out_dir: Path
    dataset_key: str
    results: pd.DataFrame
    recall: pd.DataFrame
    memory: pd.DataFrame
    per_query: pd.DataFrame
    quality: str
    graded: bool
    n_evaluated: int = 0
    n_skipped: int = 0
    n_index_builds: int = 0
    n_embedded_texts: int = 0
    evaluated_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- the sweep


def run_sweep(
    grid: SweepGrid,
    dataset: BeirDataset,
    out_dir: str | os.PathLike[str],
    *,
    executor: Executor | str | None = None,
    cost: CostModel | None = None,
    cache_dir: str | None = None,
    grade_map: str = "auto",
    quality: str = "auto",
    warmup: int = 3,
    resume: bool = True,
    reranker_options: dict[str, dict[str, Any]] | None = None,
    recall_ks: Sequence[int] | None = None,
    on_config_done: Callable[[SweepConfig, dict[str, Any]], None] | None = None,
    evidence_dir: str | None = None,
    seed: int = 0,
    rewrite_judge: Any = None,
    nugget_qrels: pd.DataFrame | None = None,
) -> SweepResult:
    """Measure every configuration of ``grid`` on ``dataset``, resuming from ``out_dir``.

    Parameters
    ----------
    grid : SweepGrid
    dataset : BeirDataset
        Already capped if wanted (:func:`cap_dataset`).
    out_dir : str or PathLike
        Sweep folder: ``results.parquet``, ``per_query.parquet``, ``recall.parquet``,
        ``memory.parquet``, ``grid.yaml``, ``embeddings/``.
    executor : Executor or {"serial", "thread", "ray"}, optional
        Builds embeddings and indexes (default :class:`SerialExecutor`); timing is serial.
        ``"ray"``: :mod:`.ray_executor` (Ray Data and tasks, same folder and cache).
    cost : CostModel, optional
        Default: the shipped price table and its machine price.
    cache_dir : str, optional
        Embedding cache folder (default ``$RAGNB_CACHE_DIR`` or ``~/.cache/ragnb``).
    grade_map : str
        As notebook 01 (:func:`ragnb.measures.resolve_grade_map`): ``"auto"`` maps 0-2 and
        0-3 grades onto 1-5 and leaves binary qrels without graded measures.
    quality : str
        Headline measure: ``"auto"`` (RA-nWG@10 on graded data, else nDCG@10) or one of
        :func:`quality_measures`.
    warmup : int
        Untimed queries before each timed loop.
    resume : bool
        Skip configurations already in ``results.parquet`` (False: measure all, append).
    reranker_options : dict, optional
        Keyword arguments per reranker spec (:func:`ragnb.rerank.make_reranker`).
    recall_ks : sequence of int, optional
        K values of the recall-vs-efSearch curves; default the grid's pool sizes.
    on_config_done : callable, optional
        Called with ``(config, row)`` after each configuration is saved.
    evidence_dir : str, optional
        SciFact's release (the ``raw/`` folder,
        :func:`ragnb.studies.clq.evidence.scifact_evidence`): chunks are cut on its sentences and
        also scored at chunk level (``evidence_nDCG@10``, ``evidence_P@10``;
        :func:`ragnb.studies.clq.evidence.chunk_qrels`).
    seed : int
    rewrite_judge : ChatClient, optional
        The LLM client of the grid's ``"llm"`` rewriters (see ``SweepState.prepare_rewrites``).
    nugget_qrels : DataFrame, optional
        :func:`ragnb.judge.nuggets.read_nugget_qrels`: adds the four ``NuggetRecall`` at 10
        (passages never assessed support no nugget); ``quality`` may name one.

    Returns
    -------
    SweepResult

    Raises
    ------
    InputError
        On an invalid grid, quality measure or grade map, or ``"llm"`` without ``rewrite_judge``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cost is None:
        cost = CostModel()
    sw = SweepState(
        grid,
        dataset,
        out,
        executor=make_executor(executor),
        cost=cost,
        cache_dir=cache_dir,
        grade_map=grade_map,
        quality=quality,
        warmup=warmup,
        reranker_options=reranker_options or {},
        evidence_dir=evidence_dir,
        seed=seed,
        nugget_qrels=nugget_qrels,
    )
    grid.to_yaml(out / "grid.yaml")
    configs = grid.expand()
    todo, bad_dims = _prepare(sw, configs, resume)
    sw.prepare_rewrites([c.rewriter for c in todo], rewrite_judge)
    recall, memory = _measure_indexes(sw, sorted(set(recall_ks or grid.pool_ks)))
    evaluated = _measure_all(sw, todo, _saver(sw, on_config_done))
    notes = list(sw.notes) + list(cost.notes)
    if bad_dims:
        notes.append(f"skipped dimensions above the model's: {sorted(bad_dims)}")
    return SweepResult(
        grid=grid,
        out_dir=out,
        dataset_key=sw.dataset_key,
        results=_finished_rows(sw, configs),
        recall=_this_dataset(recall, sw.dataset_key),
        memory=_this_dataset(memory, sw.dataset_key),
        per_query=_this_dataset(read_parquet(out / PER_QUERY), sw.dataset_key),
        quality=sw.quality,
        graded=sw.grade_map is not None,
        n_evaluated=len(evaluated),
        n_skipped=len(configs) - len(todo),
        n_index_builds=sw.n_index_builds,
        n_embedded_texts=sw.n_embedded,
        evaluated_ids=evaluated,
        notes=notes,
        provenance=_provenance(sw),
    )


def _prepare(
    sw: SweepState, configs: list[SweepConfig], resume: bool
) -> tuple[list[SweepConfig], set[tuple[Any, ...]]]:
    """The configurations still to measure, with their embeddings and indexes built.

    Skips the configurations already in ``results.parquet`` for this dataset (``resume``) and
    those whose dimension is above the model's. Returns (to measure, skipped embedding keys).
    """
    done = read_parquet(sw.out_dir / RESULTS)
    finished: set[str] = set()
    if resume and len(done):
        finished = set(done.loc[done["dataset_key"] == sw.dataset_key, "config_id"])
    todo = [c for c in configs if c.config_id not in finished]
    if isinstance(sw.executor, RayExecutor):  # the corpora into the cache, on the cluster
        sw.executor.embed_corpora(sw, todo)
    # skip dimensions larger than the model's
    dense = [c for c in todo if c.dense]
    sw.prepare_embeddings(list(dict.fromkeys(c.embedding_key for c in dense)))
    bad_dims = {k for k in sw.vectors if k[1] and sw.vectors[k].shape[1] < k[1]}
    todo = [c for c in todo if not (c.dense and c.embedding_key in bad_dims)]
    sw.prepare_indexes([c.index_key for c in todo if c.dense])
    return todo, bad_dims


def _measure_indexes(sw: SweepState, ks: list[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recall vs efSearch and memory, once per index and dataset (appended to
    ``recall.parquet`` and ``memory.parquet``). Returns both tables as stored."""
    recall = read_parquet(sw.out_dir / RECALL)
    memory = read_parquet(sw.out_dir / MEMORY)
    have_r = set(recall["index_id"]) if len(recall) else set()
    have_m = set(memory["index_id"]) if len(memory) else set()
    for key in sw.indexes:
        iid = fingerprint(key, sw.dataset_key)
        if iid not in have_r:
            rows = recall_rows(sw, key, ks)
            if len(rows):
                recall = append_parquet(rows, sw.out_dir / RECALL)
        if iid not in have_m:
            memory = append_parquet(memory_rows(sw, key), sw.out_dir / MEMORY)
    return recall, memory


def _saver(
    sw: SweepState, on_config_done: Callable[[SweepConfig, dict[str, Any]], None] | None
) -> Callable[[SweepConfig, dict[str, Any], pd.DataFrame], None]:
    """Appends one configuration's rows to the sweep folder, then reports it."""

    def save(cfg: SweepConfig, row: dict[str, Any], per_query: pd.DataFrame) -> None:
        append_parquet(per_query, sw.out_dir / PER_QUERY)
        append_parquet(pd.DataFrame([row]), sw.out_dir / RESULTS)
        if on_config_done is not None:
            on_config_done(cfg, row)

    return save


def _measure_all(
    sw: SweepState,
    todo: list[SweepConfig],
    save: Callable[[SweepConfig, dict[str, Any], pd.DataFrame], None],
) -> list[str]:
    """Measure each configuration in turn, saving its rows before the next one starts (an
    interruption loses at most one configuration), or as Ray tasks (:class:`RayExecutor`).
    Returns the measured config ids."""
    if isinstance(sw.executor, RayExecutor):
        return sw.executor.measure_all(sw, todo, save)
    evaluated = []
    for cfg in todo:
        row, per_query = measure_config(sw, cfg)
        save(cfg, row, per_query)
        evaluated.append(cfg.config_id)
    return evaluated


def _provenance(sw: SweepState) -> dict[str, Any]:
    """What the sweep measured: dataset summary, grade map, prices, grid, dataset key."""
    return {
        "dataset": sw.dataset.summary(),
        "grade_map": sw.grade_map,
        "cost": sw.cost.describe(),
        "grid": sw.grid.to_dict(),
        "dataset_key": sw.dataset_key,
        "rewriters": {name: rw.model or name for name, rw in sw.rewrites.items()},
    }


def _this_dataset(frame: pd.DataFrame, dataset_key: str) -> pd.DataFrame:
    """The rows of ``frame`` measured on this dataset (an empty frame stays as it is)."""
    return frame[frame["dataset_key"] == dataset_key] if len(frame) else frame


def _finished_rows(sw: SweepState, configs: list[SweepConfig]) -> pd.DataFrame:
    """The grid's rows of ``results.parquet`` on this dataset, the last of each configuration."""
    results = read_parquet(sw.out_dir / RESULTS)
    ids = {c.config_id for c in configs}
    results = results[(results["dataset_key"] == sw.dataset_key) & results["config_id"].isin(ids)]
    for name, _ in DEFAULTED_AXES.values():  # rows stored before the axis: its default, ""
        if name in results.columns:
            results = results.assign(**{name: results[name].fillna("")})
    return results.drop_duplicates("config_id", keep="last").reset_index(drop=True)
