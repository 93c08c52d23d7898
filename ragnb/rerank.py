"""Second-stage rerankers behind one interface, and near-duplicate suppression before them.

A :class:`Reranker` reorders the candidates a first-stage retriever returned for a query:

- :meth:`Reranker.rerank` takes ``(doc_id, text)`` pairs in first-stage order and returns
  ``(doc_id, score)`` pairs best first (ties keep the first-stage order);
- :meth:`Reranker.rerank_run` takes a whole run frame and returns the reranked run frame;
- :meth:`Reranker.usage` counts what the reranking cost (calls, tokens, candidates) and
  :meth:`Reranker.cost_usd` prices it, for cost-latency-quality (CLQ) sweeps.

Rerankers (``make_reranker(spec)``)
-----------------------------------
``"none"`` -> :class:`NoReranker`
    The first-stage order and scores, unchanged (the baseline of a sweep).
``"rescore:<embedder>"`` -> :class:`EmbedderRescorer`
    Cosine similarity under a second (usually stronger) embedder, through the embedding cache.
``"cross-encoder:<name or path>"`` -> :class:`CrossEncoderReranker`
    A sentence-transformers ``CrossEncoder`` scores each (query, passage) pair.
``"http:<model>"`` -> :class:`HTTPReranker`
    A hosted reranker behind the common ``POST /rerank`` shape (Voyage, Cohere, Jina; TEI with
    ``documents_field="texts"``), with retries and the project cache.
``"llm:<model>"`` -> :class:`LLMListwiseReranker`
    An LLM orders sliding windows of 20 candidates (overlap 10) from the bottom of the list to
    the top (RankGPT; SPEAR appendix E), through :class:`ragnb.judge.OpenAIJudge`'s ``rank`` verb.

Only the first stage's candidates are reordered: a reranker never adds documents. Dallaire
(section 5.2) advises thinning near-duplicates before reranking, which
:func:`suppress_near_duplicates` does.

References
----------
.. [1] Dallaire, "Practical RAG Evaluation: A Rarity-Aware Set-Based Metric and
   Cost-Latency-Quality Trade-offs" (arXiv 2511.09545): section 3.2.1 (rerankers are
   token-metered; cost per query = K x T_cand / 1000 x price per 1K tokens; Voyage prices),
   section 5.1-5.2 (cross-encoder reranking of dense and hybrid pools; near-duplicate
   suppression before reranking).
.. [2] Zou et al., "SPEAR: Subset-sampled Performance Evaluation via Automated Ground Truth
   Generation for RAG" (arXiv 2507.06554), appendix E: the LLM reranker ranks 50 chunks with a
   sliding window of size 20 and overlap 10, in 4 calls per query.
.. [3] Sun et al., "Is ChatGPT Good at Search? Investigating Large Language Models as
   Re-Ranking Agents" (RankGPT, EMNLP 2023): sliding windows from the bottom of the list up.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ragnb.cache import Cache, make_key, text_hash
from ragnb.errors import InputError
from ragnb.frames import sort_run
from ragnb.ledger import PriceTable
from ragnb.validation import l2_normalise

if TYPE_CHECKING:
    from ragnb.embed.base import CachedEmbedder, Embedder
    from ragnb.judge.base import Judge

__all__ = [
    "NAMESPACE",
    "RERANK_PRICES",
    "USAGE_KEYS",
    "CrossEncoderReranker",
    "EmbedderRescorer",
    "HTTPReranker",
    "LLMListwiseReranker",
    "NoReranker",
    "RerankError",
    "Reranker",
    "make_reranker",
    "parse_rerank_response",
    "sliding_windows",
    "suppress_near_duplicates",
]

log = logging.getLogger("ragnb.rerank")

#: Cache namespace of :class:`HTTPReranker` answers, and the parts of its keys.
NAMESPACE = "rerank"
KEY_PARTS = ("model", "params", "query_sha256", "documents_sha256")

#: The counters of :meth:`Reranker.usage`.
USAGE_KEYS = (
    "queries",
    "candidates",
    "calls",
    "cached_calls",
    "http_requests",
    "input_tokens",
    "output_tokens",
    "estimated_tokens",
    "failures",
)

#: Voyage AI rerank prices in US dollars per 1M tokens (no output tokens), as Dallaire
#: (arXiv 2511.09545, section 3.2.1, Nov 2025) quotes them: rerank-2.5 $0.00005 / 1K tokens,
#: rerank-2.5-lite $0.00002 / 1K tokens. Pass your own :class:`~ragnb.ledger.PriceTable`
#: (``prices=``) for other providers or dates.
RERANK_PRICES = PriceTable.from_dict(
    {
        "as_of": "2025-11",
        "source": (
            "Voyage AI reranker pricing as quoted by Dallaire (arXiv 2511.09545), section "
            "3.2.1; transcribed by hand, not fetched"
        ),
        "models": {
            "rerank-2.5": {"input": 0.05, "output": 0.0},
            "rerank-2.5-lite": {"input": 0.02, "output": 0.0},
        },
    },
    path="ragnb.rerank.RERANK_PRICES",
)

_RETRYABLE = {408, 409, 429}
# where rerank answers report their tokens: Voyage and Jina, then Cohere's billing metadata
_TOKEN_PATHS = (
    ("usage", "total_tokens"),
    ("meta", "billed_units", "total_tokens"),
    ("meta", "tokens", "input_tokens"),
)


class RerankError(RuntimeError):
    """A hosted reranker gave no usable answer (after retries where they make sense)."""


# ----------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class _Group:
    """The candidates of one query in first-stage order."""

    query_id: str
    query: str
    doc_ids: list[str]
    texts: list[str]
    scores: np.ndarray  # first-stage scores, shape (n,), float64


def _check_top_n(top_n: Any) -> int | None:
    if top_n is None:
        return None
    if isinstance(top_n, bool) or not isinstance(top_n, int | np.integer) or top_n < 1:
        raise InputError(f"top_n must be a positive integer or None, got {top_n!r}")
    return int(top_n)


def _group_from_candidates(
    query: str, candidates: Sequence[tuple[str, str]], scores: Sequence[float] | None
) -> _Group:
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Sequence):
        raise InputError("candidates must be a list of (doc_id, text) pairs")
    ids: list[str] = []
    texts: list[str] = []
    for i, pair in enumerate(candidates):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"candidate {i}: expected a (doc_id, text) pair, got {pair!r}")
        doc_id, text = pair
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            raise InputError(f"candidate {i}: doc_id must be a string, got {doc_id!r}")
        if not isinstance(text, str):
            raise InputError(f"candidate {i} ({doc_id!r}): text must be a string")
        ids.append(str(doc_id))
        texts.append(text)
    if len(set(ids)) != len(ids):
        dup = next(d for d in ids if ids.count(d) > 1)
        raise InputError(f"candidate {dup!r} appears twice")
    if scores is None:
        first = np.arange(len(ids), 0, -1, dtype=np.float64)
    else:
        first = np.asarray(scores, dtype=np.float64)
        if first.shape != (len(ids),) or not np.isfinite(first).all():
            raise InputError(f"scores must be {len(ids)} finite numbers, one per candidate")
    return _Group("q", query, ids, texts, first)


def _query_texts(queries: Any) -> dict[str, str]:
    if isinstance(queries, Mapping):
        return {str(k): v for k, v in queries.items()}
    if not isinstance(queries, pd.DataFrame):
        raise InputError(
            f"queries must be a DataFrame (query_id, text) or a dict, got {type(queries).__name__}"
        )
    for col in ("query_id", "text"):
        if col not in queries.columns:
            raise InputError(f"queries frame has no {col!r} column", column=col)
    out: dict[str, str] = {}
    for qid, text in zip(queries["query_id"].astype(str), queries["text"], strict=True):
        if qid in out and out[qid] != text:
            raise InputError("two different texts for one query", query_id=qid, column="text")
        out[qid] = text
    return out


def _groups(queries: Any, run: pd.DataFrame, texts: Mapping[str, str] | None) -> list[_Group]:
    """The run's candidates per query, in trec_eval order (score descending, ties by doc_id
    descending), with their texts; queries of ``queries`` absent from the run give nothing."""
    if not isinstance(run, pd.DataFrame):
        raise InputError(f"run must be a DataFrame, got {type(run).__name__}")
    qtexts = _query_texts(queries)
    if run.empty:
        return []
    ordered = sort_run(run).run
    qids = ordered["query_id"].to_numpy(dtype=object)
    dids = ordered["doc_id"].to_numpy(dtype=object)
    scores = ordered["score"].to_numpy(dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    ends = np.r_[starts[1:], len(qids)]
    groups = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        qid = str(qids[s])
        query = qtexts.get(qid)
        if not isinstance(query, str):
            what = "has no text in queries" if query is None else "text is not a string"
            raise InputError(f"the run's query {what}", query_id=qid, column="text")
        ids = [str(d) for d in dids[s:e]]
        if texts is None:
            doc_texts = [""] * len(ids)
        else:
            doc_texts = []
            for d in ids:
                t = texts.get(d)
                if not isinstance(t, str):
                    raise InputError(f"no text for document {d!r}", query_id=qid, column="doc_id")
                doc_texts.append(t)
        groups.append(_Group(qid, query, ids, doc_texts, scores[s:e]))
    return groups


def _order(scores: np.ndarray, top_n: int | None) -> np.ndarray:
    """Indices best first; ties keep the first-stage order (a stable sort)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return order if top_n is None else order[:top_n]


