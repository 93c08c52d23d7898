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
  (:func:`ragnb.provenance.scrub`: one rule, keys of 4 characters or more).
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
import datetime as _dt
import email.utils
import json
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ragnb.errors import InputError
from ragnb.lazylibs import require
from ragnb.provenance import scrub, secrets_in_env

__all__ = [
    "FATAL_STATUSES",
    "RETRYABLE_STATUSES",
    "DEFAULT_RETRY",
    "CircuitBreaker",
    "Fault",
    "GaveUp",
    "RetryPolicy",
    "acall",
    "backoff_seconds",
    "call",
    "check_request_params",
    "check_retry_settings",
    "classify",
    "error_message",
    "redact",
    "retry_after_seconds",
]

#: Statuses retried besides every 5xx.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: Statuses that say the key, the URL or the model is wrong: retrying cannot help.
FATAL_STATUSES = frozenset({401, 403, 404})

T = TypeVar("T")


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

    One rule for every client (:func:`ragnb.provenance.scrub`): a key of at least 4
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


class GaveUp(Exception):
    """A call ended without an answer: the last :class:`Fault` and why no retry follows."""

    def __init__(self, reason: str, fault: Fault) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fault = fault


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


# ----------------------------------------------------------------------------- the loops


def _retry_wait(
    error: Exception,
    tries: int,
    policy: RetryPolicy,
    keys: list[str | None],
    on_fault: Callable[[Fault, int], None] | None,
) -> float:
    """Seconds to wait before request ``tries + 1``, ``error`` having ended request ``tries``.

    Re-raises ``error`` when it is not a transport error (:func:`classify`); else passes its
    :class:`Fault` to ``on_fault`` and asks ``policy`` (which raises :class:`GaveUp` when the
    request is not to be retried). The one step of :func:`call` and :func:`acall` after a failure.
    """
    fault = classify(error, policy.timeout, keys)
    if fault is None:
        raise error
    if on_fault is not None:
        on_fault(fault, tries)
    return policy.wait_before_retry(fault, tries)


def call(
    send: Callable[[int], T],
    policy: RetryPolicy,
    *,
    keys: Iterable[str | None] = (),
    on_fault: Callable[[Fault, int], None] | None = None,
) -> T:
    """Send a request with retries (synchronous).

    Parameters
    ----------
    send : callable (attempt: int) -> T
        Makes request number ``attempt`` (1-based) and returns the answer; raises the
        ``openai`` client's exceptions (or a ValueError for a body of the wrong shape).
    policy : RetryPolicy
    keys : iterable of str
        API keys to redact from reasons (besides the environment's).
    on_fault : callable (Fault, attempt) -> None, optional
        Called after each failed request (a log line, a counter, a ledger row).

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
    keys = list(keys)
    tries = 0
    while True:
        tries += 1
        try:
            return send(tries)
        except Exception as e:
            error = e
        time.sleep(_retry_wait(error, tries, policy, keys, on_fault))


async def acall(
    send: Callable[[int], Awaitable[T]],
    policy: RetryPolicy,
    *,
    keys: Iterable[str | None] = (),
    on_fault: Callable[[Fault, int], None] | None = None,
    before: Callable[[], Awaitable[None]] | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> T:
    """Send a request with retries (asynchronous): :func:`call` for ``asyncio``.

    Parameters
    ----------
    send : async callable (attempt: int) -> T
    policy : RetryPolicy
    keys, on_fault :
        As :func:`call`.
    before : async callable () -> None, optional
        Awaited before every request: may wait (a pause a 429 imposed on every worker) or
        raise to stop (a fatal error elsewhere in the job).
    sleep : async callable (seconds) -> None, optional
        Waits between retries (default :func:`asyncio.sleep`); :meth:`CircuitBreaker.sleep`
        returns early when the job stops.

    Raises
    ------
    GaveUp
        As :func:`call`.
    """
    keys = list(keys)
    tries = 0
    while True:
        if before is not None:
            await before()
        tries += 1
        try:
            return await send(tries)
        except Exception as e:
            error = e
        await (sleep or asyncio.sleep)(_retry_wait(error, tries, policy, keys, on_fault))
