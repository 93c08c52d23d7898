"""Second-stage rerankers behind one interface, and near-duplicate suppression before them.

A :class:`Reranker` reorders the candidates a first-stage retriever returned for a query:

- :meth:`Reranker.rerank` takes ``(doc_id, text)`` pairs in first-stage order and returns
  ``(doc_id, score)`` pairs best first (ties keep the first-stage order);
- :meth:`Reranker.rerank_run` takes a whole run frame and returns the reranked run frame;
- :meth:`Reranker.usage` counts what the reranking cost (calls, tokens, candidates) and
  :meth:`Reranker.cost_usd` prices it, for cost-latency-quality (CLQ) sweeps.

Rerankers (``make_reranker(spec)``), one module each beside :mod:`ragnb.rerank.base`
-------------------------------------------------------------------------------------
``"none"`` -> :class:`NoReranker` (:mod:`~ragnb.rerank.base`)
    The first-stage order and scores, unchanged (the baseline of a sweep).
``"rescore:<embedder>"`` -> :class:`EmbedderRescorer` (:mod:`~ragnb.rerank.local`)
    Cosine similarity under a second (usually stronger) embedder, through the embedding cache.
``"cross-encoder:<name or path>"`` -> :class:`CrossEncoderReranker` (:mod:`~ragnb.rerank.local`)
    A sentence-transformers ``CrossEncoder`` scores each (query, passage) pair.
``"http:<model>"`` -> :class:`HTTPReranker` (:mod:`~ragnb.rerank.http`)
    A hosted reranker behind the common ``POST /rerank`` shape (Voyage, Cohere, Jina; TEI with
    ``documents_field="texts"``), with retries (:mod:`ragnb.llm.transport`) and the project cache.
``"llm:<model>"`` -> :class:`LLMListwiseReranker` (:mod:`~ragnb.rerank.listwise`)
    An LLM orders sliding windows of 20 candidates (overlap 10) from the bottom of the list to
    the top (RankGPT; SPEAR appendix E), through :class:`ragnb.judge.OpenAIJudge`'s ``rank`` verb.

Only the first stage's candidates are reordered: a reranker never adds documents. Dallaire
(section 5.2) advises thinning near-duplicates before reranking, which
:func:`suppress_near_duplicates` does (:mod:`~ragnb.rerank.dedup`). Token-metered rerankers are
priced from the one price table (:mod:`ragnb.llm.prices`).

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

from typing import Any

from ragnb.errors import InputError
from ragnb.rerank.base import USAGE_KEYS, NoReranker, Reranker, RerankError
from ragnb.rerank.dedup import suppress_near_duplicates
from ragnb.rerank.http import NAMESPACE, HTTPReranker, parse_rerank_response
from ragnb.rerank.listwise import LLMListwiseReranker, sliding_windows
from ragnb.rerank.local import CrossEncoderReranker, EmbedderRescorer

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


def __getattr__(name: str) -> Any:
    # RERANK_PRICES: the shipped price table (ragnb/llm/prices.yaml, which holds the Voyage rerank
    # prices), read when first asked for rather than at import
    if name == "RERANK_PRICES":
        from ragnb.llm.prices import PriceTable

        return PriceTable.load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        from ragnb.embed import make_embedder

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
