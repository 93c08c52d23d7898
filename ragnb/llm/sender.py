"""Sending LLM calls: the cache first, then the HTTP transport, a format reminder, the ledger.

How one call is sent
--------------------
1. A cache hit is returned at once (``cached=True``, listed in the ledger at cost 0).
2. Otherwise the key is marked *in flight* in the cache (namespace ``judge-inflight``) and the
   request is sent, at most ``concurrency`` at a time (asyncio, ``openai.AsyncOpenAI`` with the
   client's own retries off; ``concurrency="server"``: as many as the server says it answers at
   once, :func:`server_slots`, read at the start of each run), through
   :mod:`ragnb.llm.transport`: 408, 409, 429, 5xx, timeouts, dropped connections and unparseable
   bodies are retried after the server's Retry-After or a jittered backoff, at most
   ``max_attempts`` requests per message. A 429's wait also pauses every other request. Before
   each request, the endpoint's rate limiter (:class:`ragnb.llm.transport.RateLimiter`: ``rpm``,
   ``tpm``, the server's ``x-ratelimit-*`` headers, AIMD after a 429) says how long to wait; the
   ledger line of the request records the seconds it waited (``wait_s``). A 429 is retried,
   never recorded as an answer. A job-wide circuit breaker
   (:class:`ragnb.llm.transport.CircuitBreaker`) stops the whole job after
   ``max_connection_failures`` connection failures in a row (nothing answers at that URL) or one
   401, 403 or 404 (the key, the URL or the model is wrong): the calls not yet answered are
   reported ``failed`` with that reason at once, and :meth:`CallSender.run` raises
   :class:`~ragnb.errors.JudgeUnavailable` naming the URL and the cause, after every answer that
   arrived was cached and written to the ledger.
3. The answer is parsed strictly (the template's :meth:`~ragnb.llm.PromptTemplate.parse`). If
   it is invalid, the conversation is sent once more with the answer and the template's
   reminder of the required format; the second answer is parsed the same way, and is final.
4. The result (valid or invalid, with every answer's text) is written to the cache as soon as
   it is final, so a crash loses only the calls in flight. A call that ends ``failed`` (no
   answer) is not cached: the next run sends it again. A call sent again although an earlier
   run had marked it in flight is flagged ``repeated`` (in the result and the ledger). A cached
   value that does not decode (torn) is a miss, reported by :meth:`ragnb.core.cache.Cache.corrupt`
   with the cache file's path, and overwritten by the fresh answer.

Request options
---------------
A call may carry fields of its own (:attr:`~ragnb.llm.calls.LLMCall.body`: the
``response_format`` of constrained output, ``logprobs`` and ``top_logprobs``), sent with the
reminder too. A server that lacks an option answers with an error, often 400 or 500: when an
error answer to such a request names one of those fields (``response_format``, ``logprobs``,
...), it is not retried and the whole job stops (:class:`~ragnb.errors.JudgeUnavailable`) with a
message naming the option to turn off; there is no silent fallback to other requests, which
would give other answers. A grade answer sent with ``logprobs`` that carries none gets no
expected grade (NaN), and the run logs a warning with the count.

Batch API
---------
With ``batch=True`` the calls the cache cannot answer are sent as one batch of the provider's
batch API instead (:mod:`ragnb.llm.batch`): each gets a write-ahead ledger line (flagged
``batch``) before the batch is submitted; each answer of the batch's output file is recorded
(at the batch rate) and parsed as in step 3, the reminder of an invalid answer sent singly; a
call the batch did not answer is ``failed``, not cached, and submitted again by the next run. A
batch an earlier run submitted (its state file beside the cache) is resumed, not paid twice.

Every HTTP request is appended to the :class:`~ragnb.llm.ledger.Ledger` twice: a ``pending`` line
before it is sent (write-ahead, with the prompt's token count and the template's expected answer
length) and its outcome (attempt number, status, usage tokens, the prompt tokens the provider
read from its prompt cache) when it ends. An answer without
``usage`` is costed from local token counts (:func:`ragnb.llm.ledger.count_message_tokens`) and
flagged ``usage_estimated``. Requests an earlier run left pending (killed in flight) are
reconciled (:meth:`ragnb.llm.ledger.Ledger.reconcile`) when this run sends their prompt again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ragnb.core.cache import Cache
from ragnb.core.lazylibs import require
from ragnb.core.provenance import safe_url
from ragnb.errors import JudgeUnavailable, RagnbError
from ragnb.llm.batch import BatchAPI, BatchState, failed_reason, line_answer
from ragnb.llm.calls import (
    INFLIGHT_NAMESPACE,
    NAMESPACE,
    CallResult,
    LLMCall,
    expected_grade,
    has_usage,
    read_cached_tokens,
    read_completion,
    read_logprobs,
)
from ragnb.llm.ledger import Ledger, count_message_tokens, count_tokens
from ragnb.llm.transport import (
    CircuitBreaker,
    Fault,
    GaveUp,
    RetryPolicy,
    acall,
    classify,
    http_client,
    notify_sent,
    rate_limiter,
    redact,
)

__all__ = ["SERVER_CONCURRENCY", "CallSender", "run_sync", "server_slots"]

T = TypeVar("T")

log = logging.getLogger("ragnb.llm")

#: ``concurrency=SERVER_CONCURRENCY``: as many requests in flight as the server answers at once
#: (:func:`server_slots`), 1 when it does not say.
SERVER_CONCURRENCY = "server"


def server_slots(
    base_url: str | None, api_key: str | None = None, timeout: float = 10.0
) -> int | None:
    """The requests a llama.cpp server answers at once, as it reports them; None when it does
    not say.

    ``GET /props`` at the server's root (``base_url`` without its ``/v1``) answers
    ``total_slots``: the ``--parallel`` slots of ``llama-server``, decoded together
    (continuous batching).

    Parameters
    ----------
    base_url : str or None
        The OpenAI-compatible base URL (``http://127.0.0.1:8080/v1``); None reads
        ``$OPENAI_BASE_URL``, and without it there is no server to ask.
    api_key : str, optional
        Sent as ``Authorization: Bearer`` (``llama-server --api-key`` guards ``/props`` too).
    timeout : float, default 10.0
        Seconds to wait for the answer.

    Returns
    -------
    int or None
        ``total_slots`` (>= 1); None when the server does not answer, answers an error (404:
        not a llama.cpp server; OpenAI's API) or JSON without a positive integer there.

    References
    ----------
    llama.cpp, ``tools/server/README.md``: ``GET /props`` (``total_slots``), ``--parallel``.

    Examples
    --------
    >>> server_slots("http://127.0.0.1:8080/v1")  # doctest: +SKIP
    4
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not url:
        return None
    root = url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(f"{root}/props", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            slots = json.loads(response.read()).get("total_slots")
    except (OSError, ValueError, AttributeError):  # URLError and HTTPError are OSErrors
        return None
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        return None
    return slots


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from synchronous code, also inside Jupyter (whose event
    loop already runs in this thread: the coroutine then runs in a worker thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ragnb-llm") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]


class _Failed(RagnbError):
    """No answer for a message after every allowed attempt."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Counts:
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


#: Request fields of each request option, and how a message naming them reads.
_OPTION_FIELDS = {
    "constrained": ("response_format", "json_schema", "json_object"),
    "logprobs": ("logprobs", "top_logprobs"),
}


class _RunState:
    """Shared by the workers of one run: the pause a 429 imposes, the circuit breaker, the
    rejection of a request option, and the grade answers that came without log-probabilities."""

    def __init__(self, breaker: CircuitBreaker) -> None:
        self.pause_until = 0.0
        self.breaker = breaker
        self.rejected: str | None = None
        self.no_logprobs = 0

    @property
    def abort(self) -> str | None:
        """Why the job stopped (the breaker's cause or a rejected option), None while it runs."""
        return self.breaker.cause or self.rejected


@dataclass(frozen=True)
class _Job:
    """What every call of one run shares: the client, its stage and kind, the run state."""

    client: Any
    stage: str
    kind: str
    state: _RunState
    repeated: frozenset[str]


class CallSender:
    """Sends :class:`~ragnb.llm.calls.LLMCall` objects to an OpenAI-compatible chat endpoint.

    The engine of :class:`ragnb.llm.ChatClient` (which builds the calls); see the module
    docstring for what happens to one call.

    Parameters
    ----------
    model : str
    client_id : str
        Written on every ledger line (column ``judge_id``).
    base_url, api_key : str, optional
        The server root and key (default ``$OPENAI_API_KEY``); the key is sent only in the
        request header and redacted from every reason.
    body : dict
        Fields added to every request body (temperature, other chat completion parameters).
    policy : RetryPolicy
    concurrency : int or "server"
        Requests in flight at most; ``"server"`` (:data:`SERVER_CONCURRENCY`): the server's
        slots (:func:`server_slots`), read at the start of each run, 1 when it does not say.
    reminder, retry_invalid : bool
        Send a format reminder after an invalid answer; re-send calls whose cached answer is
        invalid.
    cache : Cache
    ledger : Ledger
    stage : str
        Ledger label when a run gives none.
    progress : bool
        A tqdm progress bar while requests are in flight.
    max_connection_failures : int, default 5
        Connection failures (or timeouts) in a row that stop the whole job.
    options : dict, optional
        The caller's options behind the calls' own request fields (``{"constrained":
        "json_schema", "logprobs": 5}``), named in the error when a server rejects them.
    health_check : callable, optional
        Says why the server cannot answer (a crashed local server) after a connection
        failure; a reason stops the job at once (:class:`~ragnb.llm.transport.CircuitBreaker`).
    rpm, tpm : float, optional
        Requests and prompt tokens per minute at most for the endpoint (base URL + model),
        shared by every client of it in the process (:func:`ragnb.llm.transport.rate_limiter`).
    batch : bool, default False
        Send the uncached calls of a run as one batch of the provider's batch API.
    batch_poll_s : float, default 30.0
        Seconds between two polls of a batch in progress.

    Attributes
    ----------
    limiter : RateLimiter
        The endpoint's rate limiter: every request (retries and reminders included) reserves
        one request and its counted prompt tokens before it is sent.
    sent_concurrency : int or None
        The requests in flight at most of the last run that sent any (None before).
    """

    def __init__(
        self,
        *,
        model: str,
        client_id: str,
        base_url: str | None,
        api_key: str | None,
        body: Mapping[str, Any],
        policy: RetryPolicy,
        concurrency: int | str,
        reminder: bool,
        retry_invalid: bool,
        cache: Cache,
        ledger: Ledger,
        stage: str,
        progress: bool,
        max_connection_failures: int = 5,
        options: Mapping[str, Any] | None = None,
        health_check: Callable[[], str | None] | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        batch: bool = False,
        batch_poll_s: float = 30.0,
    ) -> None:
        CircuitBreaker(max_connection_failures)  # validates the setting
        endpoint = base_url or os.environ.get("OPENAI_BASE_URL")
        self.limiter = rate_limiter(endpoint, model, rpm, tpm)
        self.health_check = health_check
        self.max_connection_failures = max_connection_failures
        self._corrupt_seen: set[str] = set()
        self.model = model
        self.client_id = client_id
        self.base_url = base_url
        self._api_key = api_key
        self.body = dict(body)
        self.policy = policy
        self.concurrency = concurrency
        self.sent_concurrency: int | None = None
        self.reminder = reminder
        self.retry_invalid = retry_invalid
        self.cache = cache
        self.ledger = ledger
        self.stage = stage
        self.progress = progress
        self.options = dict(options or {})
        self.batch = batch
        self.batches = BatchAPI(
            model=model,
            base_url=base_url,
            api_key=api_key,
            policy=policy,
            limiter=self.limiter,
            folder=cache.directory / "batches",
            poll_s=batch_poll_s,
        )

    # -- the cache

    def cached(self, calls: Sequence[LLMCall]) -> dict[str, CallResult]:
        """The cached results of ``calls`` by key (invalid ones only unless ``retry_invalid``)."""
        found = self.cache.get_many(NAMESPACE, [c.key for c in calls])
        out = {}
        for key, blob in found.items():
            try:
                r = CallResult.from_bytes(blob)
            except (ValueError, KeyError, TypeError) as e:  # a torn or edited value: a miss
                if key not in self._corrupt_seen:
                    self._corrupt_seen.add(key)
                    self.cache.corrupt(NAMESPACE, key, e)
                continue
            if r.valid or not self.retry_invalid:
                out[key] = r
        return out

    # -- a run

    def run(
        self, calls: Sequence[LLMCall], *, stage: str | None = None, kind: str = "grade"
    ) -> list[CallResult]:
        """Send ``calls`` (from the cache where possible); one result per call, same order.

        Calls with the same key are sent once and share the result. A call that fails has
        ``status="failed"`` and the reason.

        Raises
        ------
        JudgeUnavailable
            When the circuit breaker stopped the job (a 401, 403 or 404, or
            ``max_connection_failures`` connection failures in a row), naming the URL and the
            cause; its ``results`` hold one result per call, as this method would return.
        """
        stage = stage or self.stage
        calls = list(calls)
        unique: dict[str, LLMCall] = {}
        for c in calls:
            unique.setdefault(c.key, c)
        # batches an earlier run submitted: resumed, so their calls are neither re-sent nor
        # reconciled as lost
        resumable = self._resumable() if self.batch else []
        held = set().union(*(b.keys for b in resumable))
        orphans = self.ledger.interrupted_keys() - held
        for key in orphans.intersection(unique):  # killed in flight by an earlier run
            self.ledger.reconcile(key)
        results = self.cached(list(unique.values()))
        for key, r in results.items():
            self.ledger.record(
                **self._identity(stage, kind, unique[key], 0, False),
                status="cached",
                input_tokens=r.input_tokens,
                output_tokens=r.output_tokens,
                cached=True,
            )
        todo = [c for k, c in unique.items() if k not in results]
        if todo:
            before = set(self.cache.get_many(INFLIGHT_NAMESPACE, [c.key for c in todo]))
            answered = set(self.cache.get_many(NAMESPACE, [c.key for c in todo]))
            # marked in flight by an earlier run but never sent (a kill before it left): the
            # request is not a repeat
            lost = (before - answered) - self.ledger.unsent_keys()
            repeated = frozenset((lost | (orphans & set(unique))) - held)
            state = _RunState(CircuitBreaker(self.max_connection_failures, self.health_check))
            if self.batch:
                results.update(self._run_batches(todo, repeated, stage, kind, state, resumable))
            else:
                results.update(run_sync(lambda: self._arun(todo, repeated, stage, kind, state)))
            if state.abort is not None:
                raise self._unavailable(
                    stage,
                    state.abort,
                    [results[c.key] for c in calls],
                    state.rejected,
                    crashed=state.breaker.crashed,
                )
            if state.no_logprobs:
                log.warning(
                    "%s: %d grade answers came without token log-probabilities although "
                    "logprobs=%s asked for them: their expected_grade is NaN (the server "
                    "does not return them; set logprobs=0 to stop asking)",
                    self.client_id,
                    state.no_logprobs,
                    self.options.get("logprobs"),
                )
            bad = [r for r in results.values() if not r.valid and not r.cached]
            if bad:
                n_failed = sum(r.status == "failed" for r in bad)
                log.warning(
                    "%s: %d of %d calls invalid, %d failed (see the reason column)",
                    self.client_id,
                    len(bad) - n_failed,
                    len(todo),
                    n_failed,
                )
        return [results[c.key] for c in calls]

    def _unavailable(
        self,
        stage: str,
        cause: str,
        results: list[CallResult],
        rejected: str | None = None,
        crashed: bool = False,
    ) -> JudgeUnavailable:
        """The error of a job the circuit breaker (or a rejected request option) stopped."""
        failed = sum(r.status == "failed" for r in results)
        where = safe_url(self.base_url or os.environ.get("OPENAI_BASE_URL")) or "api.openai.com"
        if rejected is not None:
            check = "Change the option as said"
        elif crashed:
            check = "Start the server again (or choose another model)"
        else:
            check = "Check the key ($OPENAI_API_KEY), the base_url and the model"
        how = f"the job stopped: {cause}\n" if crashed else f"the job stopped after {cause}. "
        message = self._redact(
            f"{stage}: the model {self.client_id} at {where} cannot answer: {how}"
            f"{len(results) - failed} of {len(results)} calls have an answer "
            f"(kept in the cache and the ledger), {failed} failed. {check}, then run the same "
            f"notebook or command again: only the {failed} failed calls are sent."
        )
        return JudgeUnavailable(
            message, failed=failed, total=len(results), cause=cause, results=list(results)
        )

    async def _arun(
        self,
        todo: list[LLMCall],
        repeated: frozenset[str],
        stage: str,
        kind: str,
        state: _RunState,
        firsts: Mapping[str, tuple[str, Any, _Counts]] | None = None,
    ) -> dict[str, CallResult]:
        openai = require("openai")
        from tqdm import tqdm

        out: dict[str, CallResult] = {}
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unset",
            timeout=self.policy.timeout,
            max_retries=0,
            http_client=http_client(self.limiter, asynchronous=True),
        )
        job = _Job(client, stage, kind, state, repeated)
        pending = iter(todo)
        bar = tqdm(
            total=len(todo),
            desc=f"{stage}: {self.model}",
            disable=not self.progress,
            unit="call",
        )

        async def worker() -> None:
            for call in pending:  # the iterator is shared: each call goes to one worker
                try:
                    first = None if firsts is None else firsts.get(call.key)
                    out[call.key] = await self._one(call, job, first)
                except (asyncio.CancelledError, KeyboardInterrupt):
                    raise
                except Exception as e:  # a bug must not lose the other items
                    log.exception("%s: unexpected error on %s", self.client_id, call.item)
                    reason = self._redact(f"internal error: {e!r}")
                    out[call.key] = CallResult(
                        value=None, valid=False, status="failed", reason=reason
                    )
                bar.update(1)

        try:
            width = self._width()
            await asyncio.gather(*(worker() for _ in range(min(width, len(todo)))))
        finally:
            bar.close()
            await client.close()
        return out

    def _width(self) -> int:
        """Requests in flight at most for this run (the server's slots for ``"server"``)."""
        if self.concurrency != SERVER_CONCURRENCY:
            width = int(self.concurrency)
        else:
            slots = server_slots(self.base_url, self._api_key)
            if slots is None:
                log.warning(
                    "%s: concurrency='server' but %s does not report its slots (GET /props, "
                    "llama.cpp's server): sending one request at a time",
                    self.client_id,
                    safe_url(self.base_url or os.environ.get("OPENAI_BASE_URL")),
                )
            width = slots or 1
        self.sent_concurrency = width
        return width

    # -- one call: the answer, then maybe a reminder

    async def _one(
        self, call: LLMCall, job: _Job, first: tuple[str, Any, _Counts] | None = None
    ) -> CallResult:
        """One call's result; ``first``: its first answer (text, body, counts), already
        received (from a batch), so only a reminder may be sent."""
        counts = _Counts() if first is None else first[2]
        repeated = call.key in job.repeated
        if first is None and job.state.abort is not None:  # a batch answer is already paid
            not_sent = f"not sent: the job stopped after {job.state.abort}"
            return CallResult(value=None, valid=False, status="failed", reason=not_sent)
        stamp = json.dumps({"ts": time.time(), "run_id": self.ledger.run_id}).encode()
        self.cache.put(INFLIGHT_NAMESPACE, call.key, stamp)

        def result(**kw: Any) -> CallResult:
            return CallResult(
                attempts=counts.attempts,
                input_tokens=counts.input_tokens,
                output_tokens=counts.output_tokens,
                repeated=repeated,
                **kw,
            )

        try:
            if first is None:
                text, data = await self._request(call.messages, call, counts, job)
            else:
                text, data = first[0], first[1]
        except _Failed as f:
            return result(value=None, valid=False, status="failed", reason=f.reason)
        value, reason = call.template.parse(text, call.labels)
        first_raw = None
        reminded = False
        if reason is not None and self.reminder and call.reminder:
            first_raw, first_reason = text, reason
            reminded = True
            follow_up = [
                *call.messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": call.reminder},
            ]
            try:
                text, data = await self._request(follow_up, call, counts, job)
            except _Failed as f:
                return result(
                    value=None,
                    valid=False,
                    status="invalid",
                    reason=f"{first_reason}; the reminder got no answer: {f.reason}",
                    raw=first_raw,
                    reminded=True,
                )
            value, reason = call.template.parse(text, call.labels)
            if reason is not None:
                reason = f"{reason} (after a reminder; first answer: {first_reason})"
        eg = None
        if reason is None and call.body.get("logprobs"):
            tokens = read_logprobs(data)
            if tokens is None:
                job.state.no_logprobs += 1
            eg = expected_grade(call.template, value, tokens)
        final = result(
            value=value if reason is None else None,
            valid=reason is None,
            status="ok" if reason is None else "invalid",
            reason=reason or "",
            raw=text,
            first_raw=first_raw,
            reminded=reminded,
            expected_grade=eg,
        )
        self.cache.put(NAMESPACE, call.key, final.to_bytes())
        return final

    # -- one message: HTTP requests through the transport

    async def _request(
        self, messages: list[dict[str, str]], call: LLMCall, counts: _Counts, job: _Job
    ) -> tuple[str, Any]:
        """The answer's text and the whole response body."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.body}
        body.update(call.body)
        state = job.state
        breaker = state.breaker
        loop = asyncio.get_running_loop()
        repeated = call.key in job.repeated
        # the write-ahead estimate: the prompt counted locally, the answer's assumed length
        est_in = count_message_tokens(messages, self.model)[0]
        est_out = call.template.expected_output_tokens
        # the ledger keywords of the request in flight: its identity and its request_id, the
        # same on its pending line and on its outcome
        sent: dict[str, Any] = {}
        # seconds the next request has waited for the rate limit (the bucket, the 429 pause)
        waited = [0.0]

        def on_wait(seconds: float) -> None:
            waited[0] += seconds

        async def before() -> None:
            if state.abort is not None:
                raise _Failed(f"not sent: the job stopped after {state.abort}")
            pause = state.pause_until - loop.time()
            if pause > 0:
                start = loop.time()
                await breaker.sleep(pause)
                on_wait(loop.time() - start)

        async def send(attempt: int) -> tuple[str, Any]:
            counts.attempts += 1
            who = self._identity(job.stage, job.kind, call, counts.attempts, repeated)
            sent.update(who, request_id=None, wait_s=waited[0])
            waited[0] = 0.0
            sent["request_id"] = self.ledger.begin(
                **who, input_tokens=est_in, output_tokens=est_out
            )
            rid = sent["request_id"]
            try:
                # POST /chat/completions through the client's generic verb: the same request,
                # auth and errors as chat.completions.create, without its per-call TypedDict
                # transform of the messages and pydantic model of the answer (~2 ms of typing
                # introspection per call, most of the CPU budget at 16 calls per 50 ms); the
                # body is read as a plain dict (a truncated one raises json.JSONDecodeError)
                # the ledger bills the request once its body leaves for the server (a sent mark)
                with notify_sent(lambda: self.ledger.mark_sent(rid)):
                    data = await job.client.post("/chat/completions", cast_to=dict, body=body)
                content, n_in, n_out = read_completion(data)
            except Exception as e:
                # the server lacks an option the call carries: retrying cannot help
                self._stop_if_rejected(e, call, job, sent)
                if classify(e, self.policy.timeout) is None:  # not a transport fault: a bug
                    self.ledger.record(**sent, status="error")
                raise
            breaker.success()
            estimated = not has_usage(data)
            if estimated:  # the server sent no usage: count locally, flag the row
                n_in, n_out = est_in, count_tokens(content, self.model)[0]
            counts.input_tokens += n_in
            counts.output_tokens += n_out
            self.ledger.record(
                **sent,
                status="ok",
                input_tokens=n_in,
                output_tokens=n_out,
                cached_input_tokens=0 if estimated else read_cached_tokens(data),
                usage_estimated=estimated,
            )
            return content, data

        def on_fault(fault: Fault, attempt: int) -> None:
            if breaker.failure(fault):
                log.warning("%s: the job stops: %s", self.client_id, breaker.cause)
            if fault.code == 429 and fault.wait is not None:
                if fault.wait <= self.policy.max_retry_wait:
                    state.pause_until = max(state.pause_until, loop.time() + fault.wait)
                    on_wait(fault.wait)  # the retry waits it out: a wait for the rate limit
            self.ledger.record(**sent, status=fault.status)
            log.info(
                "%s: %s attempt %d: %s", self.client_id, call.item, counts.attempts, fault.reason
            )

        try:
            return await acall(
                send,
                self.policy,
                keys=[self._api_key],
                on_fault=on_fault,
                before=before,
                sleep=breaker.sleep,
                limiter=self.limiter,
                tokens=est_in,
                on_wait=on_wait,
            )
        except GaveUp as g:
            raise _Failed(g.reason) from None

    def _stop_if_rejected(
        self, error: Exception, call: LLMCall, job: _Job, sent: Mapping[str, Any]
    ) -> None:
        """Stop the job (raise :class:`_Failed`) when ``error`` refuses an option of the call:
        the request (``sent``: its ledger keywords) goes to the ledger with its HTTP status, the
        reason to the run state."""
        rejected = self._rejected_option(error, call)
        if rejected is None:
            return
        fault, reason = rejected
        job.state.rejected = job.state.rejected or reason
        self.ledger.record(**sent, status=fault.status)
        raise _Failed(reason) from None

    def _rejected_option(self, error: Exception, call: LLMCall) -> tuple[Fault, str] | None:
        """``(fault, reason)`` when ``error`` is a server's refusal of an option the call
        carries: an HTTP 400, 422 or 5xx answer whose message names one of its fields."""
        if not call.body:
            return None
        fault = classify(error, self.policy.timeout, [self._api_key])
        code = None if fault is None else fault.code
        if fault is None or code is None or not (code in (400, 422) or code >= 500):
            return None
        text = fault.reason.lower()
        named = [
            option
            for option, fields in _OPTION_FIELDS.items()
            if option in self.options
            and any(f in call.body for f in fields)
            and any(f in text for f in fields)
        ]
        if not named:
            return None
        return fault, self._redact(
            "the server rejected the request option "
            + " and ".join(_option_hint(o, self.options[o]) for o in named)
            + f": {fault.reason}"
        )

    # -- the batch API

    def _run_batches(
        self,
        todo: list[LLMCall],
        repeated: frozenset[str],
        stage: str,
        kind: str,
        state: _RunState,
        resumable: list[BatchState],
    ) -> dict[str, CallResult]:
        """The results of ``todo`` through the batch API: the batches of earlier runs that hold
        some of its calls are resumed, the other calls submitted as one new batch."""
        by_key = {c.key: c for c in todo}
        jobs = [b for b in resumable if b.keys & by_key.keys()]
        held = set().union(*(b.keys for b in jobs))
        new = [c for c in todo if c.key not in held]
        out: dict[str, CallResult] = {}
        if new:
            try:
                jobs.append(self._submit(new, repeated, stage, kind))
            except GaveUp as g:
                reason = self._redact(f"the batch was not submitted: {g.reason}")
                log.warning("%s: %s (%d calls)", self.client_id, reason, len(new))
                for c in new:
                    out[c.key] = CallResult(value=None, valid=False, status="failed", reason=reason)
        try:
            for job in jobs:
                log.info("%s: waiting for batch %s", self.client_id, job.batch_id)
                out.update(self._fold(job, by_key, repeated, stage, kind, state))
        finally:
            self.batches.close()
        return out

    def _resumable(self) -> list[BatchState]:
        """The batches earlier runs submitted; a state without a batch id (killed between the
        upload and the batch's creation: nothing billed) is dropped, its calls sent again, and
        so is the state of a batch whose answers are all cached."""
        found = self.batches.pending()
        kept = []
        for b in found:
            # a batch whose answers are all cached was folded in by a run killed just before
            # removing its state
            done = b.keys <= set(self.cache.get_many(NAMESPACE, b.keys))
            if not b.batch_id or done:
                self.batches.forget(b)
            else:
                kept.append(b)
        return kept

    def _submit(
        self, calls: list[LLMCall], repeated: frozenset[str], stage: str, kind: str
    ) -> BatchState:
        """Write the calls' pending ledger lines, mark them in flight, submit their batch."""
        bodies: dict[str, dict[str, Any]] = {}
        items: dict[str, dict[str, str]] = {}
        stamp = json.dumps({"ts": time.time(), "run_id": self.ledger.run_id}).encode()
        for c in calls:
            who = self._identity(stage, kind, c, 1, c.key in repeated)
            rid = self.ledger.begin(
                **who,
                input_tokens=count_message_tokens(c.messages, self.model)[0],
                output_tokens=c.template.expected_output_tokens,
                batch=True,
            )
            bodies[c.key] = {"model": self.model, "messages": c.messages, **self.body, **c.body}
            items[c.key] = {"key": c.key, "item": c.item, "request_id": rid}
        self.cache.put_many(INFLIGHT_NAMESPACE, {c.key: stamp for c in calls})
        try:
            submitted = self.batches.submit(bodies, items, self.ledger.run_id)
        except GaveUp as g:
            for c in calls:  # nothing was billed: close the pending lines
                who = self._identity(stage, kind, c, 1, c.key in repeated)
                rid = items[c.key]["request_id"]
                self.ledger.record(
                    **who, status=g.fault.status, request_id=rid, batch=True, sent=False
                )
            raise
        for info in items.values():  # the batch exists: its calls may be billed
            self.ledger.mark_sent(info["request_id"])
        return submitted

    def _fold(
        self,
        job: BatchState,
        by_key: Mapping[str, LLMCall],
        repeated: frozenset[str],
        stage: str,
        kind: str,
        state: _RunState,
    ) -> dict[str, CallResult]:
        """Wait for a batch to end, then fold its answers into the ledger and the cache."""
        mine = {cid: v for cid, v in job.items.items() if v["key"] in by_key}
        try:
            batch = self.batches.wait(job)
        except GaveUp as g:  # the state file stays: the next run polls the batch again
            why = self._redact(f"batch {job.batch_id} could not be polled: {g.reason}")
            log.warning("%s: %s; run again to resume it", self.client_id, why)
            failed = CallResult(value=None, valid=False, status="failed", reason=why)
            return {v["key"]: failed for v in mine.values()}

        def record(info: Mapping[str, str], status: str, **usage: Any) -> None:
            who = self._identity(stage, kind, by_key[info["key"]], 1, info["key"] in repeated)
            rid = info["request_id"]
            self.ledger.record(**who, status=status, request_id=rid, run_id=job.run_id, **usage)

        firsts: dict[str, tuple[str, Any, _Counts]] = {}
        reasons: dict[str, str] = {}
        errors = 0
        lines = [*self.batches.lines(batch.output_file_id)]
        lines += self.batches.lines(batch.error_file_id)
        for line in lines:
            info = mine.get(line["custom_id"])
            if info is None or info["key"] in firsts or info["key"] in reasons:
                continue
            data, reason = line_answer(line)
            content = ""
            if data is not None:
                try:
                    content, n_in, n_out = read_completion(data)
                except ValueError as e:  # not a chat completion
                    reason = f"batch answer is not a chat completion: {e}"
            if reason is not None:
                errors += 1
                reasons[info["key"]] = self._redact(reason)
                record(info, "batch_error", batch=True)
                continue
            estimated = not has_usage(data)
            if estimated:
                n_in = count_message_tokens(by_key[info["key"]].messages, self.model)[0]
                n_out = count_tokens(content, self.model)[0]
            record(
                info,
                "ok",
                input_tokens=n_in,
                output_tokens=n_out,
                cached_input_tokens=0 if estimated else read_cached_tokens(data),
                usage_estimated=estimated,
                batch=True,
            )
            firsts[info["key"]] = (content, data, _Counts(1, n_in, n_out))
        out = {}
        if firsts:
            calls = [by_key[k] for k in firsts]
            out = run_sync(lambda: self._arun(calls, repeated, stage, kind, state, firsts))
        unanswered = [v for v in mine.values() if v["key"] not in out and v["key"] not in reasons]
        why = failed_reason(batch)
        for info in unanswered:
            reasons[info["key"]] = f"{why}: no answer for this call"
            record(info, f"batch_{batch.status}", batch=True)
        if errors or unanswered:
            log.warning(
                "%s: %s: %d calls answered, %d in the error file, %d unanswered; they are not "
                "cached: run again to submit them in a new batch",
                self.client_id,
                why,
                len(firsts),
                errors,
                len(unanswered),
            )
        for key, reason in reasons.items():
            out[key] = CallResult(
                value=None, valid=False, status="failed", reason=reason, attempts=1
            )
        self.batches.forget(job)
        return out

    # -- the ledger

    def _identity(
        self, stage: str, kind: str, call: LLMCall, attempt: int, repeated: bool
    ) -> dict[str, Any]:
        """The keywords that name one request (or cache hit) on its ledger lines: the same on
        its pending line (:meth:`ragnb.llm.ledger.Ledger.begin`) and its outcome
        (:meth:`~ragnb.llm.ledger.Ledger.record`)."""
        return {
            "stage": stage,
            "model": self.model,
            "item": call.item,
            "key": call.key,
            "attempt": attempt,
            "judge_id": self.client_id,
            "kind": kind,
            "repeated": repeated,
        }

    def _redact(self, text: str) -> str:
        return redact(text, [self._api_key])


def _option_hint(option: str, value: Any) -> str:
    """``option=value`` with what to do instead, for the error of a rejected option."""
    if option == "constrained":
        other = {"json_schema": "json_object_schema", "json_object_schema": "json_schema"}[value]
        where = {
            "json_object_schema": "OpenAI's API",
            "json_schema": "a llama.cpp server",
        }[other]
        return (
            f"constrained={value!r} (sent as response_format): turn it off with "
            f"constrained=None, or try constrained={other!r} ({where}'s form)"
        )
    return (
        f"logprobs={value!r} (sent as logprobs/top_logprobs): turn it off with logprobs=0 "
        "(the server gives no token log-probabilities)"
    )
