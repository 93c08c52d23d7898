"""Production traces in: OpenInference retriever spans -> queries, runs and corpus rows.

RAG applications instrumented with OpenInference (Arize Phoenix, the LlamaIndex and LangChain
instrumentations) record every retrieval as an OpenTelemetry span of kind ``RETRIEVER``
(``openinference.span.kind``) whose attributes hold the query (``input.value``) and the
documents returned, flattened with zero-based indexes: ``retrieval.documents.{i}.document.id``,
``.document.score``, ``.document.content`` (OpenInference semantic conventions,
``spec/semantic_conventions.md``, "Reserved Attributes" and the flattening of lists of objects).

:func:`read_traces` reads two forms of span files, line by line or row group by row group, so a
file of any length imports in memory bounded by the distinct queries and documents it holds:

* **OTLP JSON**, as the OpenTelemetry collector's ``file`` exporter writes it: one
  ``ExportTraceServiceRequest`` a line, ``resourceSpans[].scopeSpans[].spans[]``, attributes as
  ``[{"key": ..., "value": {"stringValue" | "intValue" | "doubleValue" | ...: ...}}]``
  (OTLP/JSON: 64-bit integers as strings); ``.jsonl``, ``.json`` or either gzipped.
* **Phoenix's span export**: the frame of ``px.Client().get_spans_dataframe()`` saved as
  parquet (``.parquet``) or JSON lines (``to_json(orient="records", lines=True)``); columns
  ``name``, ``span_kind``, ``context.span_id``, ``context.trace_id``, ``start_time``,
  ``attributes.input.value`` and ``attributes.retrieval.documents`` (a list of objects with
  ``document.id``, ``document.score``, ``document.content``). Nested ``attributes`` objects
  are flattened the same way.

Each JSON line decides its own form (an object with ``resourceSpans`` is OTLP), so a file may
mix them. Spans of other kinds are counted and skipped. A retriever span that cannot give a
ranking is a *bad span*: counted by cause (:data:`BAD_SPAN_CAUSES`) and listed with its line and
span id, never dropped silently.
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ragnb.errors import InputError
from ragnb.io.readers import iter_json_lines, open_text, query_id_of

__all__ = [
    "BAD_SPAN_CAUSES",
    "RETRIEVER_KIND",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_INTERNAL",
    "Span",
    "Traces",
    "document_cause",
    "example_requests",
    "iter_spans",
    "otlp_attribute",
    "otlp_attributes",
    "otlp_id",
    "otlp_request",
    "otlp_span",
    "query_key",
    "read_traces",
    "retriever_span",
    "shared_query_ids",
    "span_documents",
    "write_example_traces",
    "write_traces_folder",
]

#: The OpenInference span kind of a retrieval step (``openinference.span.kind``).
RETRIEVER_KIND = "RETRIEVER"
#: OTLP's span kinds written here (``SpanKind``): INTERNAL and CLIENT.
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
#: Why a retriever span gives no ranking, in the order reports list them.
BAD_SPAN_CAUSES = ("no query", "no documents", "bad document id", "score not a number")

_KIND = "openinference.span.kind"
_QUERY = "input.value"
_DOCS = "retrieval.documents"
_WHITESPACE = re.compile(r"\s+")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_BATCH_ROWS = 4096
_ABSENT = object()


@dataclass(frozen=True)
class Span:
    """One span, its attributes flattened to dotted keys.

    Attributes
    ----------
    name : str
        The span's name (the instrumented operation, e.g. ``"VectorStoreRetriever"``).
    span_id, trace_id : str
        Hex ids as the file gives them ("" when absent).
    start : float
        Start time as a number that orders spans within one file (OTLP: nanoseconds since the
        epoch, an exact int; Phoenix: seconds); 0 when absent.
    attributes : dict
        Span attributes, e.g. ``{"input.value": "...", "retrieval.documents.0.document.id":
        "d1"}``.
    resource : dict
        Attributes of the resource that emitted the span (e.g. ``service.name``).
    kind : str
        ``openinference.span.kind`` ("" when absent).
    end : float
        End time, in the unit of ``start``; 0 when absent.
    parent_span_id : str
        The parent span's hex id ("" for a root span or when absent).
    time_unit_s : float
        Seconds per unit of ``start`` and ``end``: 1e-9 for OTLP, 1 for Phoenix.
    """

    name: str
    span_id: str
    trace_id: str
    start: float
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)
    kind: str = ""
    end: float = 0.0
    parent_span_id: str = ""
    time_unit_s: float = 1e-9

    @property
    def duration_s(self) -> float:
        """``end - start`` in seconds; NaN when either time is absent or the span ends before
        it starts."""
        if not self.start or not self.end or self.end < self.start:
            return math.nan
        return (self.end - self.start) * self.time_unit_s


# ----------------------------------------------------------------------------- OTLP JSON


def _otlp_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value (int64 strings as int, arrays as lists)."""
    if not isinstance(value, Mapping) or not value:
        return None
    name, inner = next(iter(value.items()))
    if name == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if name == "doubleValue":
        return float(inner) if isinstance(inner, str) else inner
    if name == "arrayValue":
        return [_otlp_value(v) for v in (inner or {}).get("values", [])]
    if name == "kvlistValue":
        return otlp_attributes((inner or {}).get("values", []))
    return inner


