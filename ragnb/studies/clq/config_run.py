"""Measure one configuration of a CLQ sweep against the shared state of
:mod:`ragnb.studies.clq.state`.

:func:`measure_config` runs the stages in order, each a named step below: the query rewrite
(prepared once per rewriter by :meth:`ragnb.studies.clq.state.SweepState.prepare_rewrites`; its
per-query time and LLM tokens join the configuration's latency and cost), embed and search
(:func:`_retrieve`: dense search of the configuration's index, BM25, or both fused by reciprocal
rank fusion, with dynamic K), deduplicate and rerank (:func:`_rerank`), then measure the final run
at document level (:func:`_quality`), and derive the latency (:func:`_latency_columns`), index
(:func:`_index_columns`) and cost (:func:`_cost_columns`) columns. Latency is measured serially, one
configuration at a time, after warm-up queries, with :func:`time.perf_counter`. :func:`recall_rows`
and :func:`memory_rows` measure each index once per sweep.

References
----------
Dallaire, arXiv:2511.09545, sections 3.1-3.3 (what is metered and how), 3.5 (the sweep) and 5.
Cormack, Clarke and Buettcher, SIGIR 2009 (reciprocal rank fusion, eq. 1).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ragnb.retrievers.fusion import fused_scores
from ragnb.studies.clq.cost import api_model
from ragnb.studies.clq.grid import DynamicK, SweepConfig
from ragnb.studies.clq.state import EVIDENCE_MEASURES, SweepState, fingerprint

__all__ = [
    "EF_VALUES",
    "measure_config",
    "memory_rows",
    "recall_rows",
]

#: efSearch values of the recall-vs-efSearch curves of the HNSW indexes.
EF_VALUES = (8, 16, 32, 64, 128, 256)

Ranked = list[tuple[int, float]]
"""A ranked list of (chunk row, score), best first."""


def _pct(values: Sequence[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else math.nan


# ----------------------------------------------------------------------------- embed, search, fuse


@dataclass
class _Pools:
    """The retrieval stages of one configuration, per query (arrays of shape (n_queries,)).

    Attributes
    ----------
    pools : list of Ranked
        Candidate pool per query, best first.
    embed_ms, search_ms : ndarray of float
        Milliseconds of the query embedding and of the search (plus fusion).
    escalated : ndarray of bool
        Whether dynamic K escalated the query's pool.
    index : VectorIndex or None
        The searched index (dense modes).
    vecs : ndarray of shape (n_chunks, dim) or None
        The chunk vectors behind it (dense modes).
    """

    pools: list[Ranked]
    embed_ms: np.ndarray
    search_ms: np.ndarray
    escalated: np.ndarray
    index: Any = None
    vecs: np.ndarray | None = None

    @property
    def sizes(self) -> np.ndarray:
        """Candidates per query (int)."""
        return np.asarray([len(p) for p in self.pools], dtype=int)


def _fuse(lists: list[Ranked], cfg: SweepConfig) -> Ranked:
    """Fusion of ranked (row, score) lists by :func:`ragnb.retrievers.fusion.fused_scores` with the
    configuration's method (RRF by default, Cormack et al. 2009, eq. 1); ties go to the smaller
    row."""
    rows = [[row for row, _ in ranked] for ranked in lists]
    scores = [[s for _, s in ranked] for ranked in lists]
    fused = fused_scores(rows, cfg.fusion_spec, scores=scores)
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))


def _hits(scores: np.ndarray, ids: np.ndarray) -> Ranked:
    """One query's index answer as (row, score), without the ``-1`` padding."""
    return [(int(r), float(x)) for r, x in zip(ids[0], scores[0], strict=True) if r >= 0]


def _dense_pool(
    index: Any, query: np.ndarray, cfg: SweepConfig, dyn: DynamicK | None, bm: Ranked | None
) -> tuple[Ranked, bool]:
    """Search one query (shape (1, dim)), escalate K when the top-1/top-2 margin is small
    (dynamic K), and fuse with the query's BM25 list in hybrid mode. Returns (pool, escalated)."""
    s, ids = index.search(query, max(cfg.pool_k, cfg.hybrid_depth))
    dense = _hits(s, ids)
    k = cfg.pool_k
    escalated = False
    if dyn is not None:
        margin = dense[0][1] - dense[1][1] if len(dense) > 1 else 1.0
        if margin < dyn.margin:
            escalated = True
            k = dyn.escalate_to
            if cfg.mode == "dense":
                s, ids = index.search(query, max(k, cfg.hybrid_depth))
                dense = _hits(s, ids)
    if cfg.mode == "hybrid":
        assert bm is not None  # set by _retrieve in hybrid mode (not user input)
        return _fuse([bm[: cfg.hybrid_depth], dense[: cfg.hybrid_depth]], cfg)[:k], escalated
    return dense[:k], escalated


