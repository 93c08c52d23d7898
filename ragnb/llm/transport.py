"""The one HTTP transport of ragnb: retry policy, Retry-After, backoff and redaction of secrets.

Every client that talks to a server (the LLM judge, :class:`ragnb.rerank.HTTPReranker`,
:class:`ragnb.embed.OpenAIEmbedder`) sends its requests through the ``openai`` client with the
client's own retries off, and retries here, by one rule:

- **What is retried**: HTTP 408, 409, 429 and 5xx (unless the server answers
  ``x-should-retry: false``), a timeout, a dropped connection, and an unparseable (truncated)
  body. Anything else stops at once.
- **How long to wait**: what the server asks for (``retry-after-ms`` in milliseconds, else
  ``Retry-After`` in seconds or as an HTTP date, :func:`retry_after_seconds`), else exponential
  backoff ``backoff_base * 2**(retry - 1)`` capped at ``backoff_max``, with jitter (half to full,
  :func:`backoff_seconds`). A server asking for more than ``max_retry_wait`` seconds ends the
  call instead.
- **How many times**: at most ``max_attempts`` requests per call (first try included).
- **What is said**: every failure becomes a :class:`Fault` whose reason names the status and the
  server's own message (:func:`error_message`), with every API key redacted
  (:func:`ragnb.core.provenance.scrub`: one rule, keys of 4 characters or more).
- **How fast**: a :class:`RateLimiter` per endpoint (base URL + model, :func:`rate_limiter`),
  shared by every thread of the process, spends a requests-per-minute and a tokens-per-minute
  budget (token buckets charged one request and its counted prompt tokens), follows the
  server's ``x-ratelimit-remaining-*`` / ``x-ratelimit-reset-*`` headers (:func:`http_client`
  passes it every response) and lowers its allowed rate on a 429 and raises it back on answers
  (additive increase, multiplicative decrease). A 429 is retried like any retryable fault.
- **When a request leaves**: :func:`notify_sent` names a callback that the HTTP client of
  :func:`http_client` calls as the request's body is handed to the connection (its headers
  already gone): what a ledger needs to bill a request only once the server can have it.
- **When a whole job stops**: a :class:`CircuitBreaker` shared by every request of a job trips
  after ``max_consecutive`` connection failures or timeouts in a row (no server answers at that
  URL) or after one fatal status (401, 403, 404: the key, the URL or the model is wrong); every
  request still waiting then fails at once instead of being retried item by item.

:func:`call` runs the loop for a synchronous request, :func:`acall` for an asynchronous one;
both take the request as a function of the attempt number, so a caller keeps its own client,
headers and bookkeeping (ledger lines, usage counters) in hooks.

References
----------
.. [1] RFC 9110, section 10.2.3 (Retry-After: delay-seconds or an HTTP-date).
.. [2] The ``openai`` Python client, ``_base_client.py`` (``retry-after-ms``,
   ``x-should-retry``, which statuses it retries).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as _dt
import email.utils
import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ragnb.core.lazylibs import require
from ragnb.core.provenance import safe_url, scrub, secrets_in_env
from ragnb.errors import GaveUp, InputError

__all__ = [
    "AIMD_DECREASE",
    "AIMD_FLOOR",
    "AIMD_INCREASE",
    "FATAL_STATUSES",
    "RETRYABLE_STATUSES",
    "DEFAULT_RETRY",
    "CircuitBreaker",
    "Fault",
    "GaveUp",
    "RateLimiter",
    "RetryPolicy",
    "acall",
    "backoff_seconds",
    "call",
    "check_rate_limits",
    "check_request_params",
    "check_retry_settings",
    "classify",
    "error_message",
    "http_client",
    "notify_sent",
    "rate_limiter",
    "redact",
    "reset_seconds",
    "retry_after_seconds",
]

#: Statuses retried besides every 5xx.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: Statuses that say the key, the URL or the model is wrong: retrying cannot help.
FATAL_STATUSES = frozenset({401, 403, 404})

T = TypeVar("T")

log = logging.getLogger("ragnb.llm.transport")


# ----------------------------------------------------------------------------- settings


def check_retry_settings(counts: Mapping[str, Any], seconds: Mapping[str, Any]) -> None:
    """Validate a client's retry settings: ``counts`` are integers >= 1 (attempts, concurrency),
    ``seconds`` numbers of seconds >= 0 (timeout, backoff base and cap, longest Retry-After).

    Raises
    ------
    InputError
        Naming the first bad setting.

    Examples
    --------
    >>> check_retry_settings({"max_attempts": 0}, {})
    Traceback (most recent call last):
    ...
    ragnb.errors.InputError: max_attempts must be an integer >= 1, got 0
    """
    for name, v in counts.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be an integer >= 1, got {v!r}")
    for name, f in seconds.items():
        if isinstance(f, bool) or not isinstance(f, int | float) or not f >= 0:
            raise InputError(f"{name} must be a number of seconds >= 0, got {f!r}")


def check_request_params(
    params: Mapping[str, Any] | None, reserved: Iterable[str]
) -> dict[str, Any]:
    """A copy of a client's extra request fields, checked: no ``reserved`` field (those the
    client sets itself), JSON values only (they are sent as JSON and hashed into cache keys).

    Raises
    ------
    InputError
        Naming the reserved field, or the value that is not JSON.

    Examples
    --------
    >>> check_request_params({"seed": 1}, ("model", "messages"))
    {'seed': 1}
    """
    out = dict(params or {})
    for name in reserved:
        if name in out:
            raise InputError(f"request_params may not set {name!r}")
    try:
        json.dumps(out, sort_keys=True)
    except TypeError as e:
        raise InputError(f"request_params must hold JSON values: {e}") from None
    return out


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries: attempts, timeout, backoff and the longest wait it accepts.

    Parameters
    ----------
    max_attempts : int, default 5
        Requests per call at most (first try + retries), >= 1.
    timeout : float, default 60.0
        Seconds per request.
    backoff_base, backoff_max : float, seconds, default 0.5 and 30.0
        Exponential backoff when the server gives no Retry-After.
    max_retry_wait : float, default 120.0
        Seconds: a server asking for a longer wait ends the call.

    Raises
    ------
    InputError
        On a setting out of range (naming it).
    """

    max_attempts: int = 5
    timeout: float = 60.0
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_wait: float = 120.0

    def __post_init__(self) -> None:
        check_retry_settings(
            {"max_attempts": self.max_attempts},
            {
                "timeout": self.timeout,
                "backoff_base": self.backoff_base,
                "backoff_max": self.backoff_max,
                "max_retry_wait": self.max_retry_wait,
            },
        )

    def wait_before_retry(self, fault: Fault, tries: int) -> float:
        """Seconds to wait before request ``tries + 1`` after ``fault`` ended request ``tries``.

        Raises
        ------
        GaveUp
            When the fault is not retryable, ``tries`` reached ``max_attempts``, or the server
            asked for a wait longer than ``max_retry_wait`` (the reason says which).
        """
        if not fault.retryable or tries >= self.max_attempts:
            raise GaveUp(f"{fault.reason} (request {tries} of at most {self.max_attempts})", fault)
        if fault.wait is None:
            return backoff_seconds(tries, self.backoff_base, self.backoff_max)
        if fault.wait > self.max_retry_wait:
            raise GaveUp(
                f"{fault.reason}; the server asked to wait {fault.wait:g} s, more than "
                f"max_retry_wait={self.max_retry_wait:g} s",
                fault,
            )
        return fault.wait


