"""Agentic retrieval: a search agent over a corpus whose every step is an OpenTelemetry span.

:mod:`~ragnb.studies.agentic.agent`
    :class:`~ragnb.studies.agentic.agent.SearchAgent`: search, optionally rerank, let the model
    read the top passages and stop or write the next query, two to four searches per question;
    one trace per question, written by the OpenTelemetry SDK as OTLP JSON lines with the GenAI
    semantic conventions.
:mod:`~ragnb.studies.agentic.conversations`
    Questions from a BEIR dataset: single questions, or conversations of 2 to 4 turns with
    per-turn qrels in the TREC CAsT layout (``<conversation>_<turn>``).
:mod:`~ragnb.studies.agentic.telemetry`
    The tracer (a ``TracerProvider`` with seeded ids and
    :class:`ragnb.io.otlp.OTLPJsonLinesExporter`) and the span attributes.
:mod:`~ragnb.studies.agentic.example`
    :func:`~ragnb.studies.agentic.example.write_agent_example`, what ``ragnb traces example
    --agent`` runs.

Needs the ``agents`` extra (``pip install "ragnb[agents]"``).
"""

from __future__ import annotations

from ragnb.core.lazylibs import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    [
        "ragnb.studies.agentic.agent",
        "ragnb.studies.agentic.conversations",
        "ragnb.studies.agentic.example",
        "ragnb.studies.agentic.telemetry",
    ],
)
