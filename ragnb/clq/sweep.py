"""Run a cost-latency-quality sweep: resumable, cached, one timed configuration at a time.

Data flows one way: a BEIR dataset (optionally capped) -> chunks per chunker -> embeddings per
(embedder, dim, chunker) -> an index per (..., kind, backend, graph parameters) -> for each
:class:`~ragnb.clq.grid.SweepConfig`: timed retrieval, optional near-duplicate suppression and
reranking per query -> the chunk run collapsed to documents (best chunk) -> measures, PROC,
latency, cost -> one row appended to ``results.parquet``.

Resumable: every finished configuration is appended atomically (read, concat, write a temporary
file, rename), so an interruption loses at most the configuration being measured; on restart
the configurations whose ``(config_id, dataset_key)`` is already in the table are skipped.
Embeddings go through :class:`ragnb.embed.CachedEmbedder` (SQLite) and are also kept as ``.npy``
files under ``<out_dir>/embeddings``; indexes are rebuilt in memory once per run and shared by
every configuration that searches them.

Building embeddings and indexes may use an :class:`Executor` (serial by default, a thread pool
with :class:`ThreadExecutor`; the protocol is ``map(fn, items) -> list`` so a Dask or Ray
client can stand in for large corpora). Latency is always measured serially, one configuration
at a time, after warm-up queries, with :func:`time.perf_counter`.

References
----------
Dallaire, arXiv:2511.09545, sections 3.1-3.3 (what is metered and how), 3.5 (the sweep) and 5.
Zou et al., "SPEAR", arXiv:2507.06554, section 3.2.1 (staged strategy search:
:func:`staged_search`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ragnb.clq.cost import CostModel, api_model, count_texts, load_prices
from ragnb.clq.grid import SweepConfig, SweepGrid
from ragnb.errors import InputError
from ragnb.io import BeirDataset, atomic_write, read_parquet, write_parquet
from ragnb.params import NotebookParams, resolve_path
from ragnb.validation import l2_normalise

__all__ = [
    "ClqTradeoffsConfig",
    "Executor",
    "SerialExecutor",
    "SweepResult",
    "ThreadExecutor",
    "ClqReport",
    "cap_dataset",
    "clq_tradeoffs",
    "memory_summary",
    "report_markdown",
    "results_table",
    "quality_measures",
    "read_parquet",
    "run_sweep",
    "staged_search",
    "write_parquet",
]

RESULTS = "results.parquet"
RECALL = "recall.parquet"
MEMORY = "memory.parquet"
EF_VALUES = (8, 16, 32, 64, 128, 256)


# ----------------------------------------------------------------------------- executors


class Executor(Protocol):
    """Runs ``fn`` over ``items`` and returns the results in order (build stages only)."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]: ...