#: The default retry policy: the judge's and the HTTP reranker's constructor defaults read it,
#: so the numbers have one home.
DEFAULT_RETRY = RetryPolicy()


# ----------------------------------------------------------------------------- waits


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (milliseconds), else ``Retry-After``
    (seconds, or an HTTP date); None when absent or unreadable.

    Parameters
    ----------
    headers : mapping of str to str
        Response headers (names compared case-insensitively).

    Returns
    -------
    float or None
        Seconds, >= 0 (a date in the past gives 0).

    Examples
    --------
    >>> retry_after_seconds({"retry-after-ms": "250"}), retry_after_seconds({"retry-after": "2"})
    (0.25, 2.0)
    >>> retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    0.0
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


def backoff_seconds(tries: int, base: float, cap: float) -> float:
    """Wait before retry number ``tries`` (1-based) when the server gave no Retry-After:
    ``min(cap, base * 2**(tries - 1))`` with jitter (half to full), in seconds.

    Examples
    --------
    >>> 1.0 <= backoff_seconds(3, 0.5, 30.0) <= 2.0
    True
    """
    return min(cap, base * 2 ** (tries - 1)) * random.uniform(0.5, 1.0)


# ----------------------------------------------------------------------------- faults


def redact(text: str, keys: Iterable[str | None] = ()) -> str:
    """``text`` with the API keys of the environment and ``keys`` replaced by ``[REDACTED]``.

    One rule for every client (:func:`ragnb.core.provenance.scrub`): a key of at least 4
    characters is redacted wherever it occurs; shorter values are left alone.

    Examples
    --------
    >>> redact("bad key sk-12345", ["sk-12345"])
    'bad key [REDACTED]'
    """
    out: str = scrub(text, secrets_in_env(keys))
    return out


