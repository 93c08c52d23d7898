"""Editable prompt templates and the strict parsers of their answers.

A template is a YAML file (``ragnb/prompts/<name>.<language>.yaml`` ships with ragnb; any path
works) holding the chat messages with ``{field}`` placeholders filled by :meth:`str.format`
(``{{`` and ``}}`` for literal braces), the answer format the prompt asks for, the grading scale
and a *reminder*: the follow-up message sent once when an answer does not parse.

Shipped templates
-----------------
========================= ===== ========== ===== =============================================
name                      kind  answer     scale source
========================= ===== ========== ===== =============================================
``utility-rubric`` en, fr grade json_grade 1-5   Dallaire 2.4 rubric; rag-gs S4 prompt
``listwise`` en, fr       rank  json_order       Dallaire 3.4 S6; rag-gs listwise prompt (A-E)
``vespa-0-2`` en          grade integer    0-2   Bergum (Vespa), two demonstrations
``binary-relevance`` en   grade integer    0-1   "RAG Evaluation Part 1", relevance prompt
``primer-response`` en    grade integer    1-5   Primer Appendix A.3, response vs ideal
``claim-extraction`` en   ext.  numbered         "RAG Evaluation Part 1", context recall
``claim-attribution`` en  grade integer    0-1   "RAG Evaluation Part 1", context recall
``nugget-creation`` en    ext.  json_list        AutoNuggetizer creator (Pradeep et al. 2024)
``nugget-importance`` en  label json_labels      AutoNuggetizer scorer: vital, okay
``nugget-assignment`` en  label json_labels      AutoNuggetizer assigner: support, partial...
``agent-step`` en         act   json_action      one step of a search agent: stop or search
========================= ===== ========== ===== =============================================

What an answer must be (nothing else is accepted, nothing is coerced)
---------------------------------------------------------------------
``integer``
    Exactly one integer on the scale written in ASCII digits without sign or leading zero,
    optionally surrounded by white space: ``"4"``, ``" 4\\n"``. Rejected: ``""``, ``"four"``,
    ``"Score: 4/5"``, ``"4."``, ``"**4**"``, ``"04"``, ``"6"`` on a 1-5 scale.
``json_grade``
    Exactly one JSON object whose only key is ``"grade"`` and whose value is a JSON integer on
    the scale, optionally surrounded by white space: ``{"grade": 4}``. Rejected: ``{"grade":
    "4"}``, ``{"grade": 4.0}``, ``{"grade": true}``, extra or repeated keys, code fences, text
    around the object.
``json_order``
    Exactly one JSON object whose only key is ``"order"`` and whose value is a list holding
    every label of the batch (``"A"``, ``"B"``, ...) exactly once, best first. Rejected: a
    missing, repeated or unknown label, lower-case labels, text around the object.
``numbered_list``
    One or more non-empty lines, each ``"<n>. <text>"`` or ``"<n>) <text>"`` with ``n`` counting
    1, 2, 3, ... in order; blank lines are ignored. Rejected: bullets, a preamble line, gaps.
``json_list``
    Exactly one JSON object whose only key is ``"items"`` and whose value is a list of one or
    more non-empty strings: ``{"items": ["BM25 is a ranking function", "It dates from 1994"]}``.
    Rejected: an empty list, an empty or non-string item, text around the object.
``json_labels``
    Exactly one JSON object whose only key is ``"labels"`` and whose value is a list of as many
    labels as the call has items, each one of the template's ``choices``: ``{"labels":
    ["vital", "okay"]}``. Rejected: a list of another length, a label not among the choices
    (case counts), text around the object.
``json_action``
    Exactly one JSON object whose keys are ``"action"``, one of the template's ``choices``, and
    ``"query"``, a string (empty allowed): ``{"action": "search", "query": "bm25 parameters"}``.
    Rejected: a missing or extra key, an action not among the choices (case counts), a query
    that is not a string, text around the object.

References
----------
.. [1] Dallaire, "Practical RAG Evaluation" (arXiv 2511.09545), sections 2.4 and 3.4; rag-gs
   (MIT), ``rag_gs/plugins/judges/prompts.py``.
.. [2] Bergum, "Improving retrieval with LLM-as-a-judge", Vespa blog.
.. [3] "RAG Evaluation Part 1: Retriever Evaluation" (LLM-based relevance, context recall).
.. [4] Schwartz, Vasilyev, Sawaya, "How important is Recall for Measuring Retrieval Quality?",
   Appendix A.3.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnb.errors import InputError

__all__ = [
    "ACTION_QUERY_CHARS",
    "PromptTemplate",
    "available_prompts",
    "load_prompt",
    "parse_integer",
    "parse_json_action",
    "parse_json_grade",
    "parse_json_labels",
    "parse_json_list",
    "parse_json_order",
    "parse_numbered_list",
]

KINDS = ("grade", "rank", "extract", "label", "act")
ANSWERS = (
    "integer",
    "json_grade",
    "json_order",
    "numbered_list",
    "json_list",
    "json_labels",
    "json_action",
)
#: Characters of the query of a ``json_action`` answer at most (its schema's ``maxLength``).
ACTION_QUERY_CHARS = 120
RANK_FIELDS = ("query", "passages", "n", "labels_json", "labels_text")
LABELS = tuple(string.ascii_uppercase)

_KEYS = {
    "name",
    "language",
    "kind",
    "answer",
    "scale",
    "item_field",
    "passage_format",
    "passage_separator",
    "choices",
    "expected_output_tokens",
    "source",
    "system",
    "user",
    "reminder",
}


# ----------------------------------------------------------------------------- parsers

_INT = re.compile(r"0|[1-9][0-9]*")
_NUMBERED = re.compile(r"([1-9][0-9]*)[.)][ \t]+(\S.*)")


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def _check_scale(value: int, scale: tuple[int, int]) -> str | None:
    lo, hi = scale
    if not lo <= value <= hi:
        return f"{value} is off the scale {lo}-{hi}"
    return None


def parse_integer(text: str, scale: tuple[int, int]) -> tuple[int | None, str | None]:
    """Parse an answer that must be one integer on ``scale``.

    Returns
    -------
    grade : int or None
    reason : str or None
        Why the answer is invalid; None when valid.

    Examples
    --------
    >>> parse_integer(" 4\\n", (1, 5))
    (4, None)
    >>> parse_integer("Score: 4/5", (1, 5))
    (None, "not a bare integer: 'Score: 4/5'")
    >>> parse_integer("6", (1, 5))
    (None, '6 is off the scale 1-5')
    """
    s = text.strip()
    if not s:
        return None, "empty answer"
    if not _INT.fullmatch(s):
        return None, f"not a bare integer: {_short(s)}"
    value = int(s)
    reason = _check_scale(value, scale)
    return (None, reason) if reason else (value, None)


def _only_value(text: str, key: str) -> tuple[Any, str | None]:
    """``(value, None)`` if ``text`` is a JSON object whose only key is ``key``, else
    ``(None, why)``."""
    s = text.strip()
    if not s:
        return None, "empty answer"

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"repeated key(s) {dup}")
        return dict(pairs)

    try:
        obj = json.loads(s, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError:
        return None, f"not a JSON object: {_short(s)}"
    except ValueError as e:
        return None, f"JSON object with {e}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object: {_short(s)}"
    if set(obj) != {key}:
        return None, f'expected only the key "{key}", got keys {sorted(obj)}'
    return obj[key], None


def parse_json_grade(text: str, scale: tuple[int, int]) -> tuple[int | None, str | None]:
    """Parse an answer that must be ``{"grade": n}``, n an integer on ``scale``.

    Examples
    --------
    >>> parse_json_grade('{"grade": 4}', (1, 5))
    (4, None)
    >>> parse_json_grade('{"grade": "4"}', (1, 5))
    (None, "grade is not a JSON integer: '4'")
    """
    value, reason = _only_value(text, "grade")
    if reason is not None:
        return None, reason
    if type(value) is not int:
        return None, f"grade is not a JSON integer: {value!r}"
    reason = _check_scale(value, scale)
    return (None, reason) if reason else (value, None)


def parse_json_order(text: str, labels: Sequence[str]) -> tuple[tuple[int, ...] | None, str | None]:
    """Parse an answer that must be ``{"order": [...]}`` holding every label once.

    Returns
    -------
    permutation : tuple of int or None
        Indices into ``labels``, best first.
    reason : str or None

    Examples
    --------
    >>> parse_json_order('{"order": ["B", "A", "C"]}', "ABC")
    ((1, 0, 2), None)
    >>> parse_json_order('{"order": ["B", "A"]}', "ABC")
    (None, "missing label(s) ['C']")
    """
    order, reason = _only_value(text, "order")
    if reason is not None:
        return None, reason
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        return None, f"order is not a list of labels: {order!r}"
    index = {lab: i for i, lab in enumerate(labels)}
    unknown = sorted({x for x in order if x not in index})
    repeated = sorted({x for x in order if order.count(x) > 1})
    missing = [lab for lab in labels if lab not in order]
    problems = []
    if unknown:
        problems.append(f"unknown label(s) {unknown}")
    if repeated:
        problems.append(f"repeated label(s) {repeated}")
    if missing:
        problems.append(f"missing label(s) {missing}")
    if problems:
        return None, "; ".join(problems)
    return tuple(index[x] for x in order), None


def parse_numbered_list(text: str) -> tuple[tuple[str, ...] | None, str | None]:
    """Parse an answer that must be a numbered list ``1. ...``, ``2. ...``, one per line.

    Examples
    --------
    >>> parse_numbered_list("1. Einstein developed relativity\\n2. In 1905")
    (('Einstein developed relativity', 'In 1905'), None)
    >>> parse_numbered_list("- a claim")
    (None, "line 1 is not '<n>. <claim>': '- a claim'")
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None, "empty answer"
    items = []
    for i, line in enumerate(lines, start=1):
        m = _NUMBERED.fullmatch(line)
        if m is None:
            return None, f"line {i} is not '<n>. <claim>': {_short(line)}"
        if int(m.group(1)) != i:
            return None, f"line {i} is numbered {m.group(1)}"
        items.append(m.group(2).strip())
    return tuple(items), None


