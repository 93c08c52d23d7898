"""Retrievers that turn a corpus and queries into a run.

Every retriever has ``name``, ``index(corpus)`` and ``retrieve(queries, k) -> run``, where
``corpus`` and ``queries`` are the frames of :mod:`ragnb.frames.schema` and the run has columns
``query_id``, ``doc_id``, ``score``, ``rank`` (1-based, trec_eval order). A document is indexed as
``title + " " + text`` (the BEIR convention).

- :class:`BM25Retriever`: Okapi BM25 with bm25s. The default configuration is the standard one
  of the BEIR baseline (Elasticsearch/Lucene BM25: ``k1=1.2``, ``b=0.75``, Lucene IDF, English
  stop words, Snowball English stemmer), not tuned to any dataset.
- :class:`DenseRetriever`: exact search by dot product of L2-normalised embeddings (cosine), top K.
- :class:`HybridRetriever`: fusion of two retrievers' runs (:mod:`ragnb.retrievers.fusion`;
  reciprocal rank fusion by default).
- :func:`compute_runs`: several retrievers by name on a dataset, the dense index shared with
  hybrid. The names: ``"bm25"``, ``"bm25-plain"`` (BM25 without stemming or stop words),
  ``"dense"`` (the configured embedder), ``"dense:<model>"`` (a further embedder, by a
  :func:`ragnb.embed.make_embedder` name) and ``"hybrid"``.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from ragnb.core.cache import Cache
from ragnb.core.lazylibs import require
from ragnb.core.validation import check_positive_int, l2_normalise
from ragnb.embed import DEFAULT_MODEL, CachedEmbedder, make_embedder
from ragnb.errors import InputError
from ragnb.frames.index import sort_run
from ragnb.retrievers.fusion import Fusion, fuse, parse_fusion, rrf

if TYPE_CHECKING:
    from ragnb.io.files import BeirDataset

__all__ = [
    "RETRIEVERS",
    "RETRIEVER_KINDS",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "check_retrievers",
    "compute_runs",
    "doc_texts",
    "make_retriever",
    "rrf",
]


def doc_texts(corpus: pd.DataFrame) -> list[str]:
    """``title + " " + text`` for each document (just ``text`` when the title is empty)."""
    titles = corpus["title"].fillna("").astype(str).to_numpy()
    texts = corpus["text"].fillna("").astype(str).to_numpy()
    return [f"{t} {x}" if t else x for t, x in zip(titles, texts, strict=True)]


def _run_frame(
    qids: list[str], doc_ids: np.ndarray, idx: np.ndarray, scores: np.ndarray
) -> pd.DataFrame:
    """Scatter (n_queries, k) index/score arrays into a sorted run frame."""
    n, k = idx.shape
    run = pd.DataFrame(
        {
            "query_id": np.repeat(np.asarray(qids, dtype=object), k),
            "doc_id": doc_ids[idx.ravel()],
            "score": scores.ravel().astype(np.float64),
        }
    )
    return sort_run(run, warn=False).run


_T = TypeVar("_T")


def _doc_ids_of(corpus: pd.DataFrame) -> np.ndarray:
    """The corpus's ``doc_id`` column as an object array of str, in corpus order."""
    return corpus["doc_id"].astype(str).to_numpy(dtype=object)


def _start_retrieval(
    index: _T | None, doc_ids: np.ndarray | None, queries: pd.DataFrame, k: int
) -> tuple[_T, np.ndarray, list[str], int]:
    """Check ``k`` and that ``index(corpus)`` ran; the index, doc ids, query ids and ``k``
    capped at the corpus size."""
    check_positive_int(k, "cutoff k")
    if index is None or doc_ids is None:
        raise RuntimeError("call index(corpus) before retrieve()")
    return index, doc_ids, queries["query_id"].astype(str).tolist(), min(k, len(doc_ids))


# describe() keys that count work or report sizes measured after loading: not identity
_NOT_IDENTITY = re.compile(r"(calls|texts|hits|misses|writes|max_seq_length|dim)$")