def error_message(e: Any) -> str:
    """The server's own error message (``{"error": {"message": ...}}``), else the client's;
    at most 500 characters."""
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:500]
    return str(getattr(e, "message", e))[:500]


@dataclass(frozen=True)
class Fault:
    """Why one request got no usable answer.

    Attributes
    ----------
    status : str
        ``"http_<code>"``, ``"timeout"``, ``"connection"`` or ``"malformed"`` (the ledger's
        status column).
    reason : str
        What happened, for people, with every API key redacted.
    retryable : bool
    wait : float or None
        Seconds the server asked to wait (retryable answers only), None when it did not say.
    code : int or None
        The HTTP status, None when no answer arrived.
    error : BaseException
        The client's exception.
    """

    status: str
    reason: str
    retryable: bool
    wait: float | None
    code: int | None
    error: BaseException


def classify(error: BaseException, timeout: float, keys: Iterable[str | None] = ()) -> Fault | None:
    """The :class:`Fault` an exception of the ``openai`` client stands for; None when it is not
    a transport error (the caller re-raises it).

    An HTTP error status, a timeout, a connection error, or a body that is not JSON or not
    the expected shape (a :class:`ValueError`, which :class:`json.JSONDecodeError` is, or
    ``openai.APIResponseValidationError``). ``timeout`` (seconds) is named in the reason of a
    timeout; ``keys`` are redacted with those of the environment (:func:`redact`).
    """
    openai = require("openai")

    wait: float | None = None
    code: int | None = None
    if isinstance(error, openai.APIStatusError):
        code = error.status_code
        status = f"http_{code}"
        reason = f"HTTP {code}: {error_message(error)}"
        headers = error.response.headers
        retryable = code in RETRYABLE_STATUSES or code >= 500
        if str(headers.get("x-should-retry", "")).lower() == "false":
            retryable = False
        if retryable:
            wait = retry_after_seconds(headers)
    elif isinstance(error, openai.APITimeoutError):
        status, reason, retryable = "timeout", f"no answer within {timeout:g} s", True
    elif isinstance(error, openai.APIConnectionError):
        cause = error.__cause__ or error
        status, retryable = "connection", True
        reason = f"connection error: {type(cause).__name__}: {cause}"
    elif isinstance(error, ValueError | openai.APIResponseValidationError):
        # a truncated or non-JSON body: the client raises json.JSONDecodeError
        status, retryable = "malformed", True
        reason = f"malformed response body: {type(error).__name__}: {error}"
    else:
        return None
    return Fault(status, redact(reason, keys), retryable, wait, code, error)


# ----------------------------------------------------------------------------- the breaker


