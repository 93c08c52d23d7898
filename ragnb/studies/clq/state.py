"""The machinery of a CLQ sweep: build executors and the state one sweep call shares.

:class:`SweepState` holds what every configuration of one :func:`ragnb.studies.clq.sweep.run_sweep`
call reuses, each built once: the chunks per chunker (and their chunk-level qrels when evidence
sentences are given), the embeddings per (embedder, dim, chunker), the query vectors and their
per-query embedding times, the indexes, the BM25 runs, the rerankers and the rewritten queries
of each query rewriter (:class:`Rewrites`: texts, per-query milliseconds and LLM tokens).
Measuring one configuration against that state is :mod:`ragnb.studies.clq.config_run`.

Building embeddings and indexes may use an :class:`Executor` (serial by default, a thread pool
with :class:`ThreadExecutor`; the protocol is ``map(fn, items) -> list`` so a Dask or Ray
client can stand in for large corpora).

References
----------
Dallaire, arXiv:2511.09545, sections 3.1-3.3 (what is metered and how), 3.5 (the sweep) and 4.1
(retrieval with and without query rewriting).
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ragnb.core.validation import l2_normalise
from ragnb.errors import InputError
from ragnb.io.files import BeirDataset, atomic_write, read_parquet, write_parquet
from ragnb.studies.clq.cost import CostModel, count_texts
from ragnb.studies.clq.grid import SweepGrid

__all__ = [
    "EVIDENCE_MEASURES",
    "Executor",
    "Rewrites",
    "SerialExecutor",
    "ThreadExecutor",
    "quality_measures",
    "SweepState",
    "fingerprint",
]

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


# ----------------------------------------------------------------------------- keys and measures


def fingerprint(*parts: Any) -> str:
    """A 16-hex-digit key of ``parts``: names the dataset, the embedding and index files of a
    sweep folder.

    Not :func:`ragnb.core.provenance.sha256_json` (compact JSON): the keys stored in existing sweep
    folders must still match for a sweep to resume.

    Parameters
    ----------
    *parts : object
        JSON-serialisable values (others as ``str``), serialised with sorted keys.

    Returns
    -------
    str
        The first 16 hex digits of the SHA-256 of the JSON.
    """
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: Bytes of candidate vectors a ``rescore:`` reranker keeps in memory between queries
#: (:class:`ragnb.embed.CachedEmbedder` ``memo_bytes``): 256 MiB, about 175,000 vectors of 384
#: float32 dimensions; the least recently used go first.
RESCORE_MEMO_BYTES = 256 * 2**20

#: Measures of the chunk-level run against chunk qrels from evidence sentences (SciFact).
EVIDENCE_MEASURES = ["nDCG@10", "P@10"]


def quality_measures(graded: bool, nuggets: bool = False) -> dict[str, list[str]]:
    """The measures of a sweep: on the original qrels, (graded data) on 1-5 grades, and (with
    nugget qrels) AutoNuggetizer's four nugget recalls at 10.

    Parameters
    ----------
    graded : bool
        The qrels have grades mapped onto 1-5.
    nuggets : bool, default False
        The sweep has nugget qrels (:func:`ragnb.judge.nuggets.nugget_qrels`).

    Returns
    -------
    dict
        ``{"binary": [...], "graded": [...], "nuggets": [...]}``; ``graded`` is empty for binary
        data, ``nuggets`` without nugget qrels.
    """
    from ragnb.measures.nuggets import nugget_measures

    out: dict[str, list[str]] = {"binary": ["nDCG@10", "R@100"], "graded": [], "nuggets": []}
    if graded:
        out["graded"] = ["RA-nWG@10", "RA-nWG@30", "N-Recall4+@10", "N-Recall4+@30"]
    if nuggets:
        out["nuggets"] = nugget_measures(10)
    return out


# ----------------------------------------------------------------------------- rewrites


@dataclass
class Rewrites:
    """The queries of one rewriter, in the sweep's query order (arrays of shape (n_queries,)).

    Attributes
    ----------
    texts : list of str
        Rewritten texts (the original text where the rewriter gave none).
    ms : ndarray of float
        Milliseconds per query of the rewrite (timed one query at a time, after warm-up for
        the denoiser; for an LLM, the call's wall time when it was made, 0 for none).
    input_tokens, output_tokens : ndarray of float
        LLM usage per query (0 for the denoiser); a cached answer keeps its original usage.
    tokens : list of int
        Offline token count of each rewritten text (:func:`ragnb.studies.clq.cost.count_texts`).
    model : str or None
        The LLM that rewrote (None for none and the denoiser).
    """

    texts: list[str]
    ms: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    tokens: list[int]
    model: str | None = None


def _denoise_rewrites(texts: list[str], warmup: int) -> tuple[list[str], np.ndarray]:
    """:func:`ragnb.rewrite.denoise_query` of each text, timed one at a time."""
    from ragnb.rewrite import denoise_query

    for text in texts[:warmup]:
        denoise_query(text)
    out, ms = [], []
    for text in texts:
        t0 = time.perf_counter()
        out.append(denoise_query(text))
        ms.append((time.perf_counter() - t0) * 1000)
    return out, np.asarray(ms)


def _llm_rewrites(client: Any, qids: list[str], texts: list[str]) -> pd.DataFrame:
    """:class:`ragnb.rewrite.LLMRewriter` calls through ``client`` (cache, ledger, retries), one
    query at a time so each call's wall time is that query's rewrite latency. Returns
    ``query_id``, ``text``, ``rewrite_ms``, ``input_tokens``, ``output_tokens``, ``cached``,
    ``valid``, ``reason``."""
    from ragnb.rewrite import REWRITE_STAGE, LLMRewriter

    rewriter = LLMRewriter(client)
    rows = []
    for qid, text in zip(qids, texts, strict=True):
        call = rewriter.call(text, qid)
        t0 = time.perf_counter()
        (r,) = client.run([call], stage=REWRITE_STAGE, kind="extract")
        ms = (time.perf_counter() - t0) * 1000
        new = " ".join(r.value).strip() if r.valid else ""
        rows.append(
            {
                "query_id": qid,
                "text": new or text,
                "rewrite_ms": ms,
                "input_tokens": float(r.input_tokens),
                "output_tokens": float(r.output_tokens),
                "cached": bool(r.cached),
                "valid": bool(new),
                "reason": "" if new else (r.reason or r.status or "empty rewrite"),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- context


class SweepState:
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
        nugget_qrels: pd.DataFrame | None = None,
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
            self._load_evidence(evidence_dir)
        self.queries = dataset.judged_queries
        self.qids = self.queries["query_id"].astype(str).tolist()
        self.qtexts = self.queries["text"].astype(str).tolist()
        self.qrels = dataset.qrels
        gm = resolve_grade_map(grade_map, dataset.qrels)
        self.grade_map = gm
        self.graded_qrels = None if gm is None else map_grades(dataset.qrels, gm[1])
        self.nugget_qrels = nugget_qrels
        self.measures = quality_measures(gm is not None, nuggets=nugget_qrels is not None)
        if quality == "auto":
            quality = "RA-nWG@10" if gm is not None else "nDCG@10"
        available = [m for names in self.measures.values() for m in names]
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
        self.prewarmed: set[tuple[str, ...]] = set()
        self.rewrites: dict[str, Rewrites] = {}
        self.n_index_builds = 0
        self.n_embedded = 0
        self.dataset_key = fingerprint(
            dataset.name,
            dataset.split,
            len(dataset.corpus),
            len(self.qids),
            hashlib.sha256("\n".join(dataset.corpus["doc_id"].astype(str)).encode()).hexdigest(),
            dataset.meta.get("cap"),
        )

    def _load_evidence(self, evidence_dir: str) -> None:
        """SciFact's evidence sentences of the judged pairs and the documents' sentences."""
        from ragnb.studies.clq.evidence import scifact_evidence

        evidence, sentences = scifact_evidence(evidence_dir)
        judged = set(zip(self.dataset.qrels["query_id"], self.dataset.qrels["doc_id"], strict=True))
        self.evidence = {pair: idx for pair, idx in evidence.items() if pair in judged}
        ids = set(self.dataset.corpus["doc_id"].astype(str))
        self.sentences = {d: sents for d, sents in sentences.items() if d in ids}
        relevant = int((self.dataset.qrels["relevance"] > 0).sum())
        self.notes.append(
            f"Evidence sentences from {evidence_dir}: {len(self.evidence)} of {relevant} "
            "relevant (query, document) pairs mark where the evidence is, so a chunk is "
            "relevant when it holds an evidence sentence (`evidence_nDCG@10`, "
            "`evidence_P@10`, chunk level); the other pairs fall back to document level "
            "(every chunk of the document keeps its grade)."
        )

    # -------------------------------------------------------------- rewrites

    def texts(self, rewriter: str = "") -> list[str]:
        """The query texts a configuration with ``rewriter`` sends (``""``: the originals)."""
        return self.rewrites[rewriter].texts if rewriter else self.qtexts

    def tokens(self, rewriter: str = "") -> list[int]:
        """Offline token counts of :meth:`texts`."""
        return self.rewrites[rewriter].tokens if rewriter else self.query_tokens

    def prepare_rewrites(self, names: Iterable[str], client: Any = None) -> None:
        """Rewrite the queries once per rewriter (``"denoise"``, ``"llm"``, ``"llm:<model>"``).

        An LLM's rewrites are stored in ``<out_dir>/rewrites/<key>.parquet`` (texts, per-query
        milliseconds, tokens) and read back by a later call, which then makes no request; a
        first call whose answers come from the client's cache records the cache's time, with a
        note.

        Raises
        ------
        InputError
            An LLM rewriter without a ``client``, or ``"llm:<model>"`` with a client of another
            model.
        """
        n = len(self.qtexts)
        for name in dict.fromkeys(names):
            if not name or name in self.rewrites:
                continue
            if name == "denoise":
                texts, ms = _denoise_rewrites(self.qtexts, self.warmup)
                zero = np.zeros(n)
                self.rewrites[name] = Rewrites(texts, ms, zero, zero.copy(), count_texts(texts))
                continue
            frame = self._llm_frame(name, client)
            texts = frame["text"].astype(str).tolist()
            self.rewrites[name] = Rewrites(
                texts,
                frame["rewrite_ms"].to_numpy(float),
                frame["input_tokens"].to_numpy(float),
                frame["output_tokens"].to_numpy(float),
                count_texts(texts),
                model=str(client.model),
            )

    def _llm_frame(self, name: str, client: Any) -> pd.DataFrame:
        """The LLM rewrites of ``name``: stored in the sweep folder, else made and stored."""
        from ragnb.llm import ChatClient
        from ragnb.rewrite import LLMRewriter

        if not isinstance(client, ChatClient):
            raise InputError(
                f"rewriter {name!r} needs an LLM: pass rewrite_judge (a ragnb.llm.ChatClient) "
                "to run_sweep",
                column="rewriters",
            )
        model = client.model
        if name.startswith("llm:") and name.removeprefix("llm:") != model:
            raise InputError(
                f"rewriter {name!r} names another model than the rewrite client's {model!r}",
                column="rewriters",
            )
        rewriter_id = LLMRewriter(client).rewriter_id
        path = self.out_dir / "rewrites" / f"{fingerprint(rewriter_id, self.dataset_key)}.parquet"
        stored = read_parquet(path)  # empty when the file does not exist
        if len(stored) and stored["query_id"].astype(str).tolist() == self.qids:
            return stored
        frame = _llm_rewrites(client, self.qids, self.qtexts)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_parquet(frame, path)
        cached, failed = int(frame["cached"].sum()), int((~frame["valid"]).sum())
        note = f"Query rewriting by `{rewriter_id}`: {len(frame)} queries rewritten one at a time"
        if cached:
            note += (
                f"; {cached} answers came from the judge's cache, so their rewrite latency is "
                "the cache lookup's, not the model's"
            )
        if failed:
            note += f"; {failed} kept their original text (no valid rewrite)"
        self.notes.append(note + ".")
        return frame

    # -------------------------------------------------------------- chunks

    def chunk(self, name: str) -> pd.DataFrame:
        if name not in self.chunks:
            from ragnb.studies.clq.chunking import Chunker, chunk_corpus

            chunks = chunk_corpus(
                self.dataset.corpus, Chunker.parse(name), sentences=self.sentences
            ).reset_index(drop=True)
            self.chunks[name] = chunks
            if self.evidence is not None:
                from ragnb.studies.clq.evidence import chunk_qrels

                self.chunk_qrels[name] = chunk_qrels(self.qrels, chunks, self.evidence)
            self.chunk_tokens[name] = np.asarray(count_texts(chunks["text"].astype(str)))
        return self.chunks[name]

    # -------------------------------------------------------------- embeddings

    def _embedder(self, name: str, dim: int) -> Any:
        from ragnb.embed import make_embedder

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
        path = self.out_dir / "embeddings" / f"{fingerprint(key, self.dataset_key)}.npy"
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

    @staticmethod
    def query_key(name: str, dim: int, rewriter: str = "") -> tuple[Any, ...]:
        """The key of :attr:`qvectors` and :attr:`embed_ms`: ``(name, dim)``, plus the
        rewriter when there is one."""
        return (name, dim, rewriter) if rewriter else (name, dim)

    def query_vectors(self, name: str, dim: int, rewriter: str = "") -> np.ndarray:
        """Query vectors (cached) and, once per (embedder, dim, rewriter), the per-query
        embedding time of the uncached backend, after warm-up. ``rewriter`` names prepared
        rewrites (:meth:`prepare_rewrites`); ``""`` embeds the original texts."""
        key = self.query_key(name, dim, rewriter)
        if key not in self.qvectors and dim:
            # the full vectors cut and renormalised; the model's time is the full model's
            full = self.query_vectors(name, 0, rewriter)
            self.qvectors[key] = l2_normalise(full[:, :dim])
            self.embed_ms[key] = self.embed_ms[self.query_key(name, 0, rewriter)]
        if key not in self.qvectors:
            texts = self.texts(rewriter)
            emb = self._embedder(name, dim)
            self.qvectors[key] = l2_normalise(emb.embed(texts, kind="query"))
            self.n_embedded += int(emb.backend.n_texts)
            backend = emb.backend
            for text in texts[: self.warmup]:
                backend.embed([text], "query")
            times = []
            for text in texts:
                t0 = time.perf_counter()
                backend.embed([text], "query")
                times.append((time.perf_counter() - t0) * 1000)
            self.embed_ms[key] = np.asarray(times)
        return self.qvectors[key]

    # -------------------------------------------------------------- indexes

    def _build_index(self, key: tuple[Any, ...]) -> tuple[Any, bool]:
        """The index of ``key``: loaded from the sweep folder when an earlier run stored it
        (with its original build time), else built and stored. Returns (index, built)."""
        from ragnb.studies.clq.indexes import load_index, make_index

        name, dim, chunker, kind, backend, m, efc = key
        vecs = self.vectors[(name, dim, chunker)]
        path = self.out_dir / "indexes" / f"{fingerprint(key, self.dataset_key)}.{backend}"
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

    def bm25_runs(
        self, chunker: str, depth: int, rewriter: str = ""
    ) -> tuple[list[list[tuple[int, float]]], Any]:
        """Per query: (chunk row, score) best first, and per-query milliseconds (queries of
        ``rewriter``, :meth:`texts`)."""
        key = f"{chunker}@{depth}" + (f"#{rewriter}" if rewriter else "")
        if key not in self.bm25:
            from ragnb.retrievers.retrieve import BM25Retriever

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
            one = self.queries[["query_id", "text"]].assign(text=self.texts(rewriter))
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
                # the candidates' vectors stay in memory between queries, as a deployed
                # rescorer keeps them beside its index; each query's own vector is timed apart
                opts.setdefault("memo_bytes", RESCORE_MEMO_BYTES)
            self.rerankers[spec] = make_reranker(spec, **opts)
        return self.rerankers[spec]