class Retriever(ABC):
    """Index a corpus once, then retrieve the top ``k`` documents per query."""

    name: str

    @abstractmethod
    def index(self, corpus: pd.DataFrame) -> Retriever:
        """Index ``corpus`` (columns ``doc_id``, ``title``, ``text``); returns self."""

    @abstractmethod
    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        """Run frame with the top ``k`` documents of each query (columns ``query_id``, ``text``)."""

    def describe(self) -> dict[str, Any]:
        """Name and configuration, for reports."""
        return {"retriever": self.name}

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the retriever's runs, for stage hashes.

        Returns
        -------
        dict
            ``class`` (the class name) and the items of :meth:`describe` except the counters
            and measured sizes that do not change a run (keys ending in ``calls``, ``texts``,
            ``hits``, ``misses``, ``writes``, ``max_seq_length`` or ``dim``).
        """
        info = self.describe()
        kept = {k: v for k, v in info.items() if not _NOT_IDENTITY.search(k)}
        return {"class": type(self).__name__, **kept}


class BM25Retriever(Retriever):
    """Okapi BM25 (Robertson and Zaragoza 2009) with bm25s.

    Parameters
    ----------
    k1 : float, default 1.2
    b : float, default 0.75
    method : str, default "lucene"
        bm25s's scoring variant; ``"lucene"`` is Lucene's BM25 (IDF ``log(1 + (N-n+0.5)/(n+0.5))``).
    stemmer : str or None, default "english"
        Snowball stemmer language (PyStemmer); None for no stemming.
    stopwords : str or None, default "en"
        bm25s stop word list.
    name : str, default "bm25"

    References
    ----------
    Thakur et al., "BEIR", NeurIPS 2021 (BM25 baseline: Elasticsearch defaults).
    Lu, "BM25S: Orders of magnitude faster lexical search via eager sparse scoring", 2024.
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
        stemmer: str | None = "english",
        stopwords: str | None = "en",
        name: str = "bm25",
    ) -> None:
        self.k1, self.b, self.method = k1, b, method
        self.stemmer_language, self.stopwords = stemmer, stopwords
        self.name = name
        self._model: Any = None
        self._doc_ids: np.ndarray | None = None

    def _stemmer(self) -> Any:
        if self.stemmer_language is None:
            return None
        Stemmer = require("Stemmer")

        return Stemmer.Stemmer(self.stemmer_language).stemWords

    def _tokenize(self, texts: list[str]) -> Any:
        bm25s = require("bm25s")

        return bm25s.tokenize(
            texts,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer(),
            show_progress=False,
        )

    def index(self, corpus: pd.DataFrame) -> BM25Retriever:
        bm25s = require("bm25s")

        self._doc_ids = _doc_ids_of(corpus)
        self._model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        self._model.index(self._tokenize(doc_texts(corpus)), show_progress=False)
        return self

    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        model, doc_ids, qids, k = _start_retrieval(self._model, self._doc_ids, queries, k)
        tokens = self._tokenize(queries["text"].astype(str).tolist())
        idx, scores = model.retrieve(tokens, k=k, show_progress=False, n_threads=0)
        run = _run_frame(qids, doc_ids, np.asarray(idx), np.asarray(scores))
        # bm25s pads with score-0 documents; Lucene returns only documents matching a term
        return run[run["score"] > 0].reset_index(drop=True)

    def describe(self) -> dict[str, Any]:
        return {
            "retriever": self.name,
            "kind": "bm25",
            "library": "bm25s",
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.stemmer_language,
            "stopwords": self.stopwords,
        }


class DenseRetriever(Retriever):
    """Exact dense retrieval: cosine similarity of normalised embeddings, top K.

    Parameters
    ----------
    embedder : CachedEmbedder
        Embeds passages (``kind="passage"``) and queries (``kind="query"``); its vectors are
        L2-normalised here again, so the dot product is the cosine.
    name : str, default "dense"
    query_batch : int, default 1024
        Queries scored per matrix product (bounds memory: ``query_batch x n_docs`` floats).
    """

    def __init__(self, embedder: CachedEmbedder, *, name: str = "dense", query_batch: int = 1024):
        self.embedder = embedder
        self.name = name
        self.query_batch = query_batch
        self._doc_vecs: np.ndarray | None = None
        self._doc_ids: np.ndarray | None = None

    def index(self, corpus: pd.DataFrame) -> DenseRetriever:
        self._doc_ids = _doc_ids_of(corpus)
        vecs = self.embedder.embed(doc_texts(corpus), kind="passage", desc="embedding passages")
        self._doc_vecs = l2_normalise(vecs)
        return self

    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        doc_vecs, doc_ids, qids, k = _start_retrieval(self._doc_vecs, self._doc_ids, queries, k)
        qvecs = l2_normalise(
            self.embedder.embed(
                queries["text"].astype(str).tolist(), kind="query", desc="embedding queries"
            )
        )
        idx_parts, score_parts = [], []
        for start in range(0, len(qids), self.query_batch):
            sims = qvecs[start : start + self.query_batch] @ doc_vecs.T
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            top_scores = np.take_along_axis(sims, top, axis=1)
            idx_parts.append(top)
            score_parts.append(top_scores)
        if not idx_parts:
            return _run_frame([], doc_ids, np.zeros((0, k), int), np.zeros((0, k)))
        return _run_frame(qids, doc_ids, np.vstack(idx_parts), np.vstack(score_parts))

    def describe(self) -> dict[str, Any]:
        return {
            "retriever": self.name,
            "kind": "dense",
            "search": "exact cosine",
            **{f"embedder_{k}": v for k, v in self.embedder.describe().items()},
        }