class CircuitBreaker:
    """Stops a whole job when its server cannot answer: one object shared by every request.

    It trips after ``max_consecutive`` connection failures or timeouts in a row (an HTTP
    answer of any status, or a success, resets the count: the server is reachable), or at once
    on a fatal status (:data:`FATAL_STATUSES`). Once tripped it stays tripped: :attr:`cause`
    says why, and :meth:`sleep` (the wait between retries) returns at once so no request waits
    out its backoff.

    Parameters
    ----------
    max_consecutive : int, default 5
        Connection failures in a row that trip it, >= 1.
    health_check : callable, optional
        Called with no argument after each connection failure or timeout; returns why the
        server cannot answer (a process that died, for example
        :meth:`ragnb.llm.server.LocalLLMServer.failure`) or None. A reason trips the breaker
        at once, with that reason as its cause, instead of counting failures.

    Attributes
    ----------
    cause : str or None
        Why it tripped (redacted reasons), None while closed.
    crashed : bool
        True when ``health_check`` tripped it (the server process is gone).

    Examples
    --------
    >>> b = CircuitBreaker(2)
    >>> f = Fault("connection", "connection error: refused", True, None, None, OSError())
    >>> b.failure(f), b.failure(f), b.cause
    (False, True, '2 connection failures in a row (the last: connection error: refused)')
    """

    def __init__(
        self, max_consecutive: int = 5, health_check: Callable[[], str | None] | None = None
    ) -> None:
        check_retry_settings({"max_connection_failures": max_consecutive}, {})
        self.max_consecutive = max_consecutive
        self.health_check = health_check
        self.crashed = False
        self.consecutive = 0
        self.cause: str | None = None
        self._lock = threading.Lock()
        self._event: asyncio.Event | None = None

    @property
    def tripped(self) -> bool:
        """True once the breaker has tripped."""
        return self.cause is not None

    def success(self) -> None:
        """An answer arrived: the server is reachable."""
        with self._lock:
            self.consecutive = 0

    def failure(self, fault: Fault) -> bool:
        """Count ``fault``; True when it trips the breaker (False when already tripped)."""
        with self._lock:
            if self.cause is not None:
                return False
            if fault.code in FATAL_STATUSES:
                self.cause = fault.reason
            elif fault.status in ("connection", "timeout"):
                self.consecutive += 1
                dead = self.health_check() if self.health_check is not None else None
                if dead:
                    self.cause, self.crashed = dead, True
                elif self.consecutive >= self.max_consecutive:
                    self.cause = (
                        f"{self.consecutive} connection failures in a row (the last: "
                        f"{fault.reason})"
                    )
            else:
                self.consecutive = 0  # the server answered, if badly
            tripped = self.cause is not None
        if tripped and self._event is not None:
            self._event.set()
        return tripped

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less if the breaker trips meanwhile (an asyncio wait)."""
        if self.cause is not None:
            return
        if self._event is None:
            self._event = asyncio.Event()
            if self.cause is not None:
                return
        try:
            await asyncio.wait_for(self._event.wait(), timeout=seconds)
        except TimeoutError:
            pass


# ----------------------------------------------------------------------------- rate limits

#: The allowed rate after a 429 is this share of what it was (the multiplicative decrease).
AIMD_DECREASE = 0.5
#: After each answered request the allowed rate grows by this share of the configured limit
#: (the additive increase), up to the limit.
AIMD_INCREASE = 0.02
#: The allowed rate never falls below this share of the configured limit.
AIMD_FLOOR = 1 / 64

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")


def reset_seconds(text: str | None) -> float | None:
    """Seconds in a rate-limit reset header: OpenAI's durations (``6m0s``, ``1s``, ``20ms``,
    ``1h2m3.5s``) or a bare number of seconds; None when absent or unreadable.

    Parameters
    ----------
    text : str or None
        The value of ``x-ratelimit-reset-requests`` or ``x-ratelimit-reset-tokens``.

    Returns
    -------
    float or None
        Seconds, >= 0.

    References
    ----------
    .. [1] OpenAI API documentation, "Rate limits", section "Rate limits in headers"
       (``x-ratelimit-limit-*``, ``x-ratelimit-remaining-*``, ``x-ratelimit-reset-*``).

    Examples
    --------
    >>> reset_seconds("6m0s"), reset_seconds("1s"), reset_seconds("20ms"), reset_seconds("1.5")
    (360.0, 1.0, 0.02, 1.5)
    >>> reset_seconds("soon") is None
    True
    """
    if text is None:
        return None
    text = str(text).strip()
    try:
        v = float(text)
    except ValueError:
        pass
    else:
        return v if math.isfinite(v) and v >= 0 else None
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def check_rate_limits(rpm: Any, tpm: Any) -> None:
    """Validate ``rpm`` and ``tpm``: None (no budget) or a number > 0 (per minute).

    Raises
    ------
    InputError
        Naming the bad setting.

    Examples
    --------
    >>> check_rate_limits(0, None)
    Traceback (most recent call last):
    ...
    ragnb.errors.InputError: rpm must be None or a number of requests per minute > 0, got 0
    """
    for name, unit, v in (("rpm", "requests", rpm), ("tpm", "tokens", tpm)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not (0 < v < math.inf):
            raise InputError(f"{name} must be None or a number of {unit} per minute > 0, got {v!r}")


class _Bucket:
    """A token bucket that lends: a reservation larger than the level leaves a debt, repaid at
    the refill rate, so callers are served in reservation order (virtual scheduling)."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.limit = float(per_minute)
        self.allowed = self.limit  # per minute, lowered by 429s (AIMD)
        self.level = self.capacity
        self.updated = now

    @property
    def capacity(self) -> float:
        """The burst: one second of the allowed rate, at least one request's worth."""
        return max(1.0, self.allowed / 60.0)

    def take(self, amount: float, now: float) -> float:
        """Debit ``amount``; seconds until the level is back to zero (0: at once)."""
        rate = self.allowed / 60.0
        self.level = min(self.capacity, self.level + rate * (now - self.updated))
        self.updated = now
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / rate

    def decrease(self) -> None:
        self.allowed = max(self.limit * AIMD_FLOOR, self.allowed * AIMD_DECREASE)
        self.level = min(self.level, 0.0)  # no burst right after a 429

    def increase(self) -> None:
        self.allowed = min(self.limit, self.allowed + self.limit * AIMD_INCREASE)