def _retrieve(sw: SweepState, cfg: SweepConfig) -> _Pools:
    """Embed, search and fuse: every query's timed candidate pool.

    Dense modes search the configuration's index at its efSearch after untimed warm-up
    queries; the embedding time is the embedder's uncached per-query time
    (:meth:`SweepState.query_vectors`). BM25 times come from :meth:`SweepState.bm25_runs`;
    hybrid adds them to the dense search and fusion time.
    """
    n_q = len(sw.qids)
    dyn = sw.grid.dynamic_policy(cfg.dynamic) if cfg.dynamic else None
    max_k = dyn.escalate_to if dyn else cfg.pool_k
    out = _Pools([], np.zeros(n_q), np.zeros(n_q), np.zeros(n_q, dtype=bool))
    if cfg.dense:
        qv = sw.query_vectors(cfg.embedder, cfg.dim, cfg.rewriter)
        out.embed_ms = sw.embed_ms[sw.query_key(cfg.embedder, cfg.dim, cfg.rewriter)]
        out.vecs = sw.vectors[cfg.embedding_key]
        out.index = sw.indexes[cfg.index_key]
        out.index.set_ef_search(cfg.ef_search or sw.grid.ef_search)
    bm: list[Ranked] | None = None
    if cfg.mode in ("bm25", "hybrid"):
        depth = cfg.hybrid_depth if cfg.mode == "hybrid" else max_k
        bm, bm_ms = sw.bm25_runs(cfg.chunker, max(depth, max_k), cfg.rewriter)
    if cfg.dense:
        for i in range(min(sw.warmup, n_q)):  # warm-up: caches, allocator, lazy inits
            out.index.search(qv[i : i + 1], max(max_k, cfg.hybrid_depth))
    for i in range(n_q):
        if cfg.dense:
            bm_i = bm[i] if bm is not None else None
            t0 = time.perf_counter()
            pool, out.escalated[i] = _dense_pool(out.index, qv[i : i + 1], cfg, dyn, bm_i)
            out.search_ms[i] = (time.perf_counter() - t0) * 1000
            if cfg.mode == "hybrid":
                out.search_ms[i] += bm_ms[i]
        else:
            assert bm is not None  # bm25 mode (not user input)
            pool = bm[i][: cfg.pool_k]
            out.search_ms[i] = bm_ms[i]
        out.pools.append(pool)
    return out


# ----------------------------------------------------------------------------- dedup, rerank


@dataclass
class _Reranked:
    """The rerank stage of one configuration, per query.

    Attributes
    ----------
    finals : list of Ranked
        Final ranking per query (the pool itself without a reranker).
    rerank_ms : ndarray of float
        Milliseconds of deduplication and reranking (plus, for a rescoring reranker, its
        uncached query embedding).
    input_tokens : ndarray of float
        Estimated reranker input tokens per query (candidates x query tokens + chunk tokens).
    used_tokens : dict of str to float
        ``input_tokens`` and ``output_tokens`` the reranker reported over the timed loop.
    """

    finals: list[Ranked]
    rerank_ms: np.ndarray
    input_tokens: np.ndarray
    used_tokens: dict[str, float]