class HybridRetriever(Retriever):
    """Fusion of two retrievers (default: BM25 and dense) by any :mod:`ragnb.retrievers.fusion`
    method.

    Parameters
    ----------
    first, second : Retriever
    rrf_k : int, default 60
        Cormack et al. (2009); used by ``rrf`` and ``wrrf``.
    depth : int, default 100
        Documents taken from each retriever before fusion.
    name : str, default "hybrid"
    fusion : str, mapping or Fusion, default "rrf"
        The method (:func:`ragnb.retrievers.fusion.parse_fusion`), e.g. ``"wsum(0.3,0.7)"``; weights
        are in the order (first, second).
    fusion_weights : sequence of float, optional
        Weights of ``wsum`` / ``wrrf`` when ``fusion`` names none.

    Raises
    ------
    InputError
        On a bad fusion or weights that are not two.
    """

    def __init__(
        self,
        first: Retriever,
        second: Retriever,
        *,
        rrf_k: int = 60,
        depth: int = 100,
        name: str = "hybrid",
        fusion: str | Fusion | dict[str, Any] = "rrf",
        fusion_weights: Sequence[float] | None = None,
    ) -> None:
        self.first, self.second = first, second
        self.fusion = parse_fusion(fusion, weights=fusion_weights, rrf_k=rrf_k)
        self.fusion.weights_for(2)
        self.rrf_k, self.depth, self.name = self.fusion.rrf_k, depth, name

    def index(self, corpus: pd.DataFrame) -> HybridRetriever:
        self.first.index(corpus)
        self.second.index(corpus)
        return self

    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        check_positive_int(k, "cutoff k")
        depth = max(k, self.depth)
        runs = [self.first.retrieve(queries, depth), self.second.retrieve(queries, depth)]
        return fuse(runs, self.fusion, k=k)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "retriever": self.name,
            "kind": f"hybrid-{self.fusion.method}",
            "rrf_k": self.rrf_k,
            "depth": self.depth,
            "fuses": [self.first.name, self.second.name],
        }
        if self.fusion != Fusion("rrf", rrf_k=self.rrf_k):  # RRF's description is unchanged
            out["fusion"] = self.fusion.name
        return out


#: The default set of retrievers the studies compare.
RETRIEVERS = ("bm25", "dense", "hybrid")

#: Every retriever name :func:`make_retriever` takes, besides ``"dense:<model>"``.
RETRIEVER_KINDS = ("bm25", "bm25-plain", "dense", "hybrid")

#: Prefix of a dense retriever with its own embedder: ``"dense:all-MiniLM-L6-v2"``.
DENSE_PREFIX = "dense:"


def check_retrievers(names: Sequence[str], column: str = "retrievers") -> None:
    """Check a list of retriever names for :func:`compute_runs`.

    Parameters
    ----------
    names : sequence of str
        Each one of :data:`RETRIEVER_KINDS` or ``"dense:<model>"``.
    column : str, default "retrievers"
        The parameter's name, for the error.

    Raises
    ------
    InputError
        On an empty list, an unknown name, ``"dense:"`` without a model, or a repeated name.
    """
    if not names:
        raise InputError(f"{column} is empty: name at least one retriever", column=column)
    for name in names:
        dense_model = str(name).startswith(DENSE_PREFIX) and len(name) > len(DENSE_PREFIX)
        if name not in RETRIEVER_KINDS and not dense_model:
            raise InputError(
                f"unknown retriever {name!r} in {column}; use {list(RETRIEVER_KINDS)} or "
                f"'{DENSE_PREFIX}<model>' (an embedder name, e.g. 'dense:all-MiniLM-L6-v2')",
                column=column,
            )
    if len(set(names)) != len(names):
        raise InputError(f"{column} repeat a retriever: {list(names)}", column=column)


