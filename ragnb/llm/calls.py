"""What one LLM call is, how its cache key is built, and how its answer is read.

An :class:`LLMCall` is a rendered prompt with its cache key; a :class:`CallResult` is what the
call gave (the parsed value and its audit trail), stored in the cache as JSON. The key is the
SHA-256 of (model, template hash, rendered prompt hash, parameters): neither the API key nor
the base URL is part of it.

Two options of :class:`~ragnb.judge.OpenAIJudge` add fields to a call's request body (and to its
key's parameters, only for the calls that carry them):

- **constrained output** (:func:`response_format`): a JSON schema admitting only the template's
  answers (:meth:`~ragnb.llm.PromptTemplate.response_schema`), in OpenAI's form
  (``"json_schema"``) or llama.cpp's (``"json_object_schema"``);
- **token log-probabilities** (grade calls): ``logprobs=true, top_logprobs=k``, read back by
  :func:`read_logprobs` into the expected grade (:func:`expected_grade`).

References
----------
.. [1] Zhuang, Qin, Hui, Wu, Yan, Wang, Bendersky, "Beyond Yes and No: Improving Zero-Shot LLM
   Rankers via Scoring Fine-Grained Relevance Labels", NAACL 2024 (short papers), pp. 358-370:
   the expected relevance ER = sum_k p_k y_k over the rating labels' probabilities.
.. [2] Liu, Iter, Xu, Wang, Xu, Zhu, "G-Eval: NLG Evaluation using GPT-4 with Better Human
   Alignment", EMNLP 2023, section 2: score = sum_i p(s_i) s_i over the score tokens.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ragnb.core.cache import make_key
from ragnb.errors import RagnbError
from ragnb.llm.prompts import PromptTemplate

__all__ = [
    "AUDIT_FIELDS",
    "INFLIGHT_NAMESPACE",
    "KEY_PARTS",
    "NAMESPACE",
    "CONSTRAINED",
    "Audit",
    "CallResult",
    "LLMCall",
    "build_call",
    "expected_grade",
    "has_usage",
    "read_cached_tokens",
    "read_completion",
    "read_logprobs",
    "response_format",
]

#: Cache namespace of final answers, of calls sent but not yet answered, and their key parts.
NAMESPACE = "judge"
INFLIGHT_NAMESPACE = "judge-inflight"
KEY_PARTS = ("model", "template_sha256", "prompt_sha256", "params")
#: The forms of constrained output: off, OpenAI's ``json_schema``, llama.cpp's ``json_object``
#: with a ``schema``.
CONSTRAINED = (None, "json_schema", "json_object_schema")


@dataclass(frozen=True, kw_only=True)
class Audit:
    """The audit trail of one judgement: whether it is valid, why not, and what it cost.

    The fields shared by :class:`CallResult` and the judges' results
    (:class:`ragnb.judge.GradeResult`, :class:`ragnb.judge.RankResult`),
    :class:`CallResult`, always passed by keyword.

    Attributes
    ----------
    valid : bool
    status : {"ok", "invalid", "failed"}
        ``invalid``: an answer arrived but does not parse (even after the reminder);
        ``failed``: no answer (API errors after every attempt, timeouts, job aborted).
    reason : str
        Why it is not valid ("" when valid).
    raw : str or None
        The judge's last answer, verbatim (None when no answer arrived). Offline judges put a
        description of how the grade was made.
    first_raw : str or None
        The first answer, when it was invalid and a reminder was sent.
    attempts : int
        HTTP requests made for this item in this run (retries and reminder included; 0 when
        cached or offline).
    reminded : bool
        A reminder of the answer format was sent.
    input_tokens, output_tokens : int
        Summed API usage over the attempts (those of the original answer when cached).
    cached : bool
        Served from the cache.
    repeated : bool
        Sent again although an earlier run had sent it (that run lost the answer).
    """

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

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens`` (what refinement reads to cap its budget)."""
        return self.input_tokens + self.output_tokens

    def audit(self) -> dict[str, Any]:
        """The audit fields by name, to pass on to another result."""
        return {name: getattr(self, name) for name in AUDIT_FIELDS}

    def __repr__(self) -> str:
        # what was judged first, then the audit trail (dataclasses put base fields first)
        names = [f.name for f in fields(self) if f.name not in AUDIT_FIELDS] + list(AUDIT_FIELDS)
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({inner})"


