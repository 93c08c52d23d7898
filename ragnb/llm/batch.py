"""The provider's batch API: a job's uncached calls as one asynchronous batch, resumable.

With ``batch=True`` (:class:`ragnb.llm.ChatClient`, :class:`ragnb.judge.OpenAIJudge`), the calls
of a job that the cache cannot answer are sent as one batch in OpenAI's format, through the
``openai`` client's own ``files`` and ``batches`` APIs at the client's ``base_url``:

1. ``POST /v1/files`` (``purpose="batch"``): a JSON Lines file, one line per call,
   ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``; the custom id is
   the call's cache key.
2. ``POST /v1/batches`` with the file's id, ``endpoint="/v1/chat/completions"`` and
   ``completion_window="24h"``.
3. ``GET /v1/batches/{id}`` every ``batch_poll_s`` seconds until the batch is ``completed``,
   ``expired``, ``failed`` or ``cancelled``.
4. ``GET /v1/files/{output_file_id}/content``: one line per answer, ``{"custom_id",
   "response": {"status_code", "body"}, "error"}``, each folded into the cache and the ledger
   (at the batch rate of the price table, flagged ``batch``) as it is read; the error file's
   lines are failures.

The submission is recorded in a state file (:class:`BatchState`, ``batches/<id>.json`` beside
the cache, written atomically): the input file's id before the batch is created, then the batch
id, the custom ids, their cache keys and the ledger's write-ahead request ids. A process killed
after submitting leaves the state file behind; the next run with the same calls resumes polling
that batch instead of paying for it twice, and completes the earlier run's ledger lines. A call
the batch did not answer (an error line, a batch that expired, failed or was cancelled) is a
failure: it is not cached, and the next run submits it again in a new batch (it is not retried
singly in this run). The state file is removed once the batch's results are folded in.

References
----------
.. [1] OpenAI, "Batch API" guide and API reference (``/v1/files``, ``/v1/batches``, the batch
   input and output line formats; batch requests cost 50% less, completion window 24 h).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragnb.core.lazylibs import require
from ragnb.core.provenance import safe_url
from ragnb.io.files import atomic_write
from ragnb.llm.transport import GaveUp, RateLimiter, RetryPolicy, call, http_client

__all__ = [
    "BATCH_STATES",
    "ENDPOINT",
    "BatchAPI",
    "BatchState",
    "batch_lines",
    "failed_reason",
    "line_answer",
]

#: The request URL of every batch line, and the ``endpoint`` of every batch.
ENDPOINT = "/v1/chat/completions"
#: Terminal statuses of a batch: ``completed``, and those whose unanswered calls are failures.
BATCH_STATES = ("completed", "expired", "failed", "cancelled")


@dataclass
class BatchState:
    """What a submitted batch is, stored so that a later run can resume it.

    Attributes
    ----------
    model : str
    endpoint : str
        The client's base URL without credentials (``safe_url``), or ``""`` for OpenAI.
    input_file_id : str
        The uploaded JSONL file.
    batch_id : str or None
        None while the batch is being created (a state left so means: uploaded, never
        submitted, nothing billed).
    run_id : str
        The ledger run that submitted it (its write-ahead lines are completed under it).
    items : dict of str to dict
        Custom id -> ``{"key": cache key, "item": what the call is about, "request_id": the
        ledger's write-ahead request id}``.
    submitted_at : float
        Seconds since the epoch.
    """

    model: str
    endpoint: str
    input_file_id: str
    batch_id: str | None
    run_id: str
    items: dict[str, dict[str, str]] = field(default_factory=dict)
    submitted_at: float = 0.0

    @property
    def keys(self) -> set[str]:
        """The cache keys of the batch's calls."""
        return {v["key"] for v in self.items.values()}


def batch_lines(bodies: Mapping[str, Mapping[str, Any]]) -> bytes:
    """The batch input file: one JSON line per request body, by custom id.

    Examples
    --------
    >>> batch_lines({"k1": {"model": "m", "messages": []}}).decode()
    '{"custom_id":"k1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}\\n'
    """
    out = []
    for custom_id, body in bodies.items():
        line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": dict(body)}
        out.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(out).encode("utf-8")


class BatchAPI:
    """Submit, poll and read OpenAI-format batches; keep their state files.

    Parameters
    ----------
    model : str
    base_url, api_key : str, optional
        As :class:`ragnb.llm.ChatClient`; the key is sent only in request headers.
    policy : RetryPolicy
        Retries of each batch API request (upload, create, poll, download).
    limiter : RateLimiter
        The endpoint's rate limiter (its hook sees every answer's headers).
    folder : path
        Where the state files go (``<cache folder>/batches``).
    poll_s : float
        Seconds between two polls of a batch in progress.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        policy: RetryPolicy,
        limiter: RateLimiter,
        folder: str | os.PathLike[str],
        poll_s: float,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = safe_url(base_url or os.environ.get("OPENAI_BASE_URL")) or ""
        self._api_key = api_key
        self.policy = policy
        self.limiter = limiter
        self.folder = Path(folder)
        self.poll_s = float(poll_s)
        self._client: Any = None

    # -- state files

    def pending(self) -> list[BatchState]:
        """The batches of this model and endpoint submitted by earlier runs and not yet folded
        in (oldest first); unreadable state files are skipped."""
        out = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                state = BatchState(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                continue
            if state.model == self.model and state.endpoint == self.endpoint:
                out.append(state)
        return sorted(out, key=lambda s: s.submitted_at)

    def save(self, state: BatchState) -> Path:
        """Write ``state`` atomically to ``<folder>/<input_file_id>.json``."""
        path = self._path(state)
        with atomic_write(path) as f:
            json.dump(asdict(state), f, ensure_ascii=False, indent=1)
        return path

    def forget(self, state: BatchState) -> None:
        """Remove the state file of a batch whose results are folded in."""
        self._path(state).unlink(missing_ok=True)

    def _path(self, state: BatchState) -> Path:
        return self.folder / f"{state.input_file_id}.json"

    # -- the API

    def _openai(self) -> Any:
        if self._client is None:
            openai = require("openai")
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unset",
                timeout=self.policy.timeout,
                max_retries=0,
                http_client=http_client(self.limiter, asynchronous=False),
            )
        return self._client

    def _call(self, send: Callable[[], Any]) -> Any:
        return call(lambda attempt: send(), self.policy, keys=[self._api_key])

    def submit(
        self,
        bodies: Mapping[str, Mapping[str, Any]],
        items: Mapping[str, Mapping[str, str]],
        run_id: str,
    ) -> BatchState:
        """Upload the requests and create their batch, saving the state after each step.

        Parameters
        ----------
        bodies : mapping of str to dict
            Custom id -> chat completion request body.
        items : mapping of str to dict
            Custom id -> ``{"key", "item", "request_id"}`` (stored in the state).
        run_id : str
            The ledger run submitting the batch.

        Raises
        ------
        ragnb.llm.transport.GaveUp
            When the upload or the creation failed after every attempt (nothing was billed;
            the state file is removed).
        """
        client = self._openai()
        blob = batch_lines(bodies)
        uploaded = self._call(
            lambda: client.files.create(file=("batch.jsonl", blob), purpose="batch")
        )
        state = BatchState(
            self.model,
            self.endpoint,
            uploaded.id,
            None,
            run_id,
            {k: dict(v) for k, v in items.items()},
            time.time(),
        )
        self.save(state)
        try:
            batch = self._call(
                lambda: client.batches.create(
                    input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h"
                )
            )
        except GaveUp:  # never created: nothing to resume
            self.forget(state)
            raise
        state.batch_id = batch.id
        self.save(state)
        return state

    def wait(self, state: BatchState) -> Any:
        """Poll the batch every :attr:`poll_s` seconds until it ends; its last status object
        (``status`` in :data:`BATCH_STATES`, ``output_file_id``, ``error_file_id``)."""
        client = self._openai()
        while True:
            batch = self._call(lambda: client.batches.retrieve(state.batch_id))
            if batch.status in BATCH_STATES:
                return batch
            time.sleep(self.poll_s)

    def lines(self, file_id: str | None) -> Iterator[dict[str, Any]]:
        """The JSON lines of an output or error file (none when ``file_id`` is None); a line
        that does not parse is skipped."""
        if not file_id:
            return iter(())
        client = self._openai()
        text = self._call(lambda: client.files.content(file_id)).text
        return _json_lines(text.splitlines())

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _json_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
            yield obj


def line_answer(line: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``(chat completion body, None)`` of an output line answered with a 2xx status, else
    ``(None, reason)``.

    Examples
    --------
    >>> line_answer({"custom_id": "k", "response": {"status_code": 200, "body": {"id": 1}}})
    ({'id': 1}, None)
    >>> line_answer({"custom_id": "k", "response": None,
    ...              "error": {"code": "server_error", "message": "boom"}})
    (None, 'batch error server_error: boom')
    """
    response = line.get("response")
    error = line.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if isinstance(status, int) and 200 <= status < 300 and isinstance(body, dict):
            return body, None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = error or body["error"]
        if not error:
            return None, f"batch answer with HTTP {status}"
    if isinstance(error, dict):
        return None, f"batch error {error.get('code')}: {error.get('message')}"
    return None, "batch line without an answer"


def failed_reason(batch: Any) -> str:
    """Why a batch that ended without answering every call did so (its status, errors)."""
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    said = "; ".join(str(getattr(e, "message", e)) for e in errors[:3])
    return f"batch {batch.id} {batch.status}" + (f" ({said})" if said else "")
