"""Agent traces recorded by the real OpenTelemetry SDK, for the trajectory tests.

A plan lists questions; each becomes one trace: a root agent span and, under it, its steps in
the order given, each at the times given (seconds after :data:`T0`). The spans are recorded by
``opentelemetry-sdk`` (a ``TracerProvider`` with an in-memory exporter), encoded by the OTLP
exporter's own encoder (``opentelemetry.exporter.otlp.proto.common``) into an
``ExportTraceServiceRequest`` and written as OTLP/JSON lines (:func:`ragnb.io.otlp.otlp_json`:
ids in hex, enums as integers), or on request in protobuf's generic JSON mapping (ids in
base64).

Two conventions: ``"gen_ai"`` (retrieval spans in the OpenTelemetry GenAI conventions, an
``invoke_agent`` root, ``chat`` spans with ``gen_ai.usage.*``, rerank steps as OpenInference
``RERANKER`` spans, as an agent instrumented with the GenAI conventions writes them) and
``"openinference"`` (``RETRIEVER``, ``RERANKER``, ``LLM`` and ``AGENT`` spans, ``session.id``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragnb.io.otlp import otlp_json

T0 = 1_767_225_600_000_000_000
SEC = 1_000_000_000


def _ns(seconds: float) -> int:
    return T0 + int(round(seconds * SEC))


def _retrieval(step: dict[str, Any], convention: str) -> tuple[str, dict[str, Any]]:
    if convention == "gen_ai":
        attrs = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "docs",
            "gen_ai.provider.name": "ragnb-test",
            "gen_ai.request.top_k": len(step["docs"]),
            "gen_ai.retrieval.query.text": step["query"],
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": d, "score": s} for d, s in step["docs"]]
            ),
        }
        return "retrieval docs", attrs | step.get("attributes", {})
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": step["query"]}
    for i, (d, s) in enumerate(step["docs"]):
        attrs[f"retrieval.documents.{i}.document.id"] = d
        attrs[f"retrieval.documents.{i}.document.score"] = s
    return "retrieve", attrs | step.get("attributes", {})


def _rerank(step: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    attrs: dict[str, Any] = {
        "openinference.span.kind": "RERANKER",
        "reranker.query": step["query"],
        "reranker.model_name": "cross-encoder",
        "reranker.top_k": len(step["outputs"]),
    }
    for side in ("input", "output"):
        for i, (d, s) in enumerate(step[f"{side}s"]):
            attrs[f"reranker.{side}_documents.{i}.document.id"] = d
            attrs[f"reranker.{side}_documents.{i}.document.score"] = s
    return "rerank", attrs | step.get("attributes", {})


def _chat(step: dict[str, Any], convention: str) -> tuple[str, dict[str, Any]]:
    n_in, n_out = step["tokens"]
    if convention == "gen_ai":
        return "chat model", {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": n_in,
            "gen_ai.usage.output_tokens": n_out,
        }
    return "llm", {
        "openinference.span.kind": "LLM",
        "llm.token_count.prompt": n_in,
        "llm.token_count.completion": n_out,
    }


def _root(question: dict[str, Any], convention: str) -> dict[str, Any]:
    attrs = dict(question.get("attributes", {}))
    conversation = question.get("conversation")
    if convention == "gen_ai":
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.agent.name"] = "researcher"
        if conversation:
            attrs["gen_ai.conversation.id"] = conversation
        # an agent span sums its children's usage: never counted again
        attrs["gen_ai.usage.input_tokens"] = 999_999
    else:
        attrs["openinference.span.kind"] = "AGENT"
        if conversation:
            attrs["session.id"] = conversation
    return attrs


def record(plan: list[dict[str, Any]], convention: str = "gen_ai") -> list[Any]:
    """The finished SDK spans of ``plan`` (see the module's documentation).

    Each question: ``{"start": s, "end": s, "conversation": str, "attributes": {...},
    "steps": [...]}``; each step ``{"op": "retrieval", "query": str, "docs": [(id, score)],
    "at": (s, s)}``, ``{"op": "rerank", "query", "inputs", "outputs", "at"}`` or ``{"op":
    "chat", "tokens": (n_in, n_out), "at"}``, with optional ``"attributes"``.
    """
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ragnb.tests.agent")
    for question in plan:
        root = tracer.start_span(
            "invoke_agent researcher",
            attributes=_root(question, convention),
            start_time=_ns(question["start"]),
        )
        context = trace.set_span_in_context(root)
        for step in question["steps"]:
            if step["op"] == "retrieval":
                name, attrs = _retrieval(step, convention)
            elif step["op"] == "rerank":
                name, attrs = _rerank(step)
            else:
                name, attrs = _chat(step, convention)
            span = tracer.start_span(
                name,
                context=context,
                kind=trace.SpanKind.CLIENT,
                attributes=attrs,
                start_time=_ns(step["at"][0]),
            )
            span.end(end_time=_ns(step["at"][1]))
        root.end(end_time=_ns(question["end"]))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def write_otlp(path: Path, spans: list[Any], *, base64_ids: bool = False) -> Path:
    """The spans as OTLP JSON lines, one ``ExportTraceServiceRequest`` per trace."""
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    lines = []
    for group in by_trace.values():
        request = encode_spans(group)
        if base64_ids:  # protobuf's generic JSON mapping, as a naive exporter writes it
            lines.append(json.dumps(json_format.MessageToDict(request)))
        else:  # OTLP/JSON, as ragnb's exporter and the collector's file exporter write it
            lines.append(json.dumps(otlp_json(request)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def hex_span_id(span: Any) -> str:
    return format(span.context.span_id, "016x")


def hex_trace_id(span: Any) -> str:
    return format(span.context.trace_id, "032x")