class SerialExecutor:
    """One item after another, in this process."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        return [fn(x) for x in items]


class ThreadExecutor:
    """A thread pool (numpy, faiss and ONNX release the GIL).

    Parameters
    ----------
    max_workers : int, default 2
    """

    def __init__(self, max_workers: int = 2) -> None:
        self.max_workers = max_workers

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(fn, items))


# ----------------------------------------------------------------------------- parquet


def _append_parquet(path: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """Read, concatenate, write a temporary file, rename: a kill loses only ``rows``."""
    old = read_parquet(path)
    frames = [f for f in (old, rows) if len(f)]
    new = pd.concat(frames, ignore_index=True) if frames else rows
    write_parquet(new, path)
    return new


# ----------------------------------------------------------------------------- data


def _fingerprint(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


#: Measures of the chunk-level run against chunk qrels from evidence sentences (SciFact).
EVIDENCE_MEASURES = ["nDCG@10", "P@10"]


def quality_measures(graded: bool) -> dict[str, list[str]]:
    """The measures of a sweep: on the original qrels, and (graded data) on 1-5 grades.

    Returns
    -------
    dict
        ``{"binary": [...], "graded": [...]}``; ``graded`` is empty for binary data.
    """
    out = {"binary": ["nDCG@10", "R@100"], "graded": []}
    if graded:
        out["graded"] = ["RA-nWG@10", "RA-nWG@30", "N-Recall4+@10", "N-Recall4+@30"]
    return out


def _pct(values: Sequence[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else math.nan


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
        latency in ms (``embed_p50_ms``, ``embed_p95_ms``, ``search_*``, ``rerank_*``,
        ``latency_p50_ms``, ``latency_p95_ms``, over queries after warm-up); index
        ``build_seconds`` and memory bytes (``mem_vectors``, ``mem_graph``, ``mem_total``,
        ``est_1m_total``, ``est_10m_total``); cost in US dollars per 1,000 queries
        (``cost_*_usd``, see :meth:`ragnb.clq.cost.CostModel.per_1k`); token means
        (``tokens_per_candidate``, ``chunk_tokens``); ``mean_pool`` and ``escalated``
        (dynamic K); ``n_queries``, ``n_chunks``.
    recall : DataFrame
        Approximate-search recall of the exact top K against efSearch, per index:
        ``index_label``, ``index``, ``backend``, ``embedder``, ``dim``, ``chunker``, ``k``,
        ``ef_search``, ``recall``, ``latency_ms_p50``, ``latency_ms_p95``.
    memory : DataFrame
        Per index, :func:`ragnb.clq.indexes.memory_table` rows with the index's identity.
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


# ----------------------------------------------------------------------------- context


class _Sweep:
    """State shared by the configurations of one sweep call (chunks, vectors, indexes)."""

    def __init__(
        self,
        grid: SweepGrid,
        dataset: BeirDataset,
        out_dir: Path,
        *,
        executor: Executor,
        cost: CostModel,
        cache_dir: str | None,
        grade_map: str,
        quality: str,
        warmup: int,
        reranker_options: dict[str, dict[str, Any]],
        evidence_dir: str | None,
        seed: int,
    ) -> None:
        from ragnb.measures import map_grades, resolve_grade_map

        self.grid = grid
        self.dataset = dataset
        self.out_dir = out_dir
        self.executor = executor
        self.cost = cost
        self.cache_dir = cache_dir
        self.warmup = warmup
        self.reranker_options = reranker_options
        self.evidence_dir = evidence_dir
        self.seed = seed
        self.notes: list[str] = []
        self.evidence: dict[tuple[str, str], set[int]] | None = None
        self.sentences: dict[str, list[str]] | None = None
        self.chunk_qrels: dict[str, pd.DataFrame] = {}
        if evidence_dir:
            from ragnb.clq.chunking import scifact_evidence

            evidence, sentences = scifact_evidence(evidence_dir)
            judged = set(zip(dataset.qrels["query_id"], dataset.qrels["doc_id"], strict=True))
            self.evidence = {pair: idx for pair, idx in evidence.items() if pair in judged}
            ids = set(dataset.corpus["doc_id"].astype(str))
            self.sentences = {d: sents for d, sents in sentences.items() if d in ids}
            relevant = int((dataset.qrels["relevance"] > 0).sum())
            self.notes.append(
                f"Evidence sentences from {evidence_dir}: {len(self.evidence)} of {relevant} "
                "relevant (query, document) pairs mark where the evidence is, so a chunk is "
                "relevant when it holds an evidence sentence (`evidence_nDCG@10`, "
                "`evidence_P@10`, chunk level); the other pairs fall back to document level "
                "(every chunk of the document keeps its grade)."
            )
        self.queries = dataset.judged_queries
        self.qids = self.queries["query_id"].astype(str).tolist()
        self.qtexts = self.queries["text"].astype(str).tolist()
        self.qrels = dataset.qrels
        gm = resolve_grade_map(grade_map, dataset.qrels)
        self.grade_map = gm
        self.graded_qrels = None if gm is None else map_grades(dataset.qrels, gm[1])
        self.measures = quality_measures(gm is not None)
        if quality == "auto":
            quality = "RA-nWG@10" if gm is not None else "nDCG@10"
        available = self.measures["binary"] + self.measures["graded"]
        if quality not in available:
            raise InputError(
                f"quality measure {quality!r} is not measured on this dataset; use one of "
                f"{available}",
                column="quality",
            )
        self.quality = quality
        self.query_tokens = count_texts(self.qtexts)
        self.chunks: dict[str, pd.DataFrame] = {}
        self.chunk_tokens: dict[str, np.ndarray] = {}
        self.vectors: dict[tuple[Any, ...], np.ndarray] = {}
        self.qvectors: dict[tuple[Any, ...], np.ndarray] = {}
        self.embed_ms: dict[tuple[str, int], np.ndarray] = {}
        self.indexes: dict[tuple[Any, ...], Any] = {}
        self.bm25: dict[str, Any] = {}
        self.rerankers: dict[str, Any] = {}
        self.prewarmed: set[tuple[str, str]] = set()
        self.n_index_builds = 0
        self.n_embedded = 0
        self.dataset_key = _fingerprint(
            dataset.name,
            dataset.split,
            len(dataset.corpus),
            len(self.qids),
            hashlib.sha256("\n".join(dataset.corpus["doc_id"].astype(str)).encode()).hexdigest(),
            dataset.meta.get("cap"),
        )

    # -------------------------------------------------------------- chunks

    def chunk(self, name: str) -> pd.DataFrame:
        if name not in self.chunks:
            from ragnb.clq.chunking import Chunker, chunk_corpus

            chunks = chunk_corpus(
                self.dataset.corpus, Chunker.parse(name), sentences=self.sentences
            ).reset_index(drop=True)
            self.chunks[name] = chunks
            if self.evidence is not None:
                from ragnb.clq.chunking import chunk_qrels

                self.chunk_qrels[name] = chunk_qrels(self.qrels, chunks, self.evidence)
            self.chunk_tokens[name] = np.asarray(count_texts(chunks["text"].astype(str)))
        return self.chunks[name]

    # -------------------------------------------------------------- embeddings

    def _embedder(self, name: str, dim: int) -> Any:
        from ragnb.embed.base import make_embedder

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            emb = make_embedder(name, dim=dim or None, cache_dir=self.cache_dir, progress=False)
        for w in caught:
            note = f"{name} at {dim}d: {w.message}"
            if note not in self.notes:
                self.notes.append(note)
        return emb

    def _embed_chunks(self, key: tuple[str, int, str]) -> tuple[np.ndarray, int]:
        name, dim, chunker = key
        path = self.out_dir / "embeddings" / f"{_fingerprint(key, self.dataset_key)}.npy"
        chunks = self.chunk(chunker)
        if path.exists():
            vecs = np.load(path)
            if vecs.shape[0] == len(chunks):
                return vecs, 0
        emb = self._embedder(name, dim)  # records a truncation warning in the notes
        if dim:
            # TruncatedEmbedder's arithmetic (first ``dim`` coordinates, L2-renormalised) on the
            # full vectors: one embedding pass serves every dimension of a model
            full, n = self._embed_chunks((name, 0, chunker))
            if dim > full.shape[1]:
                raise InputError(f"{name} has {full.shape[1]} dimensions; cannot keep {dim}")
            vecs = l2_normalise(full[:, :dim])
        else:
            vecs = l2_normalise(emb.embed(chunks["text"].astype(str).tolist(), kind="passage"))
            n = int(emb.backend.n_texts)
        with atomic_write(path, "wb") as f:
            np.save(f, vecs)
        return vecs, n

    def prepare_embeddings(self, keys: list[tuple[str, int, str]]) -> None:
        todo = [k for k in keys if k not in self.vectors]
        for c in {k[2] for k in todo}:
            self.chunk(c)  # chunk serially: the tasks share the frames
        for key, (vecs, n) in zip(todo, self.executor.map(self._embed_chunks, todo), strict=True):
            self.vectors[key] = vecs
            self.n_embedded += n

    def query_vectors(self, name: str, dim: int) -> np.ndarray:
        """Query vectors (cached) and, once per (embedder, dim), the per-query embedding time
        of the uncached backend, after warm-up."""
        key = (name, dim)
        if key not in self.qvectors and dim:
            # the full vectors cut and renormalised; the model's time is the full model's
            full = self.query_vectors(name, 0)
            self.qvectors[key] = l2_normalise(full[:, :dim])
            self.embed_ms[key] = self.embed_ms[(name, 0)]
        if key not in self.qvectors:
            emb = self._embedder(name, dim)
            self.qvectors[key] = l2_normalise(emb.embed(self.qtexts, kind="query"))
            self.n_embedded += int(emb.backend.n_texts)
            backend = emb.backend
            for text in self.qtexts[: self.warmup]:
                backend.embed([text], "query")
            times = []
            for text in self.qtexts:
                t0 = time.perf_counter()
                backend.embed([text], "query")
                times.append((time.perf_counter() - t0) * 1000)
            self.embed_ms[key] = np.asarray(times)
        return self.qvectors[key]

    # -------------------------------------------------------------- indexes

    def _build_index(self, key: tuple[Any, ...]) -> tuple[Any, bool]:
        """The index of ``key``: loaded from the sweep folder when an earlier run stored it
        (with its original build time), else built and stored. Returns (index, built)."""
        from ragnb.clq.indexes import load_index, make_index

        name, dim, chunker, kind, backend, m, efc = key
        vecs = self.vectors[(name, dim, chunker)]
        path = self.out_dir / "indexes" / f"{_fingerprint(key, self.dataset_key)}.{backend}"
        if path.is_file():
            try:
                index = load_index(path)
            except InputError:
                pass  # a torn or foreign file: build again
            else:
                if index.n == vecs.shape[0] and index.dim == vecs.shape[1]:
                    return index, False
        index = make_index(
            kind,
            vecs.shape[1],
            backend=backend,
            M=m or 16,
            ef_construction=efc or 200,
            ef_search=self.grid.ef_search,
            seed=self.seed,
        )
        index.build(vecs)
        path.parent.mkdir(parents=True, exist_ok=True)
        index.save(path)
        return index, True

    def prepare_indexes(self, keys: list[tuple[Any, ...]]) -> None:
        todo = [k for k in dict.fromkeys(keys) if k not in self.indexes]
        for key, (index, built) in zip(
            todo, self.executor.map(self._build_index, todo), strict=True
        ):
            self.indexes[key] = index
            self.n_index_builds += int(built)

    # -------------------------------------------------------------- BM25

    def bm25_runs(self, chunker: str, depth: int) -> tuple[list[list[tuple[int, float]]], Any]:
        """Per query: (chunk row, score) best first, and per-query milliseconds."""
        key = f"{chunker}@{depth}"
        if key not in self.bm25:
            from ragnb.retrieve import BM25Retriever

            chunks = self.chunk(chunker)
            frame = pd.DataFrame(
                {
                    "doc_id": chunks["chunk_id"].astype(str),
                    "title": "",
                    "text": chunks["text"].astype(str),
                }
            )
            retr = BM25Retriever().index(frame)
            row_of = {cid: i for i, cid in enumerate(frame["doc_id"])}
            one = self.queries[["query_id", "text"]]
            for i in range(min(self.warmup, len(one))):
                retr.retrieve(one.iloc[[i]], k=depth)
            out, times = [], []
            for i in range(len(one)):
                t0 = time.perf_counter()
                run = retr.retrieve(one.iloc[[i]], k=depth)
                times.append((time.perf_counter() - t0) * 1000)
                out.append(
                    [
                        (row_of[d], float(s))
                        for d, s in zip(run["doc_id"], run["score"], strict=True)
                    ]
                )
            self.bm25[key] = (out, np.asarray(times))
        return self.bm25[key]

    # -------------------------------------------------------------- rerankers

    def reranker(self, spec: str) -> Any:
        if spec == "none":
            return None
        if spec not in self.rerankers:
            from ragnb.rerank import make_reranker

            opts = dict(self.reranker_options.get(spec, {}))
            if spec.startswith("rescore:"):
                opts.setdefault("cache_dir", self.cache_dir)
                opts.setdefault("progress", False)
            self.rerankers[spec] = make_reranker(spec, **opts)
        return self.rerankers[spec]


# ----------------------------------------------------------------------------- one config


def _fuse(lists: list[list[tuple[int, float]]], rrf_k: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of ranked (row, score) lists (Cormack et al. 2009, eq. 1)."""
    scores: dict[int, float] = {}
    for ranked in lists:
        for rank, (row, _) in enumerate(ranked, start=1):
            scores[row] = scores.get(row, 0.0) + 1.0 / (rrf_k + rank)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