def _run_frame(groups: list[_Group], scored: list[np.ndarray], top_n: int | None) -> pd.DataFrame:
    qids: list[str] = []
    dids: list[str] = []
    vals: list[float] = []
    for g, s in zip(groups, scored, strict=True):
        for i in _order(s, top_n).tolist():
            qids.append(g.query_id)
            dids.append(g.doc_ids[i])
            vals.append(float(s[i]))
    frame = pd.DataFrame(
        {
            "query_id": pd.Series(qids, dtype=object),
            "doc_id": pd.Series(dids, dtype=object),
            "score": pd.Series(vals, dtype=np.float64),
        }
    )
    if frame.empty:
        frame["rank"] = pd.Series([], dtype=np.int64)
        return frame
    return sort_run(frame, warn=False).run


# ----------------------------------------------------------------------------- the interface


class Reranker(ABC):
    """Reorders a query's first-stage candidates.

    Subclasses implement :meth:`_score_groups` (one score per candidate, higher is better);
    ordering, truncation to ``top_n`` and the run frames are done here.

    Attributes
    ----------
    name : str
        ``"none"``, ``"rescore:<model_id>"``, ``"cross-encoder:<name>"``, ``"http:<model>"``,
        ``"llm:<model>"``: the reranker's label in sweep tables.
    """

    name: str = "reranker"
    _needs_text = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = dict.fromkeys(USAGE_KEYS, 0.0)

    # -- the verbs

    def rerank(
        self,
        query: str,
        candidates: Sequence[tuple[str, str]],
        top_n: int | None = None,
        *,
        scores: Sequence[float] | None = None,
    ) -> list[tuple[str, float]]:
        """Reorder one query's candidates.

        Parameters
        ----------
        query : str
        candidates : sequence of (doc_id, text), length n
            In first-stage order (best first); doc ids unique.
        top_n : int, optional
            Keep the best ``top_n``; default all.
        scores : sequence of float, length n, optional
            The first-stage scores (kept by :class:`NoReranker`; default ``n, n-1, ..., 1``).

        Returns
        -------
        list of (doc_id, score), length ``min(top_n, n)``
            Best first; the score is the reranker's (higher is better; its scale depends on the
            reranker). Equal scores keep the first-stage order.

        Raises
        ------
        InputError
            On a malformed candidate list or ``top_n``.
        """
        top_n = _check_top_n(top_n)
        group = _group_from_candidates(query, candidates, scores)
        if not group.doc_ids:
            return []
        s = self._scored([group], top_n)[0]
        return [(group.doc_ids[i], float(s[i])) for i in _order(s, top_n).tolist()]

    def rerank_run(
        self,
        queries: pd.DataFrame | Mapping[str, str],
        run: pd.DataFrame,
        texts: Mapping[str, str] | None,
        top_n: int | None = None,
    ) -> pd.DataFrame:
        """Rerank every query of a run.

        Parameters
        ----------
        queries : DataFrame or dict
            ``query_id`` (str), ``text`` (str) (or ``{query_id: text}``). Queries absent from the
            run give no rows.
        run : DataFrame
            The first stage: ``query_id``, ``doc_id``, ``score`` (``rank`` is ignored: the
            candidates are taken in trec_eval order, score descending, ties by doc_id
            descending).
        texts : mapping of doc_id to str
            The passages' texts (may be None for :class:`NoReranker`).
        top_n : int, optional
            Rows kept per query; default all candidates.

        Returns
        -------
        DataFrame
            ``query_id`` (str), ``doc_id`` (str), ``score`` (float64, the reranker's),
            ``rank`` (int64, 1-based), grouped by query in trec_eval order (ties between equal
            scores broken by doc_id descending, as trec_eval does). ``attrs["reranker"]`` holds
            :attr:`name`.

        Raises
        ------
        InputError
            On a malformed run, a query of the run with no text, or a document with no text
            (naming the query and document).
        """
        top_n = _check_top_n(top_n)
        groups = _groups(queries, run, texts if self._needs_text else None)
        scored = self._scored(groups, top_n) if groups else []
        out = _run_frame(groups, scored, top_n)
        out.attrs["reranker"] = self.name
        return out

    def usage(self) -> dict[str, float]:
        """Cumulative counters since construction (or :meth:`reset_usage`).

        Returns
        -------
        dict of str to float
            ``queries`` and ``candidates`` reranked; ``calls``: model calls (batches of a local
            model, rerank requests of a hosted one, listwise windows of an LLM), including
            ``cached_calls`` served from the cache; ``http_requests`` actually sent (retries
            included); ``input_tokens``, ``output_tokens``: the tokens the calls cost, cached
            ones included (what the configuration costs when nothing is cached; 0 for local
            models); ``estimated_tokens``: calls whose tokens were counted offline because the
            server reported none; ``failures``: calls with no usable answer (the LLM window
            kept its order).
        """
        with self._lock:
            return dict(self._usage)

    def reset_usage(self) -> None:
        """Set every counter of :meth:`usage` to 0."""
        with self._lock:
            self._usage = dict.fromkeys(USAGE_KEYS, 0.0)

    def cost_usd(self) -> float:
        """US dollars of :meth:`usage`'s tokens: 0 for local models, NaN when unpriced."""
        return 0.0

    def describe(self) -> dict[str, Any]:
        """What the reranker is, for manifests and sweep tables (never an API key)."""
        return {"name": self.name, "kind": type(self).__name__, "params": {}}

    # -- what subclasses implement

    @abstractmethod
    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        """One float64 array of shape (n_candidates,) per group, higher is better; ``top_n``
        is a hint (the caller cuts the list): a hosted reranker may send it."""

    # -- helpers

    def _scored(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        scored = self._score_groups(groups, top_n)
        self._add(queries=len(groups), candidates=sum(len(g.doc_ids) for g in groups))
        return scored

    def _add(self, **counts: float) -> None:
        with self._lock:
            for k, v in counts.items():
                self._usage[k] += float(v)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class NoReranker(Reranker):
    """The identity: first-stage order and scores kept (the no-rerank baseline of a sweep).

    Examples
    --------
    >>> NoReranker().rerank("q", [("a", "..."), ("b", "...")], scores=[0.9, 0.4])
    [('a', 0.9), ('b', 0.4)]
    """

    name = "none"
    _needs_text = False

    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        return [g.scores for g in groups]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "none", "params": {}}