def parse_json_list(text: str) -> tuple[tuple[str, ...] | None, str | None]:
    """Parse an answer that must be ``{"items": [...]}``, one or more non-empty strings.

    Examples
    --------
    >>> parse_json_list('{"items": ["BM25 ranks documents", "by term frequency"]}')
    (('BM25 ranks documents', 'by term frequency'), None)
    >>> parse_json_list('{"items": []}')
    (None, 'the list is empty')
    """
    value, reason = _only_value(text, "items")
    if reason is not None:
        return None, reason
    if not isinstance(value, list):
        return None, f'"items" is not a list: {_short(json.dumps(value))}'
    if not value:
        return None, "the list is empty"
    for i, item in enumerate(value, start=1):
        if not isinstance(item, str) or not item.strip():
            return None, f"item {i} is not a non-empty string: {_short(json.dumps(item))}"
    return tuple(item.strip() for item in value), None


def parse_json_labels(
    text: str, n: int, choices: Sequence[str]
) -> tuple[tuple[str, ...] | None, str | None]:
    """Parse an answer that must be ``{"labels": [...]}``, ``n`` labels among ``choices``.

    Examples
    --------
    >>> parse_json_labels('{"labels": ["vital", "okay"]}', 2, ("vital", "okay"))
    (('vital', 'okay'), None)
    >>> parse_json_labels('{"labels": ["vital"]}', 2, ("vital", "okay"))
    (None, 'expected 2 labels, got 1')
    """
    value, reason = _only_value(text, "labels")
    if reason is not None:
        return None, reason
    if not isinstance(value, list):
        return None, f'"labels" is not a list: {_short(json.dumps(value))}'
    if len(value) != n:
        return None, f"expected {n} labels, got {len(value)}"
    for i, label in enumerate(value, start=1):
        if label not in choices:
            return None, f"label {i} is {_short(json.dumps(label))}, not one of {list(choices)}"
    return tuple(value), None