def _warm_reranker(sw: SweepState, cfg: SweepConfig, reranker: Any, pools: list[Ranked]) -> None:
    """Untimed: fill a rescoring embedder's cache with every candidate (its vectors are
    precomputed at indexing time; its query embedding time is added by :func:`_rerank`);
    other rerankers warm up on a few queries."""
    chunks = sw.chunk(cfg.chunker)
    chunk_ids = chunks["chunk_id"].astype(str).to_numpy()
    texts = chunks["text"].astype(str).to_numpy()
    queries = sw.texts(cfg.rewriter)
    key = (cfg.reranker, cfg.chunker) + ((cfg.rewriter,) if cfg.rewriter else ())
    if cfg.reranker.startswith("rescore:") and key not in sw.prewarmed:
        reranker.embedder.embed(texts.tolist(), kind="passage")
        reranker.embedder.embed(queries, kind="query")
        sw.prewarmed.add(key)
    for i in range(min(sw.warmup, len(pools))):
        cands = [(str(chunk_ids[r]), str(texts[r])) for r, _ in pools[i]]
        reranker.rerank(queries[i], cands, top_n=len(cands))


def _rerank(sw: SweepState, cfg: SweepConfig, pools: _Pools) -> _Reranked:
    """Near-duplicate suppression and reranking, per query, timed."""
    chunks = sw.chunk(cfg.chunker)
    chunk_ids = chunks["chunk_id"].astype(str).to_numpy()
    texts = chunks["text"].astype(str).to_numpy()
    ctoks = sw.chunk_tokens[cfg.chunker]
    n_q = len(sw.qids)
    queries, qtoks = sw.texts(cfg.rewriter), sw.tokens(cfg.rewriter)
    reranker = sw.reranker(cfg.reranker)
    if reranker is not None:
        _warm_reranker(sw, cfg, reranker, pools.pools)
    before = dict(reranker.usage()) if reranker is not None else {}
    out = _Reranked([], np.zeros(n_q), np.zeros(n_q), {})
    for i in range(n_q):
        pool = pools.pools[i]
        t0 = time.perf_counter()
        if cfg.dedup and pools.vecs is not None and reranker is not None:
            pool = _dedup(pool, pools.vecs, cfg.dedup)
        if reranker is not None and pool:
            cands = [(str(chunk_ids[r]), str(texts[r])) for r, _ in pool]
            row_of = {str(chunk_ids[r]): r for r, _ in pool}
            ranked = reranker.rerank(queries[i], cands, top_n=len(cands))
            final = [(row_of[d], float(s)) for d, s in ranked]
            out.rerank_ms[i] = (time.perf_counter() - t0) * 1000
            out.input_tokens[i] = len(pool) * qtoks[i] + float(ctoks[[r for r, _ in pool]].sum())
        else:
            final = pool
            out.rerank_ms[i] = (time.perf_counter() - t0) * 1000 if cfg.dedup else 0.0
        out.finals.append(final)
    after = dict(reranker.usage()) if reranker is not None else {}
    out.used_tokens = {
        k: after.get(k, 0) - before.get(k, 0) for k in ("input_tokens", "output_tokens")
    }
    if cfg.reranker.startswith("rescore:"):
        # the candidates' vectors of the second embedder are computed at indexing time (and
        # came from the cache above), but each query must be embedded by it at query time:
        # its uncached per-query time is part of the rerank stage
        second = cfg.reranker.removeprefix("rescore:")
        sw.query_vectors(second, 0, cfg.rewriter)
        out.rerank_ms = out.rerank_ms + sw.embed_ms[sw.query_key(second, 0, cfg.rewriter)]
    return out


# ----------------------------------------------------------------------------- quality


def _dedup(pool: Ranked, vecs: np.ndarray, threshold: float) -> Ranked:
    """Near-duplicate suppression through :func:`ragnb.rerank.suppress_near_duplicates`."""
    from ragnb.rerank import suppress_near_duplicates

    run = pd.DataFrame(
        {"query_id": "q", "doc_id": [str(r) for r, _ in pool], "score": [s for _, s in pool]}
    )
    rows = [r for r, _ in pool]
    kept = suppress_near_duplicates(run, {str(r): vecs[r] for r in rows}, threshold=threshold)
    keep = set(kept["doc_id"].astype(str))
    return [(r, s) for r, s in pool if str(r) in keep]


def _chunk_run(sw: SweepState, lists: list[Ranked], chunk_ids: np.ndarray) -> pd.DataFrame:
    """The chunk-level run of per-query ranked lists (scores from the order)."""
    qs, ds, ss = [], [], []
    for qid, ranked in zip(sw.qids, lists, strict=True):
        n = len(ranked)
        qs += [qid] * n
        ds += [str(chunk_ids[r]) for r, _ in ranked]
        # scores from the ranking's order, so ties cannot reorder it
        ss += [float(n - j) for j in range(n)]
    return pd.DataFrame({"query_id": qs, "doc_id": ds, "score": ss})