def _run_config(sw: _Sweep, cfg: SweepConfig) -> tuple[dict[str, Any], pd.DataFrame]:
    """Measure one configuration: timed retrieval and reranking, then quality, PROC, cost."""
    chunks = sw.chunk(cfg.chunker)
    chunk_ids = chunks["chunk_id"].astype(str).to_numpy()
    texts = chunks["text"].astype(str).to_numpy()
    ctoks = sw.chunk_tokens[cfg.chunker]
    n_q = len(sw.qids)
    dyn = sw.grid.dynamic_policy(cfg.dynamic) if cfg.dynamic else None
    max_k = dyn.escalate_to if dyn else cfg.pool_k
    embed_ms = np.zeros(n_q)
    search_ms = np.zeros(n_q)
    rerank_ms = np.zeros(n_q)
    pools: list[list[tuple[int, float]]] = []
    pool_sizes = np.zeros(n_q, dtype=int)
    escalated = np.zeros(n_q, dtype=bool)
    vecs = None
    if cfg.dense:
        qv = sw.query_vectors(cfg.embedder, cfg.dim)
        embed_ms = sw.embed_ms[(cfg.embedder, cfg.dim)]
        vecs = sw.vectors[cfg.embedding_key]
        index = sw.indexes[cfg.index_key]
        index.set_ef_search(cfg.ef_search or sw.grid.ef_search)
    bm = None
    if cfg.mode in ("bm25", "hybrid"):
        depth = cfg.hybrid_depth if cfg.mode == "hybrid" else max_k
        bm, bm_ms = sw.bm25_runs(cfg.chunker, max(depth, max_k))
    for i in range(min(sw.warmup, n_q)):  # warm-up: caches, allocator, lazy inits
        if cfg.dense:
            index.search(qv[i : i + 1], max(max_k, cfg.hybrid_depth))
    for i in range(n_q):
        if cfg.dense:
            depth = max(cfg.pool_k, cfg.hybrid_depth)
            t0 = time.perf_counter()
            s, ids = index.search(qv[i : i + 1], depth)
            dense = [(int(r), float(x)) for r, x in zip(ids[0], s[0], strict=True) if r >= 0]
            k = cfg.pool_k
            if dyn is not None:
                margin = dense[0][1] - dense[1][1] if len(dense) > 1 else 1.0
                if margin < dyn.margin:
                    escalated[i] = True
                    k = dyn.escalate_to
                    if cfg.mode == "dense":
                        s, ids = index.search(qv[i : i + 1], max(k, cfg.hybrid_depth))
                        dense = [
                            (int(r), float(x)) for r, x in zip(ids[0], s[0], strict=True) if r >= 0
                        ]
            if cfg.mode == "hybrid":
                assert bm is not None
                fused = _fuse([dense[: cfg.hybrid_depth], bm[i][: cfg.hybrid_depth]], cfg.rrf_k)
                pool = fused[:k]
            else:
                pool = dense[:k]
            search_ms[i] = (time.perf_counter() - t0) * 1000
            if cfg.mode == "hybrid":
                search_ms[i] += bm_ms[i]
        else:
            assert bm is not None
            k = cfg.pool_k
            pool = bm[i][:k]
            search_ms[i] = bm_ms[i]
        pools.append(pool)
        pool_sizes[i] = len(pool)
    # near-duplicate suppression and reranking, per query, timed
    reranker = sw.reranker(cfg.reranker)
    usage_before = dict(reranker.usage()) if reranker is not None else {}
    finals: list[list[tuple[int, float]]] = []
    rr_in_tokens = np.zeros(n_q)
    if reranker is not None:
        # a rescoring embedder works from vectors precomputed at indexing time: fill its cache
        # with every candidate first (untimed; its query embedding time is added below); other
        # rerankers warm up on a few queries
        key = (cfg.reranker, cfg.chunker)
        if cfg.reranker.startswith("rescore:") and key not in sw.prewarmed:
            reranker.embedder.embed(texts.tolist(), kind="passage")
            reranker.embedder.embed(sw.qtexts, kind="query")
            sw.prewarmed.add(key)
        for i in range(min(sw.warmup, n_q)):
            cands = [(str(chunk_ids[r]), str(texts[r])) for r, _ in pools[i]]
            reranker.rerank(sw.qtexts[i], cands, top_n=len(cands))
        usage_before = dict(reranker.usage())
    for i in range(n_q):
        pool = pools[i]
        t0 = time.perf_counter()
        if cfg.dedup and vecs is not None and reranker is not None:
            pool = _dedup(pool, vecs, cfg.dedup)
        if reranker is not None and pool:
            cands = [(str(chunk_ids[r]), str(texts[r])) for r, _ in pool]
            row_of = {str(chunk_ids[r]): r for r, _ in pool}
            ranked = reranker.rerank(sw.qtexts[i], cands, top_n=len(cands))
            final = [(row_of[d], float(s)) for d, s in ranked]
            rerank_ms[i] = (time.perf_counter() - t0) * 1000
            rr_in_tokens[i] = len(pool) * sw.query_tokens[i] + float(
                ctoks[[r for r, _ in pool]].sum()
            )
        else:
            final = pool
            rerank_ms[i] = (time.perf_counter() - t0) * 1000 if cfg.dedup else 0.0
        finals.append(final)
    usage_after = dict(reranker.usage()) if reranker is not None else {}
    if cfg.reranker.startswith("rescore:"):
        # the candidates' vectors of the second embedder are computed at indexing time (and
        # came from the cache above), but each query must be embedded by it at query time:
        # its uncached per-query time is part of the rerank stage
        second = cfg.reranker.removeprefix("rescore:")
        sw.query_vectors(second, 0)
        rerank_ms = rerank_ms + sw.embed_ms[(second, 0)]
    total_ms = embed_ms + search_ms + rerank_ms
    row: dict[str, Any] = {**cfg.as_row(), "dataset_key": sw.dataset_key}
    row.update(_quality(sw, cfg, chunks, pools, finals))
    for stage, arr in (
        ("embed", embed_ms),
        ("search", search_ms),
        ("rerank", rerank_ms),
        ("latency", total_ms),
    ):
        row[f"{stage}_p50_ms"] = _pct(arr, 50)
        row[f"{stage}_p95_ms"] = _pct(arr, 95)
    row["latency_mean_ms"] = float(total_ms.mean()) if n_q else math.nan
    # index facts
    if cfg.dense:
        from ragnb.clq.indexes import memory_estimate

        assert vecs is not None  # set with the index when cfg.dense (not user input)
        mem = index.memory_bytes()
        row["vector_dim"] = int(vecs.shape[1])
        row["build_seconds"] = float(index.build_seconds or 0.0)
        row["mem_vectors"] = int(mem["vectors"])
        row["mem_graph"] = int(mem["graph"])
        row["mem_total"] = int(mem["total"])
        for label, n in (("1m", 1_000_000), ("10m", 10_000_000)):
            est = memory_estimate(n, int(vecs.shape[1]), cfg.index, M=cfg.hnsw_m or 16)
            row[f"est_{label}_total"] = float(est["total"])
    # cost
    rr_model = api_model(cfg.reranker)
    api_in = api_out = 0.0
    if rr_model is not None and n_q:
        used_in = usage_after.get("input_tokens", 0) - usage_before.get("input_tokens", 0)
        used_out = usage_after.get("output_tokens", 0) - usage_before.get("output_tokens", 0)
        api_in = used_in / n_q if used_in > 0 else float(rr_in_tokens.mean())
        api_out = max(0.0, used_out / n_q)
    gen_tokens = np.asarray(
        [float(ctoks[[r for r, _ in f[: sw.cost.generator_k]]].sum()) for f in finals]
    )
    row["tokens_per_candidate"] = (
        float(rr_in_tokens.sum() / max(1, pool_sizes.sum())) if rr_model else math.nan
    )
    row["chunk_tokens"] = float(ctoks.mean()) if len(ctoks) else math.nan
    row["generator_tokens"] = float(gen_tokens.mean()) if n_q else math.nan
    row.update(
        sw.cost.per_1k(
            embedder=cfg.embedder,
            reranker=cfg.reranker,
            query_tokens=float(np.mean(sw.query_tokens)) if cfg.dense else 0.0,
            rerank_input_tokens=api_in,
            rerank_output_tokens=api_out,
            local_seconds=row["latency_mean_ms"] / 1000.0,
            generator_tokens=row["generator_tokens"],
        )
    )
    row["mean_pool"] = float(pool_sizes.mean()) if n_q else math.nan
    row["escalated"] = float(escalated.mean()) if dyn else math.nan
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