def parse_json_action(
    text: str, choices: Sequence[str]
) -> tuple[tuple[str, str] | None, str | None]:
    """Parse an answer that must be ``{"action": a, "query": q}``, ``a`` among ``choices``.

    Returns
    -------
    (action, query) : tuple of str, or None
        The query with surrounding white space removed (may be empty).
    reason : str or None

    Examples
    --------
    >>> parse_json_action('{"action": "search", "query": " bm25 k1 "}', ("stop", "search"))
    (('search', 'bm25 k1'), None)
    >>> print(parse_json_action('{"action": "Stop", "query": ""}', ("stop", "search"))[1])
    action "Stop" is not one of ['stop', 'search']
    """
    s = text.strip()
    if not s:
        return None, "empty answer"
    try:
        obj = json.loads(s)
    except json.JSONDecodeError:
        return None, f"not a JSON object: {_short(s)}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object: {_short(s)}"
    if set(obj) != {"action", "query"}:
        return None, f'expected the keys "action" and "query", got keys {sorted(obj)}'
    action, query = obj["action"], obj["query"]
    if action not in choices:
        return None, f"action {json.dumps(action)[:60]} is not one of {list(choices)}"
    if not isinstance(query, str):
        return None, f"query is not a string: {_short(json.dumps(query))}"
    return (action, query.strip()), None