def otlp_attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP/JSON attribute ``{"key": key, "value": {...}}``, the inverse of
    :func:`otlp_attributes` for scalars.

    Parameters
    ----------
    key : str
    value : bool, int, float or any
        A bool as ``boolValue``, an int as ``intValue`` (a string, OTLP/JSON's form of a 64-bit
        integer), a float as ``doubleValue``, anything else as the ``stringValue`` of ``str``.

    Returns
    -------
    dict

    Examples
    --------
    >>> otlp_attribute("n", 3)
    {'key': 'n', 'value': {'intValue': '3'}}
    >>> otlp_attributes([otlp_attribute("ok", True), otlp_attribute("s", 0.5)])
    {'ok': True, 's': 0.5}
    """
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def otlp_attributes(pairs: Any) -> dict[str, Any]:
    """OTLP key-value pairs ``[{"key": k, "value": {"stringValue": v}}]`` as a dict.

    Parameters
    ----------
    pairs : list of dict
        An OTLP ``attributes`` list (None or anything else: no attribute).

    Returns
    -------
    dict
        ``{key: value}``; ``intValue`` (a string in OTLP/JSON) as int, ``doubleValue`` as
        float (``"NaN"`` and ``"Infinity"`` included), arrays as lists, key-value lists as
        dicts.

    Examples
    --------
    >>> otlp_attributes([{"key": "n", "value": {"intValue": "3"}},
    ...                  {"key": "s", "value": {"doubleValue": 0.5}}])
    {'n': 3, 's': 0.5}
    """
    if not isinstance(pairs, list):
        return {}
    out: dict[str, Any] = {}
    for p in pairs:
        if not isinstance(p, dict) or "key" not in p:
            continue
        value = p.get("value")
        if type(value) is dict and len(value) == 1:  # the common case, without a call
            name, inner = next(iter(value.items()))
            if name == "stringValue" or (name == "doubleValue" and type(inner) is float):
                out[str(p["key"])] = inner
                continue
        out[str(p["key"])] = _otlp_value(value)
    return out


def otlp_id(value: Any) -> str:
    """A trace or span id of an OTLP/JSON file as lower-case hex.

    OTLP/JSON writes ids in hex; a file written with protobuf's generic JSON mapping
    (``google.protobuf.json_format``) holds them in base64 instead: 24 characters ending in
    ``==`` for a 16-byte trace id, 12 ending in ``=`` for an 8-byte span id. Those are decoded;
    anything else is kept as written ("" when absent).

    Examples
    --------
    >>> otlp_id("5B8EFFF798038103D269B633813FC60C"), otlp_id("AAECAwQFBgc=")
    ('5b8efff798038103d269b633813fc60c', '0001020304050607')
    """
    if value is None:
        return ""
    text = str(value)
    if (len(text) == 24 and text.endswith("==")) or (len(text) == 12 and text.endswith("=")):
        try:
            return base64.b64decode(text, validate=True).hex()
        except (binascii.Error, ValueError):
            return text
    return text.lower() if _HEX.fullmatch(text) else text


def _nanos(value: Any) -> int:
    """An OTLP ``*TimeUnixNano`` (a string or a number) as an exact int; 0 when absent or bad."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return 0