class RateLimiter:
    """A requests-per-minute and tokens-per-minute budget for one endpoint, shared by threads.

    Each request reserves one request and its prompt's token count before it is sent
    (:meth:`reserve`, which says how long to wait). Two token buckets hold the budget, one for
    requests (``rpm``) and one for tokens (``tpm``): each refills continuously at its allowed
    rate and holds at most one second of it (the burst), so a job never sends more than
    ``burst + rate x t`` in any t seconds. On top of its own budget the limiter follows the
    server's ``x-ratelimit-remaining-requests`` / ``-tokens`` and ``x-ratelimit-reset-requests``
    / ``-tokens`` headers (:meth:`observe`): once the server says nothing remains, requests wait
    until its reset. A 429 halves the allowed rate (multiplicative decrease, :meth:`throttled`);
    every answered request raises it again by 2% of the configured limit (additive increase,
    :meth:`answered`), never above it and never below 1/64 of it (AIMD).

    Parameters
    ----------
    rpm : float, optional
        Requests per minute at most, > 0; None: no request budget of its own.
    tpm : float, optional
        Tokens per minute at most, > 0; None: no token budget of its own.
    name : str, default ""
        The endpoint, for log lines (no credentials).
    clock : callable, default time.monotonic
        Seconds; replaced in tests of the arithmetic.

    Attributes
    ----------
    waited_s : float
        Seconds of waits handed out by :meth:`reserve`, summed over requests.
    throttled_count : int
        429 answers seen (:meth:`throttled`).
    answers : int
        Requests answered (:meth:`answered`): a 429 after others were answered is a rate
        limit, not a dead endpoint (see :func:`call`).

    Raises
    ------
    InputError
        When ``rpm`` or ``tpm`` is not None nor a number > 0.

    References
    ----------
    .. [1] Heinanen and Guerin, RFC 2697 "A Single Rate Three Color Marker", section 3: a
       token bucket filled at a committed rate up to a burst size.
    .. [2] Chiu and Jain, "Analysis of the Increase and Decrease Algorithms for Congestion
       Avoidance in Computer Networks", Computer Networks and ISDN Systems 17 (1989): additive
       increase, multiplicative decrease converges to a fair, efficient rate.
    .. [3] OpenAI API documentation, "Rate limits": RPM and TPM limits, the
       ``x-ratelimit-*`` headers, exponential backoff on 429.

    Examples
    --------
    >>> t = [0.0]
    >>> lim = RateLimiter(rpm=120, clock=lambda: t[0])  # 2 per second, a burst of 2
    >>> [lim.reserve() for _ in range(4)]
    [0.0, 0.0, 0.5, 1.0]
    >>> lim.throttled(); lim.allowed_rpm
    60.0
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        name: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.clock = clock
        self.waited_s = 0.0
        self.throttled_count = 0
        self.answers = 0
        self._lock = threading.Lock()
        self._requests: _Bucket | None = None
        self._tokens: _Bucket | None = None
        # what the server said: {"requests" | "tokens": (remaining, reset_at)}
        self._server: dict[str, tuple[float, float]] = {}
        self.configure(rpm, tpm)

    def configure(self, rpm: float | None, tpm: float | None) -> None:
        """Set the budgets (None: none of its own); an allowed rate lowered by 429s restarts
        from the new limit.

        Raises
        ------
        InputError
            As the constructor.
        """
        check_rate_limits(rpm, tpm)
        now = self.clock()
        with self._lock:
            self._requests = None if rpm is None else _Bucket(rpm, now)
            self._tokens = None if tpm is None else _Bucket(tpm, now)

    @property
    def rpm(self) -> float | None:
        """The configured requests per minute (None: no budget)."""
        return None if self._requests is None else self._requests.limit

    @property
    def tpm(self) -> float | None:
        """The configured tokens per minute (None: no budget)."""
        return None if self._tokens is None else self._tokens.limit

    @property
    def allowed_rpm(self) -> float | None:
        """Requests per minute allowed now (the configured limit, lowered after 429s)."""
        return None if self._requests is None else self._requests.allowed

    @property
    def allowed_tpm(self) -> float | None:
        """Tokens per minute allowed now (the configured limit, lowered after 429s)."""
        return None if self._tokens is None else self._tokens.allowed

    def describe(self) -> dict[str, float | None]:
        """``{"rpm": ..., "tpm": ...}``: the configured budgets, per minute."""
        return {"rpm": self.rpm, "tpm": self.tpm}

    def reserve(self, tokens: int = 0) -> float:
        """Reserve one request of ``tokens`` prompt tokens; seconds to wait before sending it.

        The wait is the longest of the request bucket's, the token bucket's and, when the
        server's last headers said less remains than this request needs (no request, or fewer
        tokens), the time to the server's reset. The buckets' reservation holds whether or not
        the caller waits it out, so concurrent callers are spaced out in turn.

        Parameters
        ----------
        tokens : int, default 0
            The request's counted prompt tokens (charged to ``tpm``).

        Returns
        -------
        float
            Seconds, >= 0.
        """
        now = self.clock()
        with self._lock:
            wait = 0.0
            if self._requests is not None:
                wait = self._requests.take(1.0, now)
            if self._tokens is not None:
                wait = max(wait, self._tokens.take(float(tokens), now))
            for kind, need in (("requests", 1.0), ("tokens", float(tokens))):
                remaining, reset_at = self._server.get(kind, (math.inf, 0.0))
                if reset_at <= now:
                    self._server.pop(kind, None)  # the server's window has passed
                elif remaining < max(need, 1.0):
                    wait = max(wait, reset_at - now)
            self.waited_s += wait
        return wait

    def observe(self, headers: Mapping[str, str]) -> None:
        """Read a response's ``x-ratelimit-remaining-*`` and ``x-ratelimit-reset-*`` headers
        (any status); headers absent or unreadable change nothing.

        Parameters
        ----------
        headers : mapping of str to str
            Names compared case-insensitively; resets in OpenAI's durations
            (:func:`reset_seconds`).
        """
        low = {k.lower(): v for k, v in headers.items()}
        now = self.clock()
        for kind in ("requests", "tokens"):
            remaining = low.get(f"x-ratelimit-remaining-{kind}")
            reset = reset_seconds(low.get(f"x-ratelimit-reset-{kind}"))
            if remaining is None or reset is None:
                continue
            try:
                left = float(remaining)
            except ValueError:
                continue
            if math.isfinite(left):
                with self._lock:
                    self._server[kind] = (left, now + reset)

    def throttled(self) -> None:
        """A 429 arrived: halve the allowed rates (multiplicative decrease)."""
        with self._lock:
            self.throttled_count += 1
            for bucket in (self._requests, self._tokens):
                if bucket is not None:
                    bucket.decrease()
        log.info(
            "%s: HTTP 429: allowed rate now %s requests/min, %s tokens/min",
            self.name,
            self.allowed_rpm,
            self.allowed_tpm,
        )

    def answered(self) -> None:
        """A request was answered: raise the allowed rates a step (additive increase)."""
        with self._lock:
            self.answers += 1
            for bucket in (self._requests, self._tokens):
                if bucket is not None:
                    bucket.increase()


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def rate_limiter(
    base_url: str | None, model: str, rpm: float | None = None, tpm: float | None = None
) -> RateLimiter:
    """The process's :class:`RateLimiter` of an endpoint (base URL + model), made on first use.

    Every client of the same endpoint in a process (threads, several judges) shares it. A
    client that gives ``rpm`` or ``tpm`` sets the endpoint's budgets (both, for every client of
    it); one that gives neither keeps those in force.

    Parameters
    ----------
    base_url : str or None
        The server root (credentials are dropped); None: OpenAI's.
    model : str
    rpm, tpm : float, optional
        Requests and tokens per minute (see :class:`RateLimiter`).

    Returns
    -------
    RateLimiter

    Raises
    ------
    InputError
        When ``rpm`` or ``tpm`` is not None nor a number > 0.
    """
    check_rate_limits(rpm, tpm)
    url = safe_url(base_url or "https://api.openai.com/v1") or ""
    key = (url.rstrip("/"), model)
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            limiter = _LIMITERS[key] = RateLimiter(rpm, tpm, name=f"{key[0]} {model}")
            return limiter
    if (rpm is not None or tpm is not None) and (limiter.rpm, limiter.tpm) != (rpm, tpm):
        limiter.configure(rpm, tpm)
    return limiter


_ON_SENT: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "ragnb_on_sent", default=None
)


@contextlib.contextmanager
def notify_sent(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, a request sent by a client of :func:`http_client` calls ``callback``
    as its body is handed to the connection (the server can have it from then on).

    The callback runs when the headers are written and the body is about to be: the body's
    write follows it without a pause (no other task runs in between), whereas after the write
    the event loop runs other tasks. Called then, a process killed at any moment leaves the
    callback's mark for every request the server received whole, and none for a request that
    never left (no connection) or was cut off after its headers. The callback belongs to the
    current thread or asyncio task (a context variable), so concurrent requests each call their
    own.

    Parameters
    ----------
    callback : callable () -> None
        Called at most once per HTTP request, synchronously, by the client's transport.
    """
    token = _ON_SENT.set(callback)
    try:
        yield
    finally:
        _ON_SENT.reset(token)


