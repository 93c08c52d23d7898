"""What one LLM call is, how its cache key is built, and how its answer is read.

An :class:`LLMCall` is a rendered prompt with its cache key; a :class:`CallResult` is what the
call gave (the parsed value and its audit trail), stored in the cache as JSON. The key is the
SHA-256 of (model, template hash, rendered prompt hash, parameters): neither the API key nor
the base URL is part of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragnb.cache import make_key
from ragnb.judge.base import Audit
from ragnb.judge.prompts import PromptTemplate

__all__ = [
    "INFLIGHT_NAMESPACE",
    "KEY_PARTS",
    "NAMESPACE",
    "CallResult",
    "LLMCall",
    "build_call",
    "has_usage",
    "read_completion",
]

#: Cache namespace of final answers, of calls sent but not yet answered, and their key parts.
NAMESPACE = "judge"
INFLIGHT_NAMESPACE = "judge-inflight"
KEY_PARTS = ("model", "template_sha256", "prompt_sha256", "params")


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


@dataclass(frozen=True, repr=False)
class CallResult(Audit):
    """What one prompt gave: the parsed value and the audit trail (see :class:`Audit` for the
    fields)."""

    value: Any

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


def build_call(
    model: str,
    params: Mapping[str, Any],
    template: PromptTemplate,
    values: Mapping[str, str],
    *,
    item: str,
    query_id: str = "",
    labels: Sequence[str] | None = None,
) -> LLMCall:
    """Render ``template`` with ``values`` into a call with its cache key.

    Parameters
    ----------
    model : str
    params : mapping
        What besides model and prompt changes an answer (JSON values).
    template : PromptTemplate
    values : mapping of str to str
        The template's fields.
    item : str
        What is judged (``"q1/d7"``), named in errors and ledger lines.
    query_id : str, default ""
    labels : sequence of str, optional
        The labels of a listwise answer (``A``, ``B``, ...).

    Raises
    ------
    InputError
        When a field of the template is missing from ``values`` (naming ``item``).
    """
    messages = template.render(values, where=f"item {item}")
    blob = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    key = make_key(
        {
            "model": model,
            "template_sha256": template.sha256,
            "prompt_sha256": hashlib.sha256(blob.encode("utf-8")).hexdigest(),
            "params": dict(params),
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


class _Malformed(ValueError):
    """A 2xx body that is JSON but not a chat completion (retried like a truncated body)."""


def read_completion(data: Any) -> tuple[str, int, int]:
    """``(content, prompt_tokens, completion_tokens)`` of a chat completion body.

    Content that is null (a refusal, a tool call) reads as ``""``, an invalid answer; a body
    without ``choices[0].message`` is malformed (retried).

    Raises
    ------
    _Malformed
        When the body has no ``choices[0].message``.

    Examples
    --------
    >>> read_completion({"choices": [{"message": {"content": "5"}}],
    ...                  "usage": {"prompt_tokens": 12, "completion_tokens": 1}})
    ('5', 12, 1)
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


def has_usage(data: Any) -> bool:
    """True when a chat completion body reports its token usage (``usage.prompt_tokens`` and
    ``usage.completion_tokens``, integers); some servers send none, and their cost must then be
    estimated from local token counts.

    Examples
    --------
    >>> has_usage({"usage": {"prompt_tokens": 3, "completion_tokens": 1}}), has_usage({})
    (True, False)
    """
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return False
    return all(
        isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
        for k in ("prompt_tokens", "completion_tokens")
    )