def _dedup(
    pool: list[tuple[int, float]], vecs: np.ndarray, threshold: float
) -> list[tuple[int, float]]:
    """Near-duplicate suppression through :func:`ragnb.rerank.suppress_near_duplicates`."""
    from ragnb.rerank import suppress_near_duplicates

    run = pd.DataFrame(
        {"query_id": "q", "doc_id": [str(r) for r, _ in pool], "score": [s for _, s in pool]}
    )
    rows = [r for r, _ in pool]
    kept = suppress_near_duplicates(run, {str(r): vecs[r] for r in rows}, threshold=threshold)
    keep = set(kept["doc_id"].astype(str))
    return [(r, s) for r, s in pool if str(r) in keep]


def _chunk_run(
    sw: _Sweep, lists: list[list[tuple[int, float]]], chunk_ids: np.ndarray
) -> pd.DataFrame:
    qs, ds, ss = [], [], []
    for qid, ranked in zip(sw.qids, lists, strict=True):
        n = len(ranked)
        qs += [qid] * n
        ds += [str(chunk_ids[r]) for r, _ in ranked]
        # scores from the ranking's order, so ties cannot reorder it
        ss += [float(n - j) for j in range(n)]
    return pd.DataFrame({"query_id": qs, "doc_id": ds, "score": ss})


