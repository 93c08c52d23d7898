"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, with scripted answers and faults.

Tests talk to it through the real ``openai`` client (``base_url=server.base_url``); nothing is
mocked. The server runs :class:`http.server.ThreadingHTTPServer` in a background thread on an
ephemeral port.

Endpoints (each a :class:`Route`, reachable as ``server.embeddings``, ``server.chat``,
``server.rerank`` or ``server.routes[path]``):

``POST /v1/embeddings``
    Deterministic signed hashed bag of words (:func:`hashed_embedding`): texts sharing words have
    similar vectors. Vectors are NOT normalised (clients must normalise). Honours ``dimensions``
    (default :attr:`OpenAIServer.embedding_dim`) and ``encoding_format`` ``"float"`` or
    ``"base64"`` (little-endian float32, what the openai 3.x client asks for by default).
``POST /v1/chat/completions``
    Answers only what a test scripted; unscripted requests get a 400 (not retried by the client).
``POST /v1/rerank`` (``server.rerank``)
    The rerank shape of Cohere and Jina: ``{"model", "query", "documents":
    [str], "top_n"}`` (Voyage's ``top_k`` too) -> ``{"results": [{"index", "relevance_score"}],
    "usage": {"total_tokens"}}``, best first. The default handler (:func:`rerank_answer`) scores
    by word overlap: the share of the query's distinct lower-cased words found in the document
    (ties: lower index first); ``total_tokens`` counts words as Voyage counts tokens (query words
    times documents, plus the documents' words). ``functools.partial(rerank_answer, key="data")``
    answers Voyage's shape ``{"data": [...]}`` instead.

Scripting a route::

    server.chat.push("relevant: 2")                        # one answer, usage counted from words
    server.chat.push(ChatAnswer("2", prompt_tokens=100, completion_tokens=1, delay=0.5))
    server.chat.push(error(429, retry_after_ms=1), times=2)  # then two rate limits
    server.chat.push(error(503), malformed(), disconnect())
    server.chat.handler = lambda req: ChatAnswer(str(len(req.json["messages"])))  # when queue empty
    server.chat.handler = PromptCache("2", min_tokens=10)  # usage reports cached prompt tokens
    server.embeddings.fail(500, times=3)                    # faults before the normal answers
    server.embeddings.push(Reply(delay=1.0))                # a normal answer, one second late
    server.embeddings.latency = 0.05                        # added to every answer

Batch API (``server.batch``, a :class:`BatchAPI`): ``POST /v1/files`` (multipart upload,
``purpose=batch``), ``GET /v1/files/{id}/content``, ``POST /v1/batches`` and
``GET /v1/batches/{id}``. Each line of a batch is answered by ``server.chat.handler`` (not its
queue) when the batch completes::

    server.chat.handler = lambda req: "2"
    server.batch.polls = 3                  # in_progress for 3 polls, then it ends
    server.batch.outcome = "expired"        # or "failed", "cancelled"; default "completed"
    server.batch.answered = 5               # an expired batch answers its first 5 lines
    server.batch.fail = {"key1"}            # custom ids answered in the error file
    server.batch.refuse = 1                 # the next batch creation is answered 400
    server.batch.lines_answered             # lines answered (what a provider bills)

Rate limits: ``server.chat.handler = RateLimited(handler, requests=60, window=60.0)`` answers
429 (with ``Retry-After``, ``retry-after-ms`` and ``x-ratelimit-*`` headers) beyond 60 requests a
minute, a token bucket refilled continuously like OpenAI's limits; the answers it lets through
carry the ``x-ratelimit-*`` headers too unless ``advertise=False``.

The queue is consumed first, in order, one item per request; then ``route.handler`` answers.
A spec is a :class:`Reply`, a :class:`ChatAnswer`, a ``str`` (chat: the assistant's content),
a ``dict`` (a 200 JSON body), or a callable ``(RecordedRequest) -> spec``. A :class:`Reply` with
status 200 and no body is what ``route.handler`` answers (so ``Reply(delay=...)`` is a slow
normal answer).

Retry note (openai 3.x client): ``Retry-After`` is honoured only when ``0 < value <= 120``
seconds; ``Retry-After: 0`` falls back to the client's backoff (0.5 s times 2**retry, minus up to
25 % jitter). ``retry-after-ms: 1`` makes retries near-instant. 408, 409, 429 and 5xx are
retried, ``x-should-retry: false`` stops retries.

Every request is logged (:attr:`OpenAIServer.requests`) with the ``Authorization`` and
``api-key`` headers redacted; only a SHA-256 fingerprint of the key is kept
(:attr:`RecordedRequest.api_key_sha256`), so a test can check which key arrived without the log
holding it.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = [
    "BatchAPI",
    "ChatAnswer",
    "OpenAIServer",
    "RateLimited",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "Route",
    "disconnect",
    "error",
    "hashed_embedding",
    "malformed",
    "rerank_answer",
    "rerank_score",
]

REDACTED = "[REDACTED]"
_SECRET_HEADERS = ("authorization", "api-key", "x-api-key")
_WORD = re.compile(r"\w+")


# ----------------------------------------------------------------------------- what was received


@dataclass
class RecordedRequest:
    """One request as the server saw it (secrets redacted).

    Attributes
    ----------
    method, path : str
        ``path`` without the query string, e.g. ``"/v1/embeddings"``.
    headers : dict of str to str
        Lower-case names; ``authorization`` / ``api-key`` values replaced by ``"[REDACTED]"``.
    json : Any
        The parsed body, or None if it was empty or not JSON.
    api_key_sha256 : str or None
        SHA-256 hex of the bearer token or ``api-key`` value.
    status : int or None
        The status answered (None if the connection was dropped or still in flight).
    received_at : float
        ``time.monotonic()`` at arrival, seconds.
    """

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    api_key_sha256: str | None = None
    status: int | None = None
    received_at: float = 0.0


# ----------------------------------------------------------------------------- what to answer


@dataclass
class Reply:
    """A fixed answer.

    Parameters
    ----------
    status : int, default 200
    body : dict, list, str, bytes or None
        JSON-encoded if dict/list, sent as is if str/bytes. None with status 200: what the
        route's handler answers; None otherwise: an OpenAI-style error body.
    headers : dict of str to str
    delay : float, seconds
        Wait before answering.
    disconnect : bool
        Close the connection without answering (the client sees a connection error).
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    disconnect: bool = False


@dataclass
class ChatAnswer:
    """A chat completion with one assistant message.

    Parameters
    ----------
    content : str
    prompt_tokens, completion_tokens : int, optional
        Default: number of words in the request's messages / in ``content``.
    finish_reason : str, default "stop"
    delay : float, seconds
    headers : dict of str to str
    model : str, optional
        Default: the requested model.
    cached_tokens : int, optional
        Sent as ``usage.prompt_tokens_details.cached_tokens`` (the prompt tokens a provider's
        prompt cache served); None: no ``prompt_tokens_details`` (as llama.cpp answers).
    """

    content: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    cached_tokens: int | None = None

    def to_reply(self, request: RecordedRequest, seq: int) -> Reply:
        body = request.json if isinstance(request.json, dict) else {}
        prompt = self.prompt_tokens
        if prompt is None:
            prompt = sum(_n_words(m.get("content")) for m in body.get("messages", []) or [])
        completion = self.completion_tokens
        if completion is None:
            completion = _n_words(self.content)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return Reply(
            body={
                "id": f"chatcmpl-test-{seq}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model or body.get("model", "test-chat"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self.content},
                        "finish_reason": self.finish_reason,
                        "logprobs": None,
                    }
                ],
                "usage": usage,
            },
            headers=dict(self.headers),
            delay=self.delay,
        )


Spec = Reply | ChatAnswer | str | dict | Callable[[RecordedRequest], Any]


def error(
    status: int,
    message: str | None = None,
    *,
    retry_after: float | str | None = None,
    retry_after_ms: float | None = None,
    should_retry: bool | None = None,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
) -> Reply:
    """An OpenAI-style error answer: ``{"error": {"message", "type", "code"}}``.

    ``retry_after`` sets ``Retry-After`` (seconds), ``retry_after_ms`` sets ``retry-after-ms``,
    ``should_retry`` sets ``x-should-retry``.
    """
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["Retry-After"] = str(retry_after)
    if retry_after_ms is not None:
        hdrs["retry-after-ms"] = str(retry_after_ms)
    if should_retry is not None:
        hdrs["x-should-retry"] = "true" if should_retry else "false"
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")
    body = {
        "error": {
            "message": message or f"scripted error {status}",
            "type": kind,
            "param": None,
            "code": kind,
        }
    }
    return Reply(status=status, body=body, headers=hdrs, delay=delay)


def malformed(text: str = '{"object": "list", "data": [', status: int = 200) -> Reply:
    """A body that is not valid JSON (truncated by default), labelled application/json."""
    return Reply(status=status, body=text.encode("utf-8"))


def disconnect(delay: float = 0.0) -> Reply:
    """Drop the connection without an answer."""
    return Reply(disconnect=True, delay=delay)


# ----------------------------------------------------------------------------- embeddings


def _n_words(text: Any) -> int:
    if isinstance(text, str):
        return len(_WORD.findall(text))
    if isinstance(text, list):  # content parts
        return sum(_n_words(p.get("text")) for p in text if isinstance(p, dict))
    return 0


def hashed_embedding(text: str, dim: int) -> np.ndarray:
    """The server's vector for ``text``: signed hashed bag of lower-cased words.

    Each word adds +1 or -1 (from its SHA-256) to one of ``dim`` buckets. Not normalised.

    Returns
    -------
    ndarray of shape (dim,), float32
    """
    vec = np.zeros(dim, dtype=np.float32)
    words = _WORD.findall(text.lower()) or [text]
    for word in words:
        h = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
        vec[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    return vec


# ----------------------------------------------------------------------------- rerank


def rerank_score(query: str, document: str) -> float:
    """The test server's relevance of ``document`` to ``query``: the share of the query's
    distinct lower-cased words that occur in the document, in [0, 1]."""
    q = set(_WORD.findall(query.lower()))
    if not q:
        return 0.0
    return len(q & set(_WORD.findall(document.lower()))) / len(q)


def rerank_answer(request: RecordedRequest, key: str = "results") -> Reply:
    """Answer a rerank request by word overlap (:func:`rerank_score`), best first.

    ``key="results"`` gives Cohere's / Jina's shape, ``key="data"`` Voyage's. ``top_n`` (or
    Voyage's ``top_k``) keeps the best ones; 400 (not retried) on a malformed request.
    """
    body = request.json
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return error(400, "'query' (a string) is required", should_retry=False)
    docs = body.get("documents")
    if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
        return error(400, "'documents' must be a non-empty list of strings", should_retry=False)
    top = body.get("top_n", body.get("top_k"))
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        return error(400, "'top_n' must be a positive integer", should_retry=False)
    scores = [rerank_score(body["query"], d) for d in docs]
    order = sorted(range(len(docs)), key=lambda i: (-scores[i], i))
    if top is not None:
        order = order[:top]
    n_query = _n_words(body["query"])
    tokens = n_query * len(docs) + sum(_n_words(d) for d in docs)
    return Reply(
        body={
            "object": "list",
            key: [{"index": i, "relevance_score": scores[i]} for i in order],
            "model": body.get("model", "test-rerank"),
            "usage": {"total_tokens": tokens},
        }
    )


# ----------------------------------------------------------------------------- rate limits


def openai_duration(seconds: float) -> str:
    """A duration the way OpenAI's ``x-ratelimit-reset-*`` headers write it: ``20ms``, ``1s``,
    ``6m0s``, ``1m2.5s``."""
    if seconds < 1.0:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    rest_s = f"{rest:.3f}".rstrip("0").rstrip(".")
    return f"{int(minutes)}m{rest_s}s" if minutes else f"{rest_s}s"


class RateLimited:
    """A handler that admits ``requests`` per ``window`` seconds and answers 429 beyond.

    A token bucket of ``requests`` requests refilled at ``requests / window`` per second (so
    a burst of ``requests`` at once, then one every ``window / requests`` seconds), as OpenAI
    enforces its RPM limits. A refused request gets 429 with ``Retry-After`` (whole seconds,
    rounded up), ``retry-after-ms`` (unless ``retry_after_ms=False``) and
    ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests: 0`` and
    ``x-ratelimit-reset-requests`` (time until the bucket is full, OpenAI's format); an admitted
    one is answered by ``handler``, with the same ``x-ratelimit-*`` headers when ``advertise``.

    Attributes
    ----------
    admitted, refused : int
        Requests answered by ``handler`` / with 429.
    """

    def __init__(
        self,
        handler: Callable[[RecordedRequest], Any],
        requests: int,
        window: float = 60.0,
        *,
        advertise: bool = True,
        retry_after_ms: bool = True,
    ) -> None:
        self.handler = handler
        self.requests = requests
        self.window = window
        self.advertise = advertise
        self.retry_after_ms = retry_after_ms
        self.admitted = 0
        self.refused = 0
        self._level = float(requests)
        self._updated = time.monotonic()
        self._lock = threading.Lock()

    def _headers(self, remaining: float, rate: float) -> dict[str, str]:
        full_in = (self.requests - remaining) / rate
        return {
            "x-ratelimit-limit-requests": str(self.requests),
            "x-ratelimit-remaining-requests": str(max(0, math.floor(remaining))),
            "x-ratelimit-reset-requests": openai_duration(full_in),
        }

    def __call__(self, request: RecordedRequest) -> Any:
        rate = self.requests / self.window
        with self._lock:
            now = time.monotonic()
            self._level = min(self.requests, self._level + rate * (now - self._updated))
            self._updated = now
            ok = self._level >= 1.0
            if ok:
                self._level -= 1.0
                self.admitted += 1
            else:
                self.refused += 1
            headers = self._headers(self._level, rate)
        if not ok:
            wait = (1.0 - self._level) / rate
            return error(
                429,
                f"Rate limit reached: {self.requests} requests per {self.window:g} s",
                retry_after=math.ceil(wait),
                retry_after_ms=round(wait * 1000, 1) if self.retry_after_ms else None,
                headers=headers,
            )
        spec: Any = self.handler(request)
        while callable(spec) and not isinstance(spec, Reply | ChatAnswer):
            spec = spec(request)
        if not self.advertise:
            return spec
        if isinstance(spec, str):
            spec = ChatAnswer(spec)
        if isinstance(spec, dict | list):
            spec = Reply(body=spec)
        return replace(spec, headers={**spec.headers, **headers})


# ----------------------------------------------------------------------------- routes


class Route:
    """One endpoint: a queue of scripted specs, then a handler, with a request counter.

    Attributes
    ----------
    path : str
    handler : callable ``(RecordedRequest) -> spec``
        Answers once the queue is empty.
    method : str, default "POST"
        The HTTP method it answers (others get 405), e.g. ``"GET"`` for llama.cpp's ``/props``.
    latency : float, seconds
        Added before every answer of this route.
    count : int
        Requests received.
    """

    def __init__(
        self, path: str, handler: Callable[[RecordedRequest], Any], method: str = "POST"
    ) -> None:
        self.path = path
        self.method = method
        self.handler = handler
        self.default = handler
        self.latency = 0.0
        self.count = 0
        self._queue: deque[Spec] = deque()
        self._lock = threading.Lock()

    def push(self, *specs: Spec, times: int = 1) -> Route:
        """Queue ``specs`` (the whole sequence ``times`` times) for the next requests."""
        with self._lock:
            for _ in range(times):
                self._queue.extend(specs)
        return self

    def fail(self, status: int, *, times: int = 1, **kwargs: Any) -> Route:
        """Queue ``times`` :func:`error` answers with ``status``."""
        return self.push(error(status, **kwargs), times=times)

    @property
    def pending(self) -> int:
        """Scripted specs not consumed yet."""
        with self._lock:
            return len(self._queue)

    def clear(self) -> None:
        """Drop the queue and restore the default handler."""
        with self._lock:
            self._queue.clear()
            self.handler = self.default
            self.latency = 0.0

    def _next(self) -> Spec:
        with self._lock:
            self.count += 1
            if self._queue:
                return self._queue.popleft()
        return self.handler


def _no_script(request: RecordedRequest) -> Reply:
    return error(
        400,
        f"openai_server: nothing scripted for {request.path}",
        should_retry=False,
    )


# ----------------------------------------------------------------------------- the server


class OpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 for tests.

    Parameters
    ----------
    embedding_dim : int, default 64
        Vector length when the request gives no ``dimensions``.

    Examples
    --------
    >>> with OpenAIServer() as server:  # doctest: +SKIP
    ...     client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")
    """

    def __init__(self, embedding_dim: int = 64) -> None:
        self.embedding_dim = embedding_dim
        self.embeddings = Route("/v1/embeddings", self._embeddings_answer)
        self.chat = Route("/v1/chat/completions", _no_script)
        self.rerank = Route("/v1/rerank", rerank_answer)
        self.routes: dict[str, Route] = {
            r.path: r for r in (self.embeddings, self.chat, self.rerank)
        }
        self.batch = BatchAPI(self)
        self.handler_errors: list[str] = []
        self._log: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> OpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll
            name="openai-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes delayed answers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the client's ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- what was received

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the request log, in arrival order."""
        with self._lock:
            return list(self._log)

    def request_count(self, path: str | None = None) -> int:
        """Requests received, at ``path`` (e.g. ``"/v1/embeddings"``) or in all."""
        with self._lock:
            return sum(1 for r in self._log if path is None or r.path == path)

    def bodies(self, path: str) -> list[Any]:
        """Parsed JSON bodies received at ``path``."""
        return [r.json for r in self.requests if r.path == path]

    def reset(self) -> None:
        """Clear the log, the counters and every route's script."""
        with self._lock:
            self._log.clear()
            self.handler_errors.clear()
        for route in self.routes.values():
            route.clear()
            route.count = 0
        self.batch = BatchAPI(self)

    # -- answering

    def _embeddings_answer(self, request: RecordedRequest) -> Reply:
        body = request.json
        if not isinstance(body, dict) or "model" not in body or "input" not in body:
            return error(400, "'model' and 'input' are required", should_retry=False)
        texts = body["input"]
        if isinstance(texts, str):
            texts = [texts]
        if (
            not isinstance(texts, list)
            or not texts
            or not all(isinstance(t, str) and t for t in texts)
        ):
            return error(
                400, "'input' must be a non-empty string or list of them", should_retry=False
            )
        dim = body.get("dimensions", self.embedding_dim)
        if not isinstance(dim, int) or dim < 1:
            return error(400, "'dimensions' must be a positive integer", should_retry=False)
        fmt = body.get("encoding_format", "float")
        if fmt not in ("float", "base64"):
            return error(400, f"unknown encoding_format {fmt!r}", should_retry=False)
        data = []
        for i, text in enumerate(texts):
            vec = hashed_embedding(text, dim)
            emb: Any
            if fmt == "base64":
                emb = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
            else:
                emb = vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        n = sum(_n_words(t) for t in texts)
        return Reply(
            body={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": n, "total_tokens": n},
            }
        )

    def _resolve(self, route: Route, spec: Any, request: RecordedRequest, depth: int = 0) -> Reply:
        if depth > 10:
            raise TypeError("spec nested too deeply (a handler answering Reply() with no body?)")
        for _ in range(10):  # callables may return callables; stop runaway chains
            if isinstance(spec, Reply):
                if spec.status == 200 and spec.body is None and not spec.disconnect:
                    normal = self._resolve(route, route.handler, request, depth + 1)
                    return Reply(
                        normal.status,
                        normal.body,
                        {**normal.headers, **spec.headers},
                        normal.delay + spec.delay,
                        normal.disconnect,
                    )
                if spec.body is None and not spec.disconnect:
                    return error(spec.status, headers=spec.headers, delay=spec.delay)
                return spec
            if isinstance(spec, ChatAnswer):
                return spec.to_reply(request, next(self._seq))
            if isinstance(spec, str):
                return ChatAnswer(spec).to_reply(request, next(self._seq))
            if isinstance(spec, dict | list):
                return Reply(body=spec)
            if callable(spec):
                spec = spec(request)
                continue
            raise TypeError(f"cannot answer with {spec!r}")
        raise TypeError("spec callables nested too deeply")

    def _answer(self, request: RecordedRequest) -> Reply:
        route = self.routes.get(request.path)
        if route is None:
            return error(404, f"no route {request.method} {request.path}", should_retry=False)
        if request.method != route.method:
            return error(405, f"{request.method} not allowed", should_retry=False)
        spec = route._next()
        try:
            reply = self._resolve(route, spec, request)
        except Exception:
            tb = traceback.format_exc()
            with self._lock:
                self.handler_errors.append(tb)
            return error(500, f"openai_server handler failed:\n{tb}", should_retry=False)
        if route.latency:
            reply = Reply(
                reply.status,
                reply.body,
                reply.headers,
                reply.delay + route.latency,
                reply.disconnect,
            )
        return reply

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._log.append(request)


def _redact(headers: Iterable[tuple[str, str]]) -> tuple[dict[str, str], str | None]:
    out: dict[str, str] = {}
    key: str | None = None
    for name, value in headers:
        lname = name.lower()
        if lname in _SECRET_HEADERS:
            token = value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value
            key = hashlib.sha256(token.encode("utf-8")).hexdigest()
            value = REDACTED
        out[lname] = value
    return out, key


class _Server(ThreadingHTTPServer):
    # the stdlib's listen backlog of 5 drops some of 16 simultaneous connects
    request_queue_size = 128


def _make_handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes; with Nagle on, the second waits ~40 ms for the
        # delayed ACK of the first, which would dominate every scripted latency
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            headers, key = _redact(self.headers.items())
            request = RecordedRequest(
                method=self.command,
                path=self.path.split("?", 1)[0],
                headers=headers,
                json=parsed,
                api_key_sha256=key,
                received_at=time.monotonic(),
            )
            server._record(request)
            if request.path.startswith(("/v1/files", "/v1/batches")):
                reply = server.batch.answer(request, raw, self.headers.get("Content-Type", ""))
            elif raw and parsed is None:
                reply = error(400, "request body is not JSON", should_retry=False)
            else:
                reply = server._answer(request)
            if reply.delay > 0 and server._stopping.wait(reply.delay):
                reply = disconnect()
            if reply.disconnect:
                self.close_connection = True
                return
            body = reply.body
            if isinstance(body, str):
                payload = body.encode("utf-8")
            elif isinstance(body, bytes):
                payload = body
            else:
                payload = json.dumps(body).encode("utf-8")
            request.status = reply.status
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                self.close_connection = True

        do_POST = _handle
        do_GET = _handle

    return Handler


class PromptCache:
    """A chat handler that simulates a provider's prompt cache in its ``usage``.

    Tokens are words (as the server's default usage counts them): each answer reports as
    ``usage.prompt_tokens_details.cached_tokens`` the longest word prefix its messages share
    with an earlier request's, when at least ``min_tokens`` (OpenAI: 1,024), rounded down to a
    multiple of ``step`` (OpenAI: 128); else 0.

    Parameters
    ----------
    answer : str or callable
        The assistant's content, or ``(RecordedRequest) -> str``.
    min_tokens, step : int
    """

    def __init__(self, answer: str | Callable[[RecordedRequest], str], *, min_tokens: int = 0,
                 step: int = 1) -> None:  # fmt: skip
        self.answer = answer
        self.min_tokens = min_tokens
        self.step = step
        self._seen: list[list[str]] = []
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ChatAnswer:
        body = request.json if isinstance(request.json, dict) else {}
        words = [
            w
            for m in body.get("messages", []) or []
            for w in [f"<{m.get('role')}>", *_WORD.findall(str(m.get("content") or ""))]
        ]
        with self._lock:
            shared = max((_common_prefix(words, seen) for seen in self._seen), default=0)
            self._seen.append(words)
        # the role markers are not tokens of the default usage count
        shared -= sum(1 for w in words[:shared] if w.startswith("<"))
        cached = shared - shared % self.step if shared >= self.min_tokens else 0
        content = self.answer(request) if callable(self.answer) else self.answer
        return ChatAnswer(content, cached_tokens=cached)


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class BatchAPI:
    """OpenAI's files and batches endpoints, with scriptable outcomes (see the module docstring).

    Attributes
    ----------
    polls : int
        ``GET /v1/batches/{id}`` answers ``in_progress`` this many times, then the batch ends.
    outcome : {"completed", "expired", "failed", "cancelled"}
    answered : int
        Lines an ``expired`` or ``cancelled`` batch answered before it ended (the rest go to the
        error file with code ``batch_expired`` / ``batch_cancelled``).
    fail : set of str
        Custom ids answered in the error file (code ``server_error``).
    refuse : int
        The next ``refuse`` batch creations are answered 400 (not retried).
    files : dict of str to bytes
    batches : dict of str to dict
    lines_answered : int
        Lines of every batch answered (billed), summed.
    """

    def __init__(self, server: OpenAIServer) -> None:
        self.server = server
        self.polls = 0
        self.outcome = "completed"
        self.answered = 0
        self.fail: set[str] = set()
        self.refuse = 0
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.lines_answered = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._polled: dict[str, int] = {}

    def answer(self, request: RecordedRequest, raw: bytes, content_type: str) -> Reply:
        with self._lock:
            parts = request.path.strip("/").split("/")  # v1, files|batches, [id], [content]
            if parts[1] == "files" and request.method == "POST" and len(parts) == 2:
                return self._upload(raw, content_type)
            if parts[1] == "files" and len(parts) == 4 and parts[3] == "content":
                blob = self.files.get(parts[2])
                if blob is None:
                    return error(404, f"no file {parts[2]}", should_retry=False)
                return Reply(body=blob)
            if parts[1] == "batches" and request.method == "POST" and len(parts) == 2:
                return self._create(request.json)
            if parts[1] == "batches" and request.method == "GET" and len(parts) == 3:
                return self._poll(parts[2])
            return error(404, f"no route {request.method} {request.path}", should_retry=False)

    def _upload(self, raw: bytes, content_type: str) -> Reply:
        import email.parser
        import email.policy

        head = f"Content-Type: {content_type}\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()
        }
        if fields.get("purpose") != b"batch" or not fields.get("file"):
            return error(400, "a batch file needs purpose=batch and a file", should_retry=False)
        fid = f"file-{next(self._ids)}"
        self.files[fid] = fields["file"]
        return Reply(body=self._file(fid, "batch"))

    def _file(self, fid: str, purpose: str) -> dict[str, Any]:
        return {
            "id": fid,
            "object": "file",
            "bytes": len(self.files[fid]),
            "created_at": int(time.time()),
            "filename": f"{fid}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    def _create(self, body: Any) -> Reply:
        if self.refuse > 0:
            self.refuse -= 1
            return error(400, "scripted refusal of the batch", should_retry=False)
        if not isinstance(body, dict) or body.get("input_file_id") not in self.files:
            return error(400, "unknown input_file_id", should_retry=False)
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return error(400, "endpoint or completion_window not supported", should_retry=False)
        bid = f"batch_{next(self._ids)}"
        self.batches[bid] = {
            "id": bid,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "created_at": int(time.time()),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
        }
        self._polled[bid] = 0
        return Reply(body=self.batches[bid])

    def _poll(self, bid: str) -> Reply:
        batch = self.batches.get(bid)
        if batch is None:
            return error(404, f"no batch {bid}", should_retry=False)
        if batch["status"] in ("validating", "in_progress"):
            self._polled[bid] += 1
            if self._polled[bid] > self.polls:
                self._finish(batch)
            else:
                batch["status"] = "in_progress"
        return Reply(body=batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        if self.outcome == "failed":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"message": "scripted failure"}]}
            return
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]].splitlines() if x]
        out, err = [], []
        for i, line in enumerate(lines):
            cid = line["custom_id"]
            if self.outcome != "completed" and i >= self.answered:
                code = f"batch_{self.outcome}"
                err.append(
                    {"custom_id": cid, "response": None, "error": {"code": code, "message": code}}
                )
            elif cid in self.fail:
                err.append(
                    {
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": "server_error", "message": "scripted error"},
                    }
                )
            else:
                out.append({"custom_id": cid, "response": self._run(line), "error": None})
        batch["status"] = self.outcome
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"file-{next(self._ids)}"
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[name] = fid

    def _run(self, line: dict[str, Any]) -> dict[str, Any]:
        request = RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            headers={},
            json=line["body"],
            api_key_sha256=None,
            received_at=time.monotonic(),
        )
        chat = self.server.chat
        reply = self.server._resolve(chat, chat.handler, request)
        self.lines_answered += 1
        return {
            "status_code": reply.status,
            "request_id": f"req_{self.lines_answered}",
            "body": reply.body,
        }
