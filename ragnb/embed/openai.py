"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint, through the one HTTP transport.

The ``openai`` client builds the request and decodes the answer (base64 little-endian float32);
retries, Retry-After, backoff and redaction of the key are :mod:`ragnb.llm.transport`'s.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from ragnb.core.lazylibs import require
from ragnb.core.validation import l2_normalise
from ragnb.embed.base import Embedder, Kind
from ragnb.errors import InputError
from ragnb.llm.ledger import count_tokens
from ragnb.llm.transport import Fault, GaveUp, RetryPolicy, call, http_client, rate_limiter, redact

__all__ = ["OpenAIEmbedder"]

log = logging.getLogger("ragnb.embed")


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    Parameters
    ----------
    model : str, default "text-embedding-3-small"
    base_url : str, optional
        Server root, e.g. ``http://localhost:8000/v1``; default: the client's (``$OPENAI_BASE_URL``
        or OpenAI).
    api_key : str, optional
        Default ``$OPENAI_API_KEY``. Never stored in cache keys, reports or manifests.
    dimensions : int, optional
        Requested output dimension (models that support it).
    normalize : bool, default True
        L2-normalise the returned vectors.
    batch_size : int, default 256
    timeout : float, default 60.0
        Seconds per request.
    max_retries : int, default 5
        Retries per batch after the first request (:mod:`ragnb.llm.transport`: 408, 409, 429, 5xx,
        timeouts, dropped connections and unparseable bodies, after the server's Retry-After
        or a jittered exponential backoff).
    rpm, tpm : float, optional
        Requests and input tokens per minute at most (None: no budget of its own), one budget
        per endpoint (base URL + model) shared by every thread and client of the process
        (:func:`ragnb.llm.transport.rate_limiter`); a batch is charged its texts' tokens counted
        offline (:func:`ragnb.llm.ledger.count_tokens`). The server's ``x-ratelimit-*`` headers
        are followed where it sends them, and a 429 lowers the allowed rate (AIMD) and is
        retried.

    Raises
    ------
    openai.APIError
        From :meth:`embed`, the client's own error of the last request (``RateLimitError``,
        ``InternalServerError``, ``APITimeoutError``, ...) when a batch gets no answer after
        its attempts; its notes say how many requests were made.
    RuntimeError
        When the server returns another number of vectors than texts.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        normalize: bool = True,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 5,
        rpm: float | None = None,
        tpm: float | None = None,
    ) -> None:
        super().__init__()
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InputError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.model_id = model
        self.base_url = base_url
        self.dimensions = dimensions
        self.normalize = normalize
        self.batch_size = batch_size
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self.policy = RetryPolicy(max_attempts=max_retries + 1, timeout=timeout)
        endpoint = base_url or os.environ.get("OPENAI_BASE_URL")
        self.limiter = rate_limiter(endpoint, model, rpm, tpm)
        self._client: Any = None

    @property
    def params(self) -> dict[str, Any]:
        return {"dimensions": self.dimensions, "normalize": self.normalize}

    def _load(self) -> Any:
        if self._client is None:
            openai = require("openai")

            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unset",
                timeout=self._timeout,
                max_retries=0,  # retries are the transport's
                http_client=http_client(self.limiter, asynchronous=False),
            )
        return self._client

    def _embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        client = self._load()
        kwargs: dict[str, Any] = {"model": self.model_id, "input": texts}
        if self.dimensions is not None:
            kwargs["dimensions"] = self.dimensions

        def send(attempt: int) -> Any:
            # the retry number, as the client sends it when it retries by itself
            retry = {"x-stainless-retry-count": str(attempt - 1)}
            return client.embeddings.create(**kwargs, extra_headers=retry)

        def on_fault(fault: Fault, attempt: int) -> None:
            log.info("%s: embeddings attempt %d: %s", self.model_id, attempt, fault.reason)

        tokens = 0
        if self.limiter.tpm is not None:
            tokens = sum(count_tokens(t, self.model_id)[0] for t in texts)
        failure: BaseException | None = None
        try:
            response = call(
                send,
                self.policy,
                keys=[self._api_key],
                on_fault=on_fault,
                limiter=self.limiter,
                tokens=tokens,
            )
        except GaveUp as g:
            failure = g.fault.error
            failure.add_note(redact(f"{self.model_id}: {g.reason}", [self._api_key]))
        if failure is not None:  # the client's own error, raised outside the handler above
            raise failure
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise RuntimeError(
                f"embedding server returned {len(data)} vectors for {len(texts)} inputs"
            )
        vecs = np.asarray([d.embedding for d in data], dtype=np.float32)
        if self.normalize:
            vecs = l2_normalise(vecs)
        return vecs

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["base_url"] = self.base_url
        info.update(self.limiter.describe())
        return info
