"""The LLM judge: prompts sent through the ``openai`` client, with retries, a cache and a ledger.

How one item is judged
----------------------
1. The template is rendered; the cache key is the SHA-256 of (model, template hash, rendered
   prompt hash, parameters: temperature, extra request parameters, whether reminders are
   sent). Neither the API key nor the base URL is part of it.
2. A cache hit is returned at once (``cached=True``, listed in the ledger at cost 0).
3. Otherwise the key is marked *in flight* in the cache (namespace ``judge-inflight``) and the
   request is sent, at most ``concurrency`` at a time (asyncio, ``openai.AsyncOpenAI`` with the
   client's own retries off). A 429, 408, 409 or 5xx answer, a timeout, a dropped connection
   or an unparseable body is retried after the wait the server asks for (``retry-after-ms``,
   else ``Retry-After`` in seconds or as an HTTP date; a 429's wait also pauses every other
   request), else after exponential backoff ``backoff_base * 2**(retry - 1)`` capped at
   ``backoff_max``, with jitter (half to full); at most ``max_attempts`` requests per message.
   401, 403 and 404 stop the whole job (the key, the URL or the model is wrong); the items not
   yet sent are reported ``failed`` with that reason.
4. The answer is parsed strictly (:mod:`ragnb.judge.prompts`). If it is invalid, the
   conversation is sent once more with the answer and the template's reminder of the required
   format; the second answer is parsed the same way, and is final.
5. The result (valid or invalid, with every answer's text) is written to the cache as soon as
   it is final, so a crash loses only the calls in flight. An item that ends ``failed`` (no
   answer) is not cached: the next run sends it again. An item sent again although an earlier
   run had marked it in flight is flagged ``repeated`` (in the result and the ledger).

Every HTTP request, answered or not, is appended to the :class:`~ragnb.ledger.Ledger` with its
attempt number, status and usage tokens.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as _dt
import email.utils
import hashlib
import json
import logging
import math
import os
import random
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragnb.cache import Cache, make_key
from ragnb.errors import InputError
from ragnb.judge.base import (
    GradeRequest,
    GradeResult,
    Judge,
    RankRequest,
    RankResult,
    grade_requests,
    rank_requests,
    run_sync,
)
from ragnb.judge.prompts import LABELS, PromptTemplate, load_prompt
from ragnb.ledger import Ledger, PlannedCall

__all__ = ["INFLIGHT_NAMESPACE", "KEY_PARTS", "NAMESPACE", "CallResult", "LLMCall", "OpenAIJudge"]

NAMESPACE = "judge"
INFLIGHT_NAMESPACE = "judge-inflight"
KEY_PARTS = ("model", "template_sha256", "prompt_sha256", "params")
_RETRYABLE = {408, 409, 429}
_FATAL = {401, 403, 404}
log = logging.getLogger("ragnb.judge")


@dataclass(frozen=True)
class LLMCall:
    """One prompt to send: its rendered messages, cache key and how to read its answer."""

    item: str
    query_id: str
    key: str
    messages: list[dict[str, str]]
    template: PromptTemplate
    reminder: str
    labels: tuple[str, ...] | None = None


@dataclass(frozen=True)
class CallResult:
    """What one prompt gave: the parsed value and the audit trail (see
    :class:`ragnb.judge.GradeResult` for the fields)."""

    value: Any
    valid: bool
    status: str
    reason: str = ""
    raw: str | None = None
    first_raw: str | None = None
    attempts: int = 0
    reminded: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False
    repeated: bool = False

    def to_bytes(self) -> bytes:
        d = {k: getattr(self, k) for k in _STORED}
        d["value"] = list(self.value) if isinstance(self.value, tuple) else self.value
        return json.dumps({"v": 1, **d}, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_bytes(cls, blob: bytes) -> CallResult:
        d = json.loads(blob)
        value = d["value"]
        if isinstance(value, list):
            value = tuple(value)
        kept = {k: d[k] for k in _STORED if k not in ("value", "attempts")}
        return cls(**kept, value=value, attempts=0, cached=True)


_STORED = (
    "value",
    "valid",
    "status",
    "reason",
    "raw",
    "first_raw",
    "attempts",
    "reminded",
    "input_tokens",
    "output_tokens",
)


class _Failed(Exception):
    """No answer for a message after every allowed attempt."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Counts:
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class _RunState:
    """Shared by the workers of one run: the pause a 429 imposes, and a fatal error."""

    def __init__(self) -> None:
        self.pause_until = 0.0
        self.abort: str | None = None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (milliseconds), else ``Retry-After``
    (seconds, or an HTTP date); None when absent or unreadable.

    Examples
    --------
    >>> retry_after_seconds({"retry-after-ms": "250"}), retry_after_seconds({"retry-after": "2"})
    (0.25, 2.0)
    """
    low = {k.lower(): v for k, v in headers.items()}
    ms = low.get("retry-after-ms")
    if ms is not None:
        try:
            v = float(ms)
            if math.isfinite(v) and v >= 0:
                return v / 1000.0
        except ValueError:
            pass
    ra = low.get("retry-after")
    if ra is not None:
        try:
            v = float(ra)
            if math.isfinite(v) and v >= 0:
                return v
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(ra)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=_dt.UTC)
            return max(0.0, (when - _dt.datetime.now(_dt.UTC)).total_seconds())
    return None


def check_retry_settings(counts: Mapping[str, Any], seconds: Mapping[str, Any]) -> None:
    """Validate a client's retry settings: ``counts`` are integers >= 1 (attempts, concurrency),
    ``seconds`` numbers of seconds >= 0 (timeout, backoff base and cap, longest Retry-After).

    Raises
    ------
    InputError
        Naming the first bad setting.
    """
    for name, v in counts.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be an integer >= 1, got {v!r}")
    for name, f in seconds.items():
        if isinstance(f, bool) or not isinstance(f, int | float) or not f >= 0:
            raise InputError(f"{name} must be a number of seconds >= 0, got {f!r}")


def backoff_seconds(tries: int, base: float, cap: float) -> float:
    """Wait before retry number ``tries`` (1-based) when the server gave no Retry-After:
    ``min(cap, base * 2**(tries - 1))`` with jitter (half to full), in seconds."""
    return min(cap, base * 2 ** (tries - 1)) * random.uniform(0.5, 1.0)


def _safe_url(url: str | None) -> str | None:
    """``url`` without user info, query or fragment (where secrets may hide)."""
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class OpenAIJudge(Judge):
    """A judge behind any OpenAI-compatible chat completions endpoint.

    Parameters
    ----------
    model : str, default "gpt-4o-mini"
    prompt : str, PathLike or PromptTemplate, default "utility-rubric"
        The grading prompt: a shipped name (see :func:`ragnb.judge.available_prompts`) or the
        path of a YAML template file.
    rank_prompt : str, PathLike or PromptTemplate, default "listwise"
        The listwise prompt used by :meth:`rank`.
    language : str, default "en"
        Language of shipped prompts (``"en"``, ``"fr"``).
    base_url : str, optional
        Server root, e.g. ``http://localhost:8000/v1``; default ``$OPENAI_BASE_URL`` or OpenAI.
    api_key : str, optional
        Default ``$OPENAI_API_KEY``. Sent only in the request header: never stored in cache
        keys, results, ledgers, logs or :meth:`describe`.
    temperature : float or None, default 0.0
        None: not sent (models that accept only their default).
    request_params : dict, optional
        Other chat completion parameters (``top_p``, ``seed``, ``max_completion_tokens``,
        ``response_format``, ...): JSON values, part of the cache key.
    concurrency : int, default 8
        Requests in flight at most.
    timeout : float, default 60.0
        Seconds per HTTP request.
    max_attempts : int, default 5
        HTTP requests per message at most (first try + retries after faults). The reminder is a
        new message with its own attempts.
    backoff_base, backoff_max : float, seconds
        Exponential backoff when the server gives no ``Retry-After``.
    max_retry_wait : float, default 120.0
        Seconds: an item whose server asks for a longer wait fails instead of waiting.
    reminder : bool, default True
        Send one reminder of the answer format after an invalid answer.
    retry_invalid : bool, default False
        Re-send items whose cached answer is invalid (default: an invalid answer is final).
    cache : Cache, optional
        Default: a :class:`~ragnb.cache.Cache` in ``cache_dir`` (default location if None).
    ledger : Ledger, optional
        Default: an in-memory ledger with the shipped price table.
    stage : str, default "judge"
        Ledger label when a call gives none.
    progress : bool, default True
        A tqdm progress bar while requests are in flight.

    Notes
    -----
    The ``passage`` of each item fills the grading template's item field (``{passage}``, or
    ``{response}`` for ``primer-response``); other text columns of the items (``answer``,
    ``reference``, ...) fill the fields of the same name.

    Attributes
    ----------
    judge_id : str
        ``"openai-judge:<model>"``.
    prompt, rank_prompt : PromptTemplate
    scale : (int, int)
        The grading prompt's scale.

    Examples
    --------
    >>> judge = OpenAIJudge("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    >>> judge.grade("what is BM25?", ["BM25 is a ranking function ..."])[0].grade  # doctest: +SKIP
    5

    References
    ----------
    .. [1] Dallaire (arXiv 2511.09545), section 3.4: S4 Score (1-5 utility grades) and S6 Rank
       (listwise orders of five passages A-E), with caching and manifests.
    .. [2] Bergum, "Improving retrieval with LLM-as-a-judge" (Vespa blog).
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        prompt: str | os.PathLike[str] | PromptTemplate = "utility-rubric",
        rank_prompt: str | os.PathLike[str] | PromptTemplate = "listwise",
        language: str = "en",
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        request_params: Mapping[str, Any] | None = None,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_wait: float = 120.0,
        reminder: bool = True,
        retry_invalid: bool = False,
        cache: Cache | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        ledger: Ledger | None = None,
        stage: str = "judge",
        progress: bool = True,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InputError(f"model must be a non-empty string, got {model!r}")
        check_retry_settings(
            {"concurrency": concurrency, "max_attempts": max_attempts},
            {
                "timeout": timeout,
                "backoff_base": backoff_base,
                "backoff_max": backoff_max,
                "max_retry_wait": max_retry_wait,
            },
        )
        params = dict(request_params or {})
        for reserved in ("model", "messages", "stream", "n"):
            if reserved in params:
                raise InputError(f"request_params may not set {reserved!r}")
        try:
            json.dumps(params, sort_keys=True)
        except TypeError as e:
            raise InputError(f"request_params must hold JSON values: {e}") from None
        self.model = model
        self.language = language
        self.prompt = load_prompt(prompt, language)
        self.rank_prompt = load_prompt(rank_prompt, language)
        if self.prompt.kind != "grade":
            raise InputError(f"prompt {self.prompt.id} is a {self.prompt.kind} prompt, not grade")
        if self.rank_prompt.kind != "rank":
            raise InputError(f"rank_prompt {self.rank_prompt.id} is not a rank prompt")
        self.scale = self.prompt.scale
        self.base_url = base_url
        self._api_key = api_key
        self.temperature = temperature
        self.request_params = params
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.max_attempts = max_attempts
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_wait = float(max_retry_wait)
        self.reminder = reminder
        self.retry_invalid = retry_invalid
        self.cache = cache if cache is not None else Cache(cache_dir)
        self.cache.register_schema(NAMESPACE, KEY_PARTS)
        self.cache.register_schema(INFLIGHT_NAMESPACE, KEY_PARTS)
        self.ledger = ledger if ledger is not None else Ledger()
        self.stage = stage
        self.progress = progress
        self.judge_id = f"openai-judge:{model}"

    # -- identity

    @property
    def params(self) -> dict[str, Any]:
        """What besides model and prompt changes an answer (part of cache keys)."""
        return {
            "temperature": self.temperature,
            "request_params": self.request_params,
            "reminder": self.reminder,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "class": type(self).__name__,
            "model": self.model,
            "base_url": _safe_url(self.base_url),
            "scale": list(self.scale) if self.scale else None,
            "prompt": self.prompt.describe(),
            "rank_prompt": self.rank_prompt.describe(),
            "params": self.params,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout,
            "max_attempts": self.max_attempts,
            "cache": str(self.cache.path),
            "ledger": None if self.ledger.path is None else str(self.ledger.path),
        }

    def with_prompt(
        self,
        prompt: str | os.PathLike[str] | PromptTemplate | None = None,
        rank_prompt: str | os.PathLike[str] | PromptTemplate | None = None,
        language: str | None = None,
    ) -> OpenAIJudge:
        """A copy with other prompts, sharing client settings, cache and ledger.

        ``language`` applies to the prompts given here by shipped name; a prompt not given is
        kept as it is.
        """
        other = copy.copy(self)
        lang = language or self.language
        if prompt is not None:
            other.prompt = load_prompt(prompt, lang)
            if other.prompt.kind != "grade":
                raise InputError(f"prompt {other.prompt.id} is not a grade prompt")
            other.scale = other.prompt.scale
        if rank_prompt is not None:
            other.rank_prompt = load_prompt(rank_prompt, lang)
            if other.rank_prompt.kind != "rank":
                raise InputError(f"rank_prompt {other.rank_prompt.id} is not a rank prompt")
        return other

    # -- building calls

    def make_call(
        self,
        template: PromptTemplate,
        values: Mapping[str, str],
        *,
        item: str,
        query_id: str = "",
        labels: Sequence[str] | None = None,
    ) -> LLMCall:
        """Render ``template`` with ``values`` into a call with its cache key.

        Raises
        ------
        InputError
            When a field of the template is missing from ``values`` (naming ``item``).
        """
        messages = template.render(values, where=f"item {item}")
        blob = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        key = make_key(
            {
                "model": self.model,
                "template_sha256": template.sha256,
                "prompt_sha256": hashlib.sha256(blob.encode("utf-8")).hexdigest(),
                "params": self.params,
            }
        )
        return LLMCall(
            item,
            query_id,
            key,
            messages,
            template,
            template.render_reminder(values),
            None if labels is None else tuple(labels),
        )

    def _grade_calls(self, requests: list[GradeRequest]) -> list[LLMCall]:
        tpl = self.prompt
        calls = []
        for r in requests:
            values = dict(r.fields)
            if r.query is not None:
                values["query"] = r.query
            if r.passage is not None:
                values[tpl.item_field] = r.passage
            calls.append(self.make_call(tpl, values, item=r.item, query_id=r.query_id))
        return calls

    def _rank_calls(self, requests: list[RankRequest]) -> list[LLMCall]:
        tpl = self.rank_prompt
        calls = []
        for r in requests:
            if r.query is None or r.passages is None:
                raise InputError(
                    f"batch {r.item}: ranking with an LLM needs 'query' and 'passages'",
                    query_id=r.query_id,
                )
            values = tpl.rank_fields(r.query, r.passages)
            labels = LABELS[: len(r.passages)]
            calls.append(
                self.make_call(tpl, values, item=r.item, query_id=r.query_id, labels=labels)
            )
        return calls

    def plan(self, items: Any, *, kind: str = "grade", stage: str | None = None) -> list[Any]:
        """The calls :meth:`grade_many` (``kind="grade"``) or :meth:`rank_many` would make, with
        whether each is cached: what :func:`ragnb.ledger.estimate` prices."""
        if kind == "grade":
            calls = self._grade_calls(grade_requests(items))
        elif kind == "rank":
            calls = self._rank_calls(rank_requests(items))
        else:
            raise InputError(f"kind must be 'grade' or 'rank', got {kind!r}")
        return self.plan_calls(calls, stage)

    def plan_calls(self, calls: Sequence[LLMCall], stage: str | None = None) -> list[PlannedCall]:
        """:class:`~ragnb.ledger.PlannedCall` rows for ``calls``: one per distinct prompt (a
        prompt repeated in a job is sent once), flagged when its answer is cached."""
        unique: dict[str, LLMCall] = {}
        for c in calls:
            unique.setdefault(c.key, c)
        found = self._cached(list(unique.values()))
        return [
            PlannedCall(
                c.item,
                c.query_id,
                self.model,
                stage or self.stage,
                c.messages,
                c.template.expected_output_tokens,
                c.key in found,
            )
            for c in unique.values()
        ]

    # -- the verbs

    def _grade_batch(self, requests: list[GradeRequest], stage: str | None) -> list[GradeResult]:
        calls = self._grade_calls(requests)
        results = self.run(calls, stage=stage, kind="grade")
        return [
            GradeResult(
                r.query_id,
                r.doc_id,
                c.value if c.valid else None,
                **_audit(c),
                judge_id=self.judge_id,
                prompt=self.prompt.id,
            )
            for r, c in zip(requests, results, strict=True)
        ]

    def _rank_batch(self, requests: list[RankRequest], stage: str | None) -> list[RankResult]:
        calls = self._rank_calls(requests)
        results = self.run(calls, stage=stage, kind="rank")
        return [
            RankResult(
                r.query_id,
                r.batch_id,
                r.doc_ids,
                c.value if c.valid else None,
                **_audit(c),
                judge_id=self.judge_id,
                prompt=self.rank_prompt.id,
            )
            for r, c in zip(requests, results, strict=True)
        ]

    # -- the engine

    def _cached(self, calls: Sequence[LLMCall]) -> dict[str, CallResult]:
        found = self.cache.get_many(NAMESPACE, [c.key for c in calls])
        out = {}
        for key, blob in found.items():
            r = CallResult.from_bytes(blob)
            if r.valid or not self.retry_invalid:
                out[key] = r
        return out

    def run(
        self, calls: Sequence[LLMCall], *, stage: str | None = None, kind: str = "grade"
    ) -> list[CallResult]:
        """Send ``calls`` (from the cache where possible); one result per call, same order.

        Calls with the same key are sent once and share the result. Never raises for a failed
        call: its result has ``status="failed"`` and the reason.
        """
        stage = stage or self.stage
        calls = list(calls)
        unique: dict[str, LLMCall] = {}
        for c in calls:
            unique.setdefault(c.key, c)
        results = self._cached(list(unique.values()))
        for key, r in results.items():
            c = unique[key]
            self._record(stage, kind, c, 0, "cached", r.input_tokens, r.output_tokens, True, False)
        todo = [c for k, c in unique.items() if k not in results]
        if todo:
            before = set(self.cache.get_many(INFLIGHT_NAMESPACE, [c.key for c in todo]))
            answered = set(self.cache.get_many(NAMESPACE, [c.key for c in todo]))
            repeated = before - answered
            results.update(run_sync(lambda: self._arun(todo, repeated, stage, kind)))
            bad = [r for r in results.values() if not r.valid and not r.cached]
            if bad:
                n_failed = sum(r.status == "failed" for r in bad)
                log.warning(
                    "%s: %d of %d calls invalid, %d failed (see the reason column)",
                    self.judge_id,
                    len(bad) - n_failed,
                    len(todo),
                    n_failed,
                )
        return [results[c.key] for c in calls]

    async def _arun(
        self, todo: list[LLMCall], repeated: set[str], stage: str, kind: str
    ) -> dict[str, CallResult]:
        import openai
        from tqdm import tqdm

        state = _RunState()
        out: dict[str, CallResult] = {}
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unset",
            timeout=self.timeout,
            max_retries=0,
        )
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
                    out[call.key] = await self._one(
                        client, call, call.key in repeated, stage, kind, state
                    )
                except (asyncio.CancelledError, KeyboardInterrupt):
                    raise
                except Exception as e:  # a bug must not lose the other items
                    log.exception("%s: unexpected error on %s", self.judge_id, call.item)
                    out[call.key] = CallResult(
                        None, False, "failed", self._scrub(f"internal error: {e!r}")
                    )
                bar.update(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(todo)))))
        finally:
            bar.close()
            await client.close()
        return out

    async def _one(
        self,
        client: Any,
        call: LLMCall,
        repeated: bool,
        stage: str,
        kind: str,
        state: _RunState,
    ) -> CallResult:
        counts = _Counts()
        if state.abort is not None:
            return CallResult(None, False, "failed", f"not sent: {state.abort}")
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
            text = await self._request(
                client, call.messages, call, counts, stage, kind, repeated, state
            )
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
                text = await self._request(
                    client, follow_up, call, counts, stage, kind, repeated, state
                )
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
        final = result(
            value=value if reason is None else None,
            valid=reason is None,
            status="ok" if reason is None else "invalid",
            reason=reason or "",
            raw=text,
            first_raw=first_raw,
            reminded=reminded,
        )
        self.cache.put(NAMESPACE, call.key, final.to_bytes())
        return final

    async def _request(
        self,
        client: Any,
        messages: list[dict[str, str]],
        call: LLMCall,
        counts: _Counts,
        stage: str,
        kind: str,
        repeated: bool,
        state: _RunState,
    ) -> str:
        import openai

        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.request_params}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        loop = asyncio.get_running_loop()
        tries = 0
        while True:
            if state.abort is not None:
                raise _Failed(f"not sent: {state.abort}")
            pause = state.pause_until - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
            tries += 1
            counts.attempts += 1
            wait: float | None = None
            retryable = True
            try:
                # POST /chat/completions through the client's generic verb: the same request,
                # auth and errors as chat.completions.create, without its per-call TypedDict
                # transform of the messages and pydantic model of the answer (~2 ms of typing
                # introspection per call, most of the CPU budget at 16 calls per 50 ms); the
                # body is read as a plain dict (a truncated one raises json.JSONDecodeError)
                data = await client.post("/chat/completions", cast_to=dict, body=body)
                content, n_in, n_out = _read_completion(data)
            except openai.APIStatusError as e:
                code = e.status_code
                status = f"http_{code}"
                reason = self._scrub(f"HTTP {code}: {_error_message(e)}")
                headers = e.response.headers
                retryable = code in _RETRYABLE or code >= 500
                if str(headers.get("x-should-retry", "")).lower() == "false":
                    retryable = False
                if code in _FATAL:
                    state.abort = f"the job stopped after {reason}"
                if retryable:
                    wait = retry_after_seconds(headers)
                    if code == 429 and wait is not None and wait <= self.max_retry_wait:
                        state.pause_until = max(state.pause_until, loop.time() + wait)
            except openai.APITimeoutError:
                status, reason = "timeout", f"no answer within {self.timeout:g} s"
            except openai.APIConnectionError as e:
                cause = e.__cause__ or e
                status = "connection"
                reason = self._scrub(f"connection error: {type(cause).__name__}: {cause}")
            except (ValueError, openai.APIResponseValidationError, _Malformed) as e:
                # a truncated or non-JSON body: the client raises json.JSONDecodeError
                status = "malformed"
                reason = self._scrub(f"malformed response body: {type(e).__name__}: {e}")
            else:
                counts.input_tokens += n_in
                counts.output_tokens += n_out
                self._record(stage, kind, call, counts.attempts, "ok", n_in, n_out, False, repeated)
                return content
            self._record(stage, kind, call, counts.attempts, status, 0, 0, False, repeated)
            log.info("%s: %s attempt %d: %s", self.judge_id, call.item, counts.attempts, reason)
            if not retryable or tries >= self.max_attempts:
                raise _Failed(f"{reason} (request {tries} of at most {self.max_attempts})")
            if wait is None:
                wait = backoff_seconds(tries, self.backoff_base, self.backoff_max)
            elif wait > self.max_retry_wait:
                raise _Failed(
                    f"{reason}; the server asked to wait {wait:g} s, more than "
                    f"max_retry_wait={self.max_retry_wait:g} s"
                )
            await asyncio.sleep(wait)

    def _record(
        self,
        stage: str,
        kind: str,
        call: LLMCall,
        attempt: int,
        status: str,
        n_in: int,
        n_out: int,
        cached: bool,
        repeated: bool,
    ) -> None:
        self.ledger.record(
            stage=stage,
            model=self.model,
            item=call.item,
            key=call.key,
            attempt=attempt,
            status=status,
            input_tokens=n_in,
            output_tokens=n_out,
            cached=cached,
            repeated=repeated,
            judge_id=self.judge_id,
            kind=kind,
        )

    def _scrub(self, text: str) -> str:
        key = self._api_key or os.environ.get("OPENAI_API_KEY") or ""
        if len(key) >= 4 and key in text:
            text = text.replace(key, "[REDACTED]")
        return text


