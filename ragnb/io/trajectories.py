"""Search trajectories in: an agent's retrieval and rerank calls, question by question.

An agent answering a question searches several times: each search is a span of a trace. This
module reads those spans into *trajectories*, one per question, each the list of its calls in
time order with the query sent, the documents returned in rank order, their scores, the latency
and the tokens, so that a trajectory is evaluated as a run is (:mod:`ragnb.measures.trajectory`,
:func:`ragnb.evaluation.trajectories.evaluate_trajectories`).

Spans read
----------
Two conventions, in the same file or not, through :func:`ragnb.io.traces.iter_spans` (OTLP JSON
lines, Phoenix span exports as JSON lines or parquet):

* **OpenTelemetry GenAI** (semantic conventions v1.41.1, the last release of
  ``open-telemetry/semantic-conventions`` that holds them; "Retrievals" in
  ``docs/gen-ai/gen-ai-spans.md``): a span with ``gen_ai.operation.name = "retrieval"``, the
  query in ``gen_ai.retrieval.query.text``, the documents in ``gen_ai.retrieval.documents`` (a
  JSON array of ``{"id", "score"}``, structured or as a JSON string, as the schema
  ``gen-ai-retrieval-documents.json`` says), ``gen_ai.request.top_k``,
  ``gen_ai.data_source.id``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.conversation.id``, ``gen_ai.usage.input_tokens`` and ``gen_ai.usage.output_tokens``.
* **OpenInference** (``Arize-ai/openinference``, ``spec/semantic_conventions.md``): spans of kind
  ``RETRIEVER`` (``input.value``, ``retrieval.documents.{i}.document.id`` and ``.score``) and
  ``RERANKER`` (``reranker.query``, ``reranker.input_documents.{i}.document.*``,
  ``reranker.output_documents.{i}.document.*``, ``reranker.top_k``, ``reranker.model_name``);
  ``session.id`` for the conversation, ``llm.token_count.prompt`` and ``.completion`` for
  tokens. The GenAI conventions have no reranker span: an agent instrumented with them writes
  its rerank steps as OpenInference ``RERANKER`` spans, read here into the same trajectory.

A call span that gives no ranking is a *bad span*, counted by cause (:data:`CALL_BAD_CAUSES`) and
listed with its line and span id. A GenAI retrieval span whose documents attribute is an empty
array is a search that found nothing: a call with no document, not a bad span (an OpenInference
span cannot say so: no ``retrieval.documents`` key at all is a bad span, ``no documents``).

Grouping
--------
A trajectory is one question: by default the spans of one trace (one trace per question, as an
agent's ``invoke_agent`` span makes one), named by the trace's ``ragnb.query.id`` attribute
(:data:`QUESTION_ATTRIBUTE`, what ragnb's search agent writes) or else by the trace id; or the
spans sharing the value of an attribute the user names (``id_attribute``). An attribute is
looked up on the call span, then on any span of its trace (an agent's root span), then on the
resource. Its calls are ordered by start time (then file order).
Trajectories of one conversation (``gen_ai.conversation.id`` or ``session.id``, on the call
span or any span of its trace) are its turns, numbered 1, 2, ... by start time;
``turn_ids=True`` names each ``<conversation>_<turn>``, as TREC CAsT and iKAT name their
queries. A ``system_attribute`` splits the file into systems (:meth:`Trajectories.by_system`).

Cost
----
The tokens of a trajectory are those of every span of its traces that carries usage
(``gen_ai.usage.*`` or ``llm.token_count.*``) except the spans that sum their children's: GenAI
``invoke_agent``, ``invoke_workflow``, ``create_agent`` and ``execute_tool`` spans, OpenInference
``AGENT``, ``CHAIN`` and ``TOOL`` spans. Its seconds run from the first span's start to the last
span's end over its traces. A trace shared by several trajectories gives them no cost (NaN).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.io.traces import (
    RETRIEVER_KIND,
    SPAN_KIND_CLIENT,
    Span,
    document_cause,
    iter_spans,
    otlp_span,
    query_key,
    span_documents,
)

__all__ = [
    "CALL_BAD_CAUSES",
    "CALL_COLUMNS",
    "DOCUMENT_COLUMNS",
    "GEN_AI_CONVENTIONS",
    "QUESTION_ATTRIBUTE",
    "RERANKER_KIND",
    "RETRIEVAL_OPERATION",
    "TRAJECTORY_COLUMNS",
    "Trajectories",
    "genai_retrieval_span",
    "read_trajectories",
    "reranker_span",
]

#: The release of the OpenTelemetry semantic conventions whose GenAI names are read and written.
GEN_AI_CONVENTIONS = "v1.41.1"
#: The attribute naming a trace's question when no other is named: what ragnb's search agent
#: (:mod:`ragnb.studies.agentic`) writes on its spans and the evaluation events carry.
QUESTION_ATTRIBUTE = "ragnb.query.id"
#: ``gen_ai.operation.name`` of a retrieval span.
RETRIEVAL_OPERATION = "retrieval"
#: The OpenInference span kind of a rerank step (``openinference.span.kind``).
RERANKER_KIND = "RERANKER"
#: Why a call span gives no ranking, in the order reports list them.
CALL_BAD_CAUSES = (
    "no documents",
    "documents not JSON",
    "bad document id",
    "score not a number",
    "no question id",
)
#: The columns of :attr:`Trajectories.calls`, in order.
CALL_COLUMNS = (
    "trajectory_id",
    "system",
    "call",
    "search_call",
    "kind",
    "convention",
    "span_id",
    "trace_id",
    "parent_span_id",
    "name",
    "query",
    "top_k",
    "data_source",
    "provider",
    "model",
    "n_documents",
    "n_input",
    "start_s",
    "latency_s",
    "input_tokens",
    "output_tokens",
    "conversation_id",
    "turn",
    "line",
)
#: The columns of :attr:`Trajectories.documents` and :attr:`Trajectories.rerank_inputs`.
DOCUMENT_COLUMNS = ("trajectory_id", "system", "call", "rank", "doc_id", "score")
#: The columns of :attr:`Trajectories.trajectories`, in order.
TRAJECTORY_COLUMNS = (
    "trajectory_id",
    "system",
    "conversation_id",
    "turn",
    "trace_id",
    "root_span_id",
    "n_calls",
    "n_searches",
    "n_reranks",
    "first_query",
    "start_s",
    "seconds",
    "tokens",
)

_OPERATION = "gen_ai.operation.name"
_G_QUERY = "gen_ai.retrieval.query.text"
_G_DOCS = "gen_ai.retrieval.documents"
_G_TOP_K = "gen_ai.request.top_k"
_G_SOURCE = "gen_ai.data_source.id"
_G_PROVIDER = "gen_ai.provider.name"
_G_MODEL = "gen_ai.request.model"
_CONVERSATION = ("gen_ai.conversation.id", "session.id")
_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "llm.token_count.prompt")
_OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "llm.token_count.completion")
#: Spans whose usage sums their children's: left out of a trajectory's tokens.
_AGGREGATE_OPERATIONS = {"invoke_agent", "invoke_workflow", "create_agent", "execute_tool"}
_AGGREGATE_KINDS = {"AGENT", "CHAIN", "TOOL"}
#: The attributes of a call span read once the whole file is read.
_KEPT = (*_CONVERSATION, *_INPUT_TOKENS, *_OUTPUT_TOKENS, _G_SOURCE, _G_PROVIDER)


# ----------------------------------------------------------------------------- span writers


def genai_retrieval_span(
    query: str,
    documents: Sequence[Mapping[str, Any]],
    *,
    span_id: str,
    trace_id: str,
    parent_span_id: str = "",
    data_source: str = "docs",
    top_k: int | None = None,
    conversation_id: str = "",
    start_ns: int = 0,
    duration_ns: int = 1_000_000,
    **attributes: Any,
) -> dict[str, Any]:
    """An OTLP/JSON span of a GenAI retrieval (``gen_ai.operation.name = "retrieval"``).

    Parameters
    ----------
    query : str
        ``gen_ai.retrieval.query.text``.
    documents : sequence of mapping
        In rank order, each ``{"id": str, "score": float}``; written as the JSON string of
        ``gen_ai.retrieval.documents`` (the form an SDK writes, whose attributes hold no
        objects).
    span_id, trace_id, parent_span_id : str
        Hex ids (16, 32 and 16 digits).
    data_source : str, default "docs"
        ``gen_ai.data_source.id``; the span is named ``retrieval {data_source}``.
    top_k : int, optional
        ``gen_ai.request.top_k``.
    conversation_id : str, default ""
        ``gen_ai.conversation.id`` ("" leaves it out).
    start_ns, duration_ns : int
        Start time (nanoseconds since the epoch) and duration (nanoseconds).
    **attributes
        Further attributes, e.g. ``{"gen_ai.usage.input_tokens": 12}`` given as
        ``**{"gen_ai.usage.input_tokens": 12}``.

    Returns
    -------
    dict
        One element of ``scopeSpans[].spans`` (:func:`ragnb.io.traces.otlp_request` wraps it).
    """
    attrs: dict[str, Any] = {
        _OPERATION: RETRIEVAL_OPERATION,
        _G_SOURCE: data_source,
        _G_QUERY: query,
        _G_DOCS: json.dumps([{"id": d["id"], "score": d["score"]} for d in documents]),
        _G_TOP_K: top_k,
        "gen_ai.conversation.id": conversation_id or None,
        **attributes,
    }
    return otlp_span(
        f"{RETRIEVAL_OPERATION} {data_source}",
        attrs,
        kind=SPAN_KIND_CLIENT,  # as the GenAI conventions ask of a retrieval span
        span_id=span_id,
        trace_id=trace_id,
        parent_span_id=parent_span_id,
        start_ns=start_ns,
        duration_ns=duration_ns,
    )


def reranker_span(
    query: str,
    inputs: Sequence[Mapping[str, Any]],
    outputs: Sequence[Mapping[str, Any]],
    *,
    span_id: str,
    trace_id: str,
    parent_span_id: str = "",
    model: str = "reranker",
    start_ns: int = 0,
    duration_ns: int = 1_000_000,
) -> dict[str, Any]:
    """An OTLP/JSON span of OpenInference kind ``RERANKER``.

    Parameters
    ----------
    query : str
        ``reranker.query``.
    inputs, outputs : sequence of mapping
        The documents before and after, in rank order, each ``{"id": str, "score": float}``:
        ``reranker.input_documents.{i}.document.*`` and ``reranker.output_documents.{i}...``.
    span_id, trace_id, parent_span_id : str
        Hex ids.
    model : str, default "reranker"
        ``reranker.model_name``.
    start_ns, duration_ns : int
        Nanoseconds.

    Returns
    -------
    dict
        One element of ``scopeSpans[].spans``.
    """
    attrs: dict[str, Any] = {
        "openinference.span.kind": RERANKER_KIND,
        "reranker.query": query,
        "reranker.model_name": model,
        "reranker.top_k": len(outputs),
    }
    for prefix, docs in (("input", inputs), ("output", outputs)):
        for i, doc in enumerate(docs):
            attrs[f"reranker.{prefix}_documents.{i}.document.id"] = doc["id"]
            attrs[f"reranker.{prefix}_documents.{i}.document.score"] = float(doc["score"])
    return otlp_span(
        "rerank",
        attrs,
        kind=SPAN_KIND_CLIENT,
        span_id=span_id,
        trace_id=trace_id,
        parent_span_id=parent_span_id,
        start_ns=start_ns,
        duration_ns=duration_ns,
    )


# ----------------------------------------------------------------------------- reading spans


def _number(value: Any) -> float:
    """An attribute read as a float (NaN when absent or not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            return float(value) if isinstance(value, str) else math.nan
        except ValueError:
            return math.nan
    return float(value)


def _first(attributes: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The first of ``keys`` present (and not None) in ``attributes``, else None."""
    for key in keys:
        value = attributes.get(key)
        if value is not None and value != "":
            return value
    return None


def _genai_documents(attributes: Mapping[str, Any]) -> tuple[list[tuple[str, float | None]], str]:
    """``(doc_id, score)`` of ``gen_ai.retrieval.documents`` in rank order, or the cause."""
    raw = attributes.get(_G_DOCS)
    if raw is None:  # a frame's flattening: gen_ai.retrieval.documents.{i}.id
        raw = []
        while f"{_G_DOCS}.{len(raw)}.id" in attributes:
            i = len(raw)
            raw.append(
                {
                    "id": attributes[f"{_G_DOCS}.{i}.id"],
                    "score": attributes.get(f"{_G_DOCS}.{i}.score"),
                }
            )
        if not raw:
            return [], "no documents"
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            return [], "documents not JSON"
    if not isinstance(raw, list | tuple | np.ndarray) or not all(
        isinstance(d, Mapping) for d in raw
    ):
        return [], "documents not JSON"
    docs: list[tuple[str, float | None]] = []
    for item in raw:
        doc_id, score = item.get("id"), item.get("score")
        cause = document_cause(doc_id, score)
        if cause:
            return [], cause
        docs.append((str(doc_id), None if score is None else float(score)))
    scored = sum(score is not None for _, score in docs)
    if 0 < scored < len(docs):
        return [], "score not a number"
    return docs, ""


def _pairs(docs: list[tuple[str, float | None, Any]]) -> list[tuple[str, float | None]]:
    return [(d, s) for d, s, _ in docs]


@dataclass(slots=True)
class _Call:
    """One retrieval or rerank span, parsed."""

    line: int
    span: Span
    kind: str
    convention: str
    query: str
    documents: list[tuple[str, float | None]]
    inputs: list[tuple[str, float | None]]
    top_k: float
    model: str


def _parse_call(line: int, span: Span) -> tuple[_Call | None, str]:
    """The call a span is (None if it is not one) and the cause when it is a bad one."""
    a = span.attributes
    kind = span.kind.upper()
    if a.get(_OPERATION) == RETRIEVAL_OPERATION:
        docs, cause = _genai_documents(a)
        query = a.get(_G_QUERY)
        call = _Call(
            line,
            span,
            "retrieval",
            "gen_ai",
            str(query or ""),
            docs,
            [],
            _number(a.get(_G_TOP_K)),
            str(a.get(_G_MODEL) or ""),
        )
    elif kind == RETRIEVER_KIND:
        found, cause = span_documents(a)
        query = a.get("input.value")
        call = _Call(
            line,
            span,
            "retrieval",
            "openinference",
            str(query or ""),
            _pairs(found),
            [],
            math.nan,
            "",
        )
    elif kind == RERANKER_KIND:
        out, cause = span_documents(a, "reranker.output_documents")
        given, in_cause = span_documents(a, "reranker.input_documents")
        if not cause and in_cause and in_cause != "no documents":
            cause = in_cause
        query = _first(a, ("reranker.query", "input.value"))
        call = _Call(
            line,
            span,
            "rerank",
            "openinference",
            str(query or ""),
            _pairs(out),
            _pairs(given),
            _number(a.get("reranker.top_k")),
            str(a.get("reranker.model_name") or ""),
        )
    else:
        return None, ""
    return call, cause


def _unique(docs: list[tuple[str, float | None]]) -> list[tuple[str, float | None]]:
    """The documents with each id kept at its first rank."""
    seen: set[str] = set()
    out = []
    for doc_id, score in docs:
        if doc_id not in seen:
            seen.add(doc_id)
            out.append((doc_id, score))
    return out


@dataclass(slots=True)
class _Trace:
    """What the spans of one trace say about the trajectories it holds."""

    values: dict[str, Any] = field(default_factory=dict)  # id / system attribute value
    conversation: str = ""
    tokens: float = math.nan
    start: float = math.inf  # in the spans' own unit (OTLP: exact int nanoseconds)
    end: float = -math.inf
    unit_s: float = 1e-9
    root_span_id: str = ""

    @property
    def start_s(self) -> float:
        return self.start * self.unit_s if math.isfinite(self.start) else math.nan

    @property
    def seconds(self) -> float:
        """First start to last end, seconds (NaN without both)."""
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            return math.nan
        return (self.end - self.start) * self.unit_s


def _usage(span: Span) -> float:
    """The tokens a span counts toward its trajectory's cost (NaN: none)."""
    a = span.attributes
    if a.get(_OPERATION) in _AGGREGATE_OPERATIONS or span.kind.upper() in _AGGREGATE_KINDS:
        return math.nan
    tokens = [_number(_first(a, keys)) for keys in (_INPUT_TOKENS, _OUTPUT_TOKENS)]
    tokens = [t for t in tokens if not math.isnan(t)]
    return float(sum(tokens)) if tokens else math.nan


class _Reader:
    """The state of :func:`read_trajectories` over one file."""

    def __init__(self, id_attribute: str, system_attribute: str) -> None:
        self.keys = [k for k in (id_attribute or QUESTION_ATTRIBUTE, system_attribute) if k]
        self.id_attribute = id_attribute
        self.system_attribute = system_attribute
        self.traces: dict[str, _Trace] = {}
        self.calls: list[_Call] = []
        self.bad: list[tuple[int, str, str, str]] = []
        self.spans = 0
        self.call_spans = 0

    def add(self, line: int, span: Span) -> None:
        self.spans += 1
        trace = self.traces.setdefault(span.trace_id, _Trace())
        for key in self.keys:
            if key not in trace.values and span.attributes.get(key) is not None:
                trace.values[key] = span.attributes[key]
        if not trace.conversation:
            trace.conversation = str(_first(span.attributes, _CONVERSATION) or "")
        usage = _usage(span)
        if not math.isnan(usage):
            trace.tokens = usage if math.isnan(trace.tokens) else trace.tokens + usage
        trace.unit_s = span.time_unit_s
        if span.start:
            trace.start = min(trace.start, span.start)
        if span.end:
            trace.end = max(trace.end, span.end)
        if not span.parent_span_id and not trace.root_span_id:
            trace.root_span_id = span.span_id
        call, cause = _parse_call(line, span)
        if call is None:
            return
        self.call_spans += 1
        if cause:
            self.bad.append((line, span.span_id, span.name, cause))
            return
        call.documents, call.inputs = _unique(call.documents), _unique(call.inputs)
        call.span = self._slim(span)
        self.calls.append(call)

    def _slim(self, span: Span) -> Span:
        """The span with only the attributes read after the file (the documents, often the
        bulk of a span, are parsed by then)."""
        keys = (*self.keys, *_KEPT)
        return replace(
            span,
            attributes={k: span.attributes[k] for k in keys if k in span.attributes},
            resource={k: span.resource[k] for k in self.keys if k in span.resource},
        )

    def value(self, call: _Call, key: str) -> Any:
        """``key`` on the call's span, else on its trace, else on its resource (None: absent)."""
        span = call.span
        for source in (span.attributes, self.traces[span.trace_id].values, span.resource):
            value = source.get(key)
            if value is not None and value != "":
                return value
        return None

    def question(self, call: _Call) -> str:
        """The trajectory a call belongs to ("" when it cannot tell)."""
        if not self.id_attribute:
            value = self.value(call, QUESTION_ATTRIBUTE)
            return call.span.trace_id if value is None else str(value)
        value = self.value(call, self.id_attribute)
        return "" if value is None else str(value)

    def system(self, call: _Call) -> str:
        if not self.system_attribute:
            return ""
        value = self.value(call, self.system_attribute)
        return "unknown" if value is None else str(value)


# ----------------------------------------------------------------------------- the frames


@dataclass(frozen=True)
class Trajectories:
    """The retrieval and rerank calls of a trace file, grouped into trajectories.

    Attributes
    ----------
    calls : DataFrame
        One row per call (:data:`CALL_COLUMNS`), trajectories in order of first start, calls
        in time order: ``trajectory_id`` (str), ``system`` (str, "" without a
        ``system_attribute``), ``call`` (int >= 1, position among the trajectory's calls),
        ``search_call`` (int: retrieval calls up to and including this one; for a rerank
        call, those before it), ``kind`` (``"retrieval"`` or ``"rerank"``), ``convention``
        (``"gen_ai"`` or ``"openinference"``), ``span_id``, ``trace_id``, ``parent_span_id``,
        ``name`` (str), ``query`` (str, "" when the span holds none), ``top_k`` (float, NaN
        when absent), ``data_source``, ``provider``, ``model`` (str), ``n_documents`` (int:
        documents returned, each id once), ``n_input`` (int: a reranker's input documents, 0
        for a retrieval), ``start_s`` (float, seconds since the epoch for OTLP files),
        ``latency_s`` (float, seconds; NaN without times), ``input_tokens``,
        ``output_tokens`` (float, NaN when absent), ``conversation_id`` (str, "" when none),
        ``turn`` (int: the trajectory's position in its conversation, 1-based; 0 outside a
        conversation), ``line`` (int: the file line or parquet row).
    documents : DataFrame
        The documents each call returned (:data:`DOCUMENT_COLUMNS`): ``trajectory_id``,
        ``system``, ``call``, ``rank`` (int >= 1), ``doc_id`` (str), ``score`` (float, NaN when
        the span gives none); a document repeated within one call is kept at its first rank.
    rerank_inputs : DataFrame
        The same columns: the documents each reranker was given, in the order given.
    trajectories : DataFrame
        One row per trajectory (:data:`TRAJECTORY_COLUMNS`): ``trajectory_id``, ``system``,
        ``conversation_id``, ``turn``, ``trace_id`` (of its first call), ``root_span_id`` (the
        span its evaluation results attach to: the root span of that trace, else the first
        call's parent, else the first call), ``n_calls``, ``n_searches``, ``n_reranks`` (int),
        ``first_query`` (str), ``start_s`` (float), ``seconds`` (float, first start to last
        end over its traces) and ``tokens`` (float, see the module's "Cost"; NaN when no span
        carries usage).
    bad : DataFrame
        ``line``, ``span_id``, ``name``, ``cause`` (of :data:`CALL_BAD_CAUSES`).
    spans : int
        Spans read, of every kind.
    call_spans : int
        Retrieval and rerank spans read, bad ones included.
    path : str
        The file read.
    """

    calls: pd.DataFrame
    documents: pd.DataFrame
    rerank_inputs: pd.DataFrame
    trajectories: pd.DataFrame
    bad: pd.DataFrame
    spans: int
    call_spans: int
    path: str

    @property
    def systems(self) -> list[str]:
        """The systems, sorted ([""] without a ``system_attribute``)."""
        return sorted(set(self.trajectories["system"])) or [""]

    def bad_by_cause(self) -> dict[str, int]:
        """Bad spans per cause, every cause of :data:`CALL_BAD_CAUSES` listed (0 when none)."""
        counts = Counter(self.bad["cause"])
        return {cause: int(counts.get(cause, 0)) for cause in CALL_BAD_CAUSES}

    def summary(self) -> dict[str, Any]:
        """Counts: spans, call spans, bad spans by cause, trajectories, calls by kind,
        conversations and systems."""
        kinds = Counter(self.calls["kind"])
        conversations = self.trajectories["conversation_id"]
        return {
            "spans": self.spans,
            "call_spans": self.call_spans,
            "bad_spans": len(self.bad),
            "bad_by_cause": self.bad_by_cause(),
            "trajectories": len(self.trajectories),
            "retrieval_calls": int(kinds.get("retrieval", 0)),
            "rerank_calls": int(kinds.get("rerank", 0)),
            "conversations": int(conversations[conversations != ""].nunique()),
            "systems": [s for s in self.systems if s],
        }

    def describe(self) -> str:
        """The summary in words, one line per fact."""
        s = self.summary()
        causes = ", ".join(f"{c}: {n}" for c, n in s["bad_by_cause"].items())
        lines = [
            f"{self.path}: {s['spans']} spans, {s['call_spans']} retrieval and rerank spans",
            f"trajectories: {s['trajectories']} ({s['retrieval_calls']} retrieval calls, "
            f"{s['rerank_calls']} rerank calls; {s['conversations']} conversations)",
        ]
        if s["systems"]:
            lines.append(f"systems: {', '.join(s['systems'])}")
        lines.append(f"bad spans: {s['bad_spans']} ({causes})")
        return "\n".join(lines)

    def by_system(self) -> dict[str, Trajectories]:
        """One :class:`Trajectories` per system (``{"": self}`` without a system attribute)."""
        if self.systems == [""]:
            return {"": self}
        return {
            name: replace(
                self,
                calls=_rows(self.calls, "system", name),
                documents=_rows(self.documents, "system", name),
                rerank_inputs=_rows(self.rerank_inputs, "system", name),
                trajectories=_rows(self.trajectories, "system", name),
            )
            for name in self.systems
        }

    def renamed(self, mapping: Mapping[str, str]) -> Trajectories:
        """These trajectories with ids renamed (an id ``mapping`` lacks is kept).

        Parameters
        ----------
        mapping : mapping of str to str
            Old trajectory id -> new one (e.g. a trace id -> the question's id).

        Returns
        -------
        Trajectories
            Every frame renamed alike.

        Raises
        ------
        InputError
            When two trajectories of one system would share an id.
        """
        frames = {
            name: getattr(self, name).assign(
                trajectory_id=getattr(self, name)["trajectory_id"].map(lambda t: mapping.get(t, t))
            )
            for name in ("calls", "documents", "rerank_inputs", "trajectories")
        }
        dup = frames["trajectories"].duplicated(["system", "trajectory_id"])
        if dup.any():
            tid = str(frames["trajectories"].loc[dup, "trajectory_id"].iloc[0])
            raise InputError("two trajectories would share this id", query_id=tid, path=self.path)
        return replace(self, **frames)

    def with_dataset_ids(self, dataset_queries: pd.DataFrame) -> Trajectories:
        """Trajectories named by the dataset query their first search asks.

        A trajectory whose first retrieval call's query text is a dataset query (the same text
        once normalised, :func:`ragnb.io.traces.query_key`) takes that query's id; any other
        keeps its own. For agents that search with the question itself first.

        Parameters
        ----------
        dataset_queries : DataFrame
            ``query_id``, ``text``.

        Returns
        -------
        Trajectories
        """
        known: dict[str, str] = {}
        for qid, text in zip(dataset_queries["query_id"], dataset_queries["text"], strict=True):
            known.setdefault(query_key(str(text)), str(qid))
        t = self.trajectories
        mapping = {
            str(tid): known[query_key(str(q))]
            for tid, q in zip(t["trajectory_id"], t["first_query"], strict=True)
            if query_key(str(q)) in known
        }
        return self.renamed(mapping)


def _rows(frame: pd.DataFrame, column: str, value: str) -> pd.DataFrame:
    return frame[frame[column] == value].reset_index(drop=True)


def _trajectory_ids(reader: _Reader) -> dict[tuple[str, str], list[_Call]]:
    """The calls of each (system, question), bad ones (no question id) recorded."""
    grouped: dict[tuple[str, str], list[_Call]] = {}
    for call in reader.calls:
        question = reader.question(call)
        if not question:
            reader.bad.append((call.line, call.span.span_id, call.span.name, "no question id"))
            continue
        grouped.setdefault((reader.system(call), question), []).append(call)
    return grouped


def _ordered(grouped: dict[tuple[str, str], list[_Call]]) -> list[tuple[str, str, list[_Call]]]:
    """Trajectories by first start, their calls by start (file order on ties)."""
    out = []
    for (system, question), calls in grouped.items():
        calls = sorted(calls, key=_when)
        out.append((system, question, calls))
    return sorted(out, key=lambda t: _when(t[2][0]))


def _when(call: _Call) -> tuple[float, float]:
    """A call's start in seconds, then in its own unit (exact nanoseconds in OTLP)."""
    return call.span.start * call.span.time_unit_s, call.span.start


def _turns(
    ordered: list[tuple[str, str, list[_Call]]], reader: _Reader
) -> tuple[list[str], list[int]]:
    """Each trajectory's conversation and its turn in it (0 outside a conversation)."""
    conversations, turns = [], []
    seen: Counter[tuple[str, str]] = Counter()
    for system, _, calls in ordered:
        conversation = ""
        for call in calls:
            value = _first(call.span.attributes, _CONVERSATION)
            conversation = str(value) if value is not None else ""
            if conversation:
                break
        if not conversation:
            conversation = reader.traces[calls[0].span.trace_id].conversation
        conversations.append(conversation)
        if conversation:
            seen[(system, conversation)] += 1
        turns.append(seen[(system, conversation)] if conversation else 0)
    return conversations, turns


def _cost(reader: _Reader, calls: list[_Call], shared: set[str]) -> tuple[float, float, float]:
    """Start, seconds and tokens of a trajectory over its traces (NaN cost: a shared trace)."""
    traces = {c.span.trace_id for c in calls}
    infos = [reader.traces[t] for t in traces]
    starts = [i.start_s for i in infos if not math.isnan(i.start_s)]
    start = min(starts) if starts else math.nan
    if traces & shared:
        return start, math.nan, math.nan
    if len(infos) == 1:
        seconds = infos[0].seconds
    else:
        ends = [i.seconds + i.start_s for i in infos if not math.isnan(i.seconds)]
        seconds = max(ends) - start if ends and starts else math.nan
    tokens = [i.tokens for i in infos if not math.isnan(i.tokens)]
    return start, seconds, float(sum(tokens)) if tokens else math.nan


def _root(reader: _Reader, first: _Call) -> str:
    root = reader.traces[first.span.trace_id].root_span_id
    return root or first.span.parent_span_id or first.span.span_id


def _frames(reader: _Reader, path: Path, turn_ids: bool) -> Trajectories:
    """The reader's calls as :class:`Trajectories`."""
    ordered = _ordered(_trajectory_ids(reader))
    conversations, turns = _turns(ordered, reader)
    owners: Counter[str] = Counter()
    for _, _, calls in ordered:
        owners.update({c.span.trace_id for c in calls})
    shared = {t for t, n in owners.items() if n > 1}
    call_rows: list[tuple[Any, ...]] = []
    doc_rows: list[tuple[Any, ...]] = []
    input_rows: list[tuple[Any, ...]] = []
    traj_rows: list[tuple[Any, ...]] = []
    for (system, question, calls), conversation, turn in zip(
        ordered, conversations, turns, strict=True
    ):
        tid = f"{conversation}_{turn}" if turn_ids and conversation else question
        searches = 0
        for i, call in enumerate(calls, start=1):
            searches += call.kind == "retrieval"
            call_rows.append(_call_row(call, tid, system, i, searches, conversation, turn))
            for rank, (doc_id, score) in enumerate(call.documents, start=1):
                doc_rows.append((tid, system, i, rank, doc_id, _score(score)))
            for rank, (doc_id, score) in enumerate(call.inputs, start=1):
                input_rows.append((tid, system, i, rank, doc_id, _score(score)))
        start, seconds, tokens = _cost(reader, calls, shared)
        first_search = next((c.query for c in calls if c.kind == "retrieval"), calls[0].query)
        n_search = sum(c.kind == "retrieval" for c in calls)
        traj_rows.append(
            (
                tid,
                system,
                conversation,
                turn,
                calls[0].span.trace_id,
                _root(reader, calls[0]),
                len(calls),
                n_search,
                len(calls) - n_search,
                first_search,
                start,
                seconds,
                tokens,
            )
        )
    trajectories = _typed(pd.DataFrame(traj_rows, columns=list(TRAJECTORY_COLUMNS)))
    dup = trajectories.duplicated(["system", "trajectory_id"])
    if dup.any():
        raise InputError(
            "two trajectories share the id "
            f"{trajectories.loc[dup, 'trajectory_id'].iloc[0]!r} (a conversation turn named "
            "twice?)",
            path=path,
        )
    bad = pd.DataFrame(reader.bad, columns=["line", "span_id", "name", "cause"])
    return Trajectories(
        calls=_typed(pd.DataFrame(call_rows, columns=list(CALL_COLUMNS))),
        documents=_typed(pd.DataFrame(doc_rows, columns=list(DOCUMENT_COLUMNS))),
        rerank_inputs=_typed(pd.DataFrame(input_rows, columns=list(DOCUMENT_COLUMNS))),
        trajectories=trajectories,
        bad=bad.astype({"line": np.int64, "span_id": object, "name": object, "cause": object}),
        spans=reader.spans,
        call_spans=reader.call_spans,
        path=str(path),
    )


def _score(score: float | None) -> float:
    return math.nan if score is None else score


def _call_row(
    call: _Call, tid: str, system: str, i: int, searches: int, conversation: str, turn: int
) -> tuple[Any, ...]:
    span, a = call.span, call.span.attributes
    return (
        tid,
        system,
        i,
        searches,
        call.kind,
        call.convention,
        span.span_id,
        span.trace_id,
        span.parent_span_id,
        span.name,
        call.query,
        call.top_k,
        str(a.get(_G_SOURCE) or ""),
        str(a.get(_G_PROVIDER) or ""),
        call.model,
        len(call.documents),
        len(call.inputs),
        span.start * span.time_unit_s if span.start else math.nan,
        span.duration_s,
        _number(_first(a, _INPUT_TOKENS)),
        _number(_first(a, _OUTPUT_TOKENS)),
        conversation,
        turn,
        call.line,
    )


_INT_COLUMNS = {
    "call",
    "search_call",
    "n_documents",
    "n_input",
    "turn",
    "line",
    "rank",
    "n_calls",
    "n_searches",
    "n_reranks",
}
_FLOAT_COLUMNS = {
    "top_k",
    "start_s",
    "latency_s",
    "input_tokens",
    "output_tokens",
    "score",
    "seconds",
    "tokens",
}


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """int64, float64 and object columns, whatever the rows (none included)."""
    types = {
        c: np.int64 if c in _INT_COLUMNS else np.float64 if c in _FLOAT_COLUMNS else object
        for c in frame.columns
    }
    return frame.astype(types)


def read_trajectories(
    path: str | os.PathLike[str],
    *,
    id_attribute: str = "",
    system_attribute: str = "",
    turn_ids: bool = False,
) -> Trajectories:
    """Read the retrieval and rerank spans of a trace file into trajectories, one per question.

    The file is streamed (:func:`ragnb.io.traces.iter_spans`); memory grows with the calls and
    the documents they return, and a few numbers per trace, not with the other spans.

    Parameters
    ----------
    path : str or PathLike
        OTLP JSON lines (``.jsonl``, ``.json``, ``.gz``) or a Phoenix span export (JSON lines
        or ``.parquet``).
    id_attribute : str, default ""
        The attribute whose value names a call's question (on the call span, else any span of
        its trace, else the resource; a call without it is a bad span, ``no question id``);
        "" groups by trace, named by its ``ragnb.query.id`` when a span carries one, else by
        the trace id.
    system_attribute : str, default ""
        The attribute naming the system a call belongs to (looked up the same way;
        ``"unknown"`` when absent); "" reads one system.
    turn_ids : bool, default False
        Name a trajectory of a conversation ``<conversation>_<turn>`` (TREC CAsT / iKAT query
        ids), its turn counted from 1 by start time.

    Returns
    -------
    Trajectories
        ``calls``, ``documents``, ``rerank_inputs``, ``trajectories`` and the ``bad`` spans.

    Raises
    ------
    InputError
        A line that is not a JSON object (naming the file and line); a file without any usable
        call (naming the bad spans by cause); two trajectories named alike by ``turn_ids``.
    FileNotFoundError
        When the file does not exist.

    References
    ----------
    OpenTelemetry semantic conventions v1.41.1, ``docs/gen-ai/gen-ai-spans.md`` ("Retrievals")
    and ``docs/gen-ai/gen-ai-retrieval-documents.json``; OpenInference semantic conventions
    (``Arize-ai/openinference``, ``spec/semantic_conventions.md``): span kinds ``RETRIEVER``,
    ``RERANKER``, ``reranker.*``, ``session.id``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from ragnb.io.traces import otlp_request
    >>> spans = [genai_retrieval_span("bm25 formula", [{"id": "d1", "score": 2.0}],
    ...                               span_id="01", trace_id="aa", start_ns=1),
    ...          genai_retrieval_span("bm25 saturation", [{"id": "d2", "score": 1.5},
    ...                               {"id": "d1", "score": 1.0}], span_id="02",
    ...                               trace_id="aa", start_ns=2)]
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "spans.jsonl"
    >>> _ = p.write_text(json.dumps(otlp_request(spans)) + "\\n")
    >>> t = read_trajectories(p)
    >>> t.calls[["trajectory_id", "call", "kind", "query", "n_documents"]].values.tolist()
    [['aa', 1, 'retrieval', 'bm25 formula', 1], ['aa', 2, 'retrieval', 'bm25 saturation', 2]]
    """
    path = Path(path)
    reader = _Reader(id_attribute, system_attribute)
    for line, span in iter_spans(path):
        reader.add(line, span)
    trajectories = _frames(reader, path, turn_ids)
    if trajectories.calls.empty:
        causes = ", ".join(f"{c}: {n}" for c, n in trajectories.bad_by_cause().items() if n)
        raise InputError(
            f"no usable retrieval or rerank span among {trajectories.spans} spans "
            f"({trajectories.call_spans} retrieval or rerank spans; bad: {causes or 'none'})",
            path=path,
        )
    return trajectories