def make_retriever(
    kind: str,
    *,
    model: str = DEFAULT_MODEL,
    rrf_k: int = 60,
    depth: int = 100,
    cache: Cache | None = None,
    cache_dir: str | None = None,
    progress: bool = True,
    fusion: str | Fusion = "rrf",
    fusion_weights: Sequence[float] | None = None,
) -> Retriever:
    """A retriever by name: ``"bm25"``, ``"bm25-plain"`` (no stemming, no stop words),
    ``"dense"`` (embedder ``model``), ``"dense:<model>"`` (embedder ``<model>``, the name kept as
    the retriever's) or ``"hybrid"`` (BM25 and dense fused by ``fusion``, RRF by default;
    weights in the order BM25, dense).

    Raises
    ------
    InputError
        On an unknown name or a bad fusion.
    """
    if kind == "bm25":
        return BM25Retriever()
    if kind == "bm25-plain":
        return BM25Retriever(stemmer=None, stopwords=None, name="bm25-plain")
    if kind.startswith(DENSE_PREFIX) and len(kind) > len(DENSE_PREFIX):
        own = make_embedder(
            kind[len(DENSE_PREFIX) :], cache=cache, cache_dir=cache_dir, progress=progress
        )
        return DenseRetriever(own, name=kind)
    if kind in ("dense", "hybrid"):
        embedder = make_embedder(model, cache=cache, cache_dir=cache_dir, progress=progress)
        dense = DenseRetriever(embedder)
        if kind == "dense":
            return dense
        return HybridRetriever(
            BM25Retriever(),
            dense,
            rrf_k=rrf_k,
            depth=depth,
            fusion=fusion,
            fusion_weights=fusion_weights,
        )
    raise InputError(
        f"unknown retriever {kind!r}; use one of {list(RETRIEVER_KINDS)} or '{DENSE_PREFIX}<model>'"
    )


def compute_runs(
    dataset: BeirDataset,
    retrievers: Sequence[str],
    *,
    embedder: str = DEFAULT_MODEL,
    depth: int = 100,
    rrf_k: int = 60,
    cache_dir: str = "",
    progress: bool = True,
    fusion: str | Fusion = "rrf",
    fusion_weights: Sequence[float] | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]], dict[str, Any]]:
    """Run the retrievers once on the judged queries (the dense index is shared with hybrid).

    Parameters
    ----------
    dataset : BeirDataset
        Its corpus is indexed, its judged queries (:attr:`BeirDataset.judged_queries`) searched.
    retrievers : sequence of str
        Any of ``"bm25"``, ``"bm25-plain"``, ``"dense"``, ``"dense:<model>"``, ``"hybrid"``
        (:func:`make_retriever`).
    embedder : str
        Name for :func:`ragnb.embed.make_embedder` of ``"dense"`` and ``"hybrid"``, through the
        embedding cache.
    depth : int
        Documents per query.
    rrf_k : int
    cache_dir : str
    progress : bool
    fusion : str or Fusion, default "rrf"
        The hybrid's fusion (:func:`ragnb.retrievers.fusion.parse_fusion`).
    fusion_weights : sequence of float, optional
        Its weights (BM25, dense) for ``wsum`` / ``wrrf``.

    Returns
    -------
    runs : dict of str to DataFrame
    described : dict of str to dict
        Each retriever's configuration, with ``seconds`` (index + retrieve, wall clock).
    cache : dict
        Cache location and hit/miss counts.
    """
    cache = Cache(cache_dir or None)
    fused = parse_fusion(fusion, weights=fusion_weights, rrf_k=rrf_k)
    queries = dataset.judged_queries
    runs: dict[str, pd.DataFrame] = {}
    described: dict[str, dict[str, Any]] = {}
    dense: DenseRetriever | None = None
    for name in retrievers:
        start = time.perf_counter()
        if name == "hybrid" and dense is not None:
            bm25 = BM25Retriever().index(dataset.corpus)
            retriever: Retriever = HybridRetriever(bm25, dense, depth=depth, fusion=fused)
        else:
            retriever = make_retriever(
                name, model=embedder, depth=depth, cache=cache, progress=progress, fusion=fused
            )
            retriever.index(dataset.corpus)
        if name == "dense" and isinstance(retriever, DenseRetriever):
            dense = retriever
        runs[name] = retriever.retrieve(queries, k=depth)
        described[name] = {**retriever.describe(), "seconds": time.perf_counter() - start}
    return runs, described, cache.summary()