AUDIT_FIELDS = tuple(f.name for f in fields(Audit))


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
    body: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class CallResult(Audit):
    """What one prompt gave: the parsed value and the audit trail (see :class:`Audit` for the
    fields).

    ``expected_grade`` is the probability-weighted grade of a grade call sent with log-
    probabilities (:func:`expected_grade`), None otherwise.
    """

    value: Any
    expected_grade: float | None = None

    def to_bytes(self) -> bytes:
        d = {k: getattr(self, k) for k in _STORED}
        d["value"] = list(self.value) if isinstance(self.value, tuple) else self.value
        if self.expected_grade is not None:
            d["expected_grade"] = self.expected_grade
        return json.dumps({"v": 1, **d}, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_bytes(cls, blob: bytes) -> CallResult:
        d = json.loads(blob)
        value = d["value"]
        if isinstance(value, list):
            value = tuple(value)
        kept = {k: d[k] for k in _STORED if k not in ("value", "attempts")}
        eg = d.get("expected_grade")
        if eg is not None and not isinstance(eg, int | float):
            raise ValueError(f"expected_grade is not a number: {eg!r}")
        return cls(
            **kept,
            value=value,
            expected_grade=None if eg is None else float(eg),
            attempts=0,
            cached=True,
        )


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
    body: Mapping[str, Any] | None = None,
) -> LLMCall:
    """Render ``template`` with ``values`` into a call with its cache key.

    Parameters
    ----------
    model : str
    params : mapping
        What besides model and prompt changes an answer (JSON values); must name every option
        that ``body`` carries.
    template : PromptTemplate
    values : mapping of str to str
        The template's fields.
    item : str
        What is judged (``"q1/d7"``), named in errors and ledger lines.
    query_id : str, default ""
    labels : sequence of str, optional
        The labels of a listwise answer (``A``, ``B``, ...).
    body : mapping, optional
        Fields this call adds to the request body (``response_format``, ``logprobs``, ...).

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
        dict(body or {}),
    )


def response_format(mode: str, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The ``response_format`` request field constraining an answer to ``schema``.

    Parameters
    ----------
    mode : {"json_schema", "json_object_schema"}
        ``"json_schema"``: OpenAI's Structured Outputs form (strict); ``"json_object_schema"``:
        llama.cpp's servers' form, which they compile to a grammar (``llama-server`` takes both
        forms; llama-cpp-python's server answers OpenAI's with HTTP 500).
    schema : mapping
        A JSON schema (:meth:`~ragnb.llm.PromptTemplate.response_schema`).
    name : str
        The schema's name (OpenAI's form only).

    Examples
    --------
    >>> response_format("json_object_schema", {"type": "integer"}, "g")
    {'type': 'json_object', 'schema': {'type': 'integer'}}
    """
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": dict(schema)},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    raise ValueError(f"constrained must be one of {CONSTRAINED[1:]}, got {mode!r}")


#: One token of an answer: its text, log-probability, and the top alternatives at its position
#: (token text -> log-probability, the token itself included).
Token = tuple[str, float, dict[str, float]]


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v)