def _is_sent(event: str) -> bool:
    """Whether an ``httpcore`` trace event says the request's body is being written (the
    ``anyio`` stream under ``httpcore`` hands bytes to the socket, then yields to the loop)."""
    return event.endswith("send_request_body.started")


def http_client(limiter: RateLimiter, *, asynchronous: bool) -> Any:
    """The ``openai`` client's default HTTP client, with a hook that passes every response's
    headers to ``limiter`` (:meth:`RateLimiter.observe`): give it as ``http_client=``.

    A request sent within :func:`notify_sent` calls its callback as its body is handed to the
    connection (the ``trace`` extension of ``httpcore``).

    Parameters
    ----------
    limiter : RateLimiter
    asynchronous : bool
        For ``openai.AsyncOpenAI`` (True) or ``openai.OpenAI`` (False).

    Returns
    -------
    openai.DefaultAsyncHttpxClient or openai.DefaultHttpxClient
        The ``openai`` package's defaults (timeout, connection limits, redirects), plus the
        hook; the hook sees answers of every status, 429s included.
    """
    openai = require("openai")

    if asynchronous:

        async def ahook(response: Any) -> None:
            limiter.observe(response.headers)

        async def asent(request: Any) -> None:
            callback = _ON_SENT.get()
            if callback is not None:

                async def trace(event: str, info: Any) -> None:
                    if _is_sent(event):
                        callback()

                request.extensions["trace"] = trace

        hooks = {"request": [asent], "response": [ahook]}
        return openai.DefaultAsyncHttpxClient(event_hooks=hooks)

    def hook(response: Any) -> None:
        limiter.observe(response.headers)

    def sent(request: Any) -> None:
        callback = _ON_SENT.get()
        if callback is not None:

            def trace(event: str, info: Any) -> None:
                if _is_sent(event):
                    callback()

            request.extensions["trace"] = trace

    return openai.DefaultHttpxClient(event_hooks={"request": [sent], "response": [hook]})