def _otlp_spans(request: Mapping[str, Any]) -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest``."""
    for resource_spans in request.get("resourceSpans") or []:
        resource = otlp_attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for span in scope_spans.get("spans") or []:
                attributes = otlp_attributes(span.get("attributes"))
                yield Span(
                    name=str(span.get("name") or ""),
                    span_id=otlp_id(span.get("spanId")),
                    trace_id=otlp_id(span.get("traceId")),
                    start=_nanos(span.get("startTimeUnixNano")),
                    attributes=attributes,
                    resource=resource,
                    kind=str(attributes.get(_KIND) or ""),
                    end=_nanos(span.get("endTimeUnixNano")),
                    parent_span_id=otlp_id(span.get("parentSpanId")),
                )


def retriever_span(
    query: str,
    documents: Sequence[Mapping[str, Any]],
    *,
    span_id: str,
    trace_id: str,
    name: str = "retrieve",
    start_ns: int = 0,
    duration_ns: int = 1_000_000,
) -> dict[str, Any]:
    """An OTLP/JSON span of OpenInference kind ``RETRIEVER``.

    Parameters
    ----------
    query : str
        ``input.value``.
    documents : sequence of mapping
        In rank order, each with ``"id"`` and optionally ``"score"`` (float) and ``"content"``
        (str), written as ``retrieval.documents.{i}.document.*``.
    span_id, trace_id : str
        Hex ids (16 and 32 digits in OTLP).
    name : str, default "retrieve"
        The span's name: the retriever, as :func:`read_traces` names runs by default.
    start_ns, duration_ns : int
        Start time and duration, nanoseconds.

    Returns
    -------
    dict
        One element of ``scopeSpans[].spans``.
    """
    attributes: dict[str, Any] = {_KIND: RETRIEVER_KIND, _QUERY: query}
    for i, doc in enumerate(documents):
        prefix = f"{_DOCS}.{i}."
        attributes[prefix + "document.id"] = str(doc["id"])
        if "score" in doc:
            attributes[prefix + "document.score"] = float(doc["score"])
        if "content" in doc:
            attributes[prefix + "document.content"] = str(doc["content"])
    return otlp_span(
        name,
        attributes,
        span_id=span_id,
        trace_id=trace_id,
        start_ns=start_ns,
        duration_ns=duration_ns,
    )


def otlp_span(
    name: str,
    attributes: Mapping[str, Any],
    *,
    span_id: str,
    trace_id: str,
    parent_span_id: str = "",
    kind: int = SPAN_KIND_INTERNAL,
    start_ns: int = 0,
    duration_ns: int = 1_000_000,
) -> dict[str, Any]:
    """One OTLP/JSON span (an element of ``scopeSpans[].spans``).

    Parameters
    ----------
    name : str
    attributes : mapping
        Written in order by :func:`otlp_attribute`; a None value is left out.
    span_id, trace_id, parent_span_id : str
        Hex ids (16, 32 and 16 digits); ``parent_span_id`` "" for a root span.
    kind : int, default ``SPAN_KIND_INTERNAL``
        OTLP's ``SpanKind`` number.
    start_ns, duration_ns : int
        Start time (nanoseconds since the epoch) and duration (nanoseconds).

    Returns
    -------
    dict
        ``traceId``, ``spanId``, ``name``, ``kind``, the times as OTLP/JSON's decimal strings,
        ``attributes``, an empty ``status`` and, with a parent, ``parentSpanId``.

    Examples
    --------
    >>> otlp_span("s", {"a": 1, "b": None}, span_id="1" * 16, trace_id="2" * 32)["attributes"]
    [{'key': 'a', 'value': {'intValue': '1'}}]
    """
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + duration_ns),
        "attributes": [otlp_attribute(k, v) for k, v in attributes.items() if v is not None],
        "status": {},
    }
    if parent_span_id:
        span["parentSpanId"] = parent_span_id
    return span


def otlp_request(spans: list[dict[str, Any]], service_name: str = "rag-app") -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` holding ``spans`` (one line of an OTLP JSON file).

    Parameters
    ----------
    spans : list of dict
        OTLP/JSON spans (:func:`retriever_span`).
    service_name : str, default "rag-app"
        The resource's ``service.name``.

    Returns
    -------
    dict
        ``{"resourceSpans": [{"resource": ..., "scopeSpans": [{"scope": ..., "spans": ...}]}]}``.
    """
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
    scope = {"name": "openinference.instrumentation", "version": "0"}
    return {
        "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]
    }


# ----------------------------------------------------------------------------- Phoenix frames


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested objects and lists of objects as dotted keys (OpenInference's flattening)."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list | np.ndarray) and any(isinstance(v, Mapping) for v in value):
        for i, inner in enumerate(value):
            _flatten(f"{prefix}.{i}", inner, out)
    else:
        out[prefix] = value


def _start_of(value: Any) -> float:
    """A Phoenix ``start_time`` (datetime, ISO text or epoch number) as seconds."""
    if isinstance(value, datetime):
        try:
            return value.timestamp()
        except ValueError:  # pandas' NaT
            return 0.0
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


def _phoenix_span(record: Mapping[str, Any]) -> Span:
    """A Phoenix span-frame row (flat ``attributes.x`` columns or a nested ``attributes``)."""
    flat: dict[str, Any] = {}
    _flatten("", record, flat)
    attributes = {
        k[len("attributes.") :]: v for k, v in flat.items() if k.startswith("attributes.")
    }
    kind = flat.get("span_kind") or attributes.get(_KIND) or ""
    parent = flat.get("parent_id")
    return Span(
        name=str(flat.get("name") or ""),
        span_id=str(flat.get("context.span_id") or ""),
        trace_id=str(flat.get("context.trace_id") or ""),
        start=_start_of(flat.get("start_time")),
        attributes=attributes,
        kind=str(kind),
        end=_start_of(flat.get("end_time")),
        parent_span_id="" if parent is None or parent != parent else str(parent),
        time_unit_s=1.0,
    )


def _parquet_spans(path: Path) -> Iterator[tuple[int, Span]]:
    """The rows of a Phoenix parquet export, one row group batch at a time."""
    from ragnb.core.lazylibs import require

    pq = require("pyarrow.parquet")
    row = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH_ROWS):
        for record in batch.to_pylist():
            row += 1
            yield row, _phoenix_span(record)