def _quality(
    sw: _Sweep,
    cfg: SweepConfig,
    chunks: pd.DataFrame,
    pools: list[list[tuple[int, float]]],
    finals: list[list[tuple[int, float]]],
) -> dict[str, Any]:
    """Measures of the final run and PROC/%PROC of the pool, at document level (best chunk);
    with evidence sentences, also the chunk-level run against chunk qrels (``evidence_*``)."""
    from ragnb.clq.chunking import collapse_to_documents
    from ragnb.evaluate import evaluate
    from ragnb.measures.proc import proc_table

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


def _recall_rows(sw: _Sweep, key: tuple[Any, ...], ks: list[int]) -> pd.DataFrame:
    from ragnb.clq.indexes import exact_top_k, recall_vs_ef

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
        ("index_id", _fingerprint(key, sw.dataset_key)),
    ):
        out[col] = val
    index.set_ef_search(sw.grid.ef_search)
    return out


def _memory_rows(sw: _Sweep, key: tuple[Any, ...]) -> pd.DataFrame:
    from ragnb.clq.indexes import memory_table

    name, dim, chunker, kind, backend, m, efc = key
    index = sw.indexes[key]
    table = memory_table(index.dim, kind, measured=index, M=m or 16)
    table.insert(0, "index_label", f"{name}/{dim or 'full'} {kind} {chunker}")
    table["index_id"] = _fingerprint(key, sw.dataset_key)
    table["dataset_key"] = sw.dataset_key
    table["index"] = kind
    table["backend"] = backend
    return table


# ----------------------------------------------------------------------------- the sweep