# ----------------------------------------------------------------------------- the loops


class _Attempts:
    """The count of the requests of one :func:`call` or :func:`acall` and the step after a
    failure, which the two share.

    ``next()`` starts a request and gives its number; ``failed(error)`` gives the seconds to wait
    before the next one: it re-raises ``error`` when it is not a transport error
    (:func:`classify`); else passes its :class:`Fault` to ``on_fault``, tells ``limiter`` of a 429
    (:meth:`RateLimiter.throttled`) and asks ``policy`` (which raises :class:`GaveUp` when the
    request is not to be retried). A 429 does not count toward ``policy.max_attempts`` (the
    request's number is used again) when ``limiter`` answered other requests since the call's
    previous request was sent (or this one, for the first): the endpoint works and is rate
    limited. (Counting from the previous request, not this one: when a burst is sent at once,
    the requests a server admits are answered after those it refuses.)
    """

    def __init__(
        self,
        policy: RetryPolicy,
        keys: Iterable[str | None],
        on_fault: Callable[[Fault, int], None] | None,
        limiter: RateLimiter | None,
    ) -> None:
        self.policy = policy
        self.keys = list(keys)
        self.on_fault = on_fault
        self.limiter = limiter
        self.tries = 0
        self._answers = 0  # the limiter's answers when this request was sent
        self._since: int | None = None  # ... and when the previous one was

    def next(self) -> int:
        """Start a request; its number, from 1."""
        self.tries += 1
        self._answers = 0 if self.limiter is None else self.limiter.answers
        if self._since is None:
            self._since = self._answers
        return self.tries

    def succeeded(self) -> None:
        """Tell the limiter the request was answered."""
        if self.limiter is not None:
            self.limiter.answered()

    def failed(self, error: Exception) -> float:
        """Seconds to wait before the next request, ``error`` having ended this one."""
        fault = classify(error, self.policy.timeout, self.keys)
        if fault is None:
            raise error
        counted = True
        if self.limiter is not None and fault.code == 429:
            self.limiter.throttled()
            counted = self.limiter.answers == self._since
        if self.on_fault is not None:
            self.on_fault(fault, self.tries)
        wait = self.policy.wait_before_retry(fault, self.tries if counted else self.tries - 1)
        self._since = self._answers
        self.tries -= not counted
        return wait