def iter_spans(path: str | os.PathLike[str]) -> Iterator[tuple[int, Span]]:
    """Every span of a trace file, streamed, with the line (JSON) or row (parquet) it is on.

    Parameters
    ----------
    path : str or PathLike
        OTLP JSON lines, Phoenix span JSON lines (``.jsonl``, ``.json``, optionally ``.gz``) or
        a Phoenix parquet export (``.parquet``).

    Yields
    ------
    (int, Span)
        The 1-based line or row, and the span.

    Raises
    ------
    InputError
        A line that is not JSON or not an object, naming the file and line.
    FileNotFoundError
        When the file does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"trace file {path} not found")
    if path.suffix == ".parquet":
        yield from _parquet_spans(path)
        return
    with open_text(path) as f:
        for lineno, obj in iter_json_lines(
            f, path, "not JSON (a trace file holds one JSON object a line): {error.msg}"
        ):
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            if "resourceSpans" in obj:
                for span in _otlp_spans(obj):
                    yield lineno, span
            else:
                yield lineno, _phoenix_span(obj)


# ----------------------------------------------------------------------------- spans -> frames


def query_key(text: str) -> str:
    """The form under which two queries count as the same: Unicode NFKC, case folded, white
    space collapsed.

    Examples
    --------
    >>> query_key("  How do I  sort a List?\\n") == query_key("how do i sort a list?")
    True
    """
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def document_cause(doc_id: Any, score: Any) -> str:
    """Why one returned document cannot be ranked, or "" when it can.

    Parameters
    ----------
    doc_id : object
        The document id as read: a non-empty str without white space, or an int.
    score : object
        The score as read: a finite int or float, or None (no score).

    Returns
    -------
    str
        "" , ``"bad document id"`` or ``"score not a number"`` (of :data:`BAD_SPAN_CAUSES`).

    Examples
    --------
    >>> document_cause("d1", 0.5), document_cause("d 1", 0.5), document_cause(7, "high")
    ('', 'bad document id', 'score not a number')
    """
    if type(doc_id) is not str:
        if isinstance(doc_id, bool) or not isinstance(doc_id, int):
            return "bad document id"
        doc_id = str(doc_id)
    if not doc_id or _WHITESPACE.search(doc_id):
        return "bad document id"
    if score is None or (type(score) is float and math.isfinite(score)):
        return ""
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return "score not a number"
    return ""


def span_documents(
    attributes: Mapping[str, Any], prefix: str = _DOCS
) -> tuple[list[tuple[str, float | None, Any]], str]:
    """The documents a span lists in OpenInference's flattened form, in rank order.

    Parameters
    ----------
    attributes : mapping
        A span's attributes: ``{prefix}.{i}.document.id``, ``.document.score`` and
        ``.document.content`` for ``i = 0, 1, ...`` (the first index missing all three ends the
        list).
    prefix : str, default "retrieval.documents"
        The list: ``"retrieval.documents"`` of a ``RETRIEVER`` span,
        ``"reranker.input_documents"`` or ``"reranker.output_documents"`` of a ``RERANKER``.

    Returns
    -------
    (list of (str, float or None, object), str)
        ``(doc_id, score, content)`` in rank order (None for an absent score or content)
        and "" ; or ``[]`` and the cause of a bad
        list (:data:`BAD_SPAN_CAUSES`): no document, a bad id, a score that is not a finite
        number, or scores on some documents only.

    Examples
    --------
    >>> span_documents({"retrieval.documents.0.document.id": "d1",
    ...                 "retrieval.documents.0.document.score": 0.5})
    ([('d1', 0.5, None)], '')
    """
    docs: list[tuple[str, float | None, Any]] = []
    i = 0
    while True:
        head = f"{prefix}.{i}."
        doc_id = attributes.get(head + "document.id", _ABSENT)
        score = attributes.get(head + "document.score", _ABSENT)
        content = attributes.get(head + "document.content", _ABSENT)
        if doc_id is _ABSENT and score is _ABSENT and content is _ABSENT:
            break
        score = None if score is _ABSENT else score
        cause = document_cause(None if doc_id is _ABSENT else doc_id, score)
        if cause:
            return [], cause
        content = None if content is _ABSENT else content
        docs.append((str(doc_id), None if score is None else float(score), content))
        i += 1
    if not docs:
        return [], "no documents"
    scored = sum(score is not None for _, score, _ in docs)
    if 0 < scored < len(docs):
        return [], "score not a number"
    return docs, ""


class _Collector:
    """What the retriever spans of a file add up to, kept per distinct query and document."""

    def __init__(self, retriever_attribute: str) -> None:
        self.retriever_attribute = retriever_attribute
        self.queries: dict[str, list[Any]] = {}  # key -> [query_id, text, count, last trace]
        self.rankings: dict[tuple[str, str], tuple[float, list[tuple[str, float]]]] = {}
        self.corpus: dict[str, str] = {}
        self.bad: list[tuple[int, str, str, str]] = []
        self.spans = 0
        self.retriever_spans = 0

    def system_of(self, span: Span) -> str:
        if not self.retriever_attribute:
            return span.name or "retriever"
        value = span.attributes.get(self.retriever_attribute)
        if value is None:
            value = span.resource.get(self.retriever_attribute)
        return "unknown" if value is None else str(value)

    def add(self, line: int, span: Span) -> None:
        self.spans += 1
        if span.kind.upper() != RETRIEVER_KIND:
            return
        self.retriever_spans += 1
        text = span.attributes.get(_QUERY)
        if not isinstance(text, str) or not text.strip():
            self.bad.append((line, span.span_id, span.name, "no query"))
            return
        docs, cause = span_documents(span.attributes)
        if cause:
            self.bad.append((line, span.span_id, span.name, cause))
            return
        key = query_key(text)
        entry = self.queries.get(key)
        if entry is None:
            entry = self.queries[key] = [
                query_id_of(key),
                _WHITESPACE.sub(" ", text).strip(),
                0,
                None,
            ]
        if entry[3] is None or entry[3] != span.trace_id or not span.trace_id:
            entry[2] += 1
        entry[3] = span.trace_id
        n = len(docs)
        ranking = []
        seen: set[str] = set()
        for rank, (doc_id, score, content) in enumerate(docs):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            ranking.append((doc_id, float(n - rank) if score is None else score))
            if isinstance(content, str) and content and doc_id not in self.corpus:
                self.corpus[doc_id] = content
        slot = (self.system_of(span), entry[0])
        held = self.rankings.get(slot)
        if held is None or span.start >= held[0]:
            self.rankings[slot] = (span.start, ranking)


@dataclass(frozen=True)
class Traces:
    """The retriever spans of a trace file as BEIR-layout frames.

    Attributes
    ----------
    queries : DataFrame
        ``query_id``, ``text``, ``count``: one row per distinct query (:func:`query_key`), in
        the order first seen. ``query_id`` is :func:`ragnb.io.readers.query_id_of` of the key
        (or a dataset's id: :meth:`with_dataset_ids`); ``text`` the first wording seen (white
        space collapsed); ``count`` (int >= 1) the requests that asked it: its retriever spans,
        the spans of one trace counted once when they follow each other in the file (as
        exporters write a trace's spans together).
    runs : dict of str to DataFrame
        One run per retriever (the span's name, or the ``retriever_attribute`` value):
        ``query_id``, ``doc_id``, ``score`` (float; a span without scores ranks its documents
        ``n, n-1, ..., 1``). A query answered by several spans of one retriever keeps the latest
        span's ranking (by start time; the later line on ties).
    corpus : DataFrame
        ``doc_id``, ``title`` (""), ``text``: the documents seen with content (the first
        content seen for each).
    bad : DataFrame
        ``line`` (1-based line or parquet row), ``span_id``, ``name``, ``cause`` (one of
        :data:`BAD_SPAN_CAUSES`): the retriever spans that gave no ranking.
    spans : int
        Spans read, of every kind.
    retriever_spans : int
        Spans of kind ``RETRIEVER``, bad ones included.
    path : str
        The file read.
    ids_from : str
        Whose query ids ``queries`` and ``runs`` carry for the queries a dataset holds: ""
        (none: every id is the hash of the text) or the dataset's queries file
        (:meth:`with_dataset_ids`).
    dataset_ids : int
        How many queries carry a dataset's id (0 when ``ids_from`` is "").
    """

    queries: pd.DataFrame
    runs: dict[str, pd.DataFrame]
    corpus: pd.DataFrame
    bad: pd.DataFrame
    spans: int
    retriever_spans: int
    path: str
    ids_from: str = ""
    dataset_ids: int = 0

    def with_dataset_ids(self, dataset_queries: pd.DataFrame, source: str = "") -> Traces:
        """These traces with the ids of the queries a dataset holds (:func:`shared_query_ids`).

        ``ragnb traces import --dataset`` and a golden set built from traces
        (:func:`ragnb.studies.golden.from_traces.trace_source`) both name queries this way, so
        the production runs written by one score against the qrels written by the other.

        Parameters
        ----------
        dataset_queries : DataFrame
            ``query_id``, ``text``: the dataset's queries (its ``queries.jsonl``).
        source : str, default ""
            How :meth:`describe` names them (e.g. the file).

        Returns
        -------
        Traces
            ``queries`` and every run renamed; the rest as it is.
        """
        from dataclasses import replace

        rename = shared_query_ids(self.queries, dataset_queries)
        queries = self.queries.assign(query_id=self.queries["query_id"].map(rename))
        runs = {
            name: run.assign(query_id=run["query_id"].map(rename))
            for name, run in self.runs.items()
        }
        return replace(
            self,
            queries=queries,
            runs=runs,
            ids_from=source or "a dataset",
            dataset_ids=sum(old != new for old, new in rename.items()),
        )

    def bad_by_cause(self) -> dict[str, int]:
        """Bad spans per cause, every cause of :data:`BAD_SPAN_CAUSES` listed (0 when none)."""
        counts = Counter(self.bad["cause"])
        return {cause: int(counts.get(cause, 0)) for cause in BAD_SPAN_CAUSES}

    def summary(self) -> dict[str, Any]:
        """Counts for a report: spans, retriever spans, bad spans by cause, distinct queries,
        requests, runs (queries each) and corpus rows."""
        return {
            "spans": self.spans,
            "retriever_spans": self.retriever_spans,
            "bad_spans": len(self.bad),
            "bad_by_cause": self.bad_by_cause(),
            "queries": len(self.queries),
            "requests": int(self.queries["count"].sum()),
            "runs": {name: int(run["query_id"].nunique()) for name, run in self.runs.items()},
            "corpus": len(self.corpus),
            "dataset_ids": self.dataset_ids,
        }

    def describe(self) -> str:
        """The summary in words, one line per fact (what ``ragnb traces import`` prints)."""
        s = self.summary()
        lines = [
            f"{self.path}: {s['spans']} spans, {s['retriever_spans']} retriever spans",
            f"queries: {s['queries']} distinct, asked {s['requests']} times",
        ]
        for name, n in s["runs"].items():
            lines.append(f"run {name}: {n} queries")
        lines.append(f"corpus rows with content: {s['corpus']}")
        if self.ids_from:
            lines.append(
                f"query ids: {s['dataset_ids']} of {s['queries']} taken from {self.ids_from} "
                "(the queries it holds; any other: q + 12 hex digits of the text's SHA-256)"
            )
        else:
            lines.append("query ids: q + 12 hex digits of the SHA-256 of the normalised text")
        causes = ", ".join(f"{c}: {n}" for c, n in s["bad_by_cause"].items())
        lines.append(f"bad spans: {s['bad_spans']} ({causes})")
        return "\n".join(lines)


def shared_query_ids(queries: pd.DataFrame, dataset_queries: pd.DataFrame) -> dict[str, str]:
    """The id each trace query takes when a dataset is at hand: the dataset's id of a query it
    holds (the same text once normalised, :func:`query_key`), else the trace's own id (``q`` +
    12 hex digits of the SHA-256 of the normalised text).

    Parameters
    ----------
    queries : DataFrame
        ``query_id``, ``text``: :attr:`Traces.queries`.
    dataset_queries : DataFrame
        ``query_id``, ``text``: the dataset's queries; of two with the same normalised text, the
        first in file order lends its id.

    Returns
    -------
    dict of str to str
        Trace query id -> id.

    Examples
    --------
    >>> traced = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["What is BM25?", "other"]})
    >>> known = pd.DataFrame({"query_id": ["bm25"], "text": ["what is  BM25?"]})
    >>> shared_query_ids(traced, known)
    {'q1': 'bm25', 'q2': 'q2'}
    """
    known: dict[str, str] = {}
    for qid, text in zip(dataset_queries["query_id"], dataset_queries["text"], strict=True):
        known.setdefault(query_key(str(text)), str(qid))
    return {
        str(qid): known.get(query_key(str(text)), str(qid))
        for qid, text in zip(queries["query_id"], queries["text"], strict=True)
    }


def _frames(collector: _Collector, path: Path) -> Traces:
    """The collector's state as a :class:`Traces`."""
    entries = list(collector.queries.values())
    queries = pd.DataFrame(
        {
            "query_id": pd.Series([e[0] for e in entries], dtype=object),
            "text": pd.Series([e[1] for e in entries], dtype=object),
            "count": np.array([e[2] for e in entries], dtype=np.int64),
        }
    )
    by_system: dict[str, list[tuple[str, str, float]]] = {}
    for (system, qid), (_, ranking) in collector.rankings.items():
        by_system.setdefault(system, []).extend((qid, d, s) for d, s in ranking)
    runs = {
        system: pd.DataFrame(
            {
                "query_id": pd.Series([r[0] for r in rows], dtype=object),
                "doc_id": pd.Series([r[1] for r in rows], dtype=object),
                "score": np.array([r[2] for r in rows], dtype=np.float64),
            }
        )
        for system, rows in sorted(by_system.items())
    }
    corpus = pd.DataFrame(
        {
            "doc_id": pd.Series(list(collector.corpus), dtype=object),
            "title": pd.Series([""] * len(collector.corpus), dtype=object),
            "text": pd.Series(list(collector.corpus.values()), dtype=object),
        }
    )
    bad = pd.DataFrame(collector.bad, columns=["line", "span_id", "name", "cause"])
    bad = bad.astype({"line": np.int64, "span_id": object, "name": object, "cause": object})
    return Traces(
        queries=queries,
        runs=runs,
        corpus=corpus,
        bad=bad,
        spans=collector.spans,
        retriever_spans=collector.retriever_spans,
        path=str(path),
    )