def _error_message(e: Any) -> str:
    """The server's own error message (``{"error": {"message": ...}}``), else the client's."""
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:500]
    return str(getattr(e, "message", e))[:500]


class _Malformed(Exception):
    """A 2xx body that is JSON but not a chat completion."""


def _read_completion(data: Any) -> tuple[str, int, int]:
    """``(content, prompt_tokens, completion_tokens)`` of a chat completion body.

    Content that is null (a refusal, a tool call) reads as ``""``, an invalid answer; a body
    without ``choices[0].message`` is malformed (retried).
    """
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise _Malformed(f"not a chat completion: {str(data)[:80]!r}") from None
    content = message.get("content") if isinstance(message, dict) else None
    usage = data.get("usage") or {}

    def count(name: str) -> int:
        v = usage.get(name) if isinstance(usage, dict) else None
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    text = content if isinstance(content, str) else ""
    return text, count("prompt_tokens"), count("completion_tokens")


def _audit(c: CallResult) -> dict[str, Any]:
    return {
        "valid": c.valid,
        "status": c.status,
        "reason": c.reason,
        "raw": c.raw,
        "first_raw": c.first_raw,
        "attempts": c.attempts,
        "reminded": c.reminded,
        "input_tokens": c.input_tokens,
        "output_tokens": c.output_tokens,
        "cached": c.cached,
        "repeated": c.repeated,
    }