# ----------------------------------------------------------------------------- templates


def _object_schema(key: str, value: dict[str, Any]) -> dict[str, Any]:
    """The schema of a JSON object whose only key is ``key``."""
    return {
        "type": "object",
        "properties": {key: value},
        "required": [key],
        "additionalProperties": False,
    }


def _fields_of(text: str, where: str) -> list[str]:
    out = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as e:
        raise InputError(f"{where}: {e} (write {{{{ and }}}} for literal braces)") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise InputError(
                f"{where}: field {{{name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} must be a plain name like {{query}} "
                "(write {{ and }} for literal braces)"
            )
        out.append(name)
    return out


@dataclass(frozen=True)
class PromptTemplate:
    """A chat prompt with ``{field}`` placeholders, its answer format and its reminder.

    Parameters
    ----------
    name, language : str
    kind : {"grade", "rank", "extract", "label", "act"}
        ``grade``: one call per item, an integer on ``scale``; ``rank``: one call per batch of
        labelled passages, a permutation; ``extract``: one call per record, a list of strings;
        ``label``: one call per batch of items, one of ``choices`` per item; ``act``: one call
        per step of an agent, one of ``choices`` and a query.
    answer : {"integer", "json_grade", "json_order", "numbered_list", "json_list", \
"json_labels", "json_action"}
        The only answer form accepted (see the module docstring).
    user : str
        The user message.
    system : str, optional
        The system message.
    reminder : str
        The follow-up user message sent once after an invalid answer.
    scale : (int, int), optional
        Inclusive grade range; required for ``grade``.
    item_field : str, default "passage"
        The field each graded item fills (``"response"`` for the Primer grader).
    passage_format, passage_separator : str
        For ``rank``: how each labelled passage is written into ``{passages}``.
    choices : tuple of str, optional
        For ``label``: the labels an answer may give; for ``act``: the actions (two or more).
    expected_output_tokens : int
        Answer length assumed by cost estimates.
    source : str
        Where the prompt comes from (printed in reports).
    path : str, optional
        The file the template was read from.
    """

    name: str
    language: str
    kind: str
    answer: str
    user: str
    system: str | None = None
    reminder: str = ""
    scale: tuple[int, int] | None = None
    item_field: str = "passage"
    passage_format: str = "{label}. {passage}"
    passage_separator: str = "\n\n"
    choices: tuple[str, ...] | None = None
    expected_output_tokens: int = 8
    source: str = ""
    path: str | None = None

    def __post_init__(self) -> None:
        where = f"prompt template {self.name!r}" + (f" ({self.path})" if self.path else "")
        if self.kind not in KINDS:
            raise InputError(f"{where}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.answer not in ANSWERS:
            raise InputError(f"{where}: answer must be one of {ANSWERS}, got {self.answer!r}")
        expected = {
            "grade": ("integer", "json_grade"),
            "rank": ("json_order",),
            "label": ("json_labels",),
            "act": ("json_action",),
        }.get(self.kind, ("numbered_list", "json_list"))
        if self.answer not in expected:
            raise InputError(f"{where}: a {self.kind} prompt needs answer in {expected}")
        if self.kind == "grade":
            sc = self.scale
            if (
                sc is None
                or len(sc) != 2
                or not all(type(x) is int for x in sc)
                or not sc[0] < sc[1]
            ):
                raise InputError(f"{where}: a grade prompt needs scale [low, high], integers")
        ch = self.choices
        if self.kind in ("label", "act") and (
            ch is None
            or len(ch) < 2
            or not all(isinstance(c, str) and c for c in ch)
            or len(set(ch)) < len(ch)
        ):
            raise InputError(
                f"{where}: a {self.kind} prompt needs choices [a, b, ...], distinct text"
            )
        eot = self.expected_output_tokens
        if type(eot) is not int or eot < 1:
            raise InputError(f"{where}: expected_output_tokens must be an integer >= 1")
        if not isinstance(self.user, str) or not self.user.strip():
            raise InputError(f"{where}: the user message is empty")
        fields = set(self.fields)
        if self.kind == "rank":
            extra = fields - set(RANK_FIELDS)
            if extra:
                raise InputError(f"{where}: a rank prompt takes only {RANK_FIELDS}, not {extra}")
            _fields_of(self.passage_format, f"{where}, passage_format")
            if set(_fields_of(self.passage_format, where)) - {"label", "passage"}:
                raise InputError(f"{where}: passage_format takes only {{label}} and {{passage}}")
        elif self.kind == "grade" and self.item_field not in fields:
            raise InputError(
                f"{where}: the messages never use the item field {{{self.item_field}}}"
            )
        _fields_of(self.reminder, f"{where}, reminder")

    # -- identity

    @property
    def fields(self) -> tuple[str, ...]:
        """Field names used by the system and user messages, in order of first use."""
        names: list[str] = []
        for part, text in (("system", self.system), ("user", self.user)):
            if text:
                where = f"prompt template {self.name!r}" + (f" ({self.path})" if self.path else "")
                for n in _fields_of(text, f"{where}, {part}"):
                    if n not in names:
                        names.append(n)
        return tuple(names)

    @property
    def sha256(self) -> str:
        """Hash of everything that changes the prompt or how its answer is read (part of cache
        keys); not of the name, language, source or file comments."""
        parts: dict[str, Any] = {
            "kind": self.kind,
            "answer": self.answer,
            "system": self.system,
            "user": self.user,
            "reminder": self.reminder,
            "scale": list(self.scale) if self.scale else None,
            "item_field": self.item_field,
            "passage_format": self.passage_format,
            "passage_separator": self.passage_separator,
        }
        if self.choices is not None:  # only label prompts: other templates keep their hash
            parts["choices"] = list(self.choices)
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @property
    def id(self) -> str:
        """``name/language#hash8``, e.g. ``"utility-rubric/en#1a2b3c4d"``: printed in results."""
        return f"{self.name}/{self.language}#{self.sha256[:8]}"

    # -- rendering

    def rank_fields(self, query: str, passages: Sequence[str]) -> dict[str, str]:
        """The fields of a rank prompt for one batch (labels A, B, ... in input order)."""
        if not 2 <= len(passages) <= len(LABELS):
            raise InputError(
                f"a listwise batch holds 2 to {len(LABELS)} passages, got {len(passages)}"
            )
        labels = LABELS[: len(passages)]
        block = self.passage_separator.join(
            self.passage_format.format(label=lab, passage=p)
            for lab, p in zip(labels, passages, strict=True)
        )
        return {
            "query": query,
            "passages": block,
            "n": str(len(passages)),
            "labels_json": json.dumps(list(labels)),
            "labels_text": ", ".join(labels),
        }

    def render(self, values: Mapping[str, Any], where: str = "") -> list[dict[str, str]]:
        """The chat messages with ``values`` filled in.

        Raises
        ------
        InputError
            When a field the template uses is missing from ``values`` or not a string (``where``
            names the item).
        """
        for name in self.fields:
            v = values.get(name)
            if not isinstance(v, str):
                got = "missing" if v is None else f"a {type(v).__name__}"
                raise InputError(
                    f"{where + ': ' if where else ''}prompt {self.id} needs the text field "
                    f"{name!r}, which is {got}"
                )
        messages = []
        if self.system:
            messages.append({"role": "system", "content": self.system.format(**values)})
        messages.append({"role": "user", "content": self.user.format(**values)})
        return messages

    def static_prefix(self) -> list[dict[str, str]]:
        """The messages every call of this template begins with: the text before the first
        ``{field}`` (the system message whole when it has no field, then the user message up to
        its first field), literal braces unescaped.

        A provider's prompt cache serves the longest prefix a request shares with recent ones;
        for one template that is at least this prefix, so it bounds what the cache can save.

        Returns
        -------
        list of dict
            ``{"role", "content"}`` messages; the last one is cut at the first field (empty
            content when a message starts with a field).

        References
        ----------
        .. [1] OpenAI, "Prompt caching" guide: cache hits need an exact prefix match; put
           static content first, variable content last.

        Examples
        --------
        >>> t = PromptTemplate("t", "en", "grade", "integer", "Rate {passage} for {query}.",
        ...                    system="Be strict.", scale=(0, 1))
        >>> t.static_prefix()
        [{'role': 'system', 'content': 'Be strict.'}, {'role': 'user', 'content': 'Rate '}]
        """
        out = []
        for role, text in (("system", self.system), ("user", self.user)):
            if not text:
                continue
            head = []
            for literal, name, _, _ in string.Formatter().parse(text):
                head.append(literal)
                if name is not None:
                    out.append({"role": role, "content": "".join(head)})
                    return out
            out.append({"role": role, "content": "".join(head)})
        return out

    def render_reminder(self, values: Mapping[str, Any]) -> str:
        """The reminder message (rank prompts may use the batch's ``{labels_text}``)."""
        return self.reminder.format(**values) if self.reminder else ""

    def parse(self, text: str, labels: Sequence[str] | None = None) -> tuple[Any, str | None]:
        """Parse an answer by the template's answer format: ``(value, None)`` or
        ``(None, reason)``."""
        scale = self.scale or (0, 0)  # grade prompts always have one (__post_init__)
        if self.answer == "integer":
            return parse_integer(text, scale)
        if self.answer == "json_grade":
            return parse_json_grade(text, scale)
        if self.answer == "json_order":
            return parse_json_order(text, labels or ())
        if self.answer == "json_labels":
            return parse_json_labels(text, len(labels or ()), self.choices or ())
        if self.answer == "json_list":
            return parse_json_list(text)
        if self.answer == "json_action":
            return parse_json_action(text, self.choices or ())
        return parse_numbered_list(text)

    def response_schema(self, labels: Sequence[str] | None = None) -> dict[str, Any] | None:
        """A JSON schema admitting only this template's answers, for constrained decoding.

        ``integer``: an integer of the scale; ``json_grade``: ``{"grade": n}``, n of the scale;
        ``json_order``: ``{"order": [...]}`` of ``len(labels)`` labels among ``labels`` (a
        schema cannot say "each once": a repeated label still fails the strict parser);
        ``json_list``: ``{"items": [...]}`` of one or more strings (at most ``len(labels)``
        when ``labels`` are given: the cap of a list); ``json_labels``:
        ``{"labels": [...]}`` of ``len(labels)`` labels among the choices; ``json_action``:
        ``{"action": a, "query": q}``, ``a`` among the choices, ``q`` a string of at most
        :data:`ACTION_QUERY_CHARS` characters; ``numbered_list``: None (not constrained). The
        answer still goes through :meth:`parse`: the schema narrows what the model can emit, it
        does not replace the parser.

        Examples
        --------
        >>> load_prompt("vespa-0-2").response_schema()
        {'type': 'integer', 'enum': [0, 1, 2]}
        """
        if self.answer in ("integer", "json_grade") and self.scale is not None:
            grade = {"type": "integer", "enum": list(range(self.scale[0], self.scale[1] + 1))}
            if self.answer == "integer":
                return grade
            return _object_schema("grade", grade)
        if self.answer == "json_order" and labels:
            order = {
                "type": "array",
                "items": {"type": "string", "enum": list(labels)},
                "minItems": len(labels),
                "maxItems": len(labels),
            }
            return _object_schema("order", order)
        if self.answer == "json_list":
            items = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
            if labels:
                items["maxItems"] = len(labels)
            return _object_schema("items", items)
        if self.answer == "json_labels" and labels and self.choices:
            chosen = {
                "type": "array",
                "items": {"type": "string", "enum": list(self.choices)},
                "minItems": len(labels),
                "maxItems": len(labels),
            }
            return _object_schema("labels", chosen)
        if self.answer == "json_action" and self.choices:
            return {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(self.choices)},
                    "query": {"type": "string", "maxLength": ACTION_QUERY_CHARS},
                },
                "required": ["action", "query"],
                "additionalProperties": False,
            }
        return None

    # -- loading

    @classmethod
    def from_dict(cls, data: Any, path: str | None = None) -> PromptTemplate:
        """Build a template from the mapping a template file holds."""
        if not isinstance(data, Mapping):
            raise InputError("a prompt template must be a YAML mapping", path=path)
        unknown = set(data) - _KEYS
        if unknown:
            raise InputError(f"unknown template key(s) {sorted(unknown)}", path=path)
        for key in ("name", "kind", "answer", "user"):
            if key not in data:
                raise InputError(f"missing template key {key!r}", path=path)
        kwargs: dict[str, Any] = {k: data[k] for k in data if k in _KEYS}
        for key in ("name", "language", "kind", "answer", "user", "system", "reminder"):
            if key in kwargs and kwargs[key] is not None and not isinstance(kwargs[key], str):
                raise InputError(f"template key {key!r} must be text", path=path)
        if "scale" in kwargs and kwargs["scale"] is not None:
            sc = kwargs["scale"]
            if not isinstance(sc, list | tuple):
                raise InputError("scale must be [low, high]", path=path)
            kwargs["scale"] = tuple(sc)
        if "choices" in kwargs and kwargs["choices"] is not None:
            ch = kwargs["choices"]
            if not isinstance(ch, list | tuple):
                raise InputError("choices must be a list of labels", path=path)
            kwargs["choices"] = tuple(ch)
        kwargs.setdefault("language", "en")
        kwargs["source"] = str(kwargs.get("source", "")).strip()
        return cls(**kwargs, path=path)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> PromptTemplate:
        """Read a YAML template file.

        Raises
        ------
        InputError
            On malformed YAML or an invalid template (naming the file).
        """
        from ragnb.io.files import read_yaml

        return cls.from_dict(read_yaml(path), path=str(path))

    def describe(self) -> dict[str, Any]:
        """Name, language, hash, answer format, scale and source, for reports."""
        return {
            "id": self.id,
            "name": self.name,
            "language": self.language,
            "kind": self.kind,
            "answer": self.answer,
            "scale": list(self.scale) if self.scale else None,
            "choices": list(self.choices) if self.choices else None,
            "sha256": self.sha256,
            "source": self.source,
            "path": self.path,
        }