def read_traces(path: str | os.PathLike[str], *, retriever_attribute: str = "") -> Traces:
    """Read the retriever spans of a trace file into queries, production runs and corpus rows.

    The file is streamed (one JSON line or parquet row batch at a time); memory grows with the
    distinct queries, retrievers and documents, not with the spans.

    Parameters
    ----------
    path : str or PathLike
        OTLP JSON lines (the collector's ``file`` exporter), or Phoenix's span export as JSON
        lines or parquet (see the module's documentation); ``.gz`` allowed for JSON.
    retriever_attribute : str, default ""
        The span attribute (or, failing that, resource attribute, e.g. ``"service.name"``)
        whose value names the run a span belongs to; "" names runs by the span's name.

    Returns
    -------
    Traces
        ``queries`` (with ``count``), ``runs`` (one per retriever), ``corpus`` and the ``bad``
        spans by cause.

    Raises
    ------
    InputError
        A line that is not a JSON object (naming the file and line), or a file without any
        usable retriever span (naming the bad spans by cause).
    FileNotFoundError
        When the file does not exist.

    References
    ----------
    OpenInference semantic conventions (``Arize-ai/openinference``,
    ``spec/semantic_conventions.md``): span kind ``RETRIEVER``, ``input.value``,
    ``retrieval.documents``. OpenTelemetry protocol, OTLP/JSON encoding
    (``opentelemetry-proto``, ``ExportTraceServiceRequest``).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> span = retriever_span("what is BM25?", [{"id": "d1", "score": 2.0}, {"id": "d2",
    ...     "score": 1.0, "content": "BM25 ranks by term frequency."}], span_id="01",
    ...     trace_id="aa", name="bm25")
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "spans.jsonl"
    >>> _ = p.write_text(json.dumps(otlp_request([span])) + "\\n")
    >>> t = read_traces(p)
    >>> t.queries[["text", "count"]].values.tolist(), t.runs["bm25"]["doc_id"].tolist()
    ([['what is BM25?', 1]], ['d1', 'd2'])
    """
    path = Path(path)
    collector = _Collector(retriever_attribute)
    for line, span in iter_spans(path):
        collector.add(line, span)
    traces = _frames(collector, path)
    if traces.queries.empty:
        causes = ", ".join(f"{c}: {n}" for c, n in traces.bad_by_cause().items() if n)
        raise InputError(
            f"no usable retriever span among {traces.spans} spans "
            f"({traces.retriever_spans} of kind {RETRIEVER_KIND}; bad: {causes or 'none'})",
            path=path,
        )
    return traces