def _quality(
    sw: SweepState,
    cfg: SweepConfig,
    chunks: pd.DataFrame,
    pools: list[Ranked],
    finals: list[Ranked],
) -> dict[str, Any]:
    """Measures of the final run and PROC/%PROC of the pool, at document level (best chunk);
    with evidence sentences, also the chunk-level run against chunk qrels (``evidence_*``)."""
    from ragnb.evaluation.evaluate import evaluate
    from ragnb.measures.proc import proc_table
    from ragnb.studies.clq.chunking import collapse_to_documents

    chunk_ids = chunks["chunk_id"].astype(str).to_numpy()
    final_run = collapse_to_documents(_chunk_run(sw, finals, chunk_ids), chunks)
    pool_run = collapse_to_documents(_chunk_run(sw, pools, chunk_ids), chunks)
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out.update(evaluate(sw.qrels, final_run, sw.measures["binary"]).aggregate_to_dict())
        if sw.graded_qrels is not None:
            graded = evaluate(sw.graded_qrels, final_run, sw.measures["graded"])
            out.update(graded.aggregate_to_dict())
        if sw.nugget_qrels is not None:
            nuggets = evaluate(sw.nugget_qrels, final_run, sw.measures["nuggets"])
            out.update(nuggets.aggregate_to_dict())
        depth = max(cfg.pool_k, int(pool_run.groupby("query_id").size().max() or 1))
        for qrels, names in ((sw.qrels, ["nDCG@10"]), (sw.graded_qrels, sw.measures["graded"])):
            if qrels is None or not names:
                continue
            table = proc_table(qrels, final_run, names, depth, pool_run=pool_run).table
            for _, r in table.iterrows():
                out[f"proc_{r['measure']}"] = float(r["proc"])
                out[f"pct_proc_{r['measure']}"] = float(r["pct_proc"])
    if cfg.chunker in sw.chunk_qrels:
        chunk_run = _chunk_run(sw, finals, chunk_ids)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            at_chunks = evaluate(sw.chunk_qrels[cfg.chunker], chunk_run, EVIDENCE_MEASURES)
        for name, value in at_chunks.aggregate_to_dict().items():
            out[f"evidence_{name}"] = value
    out["quality"] = out[sw.quality]
    out["proc"] = out.get(f"proc_{sw.quality}", math.nan)
    out["pct_proc"] = out.get(f"pct_proc_{sw.quality}", math.nan)
    return out


# ----------------------------------------------------------------------------- recall vs ef


def recall_rows(sw: SweepState, key: tuple[Any, ...], ks: list[int]) -> pd.DataFrame:
    """Recall of the exact top K against efSearch for one index (none for flat).

    Parameters
    ----------
    sw : SweepState
        The sweep's state (its vectors, indexes and grid).
    key : tuple
        The index: (embedder, dim, chunker, kind, backend, M, efConstruction).
    ks : list of int
        The cutoffs K.

    Returns
    -------
    DataFrame
        The rows of :func:`ragnb.studies.clq.index_measures.recall_vs_ef` with the index's identity
        (columns in :attr:`ragnb.studies.clq.sweep.SweepResult.recall`); empty for a flat index.
    """
    from ragnb.studies.clq.index_measures import exact_top_k, recall_vs_ef

    name, dim, chunker, kind, backend, m, efc = key
    index = sw.indexes[key]
    if kind == "flat":
        return pd.DataFrame()
    vecs = sw.vectors[(name, dim, chunker)]
    qv = sw.query_vectors(name, dim)
    parts = []
    for k in ks:
        k = min(k, vecs.shape[0])
        _, exact = exact_top_k(vecs, qv, k)
        efs = list(EF_VALUES) if index.is_hnsw else [sw.grid.ef_search]
        frame = recall_vs_ef(index, qv, exact, k, efs)
        parts.append(frame)
    out = pd.concat(parts, ignore_index=True)
    label = f"{name}/{dim or 'full'} {kind}" + ("" if backend == "faiss" else f"({backend})")
    out.insert(0, "index_label", label)
    for col, val in (
        ("index", kind),
        ("backend", backend),
        ("embedder", name),
        ("dim", dim),
        ("chunker", chunker),
        ("dataset_key", sw.dataset_key),
        ("index_id", fingerprint(key, sw.dataset_key)),
    ):
        out[col] = val
    index.set_ef_search(sw.grid.ef_search)
    return out