def call(
    send: Callable[[int], T],
    policy: RetryPolicy,
    *,
    keys: Iterable[str | None] = (),
    on_fault: Callable[[Fault, int], None] | None = None,
    limiter: RateLimiter | None = None,
    tokens: int = 0,
    on_wait: Callable[[float], None] | None = None,
) -> T:
    """Send a request with retries (synchronous).

    Parameters
    ----------
    send : callable (attempt: int) -> T
        Makes request number ``attempt`` (1-based; the number is used again after a 429 that
        does not count, see ``limiter``) and returns the answer; raises the ``openai``
        client's exceptions (or a ValueError for a body of the wrong shape).
    policy : RetryPolicy
    keys : iterable of str
        API keys to redact from reasons (besides the environment's).
    on_fault : callable (Fault, attempt) -> None, optional
        Called after each failed request (a log line, a counter, a ledger row).
    limiter : RateLimiter, optional
        Every request (retries included) first reserves one request and ``tokens`` tokens and
        waits what it says; an answer raises its allowed rate, a 429 lowers it (AIMD). A 429
        while other requests to the endpoint were answered (since the call's previous request
        was sent) is a rate limit, not a failure: it does not count toward
        ``policy.max_attempts``, so a job slowed by a rate limit drops no item; a 429 with no
        answer in between counts (an exhausted quota ends the call).
    tokens : int, default 0
        The request's counted prompt tokens.
    on_wait : callable (seconds) -> None, optional
        Called with the seconds each request waited for ``limiter`` (when it waited).

    Returns
    -------
    T
        What ``send`` returned.

    Raises
    ------
    GaveUp
        After the last allowed attempt, on an error that is not retried, or when the server
        asks for a wait over ``policy.max_retry_wait``.
    Exception
        Whatever ``send`` raised that is not a transport error.
    """
    attempts = _Attempts(policy, keys, on_fault, limiter)
    while True:
        if limiter is not None:
            wait = limiter.reserve(tokens)
            if wait > 0:
                time.sleep(wait)
                if on_wait is not None:
                    on_wait(wait)
        try:
            answer = send(attempts.next())
        except Exception as e:
            error = e
        else:
            attempts.succeeded()
            return answer
        time.sleep(attempts.failed(error))


async def acall(
    send: Callable[[int], Awaitable[T]],
    policy: RetryPolicy,
    *,
    keys: Iterable[str | None] = (),
    on_fault: Callable[[Fault, int], None] | None = None,
    before: Callable[[], Awaitable[None]] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    limiter: RateLimiter | None = None,
    tokens: int = 0,
    on_wait: Callable[[float], None] | None = None,
) -> T:
    """Send a request with retries (asynchronous): :func:`call` for ``asyncio``.

    Parameters
    ----------
    send : async callable (attempt: int) -> T
    policy : RetryPolicy
    keys, on_fault, limiter, tokens :
        As :func:`call`.
    before : async callable () -> None, optional
        Awaited before every request, after the wait for ``limiter``: may wait (a pause a 429
        imposed on every worker) or raise to stop (a fatal error elsewhere in the job).
    sleep : async callable (seconds) -> None, optional
        Waits between retries and for ``limiter`` (default :func:`asyncio.sleep`);
        :meth:`CircuitBreaker.sleep` returns early when the job stops.
    on_wait : callable (seconds) -> None, optional
        Called with the seconds each request waited for ``limiter`` (measured: shorter when
        ``sleep`` returned early).

    Raises
    ------
    GaveUp
        As :func:`call`.
    """
    attempts = _Attempts(policy, keys, on_fault, limiter)
    pause = sleep or asyncio.sleep
    while True:
        if limiter is not None:
            wait = limiter.reserve(tokens)
            if wait > 0:
                start = time.monotonic()
                await pause(wait)
                if on_wait is not None:
                    on_wait(time.monotonic() - start)
        if before is not None:
            await before()
        try:
            answer = await send(attempts.next())
        except Exception as e:
            error = e
        else:
            attempts.succeeded()
            return answer
        await pause(attempts.failed(error))