def write_traces_folder(traces: Traces, folder: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``traces`` as a BEIR folder with TREC runs.

    Parameters
    ----------
    traces : Traces
    folder : str or PathLike
        Created when missing.

    Returns
    -------
    dict of str to Path
        ``queries.jsonl`` (``_id``, ``text``, ``count``), ``corpus.jsonl`` (``_id``, ``title``,
        ``text``; the documents seen with content), ``runs/<retriever>.trec``,
        ``bad_spans.csv`` (``line``, ``span_id``, ``name``, ``cause``) and ``traces.json``
        (:meth:`Traces.summary`), each written atomically.

    Raises
    ------
    InputError
        A retriever name that cannot be a file name or a TREC tag (empty, white space or
        ``/``).
    """
    from ragnb.io.files import write_json, write_jsonl, write_run, write_table_csv

    folder = Path(folder)
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    q = traces.queries
    queries = [
        {"_id": qid, "text": text, "count": int(n)}
        for qid, text, n in zip(q["query_id"], q["text"], q["count"], strict=True)
    ]
    c = traces.corpus
    corpus = [
        {"_id": d, "title": t, "text": x}
        for d, t, x in zip(c["doc_id"], c["title"], c["text"], strict=True)
    ]
    out = {"queries": folder / "queries.jsonl", "corpus": folder / "corpus.jsonl"}
    write_jsonl(queries, out["queries"])
    write_jsonl(corpus, out["corpus"])
    for name, run in traces.runs.items():
        if not name or _WHITESPACE.search(name) or "/" in name or name.startswith("."):
            raise InputError(
                f"retriever {name!r} cannot name a run file (empty, white space or '/'): "
                "choose another retriever_attribute",
                path=traces.path,
            )
        out[f"run:{name}"] = folder / "runs" / f"{name}.trec"
        write_run(run, out[f"run:{name}"], tag=name)
    out["bad_spans"] = folder / "bad_spans.csv"
    write_table_csv(traces.bad, out["bad_spans"])
    out["summary"] = folder / "traces.json"
    write_json(
        {**traces.summary(), "path": traces.path, "ids_from": traces.ids_from}, out["summary"]
    )
    return out


# ----------------------------------------------------------------------------- an example file


def _variant(text: str, rng: np.random.Generator) -> str:
    """The query as a user might type it again: as is, lower case or with stray spaces."""
    form = rng.integers(4)
    if form == 1:
        return text.lower()
    if form == 2:
        return f"  {text} "
    return text


def example_requests(
    queries: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    corpus: pd.DataFrame,
    *,
    n_spans: int = 200,
    depth: int = 5,
    seed: int = 0,
    start_ns: int = 1_767_225_600_000_000_000,
) -> Iterator[dict[str, Any]]:
    """OTLP export requests of a RAG application whose requests each call every retriever.

    Each request is one trace: a ``CHAIN`` root span and, under it, one ``RETRIEVER`` span per
    run (named after it) holding the query, as the user typed it (sometimes lower-cased or with
    extra spaces), and the run's top ``depth`` documents with score and content. Queries are
    drawn with Zipf-like popularity (weight ``1 / rank``), so a few are asked many times.

    Parameters
    ----------
    queries : DataFrame
        ``query_id``, ``text``: the queries users ask.
    runs : mapping of str to DataFrame
        Retriever name -> run (``query_id``, ``doc_id``, ``score``) over ``queries``.
    corpus : DataFrame
        ``doc_id``, ``text``: the documents' content.
    n_spans : int >= len(runs), default 200
        Retriever spans in all (rounded down to a multiple of ``len(runs)``).
    depth : int >= 1, default 5
        Documents per retriever span.
    seed : int, default 0
        Seed of the query draws, variants and ids.
    start_ns : int
        Start time of the first request, nanoseconds since the epoch (one request a second).

    Yields
    ------
    dict
        One :func:`otlp_request` per request (one line of an OTLP JSON file).

    Raises
    ------
    InputError
        No run, no query, or ``n_spans`` below the number of runs.
    """
    from ragnb.frames.index import sort_run

    if not runs or queries.empty or n_spans < len(runs):
        raise InputError(
            f"an example needs runs, queries and n_spans >= {len(runs)} runs, got "
            f"{len(runs)} runs, {len(queries)} queries, n_spans={n_spans}"
        )
    texts = dict(zip(corpus["doc_id"].astype(str), corpus["text"].astype(str), strict=True))
    tops: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for name, run in runs.items():
        ranked = sort_run(run, warn=False).run
        ranked = ranked[ranked["rank"] <= depth]
        tops[name] = {}
        for qid, d, s in zip(ranked["query_id"], ranked["doc_id"], ranked["score"], strict=True):
            tops[name].setdefault(str(qid), []).append((str(d), float(s)))
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(queries) + 1)
    order = rng.permutation(len(queries))
    for request in range(n_spans // len(runs)):
        row = queries.iloc[order[rng.choice(len(queries), p=weights / weights.sum())]]
        trace_id = rng.bytes(16).hex()
        root_id = rng.bytes(8).hex()
        start = start_ns + request * 1_000_000_000
        text = _variant(str(row["text"]), rng)
        spans = [_chain_span(text, trace_id, root_id, start)]
        for name in runs:
            docs = [
                {"id": d, "score": s, "content": texts[d]} if d in texts else {"id": d, "score": s}
                for d, s in tops[name].get(str(row["query_id"]), [])
            ]
            span = retriever_span(
                text,
                docs,
                span_id=rng.bytes(8).hex(),
                trace_id=trace_id,
                name=name,
                start_ns=start + 1_000_000,
            )
            span["parentSpanId"] = root_id
            spans.append(span)
        yield otlp_request(spans)


def _chain_span(text: str, trace_id: str, span_id: str, start_ns: int) -> dict[str, Any]:
    """The root ``CHAIN`` span of a request (not a retriever span: read and skipped)."""
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "query",
        "kind": 1,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 50_000_000),
        "attributes": [
            {"key": _KIND, "value": {"stringValue": "CHAIN"}},
            {"key": _QUERY, "value": {"stringValue": text}},
        ],
        "status": {},
    }


def write_example_traces(
    path: str | os.PathLike[str],
    queries: pd.DataFrame,
    runs: Mapping[str, pd.DataFrame],
    corpus: pd.DataFrame,
    **options: Any,
) -> Path:
    """Write :func:`example_requests` as an OTLP JSON file (one request a line), atomically.

    Parameters
    ----------
    path : str or PathLike
        The file to write (``.jsonl``; ``.gz`` is not compressed).
    queries, runs, corpus : DataFrame
        As :func:`example_requests`.
    **options
        ``n_spans``, ``depth``, ``seed``, ``start_ns`` of :func:`example_requests`.

    Returns
    -------
    Path
        ``path``.
    """
    from ragnb.io.files import write_jsonl

    path = Path(path)
    write_jsonl(example_requests(queries, runs, corpus, **options), path, compact=True)
    return path
