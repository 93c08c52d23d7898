"""Retrievers that turn a corpus and queries into a run.

Every retriever has ``name``, ``index(corpus)`` and ``retrieve(queries, k) -> run``, where
``corpus`` and ``queries`` are the frames of :mod:`ragnb.frames` and the run has columns
``query_id``, ``doc_id``, ``score``, ``rank`` (1-based, trec_eval order). A document is indexed as
``title + " " + text`` (the BEIR convention).

- :class:`BM25Retriever`: Okapi BM25 with bm25s. The default configuration is the standard one
  of the BEIR baseline (Elasticsearch/Lucene BM25: ``k1=1.2``, ``b=0.75``, Lucene IDF, English
  stop words, Snowball English stemmer), not tuned to any dataset.
- :class:`DenseRetriever`: exact search by dot product of L2-normalised embeddings (cosine), top K.
- :class:`HybridRetriever`: reciprocal rank fusion of two retrievers' runs (:func:`rrf`).
- :func:`compute_runs`: several retrievers by name on a dataset, the dense index shared with
  hybrid.
"""

from __future__ import annotations

import itertools
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from ragnb.cache import Cache
from ragnb.embed import DEFAULT_MODEL, CachedEmbedder, make_embedder
from ragnb.errors import InputError
from ragnb.frames import sort_run
from ragnb.validation import check_positive_int, l2_normalise

if TYPE_CHECKING:
    from ragnb.io import BeirDataset