# ----------------------------------------------------------------------------- embeddings


class EmbedderRescorer(Reranker):
    """Rescore candidates by cosine similarity under a second embedder.

    Parameters
    ----------
    embedder : CachedEmbedder or Embedder
        Queries are embedded with ``kind="query"``, passages with ``kind="passage"``; a
        :class:`~ragnb.embed.CachedEmbedder` (what :func:`ragnb.embed.make_embedder` returns)
        serves repeated texts from the cache. Vectors are L2-normalised here.

    Notes
    -----
    :meth:`rerank_run` embeds every distinct query and passage text of the run once, in two
    batched calls. Scores are cosines in [-1, 1].
    """

    def __init__(self, embedder: CachedEmbedder | Embedder) -> None:
        super().__init__()
        if not hasattr(embedder, "embed") or not hasattr(embedder, "model_id"):
            raise InputError(f"embedder must be a ragnb embedder, got {type(embedder).__name__}")
        self.embedder = embedder
        self.name = f"rescore:{embedder.model_id}"

    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        qtexts = list(dict.fromkeys(g.query for g in groups))
        ptexts = list(dict.fromkeys(t for g in groups for t in g.texts))
        q = l2_normalise(self.embedder.embed(qtexts, kind="query"), np.float64)
        p = l2_normalise(self.embedder.embed(ptexts, kind="passage"), np.float64)
        qi = {t: i for i, t in enumerate(qtexts)}
        pi = {t: i for i, t in enumerate(ptexts)}
        self._add(calls=2)
        return [p[[pi[t] for t in g.texts]] @ q[qi[g.query]] for g in groups]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "rescore",
            "model": self.embedder.model_id,
            "params": {"embedder": self.embedder.describe()},
        }


# ----------------------------------------------------------------------------- cross-encoder