def memory_rows(sw: SweepState, key: tuple[Any, ...]) -> pd.DataFrame:
    """One index's :func:`ragnb.studies.clq.index_measures.memory_table` with its identity.

    Parameters
    ----------
    sw : SweepState
        The sweep's state.
    key : tuple
        The index: (embedder, dim, chunker, kind, backend, M, efConstruction).

    Returns
    -------
    DataFrame
        The memory table with ``index_label``, ``index_id``, ``dataset_key``, ``index`` and
        ``backend``.
    """
    from ragnb.studies.clq.index_measures import memory_table

    name, dim, chunker, kind, backend, m, efc = key
    index = sw.indexes[key]
    table = memory_table(index.dim, kind, measured=index, M=m or 16)
    table.insert(0, "index_label", f"{name}/{dim or 'full'} {kind} {chunker}")
    table["index_id"] = fingerprint(key, sw.dataset_key)
    table["dataset_key"] = sw.dataset_key
    table["index"] = kind
    table["backend"] = backend
    return table


# ----------------------------------------------------------------------------- latency, index, cost


def _latency_columns(
    embed_ms: np.ndarray, search_ms: np.ndarray, rerank_ms: np.ndarray, rewrite_ms: np.ndarray
) -> tuple[dict[str, float], np.ndarray]:
    """p50 and p95 per stage and end to end (ms), the mean end-to-end latency, and the
    per-query total (ms, shape (n_queries,)): rewrite + embed + search + rerank."""
    total_ms = rewrite_ms + embed_ms + search_ms + rerank_ms
    row: dict[str, float] = {}
    for stage, arr in (
        ("rewrite", rewrite_ms),
        ("embed", embed_ms),
        ("search", search_ms),
        ("rerank", rerank_ms),
        ("latency", total_ms),
    ):
        row[f"{stage}_p50_ms"] = _pct(arr, 50)
        row[f"{stage}_p95_ms"] = _pct(arr, 95)
    row["latency_mean_ms"] = float(total_ms.mean()) if len(total_ms) else math.nan
    return row, total_ms


def _index_columns(cfg: SweepConfig, index: Any, vecs: np.ndarray) -> dict[str, Any]:
    """Index facts: dimension, build seconds, measured memory bytes and the estimates at 1M
    and 10M vectors (:func:`ragnb.studies.clq.index_measures.memory_estimate`)."""
    from ragnb.studies.clq.index_measures import memory_estimate

    mem = index.memory_bytes()
    row: dict[str, Any] = {
        "vector_dim": int(vecs.shape[1]),
        "build_seconds": float(index.build_seconds or 0.0),
        "mem_vectors": int(mem["vectors"]),
        "mem_graph": int(mem["graph"]),
        "mem_total": int(mem["total"]),
    }
    for label, n in (("1m", 1_000_000), ("10m", 10_000_000)):
        est = memory_estimate(n, int(vecs.shape[1]), cfg.index, M=cfg.hnsw_m or 16)
        row[f"est_{label}_total"] = float(est["total"])
    return row