def read_logprobs(data: Any) -> list[Token] | None:
    """The tokens of a chat completion's answer with their log-probabilities, or None when the
    body carries none (``choices[0].logprobs.content``, OpenAI's shape, which llama.cpp's
    servers also return).

    Examples
    --------
    >>> body = {"choices": [{"logprobs": {"content": [
    ...     {"token": "4", "logprob": -0.1, "top_logprobs": [{"token": "5", "logprob": -2.0}]}]}}]}
    >>> read_logprobs(body)
    [('4', -0.1, {'5': -2.0, '4': -0.1})]
    >>> read_logprobs({"choices": [{"logprobs": None}]}) is None
    True
    """
    try:
        content = data["choices"][0]["logprobs"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(content, list) or not content:
        return None
    out: list[Token] = []
    for entry in content:
        if not isinstance(entry, dict):
            return None
        token, lp = entry.get("token"), entry.get("logprob")
        if not isinstance(token, str) or not isinstance(lp, int | float) or not _number(lp):
            return None
        top: dict[str, float] = {}
        for alt in entry.get("top_logprobs") or []:
            if isinstance(alt, dict) and isinstance(alt.get("token"), str):
                if _number(alt.get("logprob")):
                    top.setdefault(alt["token"], float(alt["logprob"]))
        top.setdefault(token, float(lp))
        out.append((token, float(lp), top))
    return out


_GRADE_AT = {
    "json_grade": re.compile(r'"grade"\s*:\s*(0|[1-9][0-9]*)'),
    "integer": re.compile(r"\s*(0|[1-9][0-9]*)"),
}


def expected_grade(
    template: PromptTemplate, grade: int, tokens: Sequence[Token] | None
) -> float | None:
    """The expected grade sum_g g p(g) / sum_g p(g) at the position where ``grade`` was emitted.

    ``p(g)`` sums the probabilities of the alternatives at that position that write grade ``g``
    of the scale in the sampled token's place (``"4"``, ``" 4"``: white space aside, the same
    text around the digit); the sum runs over the grades found among the top alternatives (the
    server's ``top_logprobs``), so a grade outside them counts 0. The sampled grade is always
    among them.

    Parameters
    ----------
    template : PromptTemplate
        A grade template (``integer`` or ``json_grade`` answer) whose scale has single-digit
        grades (0 to 9).
    grade : int
        The parsed (valid) grade.
    tokens : list of (token, logprob, top alternatives), optional
        :func:`read_logprobs` of the answer.

    Returns
    -------
    float in [low, high] of the scale, or None
        None when there are no log-probabilities, the scale has grades above 9 or below 0, or
        the grade's token cannot be found.

    Examples
    --------
    >>> from ragnb.llm.prompts import load_prompt
    >>> toks = [('{"', -0.1, {}), ("grade", -0.1, {}), ('":', -0.1, {}),
    ...         (" 4", math.log(0.6), {" 4": math.log(0.6), " 5": math.log(0.3), "5": math.log(0.1),
    ...                                  " the": -1.0}), ("}", 0.0, {})]
    >>> round(expected_grade(load_prompt("utility-rubric"), 4, toks), 6)
    4.4

    References
    ----------
    .. [1] Zhuang et al., NAACL 2024, section 3 (expected relevance ER).
    .. [2] Liu et al., "G-Eval", EMNLP 2023, section 2 (probability-weighted score).
    """
    pattern = _GRADE_AT.get(template.answer)
    if tokens is None or pattern is None or template.scale is None:
        return None
    lo, hi = template.scale
    if lo < 0 or hi > 9:
        return None
    text = "".join(t for t, _, _ in tokens)
    m = pattern.search(text) if template.answer == "json_grade" else pattern.match(text)
    if m is None or m.group(1) != str(grade):
        return None
    start, pos = m.start(1), 0
    at = None
    for token, _, alternatives in tokens:
        if pos <= start < pos + len(token):
            at = (token, alternatives)
            break
        pos += len(token)
    if at is None:
        return None
    token, top = at
    pre, post = token[: start - pos], token[start - pos + 1 :]
    alt = re.compile(r"\s*" + re.escape(pre.strip()) + r"\s*([0-9])(?:" + re.escape(post) + ")?")
    probs: dict[int, float] = {}
    for candidate, lp in top.items():
        am = alt.fullmatch(candidate)
        if am is not None and lo <= int(am.group(1)) <= hi:
            g = int(am.group(1))
            probs[g] = probs.get(g, 0.0) + math.exp(lp)
    total = sum(probs.values())
    if not total > 0:
        return None
    return sum(g * p for g, p in probs.items()) / total


class _Malformed(RagnbError, ValueError):
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


def read_cached_tokens(data: Any) -> int:
    """Prompt tokens of a chat completion that the provider read from its prompt cache.

    OpenAI reports them as ``usage.prompt_tokens_details.cached_tokens`` (part of
    ``usage.prompt_tokens``, billed at the cached-input price); servers that send no such field
    (llama.cpp, most local servers) read as 0.

    Returns
    -------
    int
        In ``[0, usage.prompt_tokens]``; 0 when the field is missing or not a non-negative
        integer.

    References
    ----------
    .. [1] OpenAI, "Prompt caching" guide: ``usage.prompt_tokens_details.cached_tokens``.

    Examples
    --------
    >>> read_cached_tokens({"usage": {"prompt_tokens": 1500,
    ...                               "prompt_tokens_details": {"cached_tokens": 1280}}})
    1280
    >>> read_cached_tokens({"usage": {"prompt_tokens": 12}})
    0
    """
    usage = data.get("usage") if isinstance(data, dict) else None
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    v = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        return 0
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(prompt, int) and not isinstance(prompt, bool):
        return min(v, max(prompt, 0))
    return v


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