class CrossEncoderReranker(Reranker):
    """A sentence-transformers ``CrossEncoder`` scores each (query, passage) pair.

    Parameters
    ----------
    model_name_or_path : str
        A local folder or a model name (loaded offline when ``HF_HUB_OFFLINE=1``: the weights
        must already be on disk; ragnb never downloads them).
    batch_size : int, default 32
        Pairs per forward pass.
    device : str, default "cpu"
    max_length : int, optional
        Truncation length of a pair in word pieces; default the model's.
    **kwargs
        Passed to ``sentence_transformers.CrossEncoder`` (e.g. ``local_files_only=True``).

    Notes
    -----
    The model loads at the first call (sentence-transformers and torch are imported then).
    :meth:`rerank_run` sends every pair of the run through one ``predict`` call, in batches of
    ``batch_size``. Scores are the model's (after its activation: a sigmoid for one-label
    models, so in (0, 1)).

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 5.1: cross-encoder reranking of the candidate
       pool (Nogueira and Cho, 2019).
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(model_name_or_path, str | os.PathLike) or not str(model_name_or_path):
            raise InputError(
                f"model_name_or_path must be a path or name, got {model_name_or_path!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model_name = str(model_name_or_path)
        self.batch_size = batch_size
        self.device = device
        self.max_length = max_length
        self.kwargs = dict(kwargs)
        self.name = f"cross-encoder:{self.model_name}"
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            kw = dict(self.kwargs)
            if self.max_length is not None:
                kw["max_length"] = self.max_length
            self._model = CrossEncoder(self.model_name, device=self.device, **kw)
        return self._model

    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        pairs = [(g.query, t) for g in groups for t in g.texts]
        if not pairs:
            return [np.zeros(0) for _ in groups]
        model = self._load()
        raw = model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.shape != (len(pairs),):
            raise InputError(
                f"{self.model_name} gives {scores.shape[1:]} scores per pair; a reranker needs "
                "a one-label cross-encoder"
            )
        self._add(calls=math.ceil(len(pairs) / self.batch_size))
        out = []
        start = 0
        for g in groups:
            out.append(scores[start : start + len(g.texts)])
            start += len(g.texts)
        return out

    def describe(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "batch_size": self.batch_size,
            "device": self.device,
            "max_length": self.max_length,
        }
        if self._model is not None:
            params["max_length"] = getattr(self._model, "max_seq_length", self.max_length)
        return {
            "name": self.name,
            "kind": "cross-encoder",
            "model": self.model_name,
            "params": params,
        }


# ----------------------------------------------------------------------------- hosted rerankers


def parse_rerank_response(data: Any, n_documents: int) -> tuple[dict[int, float], int | None]:
    """Read a rerank answer: the score of each returned document and the tokens billed.

    Accepted shapes: ``{"results": [{"index", "relevance_score"}], ...}`` (Cohere, Jina),
    ``{"data": [...]}`` (Voyage), a bare list (TEI, whose items carry ``"score"``). Tokens come
    from ``usage.total_tokens`` (Voyage, Jina), else ``meta.billed_units.total_tokens`` or
    ``meta.tokens.input_tokens`` (Cohere), else None.

    Parameters
    ----------
    data : Any
        The parsed JSON body.
    n_documents : int
        Documents sent (indices must lie in ``[0, n_documents)``).

    Returns
    -------
    scores : dict of int to float
        Document index -> relevance score (finite).
    total_tokens : int or None

    Raises
    ------
    RerankError
        When the body has none of these shapes, or an index or score is invalid.

    Examples
    --------
    >>> parse_rerank_response({"data": [{"index": 1, "relevance_score": 0.8}],
    ...                        "usage": {"total_tokens": 12}}, 2)
    ({1: 0.8}, 12)
    """
    items = data
    if isinstance(data, dict):
        items = data.get("results", data.get("data"))
    if not isinstance(items, list):
        raise RerankError(
            f"not a rerank answer (no 'results' or 'data' list): {json.dumps(data)[:120]}"
        )
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RerankError(f"rerank result is not an object: {item!r}"[:160])
        idx = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n_documents:
            raise RerankError(f"rerank result index {idx!r} is not in [0, {n_documents})")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise RerankError(f"rerank result {idx}: relevance_score {score!r} is not a number")
        if idx in scores:
            raise RerankError(f"rerank result index {idx} appears twice")
        scores[idx] = float(score)
    tokens = None
    if isinstance(data, dict):
        for path in _TOKEN_PATHS:
            v: Any = data
            for part in path:
                v = v.get(part) if isinstance(v, dict) else None
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                tokens = v
                break
    return scores, tokens


def _safe_url(url: str) -> str:
    from ragnb.judge.llm import _safe_url as safe

    return safe(url) or ""


class HTTPReranker(Reranker):
    """A hosted reranker behind ``POST {base_url}/rerank`` (Voyage, Cohere, Jina, TEI).

    Request: ``{"model", "query", "documents": [str], "top_n"}`` (plus ``request_params``);
    answer: ``{"results" | "data": [{"index", "relevance_score"}], "usage": {"total_tokens"}}``
    (see :func:`parse_rerank_response`).

    Parameters
    ----------
    model : str
        E.g. ``"rerank-2.5"`` (Voyage), ``"rerank-v3.5"`` (Cohere).
    base_url : str, optional
        E.g. ``https://api.voyageai.com/v1``; default ``$RERANK_BASE_URL``.
    api_key_env : str, default "RERANK_API_KEY"
        NAME of the environment variable holding the key, read at each request and sent as
        ``Authorization: Bearer <key>`` (no header when unset). The key itself is never stored,
        logged, cached or described.
    documents_field : str, default "documents"
        Request field of the texts (``"texts"`` for Hugging Face TEI).
    top_n_field : str or None, default "top_n"
        Request field for ``top_n`` (``"top_k"`` for Voyage); None: never sent (the server
        scores every document and the list is cut here).
    request_params : dict, optional
        Other JSON fields of the request (``{"truncation": True}``, ...); part of the cache key.
    max_documents : int, default 1000
        Documents per request at most (Voyage's and Cohere's limit); longer lists are split into
        several requests (``top_n`` is then not sent).
    timeout : float, default 60.0
        Seconds per request.
    max_attempts : int, default 5
        Requests per call at most. 408, 409, 429, 5xx, timeouts, dropped connections and
        unparseable (truncated) bodies are retried after the wait the server asks for
        (``Retry-After``), else ``backoff_base * 2**(retry - 1)`` seconds capped at
        ``backoff_max``, with jitter; other errors stop at once.
    backoff_base, backoff_max, max_retry_wait : float, seconds
        A server asking for a wait longer than ``max_retry_wait`` makes the call fail.
    concurrency : int, default 4
        Queries in flight at once in :meth:`rerank_run`.
    cache : Cache or False, optional
        Answers are cached under (model, parameters, SHA-256 of the query, SHA-256 of the
        documents), so a second run makes no request; default a :class:`~ragnb.cache.Cache` in
        ``cache_dir``; False: no cache (every call is sent, for latency measurements).
    prices : PriceTable, optional
        For :meth:`cost_usd`; default :data:`RERANK_PRICES`.

    Raises
    ------
    RerankError
        From :meth:`rerank` / :meth:`rerank_run` when a request fails after its attempts, is
        refused (4xx), or answers something that is not a rerank result.

    Notes
    -----
    Tokens are the server's ``usage.total_tokens``; when it reports none, they are counted
    offline (:func:`ragnb.ledger.count_tokens`) the way Voyage bills them, query tokens times
    documents plus the documents' tokens, and the call is counted in ``estimated_tokens``.

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 3.2.1: rerankers are token-metered; cost per
       query = K x T_cand / 1000 x price per 1K tokens.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "RERANK_API_KEY",
        path: str = "/rerank",
        documents_field: str = "documents",
        top_n_field: str | None = "top_n",
        request_params: Mapping[str, Any] | None = None,
        max_documents: int = 1000,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_wait: float = 120.0,
        concurrency: int = 4,
        cache: Cache | bool | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(model, str) or not model:
            raise InputError(f"model must be a non-empty string, got {model!r}")
        base_url = base_url or os.environ.get("RERANK_BASE_URL")
        if not base_url:
            raise InputError(
                "HTTPReranker needs base_url (e.g. https://api.voyageai.com/v1) or $RERANK_BASE_URL"
            )
        if not isinstance(api_key_env, str) or not api_key_env:
            raise InputError("api_key_env must name an environment variable")
        from ragnb.judge.llm import check_retry_settings

        check_retry_settings(
            {
                "max_documents": max_documents,
                "max_attempts": max_attempts,
                "concurrency": concurrency,
            },
            {
                "timeout": timeout,
                "backoff_base": backoff_base,
                "backoff_max": backoff_max,
                "max_retry_wait": max_retry_wait,
            },
        )
        params = dict(request_params or {})
        for reserved in (
            "model",
            "query",
            documents_field,
            *([top_n_field] if top_n_field else []),
        ):
            if reserved in params:
                raise InputError(f"request_params may not set {reserved!r}")
        try:
            json.dumps(params, sort_keys=True)
        except TypeError as e:
            raise InputError(f"request_params must hold JSON values: {e}") from None
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.path = "/" + path.lstrip("/")
        self.documents_field = documents_field
        self.top_n_field = top_n_field
        self.request_params = params
        self.max_documents = max_documents
        self.timeout = float(timeout)
        self.max_attempts = max_attempts
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_wait = float(max_retry_wait)
        self.concurrency = concurrency
        if cache is False:
            self.cache: Cache | None = None
        elif isinstance(cache, Cache):
            self.cache = cache
        elif cache is None or cache is True:
            self.cache = Cache(cache_dir)
        else:
            raise InputError(f"cache must be a Cache, None or False, got {type(cache).__name__}")
        if self.cache is not None:
            self.cache.register_schema(NAMESPACE, KEY_PARTS)
        self.prices = prices if prices is not None else RERANK_PRICES
        self.name = f"http:{model}"
        self._client: Any = None
        self._client_lock = threading.Lock()

    # -- identity

    def describe(self) -> dict[str, Any]:
        price = self.prices.price(self.model)
        return {
            "name": self.name,
            "kind": "http",
            "model": self.model,
            "base_url": _safe_url(self.base_url),
            "path": self.path,
            "api_key_env": self.api_key_env,  # the variable's name, never its value
            "params": {
                "documents_field": self.documents_field,
                "top_n_field": self.top_n_field,
                "request_params": self.request_params,
                "max_documents": self.max_documents,
                "timeout_s": self.timeout,
                "max_attempts": self.max_attempts,
                "concurrency": self.concurrency,
            },
            "price_usd_per_1m_tokens": None if price is None else price.input_usd_per_1m,
            "prices": self.prices.describe(),
            "cache": None if self.cache is None else str(self.cache.path),
        }

    def cost_usd(self) -> float:
        u = self.usage()
        return self.prices.cost(self.model, int(u["input_tokens"]), int(u["output_tokens"]))

    # -- scoring

    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        if len(groups) == 1 or self.concurrency == 1:
            return [self._score_one(g, top_n) for g in groups]
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="ragnb-rerank") as pool:
            return list(pool.map(lambda g: self._score_one(g, top_n), groups))

    def _score_one(self, g: _Group, top_n: int | None) -> np.ndarray:
        n = len(g.texts)
        chunks = [(s, min(s + self.max_documents, n)) for s in range(0, n, self.max_documents)]
        send_top = top_n if (len(chunks) == 1 and self.top_n_field and top_n is not None) else None
        # documents the server leaves out (top_n) rank below every returned one
        scores = np.full(n, -np.inf)
        for s, e in chunks:
            got = self._call(g.query, g.texts[s:e], send_top, g.query_id)
            for i, v in got.items():
                scores[s + i] = v
        returned = int(np.isfinite(scores).sum())
        need = n if send_top is None else min(send_top, n)
        if returned < need:
            raise RerankError(
                f"{self.name}: query {g.query_id!r}: the server scored {returned} of {n} "
                f"documents (expected {need})"
            )
        if returned < n:  # finite scores for the run frame; these are cut by top_n anyway
            low = np.nanmin(scores[np.isfinite(scores)]) - 1.0
            scores[~np.isfinite(scores)] = low - np.arange(n - returned)
        return scores

    def _key(self, query: str, documents: list[str], top_n: int | None) -> str:
        blob = json.dumps([text_hash(d) for d in documents], separators=(",", ":"))
        return make_key(
            {
                "model": self.model,
                "params": {
                    "path": self.path,
                    "documents_field": self.documents_field,
                    "top_n": top_n,
                    "top_n_field": self.top_n_field if top_n is not None else None,
                    "request_params": self.request_params,
                },
                "query_sha256": text_hash(query),
                "documents_sha256": text_hash(blob),
            }
        )

    def _call(
        self, query: str, documents: list[str], top_n: int | None, query_id: str
    ) -> dict[int, float]:
        key = self._key(query, documents, top_n)
        if self.cache is not None:
            blob = self.cache.get(NAMESPACE, key)
            if blob is not None:
                d = json.loads(blob)
                scores = {int(i): float(v) for i, v in d["scores"]}
                self._add(
                    calls=1,
                    cached_calls=1,
                    input_tokens=d["total_tokens"],
                    estimated_tokens=int(d["estimated"]),
                )
                return scores
        body: dict[str, Any] = {
            "model": self.model,
            "query": query,
            self.documents_field: documents,
            **self.request_params,
        }
        if top_n is not None and self.top_n_field:
            body[self.top_n_field] = top_n
        data = self._post(body, query_id)
        try:
            scores, tokens = parse_rerank_response(data, len(documents))
        except RerankError as e:
            raise RerankError(f"{self.name}: query {query_id!r}: {e}") from None
        estimated = tokens is None
        if tokens is None:
            tokens = self._count_tokens(query, documents)
        self._add(calls=1, input_tokens=tokens, estimated_tokens=int(estimated))
        if self.cache is not None:
            value = {
                "v": 1,
                "scores": [[i, s] for i, s in scores.items()],
                "total_tokens": tokens,
                "estimated": estimated,
            }
            self.cache.put(NAMESPACE, key, json.dumps(value).encode("utf-8"))
        return scores

    def _count_tokens(self, query: str, documents: list[str]) -> int:
        from ragnb.ledger import count_tokens

        q = count_tokens(query, self.model)[0]
        return q * len(documents) + sum(count_tokens(d, self.model)[0] for d in documents)

    def _load(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import openai

                # the openai client is only the HTTP transport here (pooled connections, JSON,
                # errors); the key goes in each request's header, never into the client
                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key="unset", timeout=self.timeout, max_retries=0
                )
            return self._client

    def _post(self, body: dict[str, Any], query_id: str) -> Any:
        import openai

        from ragnb.judge.llm import _error_message, backoff_seconds, retry_after_seconds

        client = self._load()
        where = f"{self.name}: POST {_safe_url(self.base_url)}{self.path} (query {query_id!r})"
        tries = 0
        while True:
            tries += 1
            key = os.environ.get(self.api_key_env)
            auth: Any = f"Bearer {key}" if key else openai.omit
            wait: float | None = None
            self._add(http_requests=1)
            try:
                return client.post(
                    self.path,
                    cast_to=dict,
                    body=body,
                    options={"headers": {"Authorization": auth}},
                )
            except openai.APIStatusError as e:
                code = e.status_code
                reason = f"HTTP {code}: {_error_message(e)}"
                retryable = code in _RETRYABLE or code >= 500
                if retryable:
                    wait = retry_after_seconds(e.response.headers)
            except openai.APITimeoutError:
                reason, retryable = f"no answer within {self.timeout:g} s", True
            except openai.APIConnectionError as e:
                cause = e.__cause__ or e
                reason, retryable = f"connection error: {type(cause).__name__}: {cause}", True
            except (ValueError, openai.APIResponseValidationError) as e:
                # a truncated or non-JSON body (json.JSONDecodeError is a ValueError)
                reason, retryable = f"malformed response body: {type(e).__name__}: {e}", True
            reason = self._scrub(reason)
            log.info("%s: attempt %d: %s", where, tries, reason)
            if not retryable or tries >= self.max_attempts:
                self._add(failures=1)
                raise RerankError(
                    f"{where}: {reason} (request {tries} of at most {self.max_attempts})"
                )
            if wait is None:
                wait = backoff_seconds(tries, self.backoff_base, self.backoff_max)
            elif wait > self.max_retry_wait:
                self._add(failures=1)
                raise RerankError(
                    f"{where}: {reason}; the server asked to wait {wait:g} s, more than "
                    f"max_retry_wait={self.max_retry_wait:g} s"
                )
            time.sleep(wait)

    def _scrub(self, text: str) -> str:
        key = os.environ.get(self.api_key_env) or ""
        if len(key) >= 4 and key in text:
            text = text.replace(key, "[REDACTED]")
        return text


