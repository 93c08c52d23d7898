"""The agent's instrumentation: an OpenTelemetry SDK tracer writing OTLP JSON lines, and the
attribute names of its spans.

:func:`tracing` sets up a real ``TracerProvider`` (its own, never the global one) with a
``BatchSpanProcessor`` feeding :class:`ragnb.io.otlp.OTLPJsonLinesExporter`, and ids drawn from a
seeded generator (:class:`SeededIds`), so two runs under one seed give the same trace and span
ids. The agent flushes it after each question: one line of the file holds one question's trace.

Span attributes follow the OpenTelemetry semantic conventions for generative AI
(``gen_ai.*``: the agent, retrieval and inference spans), with the reranking step written as
OpenInference writes a ``RERANKER`` span, since the GenAI conventions have none; ``ragnb.*``
attributes link a trace to the question it answers.

References
----------
.. [1] OpenTelemetry semantic conventions v1.41.1, ``docs/gen-ai/gen-ai-spans.md`` (inference
   span ``{gen_ai.operation.name} {gen_ai.request.model}``; retrieval span ``retrieval
   {gen_ai.data_source.id}``: ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents``,
   ``gen_ai.request.top_k``) and ``docs/gen-ai/gen-ai-agent-spans.md`` (``invoke_agent
   {gen_ai.agent.name}``, ``gen_ai.conversation.id``). From v1.42.0 on, these pages moved to
   the ``open-telemetry/semantic-conventions-genai`` repository.
.. [2] OpenInference semantic conventions (``Arize-ai/openinference``,
   ``spec/semantic_conventions.md``): ``openinference.span.kind`` ``RERANKER``,
   ``reranker.query``, ``reranker.model_name``, ``reranker.top_k``,
   ``reranker.input_documents`` and ``reranker.output_documents``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from ragnb.core.lazylibs import require

__all__ = [
    "AGENT_SCOPE",
    "SEMCONV_VERSION",
    "SeededIds",
    "Tracing",
    "tracing",
]

#: The version of the GenAI semantic conventions the spans follow (the last release of the
#: ``open-telemetry/semantic-conventions`` repository that holds the GenAI pages).
SEMCONV_VERSION = "1.41.1"
#: The instrumentation scope of the agent's spans.
AGENT_SCOPE = "ragnb.studies.agentic"

# GenAI semantic conventions
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
TOP_K = "gen_ai.request.top_k"
TEMPERATURE = "gen_ai.request.temperature"
MAX_TOKENS = "gen_ai.request.max_tokens"
OUTPUT_TYPE = "gen_ai.output.type"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
DATA_SOURCE = "gen_ai.data_source.id"
QUERY_TEXT = "gen_ai.retrieval.query.text"
DOCUMENTS = "gen_ai.retrieval.documents"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
# OpenInference
OI_KIND = "openinference.span.kind"
OI_INPUT = "input.value"
OI_DOCUMENTS = "retrieval.documents"
RERANK_QUERY = "reranker.query"
RERANK_MODEL = "reranker.model_name"
RERANK_TOP_K = "reranker.top_k"
RERANK_INPUT = "reranker.input_documents"
RERANK_OUTPUT = "reranker.output_documents"
# ragnb: what links a trace to the question, and what the agent decided
QUERY_ID = "ragnb.query.id"
TURN = "ragnb.conversation.turn"
CALL = "ragnb.agent.call"
CALLS = "ragnb.agent.calls"
QUERY_SOURCE = "ragnb.agent.query_source"
DECISION = "ragnb.agent.decision"
NEXT_QUERY = "ragnb.agent.next_query"
ANSWER_STATUS = "ragnb.agent.answer_status"
FALLBACK = "ragnb.agent.fallback"
CACHED = "ragnb.llm.cached"


_IdGenerator: Any = require("opentelemetry.sdk.trace.id_generator", "agents").IdGenerator


class SeededIds(_IdGenerator):
    """Trace and span ids from a seeded generator (the SDK draws them from ``random`` unseeded).

    Parameters
    ----------
    seed : int

    Examples
    --------
    >>> a, b = SeededIds(7), SeededIds(7)
    >>> a.generate_trace_id() == b.generate_trace_id(), a.generate_span_id() > 0
    (True, True)
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._draw(64)

    def generate_trace_id(self) -> int:
        return self._draw(128)

    def _draw(self, bits: int) -> int:
        while True:  # 0 is the invalid id
            value = self._rng.getrandbits(bits)
            if value:
                return value


@dataclass
class Tracing:
    """A tracer, its provider and its exporter (what :func:`tracing` yields).

    Attributes
    ----------
    tracer : opentelemetry.trace.Tracer
    provider : opentelemetry.sdk.trace.TracerProvider
    exporter : ragnb.io.otlp.OTLPJsonLinesExporter
        Counts the lines and spans written.
    """

    tracer: Any
    provider: Any
    exporter: Any

    def flush(self) -> None:
        """Export every span that ended (one line), and flush the file."""
        self.provider.force_flush()


@contextmanager
def tracing(
    stream: IO[str], *, seed: int = 0, service_name: str = "ragnb-agent", version: str = ""
) -> Iterator[Tracing]:
    """A ``TracerProvider`` writing OTLP JSON lines to ``stream`` while the block runs.

    Parameters
    ----------
    stream : text file
        Where the lines go (:func:`ragnb.io.files.atomic_write`).
    seed : int, default 0
        Seed of the trace and span ids (:class:`SeededIds`).
    service_name : str, default "ragnb-agent"
        The resource's ``service.name``.
    version : str, default ""
        The instrumentation scope's version (ragnb's).

    Yields
    ------
    Tracing
        Its ``tracer`` makes the spans; :meth:`Tracing.flush` writes the ones that ended. The
        provider is shut down (its last spans written) when the block ends.

    Raises
    ------
    MissingExtra
        When the ``agents`` extra (opentelemetry-sdk) is not installed.
    """
    sdk = require("opentelemetry.sdk.trace", "agents")
    export = require("opentelemetry.sdk.trace.export", "agents")
    resources = require("opentelemetry.sdk.resources", "agents")
    from ragnb.io.otlp import OTLPJsonLinesExporter

    exporter = OTLPJsonLinesExporter(stream)
    provider = sdk.TracerProvider(
        resource=resources.Resource.create({"service.name": service_name}),
        id_generator=SeededIds(seed),
    )
    # flushed by the agent after each question: a long delay keeps a trace on one line
    provider.add_span_processor(
        export.BatchSpanProcessor(exporter, schedule_delay_millis=3_600_000)
    )
    try:
        yield Tracing(provider.get_tracer(AGENT_SCOPE, version or None), provider, exporter)
    finally:
        provider.shutdown()