def _shipped() -> Path:
    # package data, found beside the package (works for wheels and editable installs alike)
    return Path(__file__).resolve().parents[1] / "prompts"


def available_prompts() -> dict[str, list[str]]:
    """Shipped template names and their languages, e.g. ``{"listwise": ["en", "fr"], ...}``."""
    out: dict[str, list[str]] = {}
    for entry in _shipped().iterdir():
        parts = entry.name.rsplit(".", 2)
        if len(parts) == 3 and parts[2] == "yaml":
            out.setdefault(parts[0], []).append(parts[1])
    return {k: sorted(v) for k, v in sorted(out.items())}


def load_prompt(
    prompt: str | os.PathLike[str] | PromptTemplate, language: str = "en"
) -> PromptTemplate:
    """A template by shipped name and language, by file path, or as given.

    Parameters
    ----------
    prompt : str, PathLike or PromptTemplate
        A shipped name (``"utility-rubric"``, see :func:`available_prompts`), or the path of a
        YAML template file (anything with a path separator or a ``.yaml``/``.yml`` suffix).
    language : str, default "en"
        For shipped names.

    Raises
    ------
    InputError
        When the name or language is not shipped (listing what is) or the file is invalid.
    FileNotFoundError
        When a path does not exist.
    """
    if isinstance(prompt, PromptTemplate):
        return prompt
    text = os.fspath(prompt)
    if isinstance(prompt, os.PathLike) or os.sep in text or text.endswith((".yaml", ".yml")):
        return PromptTemplate.from_file(text)
    shipped = available_prompts()
    if text not in shipped:
        raise InputError(f"no shipped prompt {text!r}; shipped: {shipped}, or pass a file path")
    if language not in shipped[text]:
        raise InputError(
            f"prompt {text!r} ships in {shipped[text]}, not {language!r}; copy one and translate "
            "it, then pass its path"
        )
    res = _shipped() / f"{text}.{language}.yaml"
    import yaml

    data = yaml.safe_load(res.read_text(encoding="utf-8"))
    return PromptTemplate.from_dict(data, path=f"ragnb/prompts/{text}.{language}.yaml")