# ----------------------------------------------------------------------------- LLM listwise


def sliding_windows(n: int, window: int = 20, overlap: int = 10) -> list[tuple[int, int]]:
    """The windows ``[start, end)`` a listwise reranker orders, bottom of the list first.

    Windows of ``window`` positions step up by ``window - overlap``; the top window is cut at
    position 0 (it may be shorter), and windows of fewer than 2 positions are skipped. After a
    window is ordered, its best ``overlap`` candidates sit in the next window up, so a strong
    candidate can climb from the bottom to the top in one pass (RankGPT's sliding window, with
    rank_llm's fix that always reaches the top of the list).

    Parameters
    ----------
    n : int
        Candidates (positions 0 .. n-1, best first).
    window : int, default 20
    overlap : int, default 10
        ``0 <= overlap < window``.

    Returns
    -------
    list of (start, end)
        In the order they are ranked.

    Raises
    ------
    InputError
        On a negative ``n``, ``window < 2``, or ``overlap`` outside ``[0, window)``.

    Examples
    --------
    SPEAR's setting: 50 chunks, window 20, overlap 10, 4 calls per query.

    >>> sliding_windows(50)
    [(30, 50), (20, 40), (10, 30), (0, 20)]
    >>> sliding_windows(45)
    [(25, 45), (15, 35), (5, 25), (0, 15)]
    >>> sliding_windows(12)
    [(0, 12)]

    References
    ----------
    .. [1] Zou et al., SPEAR (arXiv 2507.06554), appendix E.
    .. [2] Sun et al., RankGPT (EMNLP 2023), section 3.3 (sliding window strategy).
    """
    for name, v in (("n", n), ("window", window), ("overlap", overlap)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise InputError(f"{name} must be an integer, got {v!r}")
    if n < 0:
        raise InputError(f"n must be >= 0, got {n}")
    if window < 2:
        raise InputError(f"window must be >= 2, got {window}")
    if not 0 <= overlap < window:
        raise InputError(f"overlap must be in [0, window={window}), got {overlap}")
    step = window - overlap
    out = []
    end = n
    while end > 0:
        start = max(0, end - window)
        if end - start >= 2:
            out.append((start, end))
        if start == 0:
            break
        end -= step
    return out


class LLMListwiseReranker(Reranker):
    """An LLM orders sliding windows of candidates, from the bottom of the list to the top.

    Each window of ``window`` candidates (default 20) is sent to the judge's ``rank`` verb
    (prompt: the judge's ``rank_prompt``, ``"listwise"`` by default) and put in the order it
    returns; windows overlap by ``overlap`` (default 10), so the best of a window are carried up
    into the next one (:func:`sliding_windows`). The final score of a candidate is its final
    position counted from the bottom: ``n`` for the first, ``1`` for the last.

    Parameters
    ----------
    judge : Judge, optional
        Usually an :class:`~ragnb.judge.OpenAIJudge` (its cache, retries, ledger and
        concurrency apply); any :class:`~ragnb.judge.Judge` with a ``rank`` verb works. Default:
        an ``OpenAIJudge(model, base_url=base_url, **judge_kwargs)``.
    model : str, optional
        The chat model when no judge is given (default ``"gpt-4o-mini"``).
    base_url : str, optional
        When no judge is given.
    window : int, default 20
        Candidates per call, 2 to 26 (the prompt labels them A-Z).
    overlap : int, default 10
    depth : int, optional
        Rerank only the first ``depth`` candidates (the rest keep their order below them);
        default all.
    stage : str, default "rerank"
        The ledger label of the calls.
    **judge_kwargs
        Passed to ``OpenAIJudge`` when no judge is given (``cache``, ``ledger``, ``api_key``...).

    Notes
    -----
    An answer that is not a valid permutation (after the judge's one reminder) or no answer at
    all leaves the window in its prior order and counts in ``usage()["failures"]``.
    :meth:`rerank_run` advances all queries in lock-step: the k-th window of every query goes
    out in one ``rank_many`` batch, so the judge's concurrency applies across queries.

    References
    ----------
    .. [1] Zou et al., SPEAR (arXiv 2507.06554), appendix E: LLM reranker, window 20, overlap
       10, 4 calls for 50 chunks.
    .. [2] Sun et al., RankGPT (EMNLP 2023), section 3.3.
    """

    def __init__(
        self,
        judge: Judge | None = None,
        *,
        model: str | None = None,
        base_url: str | None = None,
        window: int = 20,
        overlap: int = 10,
        depth: int | None = None,
        stage: str = "rerank",
        **judge_kwargs: Any,
    ) -> None:
        super().__init__()
        from ragnb.judge.prompts import LABELS

        sliding_windows(0, window, overlap)  # validates window and overlap
        if window > len(LABELS):
            raise InputError(f"window must be <= {len(LABELS)} (labels A-Z), got {window}")
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 2
        ):
            raise InputError(f"depth must be an integer >= 2 or None, got {depth!r}")
        if judge is None:
            from ragnb.judge.llm import OpenAIJudge

            judge_kwargs.setdefault("progress", False)
            judge = OpenAIJudge(model or "gpt-4o-mini", base_url=base_url, **judge_kwargs)
        elif judge_kwargs or base_url is not None:
            raise InputError("pass either a judge or the settings of a new one, not both")
        if not hasattr(judge, "rank_many"):
            raise InputError(f"judge must be a ragnb Judge, got {type(judge).__name__}")
        self.judge = judge
        self.model = getattr(judge, "model", None) or model or judge.judge_id
        self.window = window
        self.overlap = overlap
        self.depth = depth
        self.stage = stage
        self.name = f"llm:{self.model}"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "llm-listwise",
            "model": self.model,
            "params": {"window": self.window, "overlap": self.overlap, "depth": self.depth},
            "judge": self.judge.describe(),
        }

    def cost_usd(self) -> float:
        ledger = getattr(self.judge, "ledger", None)
        if ledger is None:
            return 0.0
        u = self.usage()
        return ledger.prices.cost(self.model, int(u["input_tokens"]), int(u["output_tokens"]))

    def _score_groups(self, groups: list[_Group], top_n: int | None) -> list[np.ndarray]:
        orders = [list(range(len(g.doc_ids))) for g in groups]
        plans = [
            sliding_windows(
                min(len(g.doc_ids), self.depth or len(g.doc_ids)), self.window, self.overlap
            )
            for g in groups
        ]
        for k in range(max((len(p) for p in plans), default=0)):
            items = []
            where = []
            for gi, (g, plan) in enumerate(zip(groups, plans, strict=True)):
                if k >= len(plan):
                    continue
                start, end = plan[k]
                idx = orders[gi][start:end]
                items.append(
                    {
                        "query_id": g.query_id,
                        "batch_id": f"w{k}:{start}-{end}",
                        "query": g.query,
                        "doc_ids": [g.doc_ids[i] for i in idx],
                        "passages": [g.texts[i] for i in idx],
                    }
                )
                where.append((gi, start, end))
            ranked = self.judge.rank_many(items, stage=self.stage)
            valid = ranked["valid"].to_numpy(dtype=bool)
            self._add(
                calls=len(ranked),
                cached_calls=int(ranked["cached"].sum()),
                http_requests=int(ranked["attempts"].sum()),
                input_tokens=int(ranked["input_tokens"].sum()),
                output_tokens=int(ranked["output_tokens"].sum()),
                failures=int((~valid).sum()),
            )
            for (gi, start, end), ok, perm in zip(
                where, valid.tolist(), ranked["permutation"].tolist(), strict=True
            ):
                if not ok:
                    continue
                window_idx = orders[gi][start:end]
                orders[gi][start:end] = [window_idx[p] for p in perm]
            bad = int((~valid).sum())
            if bad:
                log.warning(
                    "%s: %d of %d windows had no valid ranking and kept their order",
                    self.name,
                    bad,
                    len(ranked),
                )
        out = []
        for g, order in zip(groups, orders, strict=True):
            n = len(g.doc_ids)
            s = np.empty(n, dtype=np.float64)
            s[order] = np.arange(n, 0, -1, dtype=np.float64)
            out.append(s)
        return out


