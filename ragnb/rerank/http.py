"""A hosted reranker behind the common ``POST /rerank`` shape (Voyage, Cohere, Jina, TEI).

Requests go through the one HTTP transport (:mod:`ragnb.llm.transport`: retries, Retry-After,
backoff, redaction of the key) and the project cache; prices come from the one price table
(:mod:`ragnb.llm.prices`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ragnb.core.cache import Cache, make_key, text_hash
from ragnb.core.lazylibs import require
from ragnb.core.provenance import safe_url
from ragnb.errors import InputError
from ragnb.llm.ledger import count_tokens
from ragnb.llm.prices import PriceTable
from ragnb.llm.transport import (
    DEFAULT_RETRY,
    Fault,
    GaveUp,
    RetryPolicy,
    call,
    check_request_params,
    check_retry_settings,
    http_client,
    rate_limiter,
)
from ragnb.rerank.base import CandidateGroup, Reranker, RerankError

__all__ = ["KEY_PARTS", "NAMESPACE", "HTTPReranker", "parse_rerank_response"]

log = logging.getLogger("ragnb.rerank")

#: Cache namespace of :class:`HTTPReranker` answers, and the parts of its keys.
NAMESPACE = "rerank"
KEY_PARTS = ("model", "params", "query_sha256", "documents_sha256")

# where rerank answers report their tokens: Voyage and Jina, then Cohere's billing metadata
_TOKEN_PATHS = (
    ("usage", "total_tokens"),
    ("meta", "billed_units", "total_tokens"),
    ("meta", "tokens", "input_tokens"),
)


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
        Requests per call at most. 408, 409, 429, 5xx (unless the server answers
        ``x-should-retry: false``), timeouts, dropped connections and unparseable (truncated)
        bodies are retried after the wait the server asks for (``Retry-After``), else
        ``backoff_base * 2**(retry - 1)`` seconds capped at ``backoff_max``, with jitter; other
        errors stop at once (:mod:`ragnb.llm.transport`).
    backoff_base, backoff_max, max_retry_wait : float, seconds
        A server asking for a wait longer than ``max_retry_wait`` makes the call fail.
    concurrency : int, default 4
        Queries in flight at once in :meth:`rerank_run`.
    rpm, tpm : float, optional
        Requests and tokens per minute at most (None: no budget of its own), one budget per
        endpoint (base URL + model) shared by every thread and client of the process
        (:func:`ragnb.llm.transport.rate_limiter`); a request is charged its documents' and query's
        tokens counted offline as in the Notes. The server's ``x-ratelimit-*`` headers are
        followed where it sends them, and a 429 lowers the allowed rate (AIMD) and is retried.
    cache : Cache or False, optional
        Answers are cached under (model, parameters, SHA-256 of the query, SHA-256 of the
        documents), so a second run makes no request; default a :class:`~ragnb.core.cache.Cache` in
        ``cache_dir``; False: no cache (every call is sent, for latency measurements).
    prices : PriceTable, optional
        For :meth:`cost_usd`; default the shipped table (:meth:`ragnb.llm.prices.PriceTable.load`).

    Raises
    ------
    RerankError
        From :meth:`rerank` / :meth:`rerank_run` when a request fails after its attempts, is
        refused (4xx), or answers something that is not a rerank result.
    InputError
        On a bad setting (an ``rpm`` or ``tpm`` that is not a number > 0, ...).

    Notes
    -----
    Tokens are the server's ``usage.total_tokens``; when it reports none, they are counted
    offline (:func:`ragnb.llm.ledger.count_tokens`) the way Voyage bills them, query tokens times
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
        timeout: float = DEFAULT_RETRY.timeout,
        max_attempts: int = DEFAULT_RETRY.max_attempts,
        backoff_base: float = DEFAULT_RETRY.backoff_base,
        backoff_max: float = DEFAULT_RETRY.backoff_max,
        max_retry_wait: float = DEFAULT_RETRY.max_retry_wait,
        concurrency: int = 4,
        rpm: float | None = None,
        tpm: float | None = None,
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
        check_retry_settings({"max_documents": max_documents, "concurrency": concurrency}, {})
        self.policy = RetryPolicy(max_attempts, timeout, backoff_base, backoff_max, max_retry_wait)
        reserved = ("model", "query", documents_field, *([top_n_field] if top_n_field else []))
        params = check_request_params(request_params, reserved)
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
        self.concurrency = concurrency
        self.limiter = rate_limiter(self.base_url, model, rpm, tpm)
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
        self.prices = prices if prices is not None else PriceTable.load()
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
            "base_url": safe_url(self.base_url),
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
                **self.limiter.describe(),
            },
            "price_usd_per_1m_tokens": None if price is None else price.input_usd_per_1m,
            "prices": self.prices.describe(),
            "cache": None if self.cache is None else str(self.cache.path),
        }

    def cost_usd(self) -> float:
        u = self.usage()
        return self.prices.cost(self.model, int(u["input_tokens"]), int(u["output_tokens"]))

    # -- scoring

    def _score_groups(self, groups: list[CandidateGroup], top_n: int | None) -> list[np.ndarray]:
        if len(groups) == 1 or self.concurrency == 1:
            return [self._score_one(g, top_n) for g in groups]
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="ragnb-rerank") as pool:
            return list(pool.map(lambda g: self._score_one(g, top_n), groups))

    def _score_one(self, g: CandidateGroup, top_n: int | None) -> np.ndarray:
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
        counted = self._count_tokens(query, documents) if self.limiter.tpm is not None else 0
        data = self._post(body, query_id, counted)
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
        q = count_tokens(query, self.model)[0]
        return q * len(documents) + sum(count_tokens(d, self.model)[0] for d in documents)

    def _load(self) -> Any:
        with self._client_lock:
            if self._client is None:
                openai = require("openai")

                # the openai client is only the HTTP transport here (pooled connections, JSON,
                # errors); the key goes in each request's header, never into the client
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key="unset",
                    timeout=self.timeout,
                    max_retries=0,
                    http_client=http_client(self.limiter, asynchronous=False),
                )
            return self._client

    def _post(self, body: dict[str, Any], query_id: str, tokens: int = 0) -> Any:
        """POST ``body`` through :mod:`ragnb.llm.transport` (retries, Retry-After, backoff, the rate
        limit, redaction), charging ``tokens`` to the endpoint's token budget; the key is read
        from ``api_key_env`` at each request.

        Raises
        ------
        RerankError
            When no attempt gets an answer, naming the URL, the query and the reason.
        """
        openai = require("openai")

        client = self._load()
        where = f"{self.name}: POST {safe_url(self.base_url)}{self.path} (query {query_id!r})"

        def send(attempt: int) -> Any:
            key = os.environ.get(self.api_key_env)
            auth: Any = f"Bearer {key}" if key else openai.omit
            self._add(http_requests=1)
            return client.post(
                self.path, cast_to=dict, body=body, options={"headers": {"Authorization": auth}}
            )

        def on_fault(fault: Fault, attempt: int) -> None:
            log.info("%s: attempt %d: %s", where, attempt, fault.reason)

        try:
            return call(
                send,
                self.policy,
                keys=[os.environ.get(self.api_key_env)],
                on_fault=on_fault,
                limiter=self.limiter,
                tokens=tokens,
            )
        except GaveUp as g:
            self._add(failures=1)
            raise RerankError(f"{where}: {g.reason}") from None