def run_sweep(
    grid: SweepGrid,
    dataset: BeirDataset,
    out_dir: str | os.PathLike[str],
    *,
    executor: Executor | None = None,
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
    executor : Executor, optional
        Builds embeddings and indexes (default :class:`SerialExecutor`); timing is serial.
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
        Skip configurations already in ``results.parquet`` (False: measure all again and
        append).
    reranker_options : dict, optional
        Keyword arguments per reranker spec for :func:`ragnb.rerank.make_reranker`
        (``base_url``, ``judge``...).
    recall_ks : sequence of int, optional
        K values of the recall-vs-efSearch curves; default the grid's pool sizes.
    on_config_done : callable, optional
        Called with ``(config, row)`` after each configuration is saved (progress; tests use
        it to interrupt a sweep).
    evidence_dir : str, optional
        SciFact's release, the ``raw/`` folder of the BEIR folder
        (:func:`ragnb.clq.chunking.scifact_evidence`).
        Chunks are then cut on SciFact's own sentences and each configuration is also scored at
        chunk level (``evidence_nDCG@10``, ``evidence_P@10``): a chunk is relevant when it holds
        an evidence sentence of a relevant pair; pairs without marked evidence fall back to
        document level (:func:`ragnb.clq.chunking.chunk_qrels`).
    seed : int

    Returns
    -------
    SweepResult

    Raises
    ------
    InputError
        On an invalid grid, quality measure or grade map.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cost is None:
        cost = CostModel()
    sw = _Sweep(
        grid,
        dataset,
        out,
        executor=executor or SerialExecutor(),
        cost=cost,
        cache_dir=cache_dir,
        grade_map=grade_map,
        quality=quality,
        warmup=warmup,
        reranker_options=reranker_options or {},
        evidence_dir=evidence_dir,
        seed=seed,
    )
    grid.to_yaml(out / "grid.yaml")
    configs = grid.expand()
    done = read_parquet(out / RESULTS)
    finished: set[str] = set()
    if resume and len(done):
        finished = set(done.loc[done["dataset_key"] == sw.dataset_key, "config_id"])
    todo = [c for c in configs if c.config_id not in finished]
    # skip dimensions larger than the model's
    dense = [c for c in todo if c.dense]
    sw.prepare_embeddings(list(dict.fromkeys(c.embedding_key for c in dense)))
    bad_dims = {k for k in sw.vectors if k[1] and sw.vectors[k].shape[1] < k[1]}
    todo = [c for c in todo if not (c.dense and c.embedding_key in bad_dims)]
    sw.prepare_indexes([c.index_key for c in todo if c.dense])
    # recall vs efSearch and memory, once per index and dataset
    recall = read_parquet(out / RECALL)
    memory = read_parquet(out / MEMORY)
    have_r = set(recall["index_id"]) if len(recall) else set()
    have_m = set(memory["index_id"]) if len(memory) else set()
    ks = sorted(set(recall_ks or grid.pool_ks))
    for key in sw.indexes:
        iid = _fingerprint(key, sw.dataset_key)
        if iid not in have_r:
            rows = _recall_rows(sw, key, ks)
            if len(rows):
                recall = _append_parquet(out / RECALL, rows)
        if iid not in have_m:
            memory = _append_parquet(out / MEMORY, _memory_rows(sw, key))
    evaluated = []
    for cfg in todo:
        row, per_query = _run_config(sw, cfg)
        _append_parquet(out / "per_query.parquet", per_query)
        _append_parquet(out / RESULTS, pd.DataFrame([row]))
        evaluated.append(cfg.config_id)
        if on_config_done is not None:
            on_config_done(cfg, row)
    results = read_parquet(out / RESULTS)
    ids = {c.config_id for c in configs}
    results = results[(results["dataset_key"] == sw.dataset_key) & results["config_id"].isin(ids)]
    results = results.drop_duplicates("config_id", keep="last").reset_index(drop=True)
    per_query = read_parquet(out / "per_query.parquet")
    if len(per_query):
        per_query = per_query[per_query["dataset_key"] == sw.dataset_key]
    keep = lambda f: f[f["dataset_key"] == sw.dataset_key] if len(f) else f  # noqa: E731
    notes = list(sw.notes) + list(cost.notes)
    if bad_dims:
        notes.append(f"skipped dimensions above the model's: {sorted(bad_dims)}")
    return SweepResult(
        grid=grid,
        out_dir=out,
        dataset_key=sw.dataset_key,
        results=results,
        recall=keep(recall),
        memory=keep(memory),
        per_query=per_query,
        quality=sw.quality,
        graded=sw.grade_map is not None,
        n_evaluated=len(evaluated),
        n_skipped=len(configs) - len(todo),
        n_index_builds=sw.n_index_builds,
        n_embedded_texts=sw.n_embedded,
        evaluated_ids=evaluated,
        notes=notes,
        provenance={
            "dataset": dataset.summary(),
            "grade_map": sw.grade_map,
            "cost": cost.describe(),
            "grid": grid.to_dict(),
            "dataset_key": sw.dataset_key,
        },
    )


# ----------------------------------------------------------------------------- staged search


def staged_search(
    grid: SweepGrid,
    stages: Sequence[Sequence[str]],
    dataset: BeirDataset,
    out_dir: str | os.PathLike[str],
    *,
    objective: str = "quality",
    **sweep_kwargs: Any,
) -> tuple[SweepGrid, pd.DataFrame]:
    """SPEAR's staged strategy search: optimise groups of knobs one stage at a time.

    Stage 1 sweeps the knobs of ``stages[0]`` over their grid values with every other knob at
    its first grid value; the best configuration's values of those knobs are then fixed, and
    stage 2 sweeps ``stages[1]``, and so on. Far fewer configurations than the full product
    (the sum, not the product, of the stages' sizes); interactions between stages are not
    explored (the paper's caveat). All stages share ``out_dir``, so repeated configurations are
    measured once.

    Parameters
    ----------
    grid : SweepGrid
        The values of every knob.
    stages : sequence of sequence of str
        Grid fields per stage, e.g. ``[["embedders", "dims"], ["indexes"], ["pool_ks",
        "rerankers"]]``.
    dataset : BeirDataset
    out_dir : str or PathLike
    objective : str
        Results column to maximise (default the headline quality).
    **sweep_kwargs
        Passed to :func:`run_sweep`.

    Returns
    -------
    grid : SweepGrid
        The final grid: one value per staged knob.
    trace : DataFrame
        ``stage``, ``knobs``, ``n_configs``, ``best_label``, ``best`` (objective value).

    Raises
    ------
    InputError
        On an unknown grid field.

    References
    ----------
    Zou et al., "SPEAR", arXiv:2507.06554, section 3.2.1 and Table 2 (three-stage search).
    """
    names = {f.name for f in fields(SweepGrid)}
    listed = [k for stage in stages for k in stage]
    unknown = sorted(set(listed) - names)
    if unknown:
        raise InputError(f"unknown grid field(s) in stages: {unknown}")
    multi = [f.name for f in fields(SweepGrid) if isinstance(getattr(grid, f.name), list)]
    current = grid.subgrid(**{k: getattr(grid, k)[:1] for k in multi if getattr(grid, k)})
    trace = []
    for i, stage in enumerate(stages, start=1):
        trial = current.subgrid(**{k: getattr(grid, k) for k in stage})
        res = run_sweep(trial, dataset, out_dir, **sweep_kwargs)
        best = res.results.sort_values(objective, ascending=False, kind="stable").iloc[0]
        fixed: dict[str, Any] = {}
        for k in stage:
            column = {
                "embedders": "embedder",
                "dims": "dim",
                "chunkers": "chunker",
                "indexes": "index",
                "backends": "backend",
                "pool_ks": "pool_k",
                "rerankers": "reranker",
                "modes": "mode",
            }.get(k)
            if column is not None and column in best.index and best[column] != "-":
                fixed[k] = [best[column]]
        current = current.subgrid(**fixed) if fixed else trial
        trace.append(
            {
                "stage": i,
                "knobs": ", ".join(stage),
                "n_configs": len(trial.expand()),
                "best_label": best["label"],
                "best": float(best[objective]),
            }
        )
    return current, pd.DataFrame(trace)


# ----------------------------------------------------------------------------- notebook 04


@dataclass
class ClqTradeoffsConfig(NotebookParams):
    """Parameters of notebook 04 (``notebooks/04_clq_tradeoffs.ipynb``).

    Attributes
    ----------
    dataset : str
        BEIR folder; relative paths are taken from the project root.
    split : str
        Qrels split.
    embedders : list of str
        Embedder names (offline, sentence-transformers or ``openai:<model>``).
    dims : list of int
        Truncation dimensions, 0 = full.
    chunkers : list of str
        :class:`ragnb.clq.chunking.Chunker` names.
    indexes : list of str
        Index kinds (``flat``, ``hnsw``, ``flat-sq8``, ``hnsw-sq8``).
    backends : list of str
        ``faiss`` and/or ``hnswlib``.
    pool_ks : list of int
        Candidate pool sizes K.
    rerankers : list of str
        :func:`ragnb.rerank.make_reranker` specs.
    modes : list of str
        ``dense``, ``bm25``, ``hybrid``.
    dedup : list of float
        Near-duplicate suppression thresholds before reranking (0 = off).
    dynamic_margins : list of float
        One dynamic-K policy (50, escalate to 100) per cosine margin; empty for none.
    ef_search : int
        HNSW efSearch of the timed configurations.
    max_docs, max_queries : int
        Caps (0 = none): every judged document of the kept queries is kept.
    quality : str
        Headline measure (``auto``: RA-nWG@10 on graded data, else nDCG@10).
    grade_map : str
        Map of the qrels' grades onto 1-5 (as notebook 01).
    sla_ms : float
        Latency SLA (p95, milliseconds, embed + search + rerank).
    budget_usd_per_1k : float
        Budget, US dollars per 1,000 queries (retrieval + generator input).
    quality_target : float
        Quality target; 0 = 95% of the best measured quality.
    machine_usd_per_hour : float
        Price of the machine for local compute (negative: the price file's).
    generator : str
        Generator model priced for the final context.
    generator_k : int
        Chunks sent to the generator per query.
    prices_file : str
        Price table YAML; empty for the shipped ``ragnb/clq/prices.yaml``.
    evidence : str
        Evidence sentences for chunk-level relevance: ``"auto"`` (the dataset's ``raw/`` folder
        when it holds SciFact's release), ``"none"``, or a path.
    cache_dir : str
        Embedding cache folder; empty for the default.
    export_dir : str
        Sweep folder (results.parquet, ...; resumable); empty for a temporary folder.
    resume : bool
        Skip configurations already in the sweep folder.
    warmup : int
        Untimed warm-up queries before each timed loop.
    seed : int
    """

    dataset: str = "data/pydocs"
    split: str = "test"
    embedders: list[str] = field(default_factory=lambda: ["wordllama"])
    dims: list[int] = field(default_factory=lambda: [64, 0])
    chunkers: list[str] = field(default_factory=lambda: ["document", "sentences-200-70"])
    indexes: list[str] = field(default_factory=lambda: ["flat", "hnsw", "flat-sq8"])
    backends: list[str] = field(default_factory=lambda: ["faiss"])
    pool_ks: list[int] = field(default_factory=lambda: [50, 100])
    rerankers: list[str] = field(default_factory=lambda: ["none", "rescore:wordllama"])
    modes: list[str] = field(default_factory=lambda: ["dense", "bm25", "hybrid"])
    dedup: list[float] = field(default_factory=lambda: [0.0])
    dynamic_margins: list[float] = field(default_factory=lambda: [0.02])
    ef_search: int = 64
    max_docs: int = 0
    max_queries: int = 0
    quality: str = "auto"
    grade_map: str = "auto"
    sla_ms: float = 20.0
    budget_usd_per_1k: float = 1.0
    quality_target: float = 0.0
    machine_usd_per_hour: float = -1.0
    generator: str = "gpt-5"
    generator_k: int = 10
    prices_file: str = ""
    evidence: str = "auto"
    cache_dir: str = ""
    export_dir: str = ""
    resume: bool = True
    warmup: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        self.grid()  # validates the knobs
        for name in ("sla_ms", "budget_usd_per_1k", "quality_target"):
            if float(getattr(self, name)) < 0:
                raise InputError(f"{name} must be >= 0", column=name)

    def grid(self) -> SweepGrid:
        """The sweep grid these parameters describe."""
        return SweepGrid(
            embedders=list(self.embedders),
            dims=list(self.dims),
            chunkers=list(self.chunkers),
            indexes=list(self.indexes),
            backends=list(self.backends),
            pool_ks=list(self.pool_ks),
            rerankers=list(self.rerankers),
            modes=list(self.modes),
            dedup=list(self.dedup),
            dynamic_k=[
                {"start": 50, "escalate_to": 100, "margin": float(m)} for m in self.dynamic_margins
            ],
            ef_search=self.ef_search,
        )


@dataclass
class ClqReport:
    """Notebook 04's analysis: the sweep and the decisions drawn from it.

    Attributes
    ----------
    config : ClqTradeoffsConfig
    sweep : SweepResult
    results : DataFrame
        ``sweep.results`` with ``pareto`` (bool) and ``efficiency`` columns.
    choices : dict of str to Choice
        The operator rules (:func:`ragnb.clq.pareto.recommend`).
    quality_target : float
        The target used (the parameter, or 95% of the best quality).
    notes : list of str
    seconds : float
        Wall-clock time of the sweep call.
    """

    config: ClqTradeoffsConfig
    sweep: SweepResult
    results: pd.DataFrame
    choices: dict[str, Any]
    quality_target: float
    notes: list[str]
    seconds: float

    @property
    def quality(self) -> str:
        """The headline measure's name."""
        return self.sweep.quality

    def leaderboard(self, top: int = 10) -> pd.DataFrame:
        """Top configurations by quality (:func:`ragnb.clq.pareto.leaderboard`)."""
        from ragnb.clq.pareto import leaderboard

        extra = [
            c
            for c in (
                "RA-nWG@10",
                "RA-nWG@30",
                "N-Recall4+@10",
                "N-Recall4+@30",
                "nDCG@10",
                "R@100",
            )
            if c in self.results.columns
        ]
        cols = [
            "quality",
            *extra,
            "proc",
            "pct_proc",
            "latency_p50_ms",
            "latency_p95_ms",
            "cost_usd",
        ]
        return leaderboard(self.results, columns=cols, top=top)

    def scenarios(self) -> pd.DataFrame:
        """The scenario matrix (Table 8 shape)."""
        from ragnb.clq.pareto import scenario_matrix

        return scenario_matrix(
            self.results,
            sla_ms=self.config.sla_ms,
            budget_usd_per_1k=self.config.budget_usd_per_1k,
            quality_target=self.quality_target,
        )

    def frontier(self) -> pd.DataFrame:
        """The Pareto-optimal rows, cheapest first."""
        cols = [
            "label",
            "quality",
            "proc",
            "pct_proc",
            "latency_p50_ms",
            "latency_p95_ms",
            "cost_usd",
            "cost_retrieval_usd",
            "cost_generator_usd",
        ]
        front = self.results[self.results["pareto"]]
        return front.sort_values(["cost_usd", "latency_p95_ms"])[cols].reset_index(drop=True)

    def marginal(self) -> pd.DataFrame:
        """Delta-quality per Delta-ms of raising K (:func:`ragnb.clq.pareto.marginal_gains`)."""
        from ragnb.clq.pareto import marginal_gains

        return marginal_gains(self.results)

    def dynamic_k(self) -> pd.DataFrame:
        """Dynamic-K rows beside their fixed-K siblings (same family), for comparison."""
        r = self.results
        dyn = r[r["dynamic"].fillna("") != ""]
        if not len(dyn):
            return pd.DataFrame()
        fam = r[r["family"].isin(dyn["family"])]
        cols = [
            "family",
            "label",
            "pool_k",
            "dynamic",
            "mean_pool",
            "escalated",
            "quality",
            "latency_p50_ms",
            "latency_p95_ms",
            "cost_usd",
        ]
        return fam.sort_values(["family", "mean_pool"])[cols].reset_index(drop=True)

    def cost_tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The paper's rerank and generator cost tables at the measured mean chunk length."""
        from ragnb.clq.cost import generator_cost_table, rerank_cost_table

        prices = load_prices(self.config.prices_file or None)[0]
        chunk = float(self.results["chunk_tokens"].mean())
        q = float(np.mean(count_texts(self.sweep.provenance.get("query_texts", [""]))))
        return (
            rerank_cost_table(tokens_per_candidate=round(chunk + q, 1), prices=prices),
            generator_cost_table(
                ks=(5, 10, 20, 30),
                tokens_per_chunk=round(chunk, 1),
                models=(self.config.generator, "gpt-5-mini", "gpt-5-nano"),
                prices=prices,
            ),
        )

    def provenance(self) -> dict[str, Any]:
        """What produced the numbers (for :func:`ragnb.tables.provenance_markdown` and export)."""
        from ragnb.provenance import versions

        prov = {k: v for k, v in self.sweep.provenance.items() if k != "query_texts"}
        return {
            **prov,
            "config": asdict(self.config),
            "notes": self.notes,
            "sweep_seconds": self.seconds,
            "out_dir": str(self.sweep.out_dir),
            "versions": versions(),
        }


def _evidence_dir(spec: str, dataset_path: Path) -> str | None:
    """The evidence folder named by ``ClqTradeoffsConfig.evidence``, or None."""
    if spec in ("", "none"):
        return None
    if spec == "auto":
        raw = dataset_path / "raw"
        found = (raw / "scifact.zip").is_file() or any(raw.glob("claims_*"))
        return str(raw) if found else None
    path = resolve_path(spec)
    if not path.exists():
        raise InputError("evidence folder not found", path=path, column="evidence")
    return str(path)


def clq_tradeoffs(config: ClqTradeoffsConfig, *, dataset: BeirDataset | None = None) -> ClqReport:
    """Run notebook 04's sweep and decisions.

    Parameters
    ----------
    config : ClqTradeoffsConfig
    dataset : BeirDataset, optional
        Already loaded data (default: read ``config.dataset``).

    Returns
    -------
    ClqReport
    """
    import tempfile

    from ragnb.clq.pareto import efficiency, pareto_front, recommend
    from ragnb.io import read_beir

    notes: list[str] = []
    if dataset is None:
        dataset = read_beir(resolve_path(config.dataset), split=config.split)
    dataset, cap_note = cap_dataset(
        dataset, max_docs=config.max_docs, max_queries=config.max_queries, seed=config.seed
    )
    if cap_note:
        notes.append(cap_note)
    prices, machine = load_prices(config.prices_file or None)
    if config.machine_usd_per_hour >= 0:
        machine = config.machine_usd_per_hour
    cost = CostModel(
        prices,
        machine_usd_per_hour=machine,
        generator=config.generator,
        generator_k=config.generator_k,
    )
    if config.export_dir:
        out_dir = resolve_path(config.export_dir)
    else:
        out_dir = Path(tempfile.mkdtemp(prefix="ragnb-clq-"))
        notes.append(f"no export_dir: the sweep ran in the temporary folder {out_dir}")
    evidence_dir = _evidence_dir(config.evidence, resolve_path(config.dataset))
    t0 = time.perf_counter()
    sweep = run_sweep(
        config.grid(),
        dataset,
        out_dir,
        evidence_dir=evidence_dir,
        cost=cost,
        cache_dir=config.cache_dir or None,
        grade_map=config.grade_map,
        quality=config.quality,
        warmup=config.warmup,
        resume=config.resume,
        seed=config.seed,
    )
    seconds = time.perf_counter() - t0
    sweep.provenance["query_texts"] = dataset.judged_queries["text"].astype(str).tolist()
    notes += sweep.notes
    results = sweep.results.copy()
    results["pareto"] = pareto_front(results)
    results["efficiency"] = efficiency(results)
    target = config.quality_target or round(0.95 * float(results["quality"].max()), 4)
    if not config.quality_target:
        notes.append(f"quality target: 95% of the best {sweep.quality} measured = {target}")
    choices = recommend(
        results,
        sla_ms=config.sla_ms,
        budget_usd_per_1k=config.budget_usd_per_1k,
        quality_target=target,
    )
    return ClqReport(config, sweep, results, choices, target, notes, seconds)


def report_markdown(report: ClqReport) -> str:
    """The "what produced these numbers" block of notebook 04 (dataset, caps, grid, prices)."""
    from ragnb.embed.offline import OFFLINE_MODELS

    prov = report.provenance()
    ds = prov["dataset"]
    sw = report.sweep
    cost = prov["cost"]
    gm = prov.get("grade_map")
    lines = ["## What produced these numbers", ""]
    lines.append(
        f"**Dataset** `{ds['dataset']}` (split `{ds['split']}`): {ds['documents']} documents, "
        f"{ds['judged_queries']} judged queries, {ds['qrels_pairs']} judgements. "
        f"Folder: `{ds['path']}`."
    )
    lines.append(
        f"**Headline quality** `{report.quality}` at document level (each document scores its "
        "best chunk); "
        + (
            "binary qrels: no graded measures (set `grade_map` to map them onto 1-5)."
            if gm is None
            else f"grades mapped onto 1-5 with `{gm[0]}` {dict(gm[1])}."
        )
    )
    lines.append(
        f"**Sweep** {len(report.results)} configurations of the grid: {sw.n_evaluated} measured "
        f"now, {sw.n_skipped} found finished in `{sw.out_dir}`; {sw.n_index_builds} indexes "
        f"built, {sw.n_embedded_texts} texts embedded (cache misses), {report.seconds:.1f} s."
    )
    left = [m for m in OFFLINE_MODELS if m not in report.config.embedders]
    if left:
        lines.append(
            f"**Embedders left out for time** (available offline, add them to `embedders`): "
            f"{', '.join(left)}; `multilingual-e5-small-4bit` embeds about one passage per "
            "second, so use it with `max_docs`."
        )
    lines.append(
        f"**Prices** `{cost['prices_file']}` as of {cost['as_of']}; local compute at "
        f"${cost['machine_usd_per_hour']:g} per hour; generator `{cost['generator']}` with "
        f"{cost['generator_k']} chunks per query. Latency is measured one configuration at a "
        "time after warm-up on a shared machine: sub-millisecond differences are jitter. "
        "Rescoring rerankers read the candidates' second vectors from the index-time cache; "
        "the second embedding of each query is timed in the rerank stage."
    )
    for note in report.notes:
        lines.append(f"- {note}")
    lines += ["", "**Versions** " + ", ".join(f"{k} {v}" for k, v in prov["versions"].items())]
    return "\n".join(lines)


def memory_summary(report: ClqReport) -> pd.DataFrame:
    """Per index: measured bytes of this corpus's index and the estimate at 1M and 10M vectors
    beside the measured index scaled per vector (GiB)."""
    mem = report.sweep.memory
    if not len(mem):
        return pd.DataFrame()
    cols = [
        c
        for c in (
            "index_label",
            "kind",
            "dim",
            "n_vectors",
            "source",
            "vectors_gib",
            "graph_gib",
            "total_gib",
            "bytes_per_vector",
        )
        if c in mem.columns
    ]
    return mem[cols].reset_index(drop=True)


def results_table(report: ClqReport) -> pd.DataFrame:
    """Every configuration with its main numbers, best quality first."""
    r = report.results
    cols = [
        "label",
        "pareto",
        "quality",
        "nDCG@10",
        "R@100",
        "RA-nWG@10",
        "RA-nWG@30",
        "N-Recall4+@10",
        "N-Recall4+@30",
        "proc",
        "pct_proc",
        "embed_p50_ms",
        "search_p50_ms",
        "rerank_p50_ms",
        "latency_p50_ms",
        "latency_p95_ms",
        "cost_retrieval_usd",
        "cost_generator_usd",
        "cost_usd",
        "build_seconds",
        "mem_total",
        "mean_pool",
        "escalated",
        "efficiency",
    ]
    cols = [c for c in cols if c in r.columns]
    return r.sort_values("quality", ascending=False)[cols].reset_index(drop=True)