# ----------------------------------------------------------------------------- the factory


def make_reranker(spec: str, **kwargs: Any) -> Reranker:
    """Build a reranker from a spec string.

    Parameters
    ----------
    spec : str
        ``"none"``; ``"rescore:<embedder name>"`` (any :func:`ragnb.embed.make_embedder` name;
        ``kwargs`` go to ``make_embedder``: ``cache``, ``cache_dir``, ``progress``, ``dim``...);
        ``"cross-encoder:<name or path>"`` (``kwargs`` to :class:`CrossEncoderReranker`);
        ``"http:<model>"`` (``kwargs`` to :class:`HTTPReranker`: ``base_url``, ``api_key_env``,
        ``top_n_field``, ``cache``...); ``"llm:<model>"`` (``kwargs`` to
        :class:`LLMListwiseReranker`: ``judge``, or ``base_url`` and the judge's settings).

    Returns
    -------
    Reranker

    Raises
    ------
    InputError
        On an unknown kind or an empty name.

    Examples
    --------
    >>> make_reranker("none").name
    'none'
    >>> make_reranker("http:rerank-2.5", base_url="http://127.0.0.1:9/v1", cache=False).name
    'http:rerank-2.5'
    """
    if not isinstance(spec, str):
        raise InputError(f"a reranker spec must be a string, got {spec!r}")
    spec = spec.strip()
    if spec.lower() in ("none", ""):
        if kwargs:
            raise InputError(f"reranker 'none' takes no settings, got {sorted(kwargs)}")
        return NoReranker()
    kind, sep, name = spec.partition(":")
    kind = kind.strip().lower()
    name = name.strip()
    kinds = "'none', 'rescore:<embedder>', 'cross-encoder:<name>', 'http:<model>', 'llm:<model>'"
    if not sep or not name:
        raise InputError(f"unknown reranker spec {spec!r}; expected one of {kinds}")
    if kind == "rescore":
        from ragnb.embed.base import make_embedder

        return EmbedderRescorer(make_embedder(name, **kwargs))
    if kind == "cross-encoder":
        return CrossEncoderReranker(name, **kwargs)
    if kind == "http":
        return HTTPReranker(name, **kwargs)
    if kind == "llm":
        judge = kwargs.pop("judge", None)
        if judge is not None:
            return LLMListwiseReranker(judge, **kwargs)
        return LLMListwiseReranker(model=name, **kwargs)
    raise InputError(f"unknown reranker kind {kind!r} in {spec!r}; expected one of {kinds}")