__all__ = [
    "RETRIEVERS",
    "BM25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Retriever",
    "compute_runs",
    "doc_texts",
    "make_retriever",
    "rrf",
    "rrf_scores",
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
        import Stemmer

        return Stemmer.Stemmer(self.stemmer_language).stemWords

    def _tokenize(self, texts: list[str]) -> Any:
        import bm25s

        return bm25s.tokenize(
            texts,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer(),
            show_progress=False,
        )

    def index(self, corpus: pd.DataFrame) -> BM25Retriever:
        import bm25s

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


def rrf_scores(rankings: Iterable[Iterable[Hashable]], rrf_k: int = 60) -> dict[Any, float]:
    """The reciprocal-rank-fusion score of every item of several rankings (the one RRF kernel).

    ``score(d) = sum over rankings r containing d of 1 / (rrf_k + rank_r(d))``, ranks 1-based in
    each ranking's order; an item absent from a ranking gets nothing from it. The sum runs over
    the rankings in the given order with Kahan compensation (as pandas' grouped sum), so a
    document's score does not depend on how the work is split. Both :func:`rrf` (run frames) and
    the CLQ sweep's hybrid mode (:mod:`ragnb.clq.engine`, lists of chunk rows) fuse through it;
    each sorts the scores with its own tie rule.

    Parameters
    ----------
    rankings : iterable of iterables of hashable
        Each ranking's items, best first.
    rrf_k : int, default 60
        The constant of Cormack et al. (2009), >= 0 (not validated here: the callers do).

    Returns
    -------
    dict
        Item -> fused score (float), in order of first appearance.

    References
    ----------
    Cormack, Clarke and Buettcher, "Reciprocal rank fusion outperforms Condorcet and individual
    rank learning methods", SIGIR 2009, eq. 1.

    Examples
    --------
    >>> s = rrf_scores([["x", "y"], ["y"]], rrf_k=60)
    >>> round(s["y"], 6), round(s["x"], 6)  # y: 1/62 + 1/61, x: 1/61
    (0.032522, 0.016393)
    """
    total: dict[Any, float] = {}
    carry: dict[Any, float] = {}
    for ranked in rankings:
        for rank, item in enumerate(ranked, start=1):
            x = 1.0 / (rrf_k + rank)
            old = total.get(item)
            if old is None:  # the first term: a Kahan step from 0 leaves no carry
                total[item] = x
                continue
            y = x - carry.get(item, 0.0)
            t = old + y
            carry[item] = (t - old) - y
            total[item] = t
    return total


def rrf(runs: list[pd.DataFrame], rrf_k: int = 60, k: int | None = None) -> pd.DataFrame:
    """Reciprocal rank fusion of several runs.

    ``score(d) = sum over runs r containing d of 1 / (rrf_k + rank_r(d))``, ranks 1-based in
    trec_eval order; a document absent from a run gets nothing from it (:func:`rrf_scores`).

    Parameters
    ----------
    runs : list of DataFrame
        Run frames (columns ``query_id``, ``doc_id``, ``score``).
    rrf_k : int, default 60
        The constant of Cormack et al. (2009).
    k : int, optional
        Keep the top ``k`` fused documents per query; default all.

    Returns
    -------
    DataFrame
        Run frame (``query_id``, ``doc_id``, ``score``, ``rank``); ties in the fused score are
        broken as trec_eval does (``doc_id`` descending).

    References
    ----------
    Cormack et al. (2009), as for :func:`rrf_scores`.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["x", "y"], "score": [2.0, 1.0]})
    >>> b = pd.DataFrame({"query_id": ["q"], "doc_id": ["y"], "score": [5.0]})
    >>> fused = rrf([a, b], rrf_k=60)
    >>> fused["doc_id"].tolist(), round(float(fused["score"].iloc[0]), 6)  # y: 1/62 + 1/61
    (['y', 'x'], 0.032522)
    """
    if not runs:
        raise InputError("rrf needs at least one run")
    if rrf_k < 0:
        raise InputError(f"rrf_k must be >= 0, got {rrf_k}")
    if k is not None:
        check_positive_int(k, "cutoff k")
    ranked_runs = [sort_run(r[["query_id", "doc_id", "score"]], warn=False).run for r in runs]
    per_query: dict[Any, list[list[Any]]] = {}
    for ranked in ranked_runs:
        qids = ranked["query_id"].to_numpy()
        starts = np.flatnonzero(ranked["rank"].to_numpy() == 1).tolist() + [len(ranked)]
        docs = ranked["doc_id"].tolist()
        for a, b in itertools.pairwise(starts):
            per_query.setdefault(qids[a], []).append(docs[a:b])
    qs: list[Any] = []
    ds: list[Any] = []
    ss: list[float] = []
    for qid, lists in per_query.items():
        scores = rrf_scores(lists, rrf_k)
        qs += [qid] * len(scores)
        ds += list(scores)
        ss += list(scores.values())
    dtypes = pd.concat([r.iloc[:0] for r in ranked_runs]).dtypes  # the columns' common types
    fused = pd.DataFrame(
        {
            "query_id": pd.Series(qs, dtype=dtypes["query_id"]),
            "doc_id": pd.Series(ds, dtype=dtypes["doc_id"]),
            "score": np.asarray(ss, dtype=np.float64),
        }
    )
    out = sort_run(fused, warn=False).run
    if k is not None:
        out = out[out["rank"] <= k].reset_index(drop=True)
    return out


class HybridRetriever(Retriever):
    """Reciprocal rank fusion of two retrievers (default: BM25 and dense).

    Parameters
    ----------
    first, second : Retriever
    rrf_k : int, default 60
        Cormack et al. (2009).
    depth : int, default 100
        Documents taken from each retriever before fusion.
    name : str, default "hybrid"
    """

    def __init__(
        self,
        first: Retriever,
        second: Retriever,
        *,
        rrf_k: int = 60,
        depth: int = 100,
        name: str = "hybrid",
    ) -> None:
        self.first, self.second = first, second
        self.rrf_k, self.depth, self.name = rrf_k, depth, name

    def index(self, corpus: pd.DataFrame) -> HybridRetriever:
        self.first.index(corpus)
        self.second.index(corpus)
        return self

    def retrieve(self, queries: pd.DataFrame, k: int = 100) -> pd.DataFrame:
        check_positive_int(k, "cutoff k")
        depth = max(k, self.depth)
        runs = [self.first.retrieve(queries, depth), self.second.retrieve(queries, depth)]
        return rrf(runs, rrf_k=self.rrf_k, k=k)

    def describe(self) -> dict[str, Any]:
        return {
            "retriever": self.name,
            "kind": "hybrid-rrf",
            "rrf_k": self.rrf_k,
            "depth": self.depth,
            "fuses": [self.first.name, self.second.name],
        }


RETRIEVERS = ("bm25", "dense", "hybrid")


def make_retriever(
    kind: str,
    *,
    model: str = DEFAULT_MODEL,
    rrf_k: int = 60,
    depth: int = 100,
    cache: Cache | None = None,
    cache_dir: str | None = None,
    progress: bool = True,
) -> Retriever:
    """A retriever by name: ``"bm25"``, ``"dense"`` or ``"hybrid"`` (RRF of the two).

    Raises
    ------
    InputError
        On an unknown name.
    """
    if kind == "bm25":
        return BM25Retriever()
    if kind in ("dense", "hybrid"):
        embedder = make_embedder(model, cache=cache, cache_dir=cache_dir, progress=progress)
        dense = DenseRetriever(embedder)
        if kind == "dense":
            return dense
        return HybridRetriever(BM25Retriever(), dense, rrf_k=rrf_k, depth=depth)
    raise InputError(f"unknown retriever {kind!r}; use one of {list(RETRIEVERS)}")


def compute_runs(
    dataset: BeirDataset,
    retrievers: Sequence[str],
    *,
    embedder: str = DEFAULT_MODEL,
    depth: int = 100,
    rrf_k: int = 60,
    cache_dir: str = "",
    progress: bool = True,
) -> tuple[dict[str, pd.DataFrame], dict[str, dict[str, Any]], dict[str, Any]]:
    """Run the retrievers once on the judged queries (the dense index is shared with hybrid).

    Parameters
    ----------
    dataset : BeirDataset
        Its corpus is indexed, its judged queries (:attr:`BeirDataset.judged_queries`) searched.
    retrievers : sequence of str
        Any of ``"bm25"``, ``"dense"``, ``"hybrid"``.
    embedder : str
        Name for :func:`ragnb.embed.make_embedder`, through the embedding cache.
    depth : int
        Documents per query.
    rrf_k : int
    cache_dir : str
    progress : bool

    Returns
    -------
    runs : dict of str to DataFrame
    described : dict of str to dict
        Each retriever's configuration, with ``seconds`` (index + retrieve, wall clock).
    cache : dict
        Cache location and hit/miss counts.
    """
    cache = Cache(cache_dir or None)
    queries = dataset.judged_queries
    runs: dict[str, pd.DataFrame] = {}
    described: dict[str, dict[str, Any]] = {}
    dense: DenseRetriever | None = None
    for name in retrievers:
        start = time.perf_counter()
        if name == "hybrid" and dense is not None:
            bm25 = BM25Retriever().index(dataset.corpus)
            retriever: Retriever = HybridRetriever(bm25, dense, rrf_k=rrf_k, depth=depth)
        else:
            retriever = make_retriever(
                name, model=embedder, rrf_k=rrf_k, depth=depth, cache=cache, progress=progress
            )
            retriever.index(dataset.corpus)
        if isinstance(retriever, DenseRetriever):
            dense = retriever
        runs[name] = retriever.retrieve(queries, k=depth)
        described[name] = {**retriever.describe(), "seconds": time.perf_counter() - start}
    return runs, described, cache.summary()