def _cost_columns(
    sw: SweepState, cfg: SweepConfig, pools: _Pools, reranked: _Reranked, latency_mean_ms: float
) -> dict[str, Any]:
    """Token means and the cost per 1,000 queries (:meth:`ragnb.studies.clq.cost.CostModel.per_1k`).

    An API reranker's input tokens are what it reported, else the estimate of
    :class:`_Reranked`; the generator reads the first ``generator_k`` final chunks. An LLM
    rewriter's tokens are priced by its model (``cost_rewrite_usd``); the query tokens an API
    embedder reads are those of the rewritten queries.
    """
    n_q = len(sw.qids)
    ctoks = sw.chunk_tokens[cfg.chunker]
    rr_model = api_model(cfg.reranker)
    api_in = api_out = 0.0
    if rr_model is not None and n_q:
        used_in = reranked.used_tokens["input_tokens"]
        used_out = reranked.used_tokens["output_tokens"]
        api_in = used_in / n_q if used_in > 0 else float(reranked.input_tokens.mean())
        api_out = max(0.0, used_out / n_q)
    gen_tokens = np.asarray(
        [float(ctoks[[r for r, _ in f[: sw.cost.generator_k]]].sum()) for f in reranked.finals]
    )
    row: dict[str, Any] = {
        "tokens_per_candidate": (
            float(reranked.input_tokens.sum() / max(1, pools.sizes.sum())) if rr_model else math.nan
        ),
        "chunk_tokens": float(ctoks.mean()) if len(ctoks) else math.nan,
        "generator_tokens": float(gen_tokens.mean()) if n_q else math.nan,
    }
    rw = sw.rewrites.get(cfg.rewriter) if cfg.rewriter else None
    row.update(
        sw.cost.per_1k(
            embedder=cfg.embedder,
            reranker=cfg.reranker,
            query_tokens=float(np.mean(sw.tokens(cfg.rewriter))) if cfg.dense else 0.0,
            rerank_input_tokens=api_in,
            rerank_output_tokens=api_out,
            local_seconds=latency_mean_ms / 1000.0,
            generator_tokens=row["generator_tokens"],
            rewriter_model=rw.model if rw is not None else None,
            rewrite_input_tokens=float(rw.input_tokens.mean()) if rw is not None and n_q else 0.0,
            rewrite_output_tokens=(
                float(rw.output_tokens.mean()) if rw is not None and n_q else 0.0
            ),
        )
    )
    if rw is not None:
        row["rewrite_input_tokens"] = float(rw.input_tokens.mean()) if n_q else math.nan
        row["rewrite_output_tokens"] = float(rw.output_tokens.mean()) if n_q else math.nan
        changed = [a != b for a, b in zip(rw.texts, sw.qtexts, strict=True)]
        row["rewritten_share"] = float(np.mean(changed)) if n_q else math.nan
    return row


# ----------------------------------------------------------------------------- one configuration


def measure_config(sw: SweepState, cfg: SweepConfig) -> tuple[dict[str, Any], pd.DataFrame]:
    """Measure one configuration: timed retrieval and reranking, then quality, PROC, cost.

    Parameters
    ----------
    sw : SweepState
        The sweep's shared state; the configuration's embeddings, index and rewrites must be
        prepared (:meth:`SweepState.prepare_embeddings`, :meth:`SweepState.prepare_indexes`,
        :meth:`SweepState.prepare_rewrites`).
    cfg : SweepConfig

    Returns
    -------
    row : dict
        One row of ``results.parquet`` (columns listed in
        :class:`ragnb.studies.clq.sweep.SweepResult`).
    per_query : DataFrame
        ``config_id``, ``dataset_key``, ``query_id``, ``total_ms`` (end-to-end milliseconds).
    """
    chunks = sw.chunk(cfg.chunker)
    n_q = len(sw.qids)
    pools = _retrieve(sw, cfg)
    reranked = _rerank(sw, cfg, pools)
    row: dict[str, Any] = {**cfg.as_row(), "dataset_key": sw.dataset_key}
    row.update(_quality(sw, cfg, chunks, pools.pools, reranked.finals))
    rewrite_ms = sw.rewrites[cfg.rewriter].ms if cfg.rewriter else np.zeros(n_q)
    latency, total_ms = _latency_columns(
        pools.embed_ms, pools.search_ms, reranked.rerank_ms, rewrite_ms
    )
    row.update(latency)
    if cfg.dense:
        assert pools.vecs is not None  # set with the index when cfg.dense (not user input)
        row.update(_index_columns(cfg, pools.index, pools.vecs))
    row.update(_cost_columns(sw, cfg, pools, reranked, row["latency_mean_ms"]))
    row["mean_pool"] = float(pools.sizes.mean()) if n_q else math.nan
    row["escalated"] = float(pools.escalated.mean()) if cfg.dynamic else math.nan
    row["n_queries"] = n_q
    row["n_chunks"] = len(chunks)
    row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    per_query = pd.DataFrame(
        {
            "config_id": cfg.config_id,
            "dataset_key": sw.dataset_key,
            "query_id": sw.qids,
            "total_ms": total_ms,
        }
    )
    return row, per_query