# ----------------------------------------------------------------------------- near duplicates


def suppress_near_duplicates(
    run: pd.DataFrame,
    vectors: Mapping[str, np.ndarray] | Callable[[list[str]], np.ndarray],
    threshold: float = 0.95,
) -> pd.DataFrame:
    """Drop candidates that nearly repeat a better-ranked candidate of the same query.

    Per query, candidates are visited in trec_eval order (score descending, ties by doc_id
    descending); a candidate is dropped when its cosine similarity with a candidate already
    KEPT is at least ``threshold``. Comparing with kept candidates only (greedy) means a chain
    a ~ b ~ c where a and c differ more than the threshold keeps a and c.

    Parameters
    ----------
    run : DataFrame
        ``query_id``, ``doc_id``, ``score`` (other columns are kept).
    vectors : mapping of doc_id to 1-D array, or callable
        The documents' vectors (any dimension, normalised here), or a function called once with
        the run's distinct doc ids (list of str, length m) returning an array of shape (m, dim),
        e.g. ``lambda ids: embedder.embed([texts[i] for i in ids])``.
    threshold : float in (-1, 1], default 0.95
        Cosine at or above which a candidate counts as a near-duplicate.

    Returns
    -------
    DataFrame
        The rows of ``run`` that are kept, in their input order (a ``rank`` column, if any, is
        renumbered 1..k per query in trec_eval order). ``attrs["dropped"]`` (int): rows
        dropped; ``attrs["near_duplicates"]``: list of ``(query_id, doc_id, kept_doc_id,
        cosine)`` tuples, one per dropped row.

    Raises
    ------
    InputError
        On a malformed run, a threshold outside (-1, 1], or a document with no vector (naming
        it).

    Examples
    --------
    >>> import pandas as pd, numpy as np
    >>> run = pd.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"],
    ...                     "score": [3.0, 2.0, 1.0]})
    >>> vecs = {"a": np.array([1.0, 0.0]), "b": np.array([0.99, 0.1]), "c": np.array([0.0, 1.0])}
    >>> out = suppress_near_duplicates(run, vecs, threshold=0.95)
    >>> out["doc_id"].tolist(), out.attrs["dropped"]
    (['a', 'c'], 1)

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 5.2: "dedupe/near-duplicate suppression before
       rerank to thin hard negatives"; section 2 (novelty discount of repeated sources).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise InputError(f"threshold must be a number, got {threshold!r}")
    if not -1.0 < float(threshold) <= 1.0:
        raise InputError(f"threshold must be in (-1, 1], got {threshold}")
    if not isinstance(run, pd.DataFrame):
        raise InputError(f"run must be a DataFrame, got {type(run).__name__}")
    out = run.copy()
    out.attrs = {}
    if run.empty:
        out.attrs.update(dropped=0, near_duplicates=[])
        return out
    work = run.reset_index(drop=True).assign(_row=np.arange(len(run)))
    ordered = sort_run(work, warn=False).run
    ids = ordered["doc_id"].astype(str).tolist()
    distinct = list(dict.fromkeys(ids))
    if callable(vectors) and not isinstance(vectors, Mapping):
        mat = np.asarray(vectors(distinct), dtype=np.float64)
        if mat.ndim != 2 or mat.shape[0] != len(distinct):
            raise InputError(
                f"the vectors function returned shape {mat.shape} for {len(distinct)} documents"
            )
    elif isinstance(vectors, Mapping):
        rows = []
        for d in distinct:
            v = vectors.get(d)
            if v is None:
                q = ordered["query_id"].iloc[ids.index(d)]
                raise InputError(f"no vector for document {d!r}", query_id=str(q))
            rows.append(np.asarray(v, dtype=np.float64).ravel())
        if len({r.shape for r in rows}) > 1:
            raise InputError("document vectors have different dimensions")
        mat = np.vstack(rows)
    else:
        raise InputError(f"vectors must be a mapping or a callable, got {type(vectors).__name__}")
    unit = l2_normalise(mat, np.float64)
    pos = {d: i for i, d in enumerate(distinct)}
    vec_idx = np.array([pos[d] for d in ids])
    qids = ordered["query_id"].to_numpy(dtype=object)
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    ends = np.r_[starts[1:], len(qids)]
    keep = np.ones(len(ordered), dtype=bool)
    pairs: list[tuple[str, str, str, float]] = []
    thr = float(threshold)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        u = unit[vec_idx[s:e]]
        sims = u @ u.T
        kept: list[int] = []
        for i in range(e - s):
            if kept:
                row = sims[i, kept]
                j = int(np.argmax(row))
                if row[j] >= thr:
                    keep[s + i] = False
                    pairs.append((str(qids[s]), ids[s + i], ids[s + kept[j]], float(row[j])))
                    continue
            kept.append(i)
    kept_rows = np.sort(ordered["_row"].to_numpy()[keep])
    out = run.iloc[kept_rows].copy()
    out.attrs = {}
    if "rank" in out.columns:
        ranks = ordered.loc[keep, ["_row"]].copy()
        ranks["new_rank"] = ranks.groupby(ordered.loc[keep, "query_id"]).cumcount() + 1
        out["rank"] = ranks.set_index("_row").loc[kept_rows, "new_rank"].to_numpy(np.int64)
    out.attrs["dropped"] = int((~keep).sum())
    out.attrs["near_duplicates"] = pairs
    return out
