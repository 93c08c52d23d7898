"""OpenTelemetry spans out: an SDK span exporter that writes OTLP JSON lines.

:class:`OTLPJsonLinesExporter` is a ``SpanExporter`` of the OpenTelemetry Python SDK: a
``TracerProvider`` hands it the spans that ended (through a ``SimpleSpanProcessor`` or a
``BatchSpanProcessor``) and it writes each export as one line, an ``ExportTraceServiceRequest``
in the OTLP/JSON encoding, the form the OpenTelemetry collector's ``file`` exporter writes and
:func:`ragnb.io.traces.read_traces` reads. The spans are encoded by the SDK's own OTLP encoder
(``opentelemetry.exporter.otlp.proto.common.trace_encoder.encode_spans``) into the protobuf
message, then into JSON by protobuf's ``json_format``, with the two rules OTLP/JSON adds to
protobuf's JSON mapping (:func:`otlp_json`): trace and span ids as hexadecimal strings (protobuf
writes ``bytes`` fields in base64) and enums as integers.

Needs the ``agents`` extra (``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-common``).

References
----------
.. [1] OpenTelemetry protocol specification, "OTLP/HTTP", JSON Protobuf Encoding
   (``opentelemetry-proto``, ``docs/specification.md``): ``traceId`` and ``spanId`` are
   hex-encoded strings, not base64; enum values are integers; field names lowerCamelCase.
.. [2] OpenTelemetry Collector, ``fileexporter``: one JSON-encoded export request a line.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from ragnb.core.lazylibs import require

_export = require("opentelemetry.sdk.trace.export", "agents")
_encoder = require("opentelemetry.exporter.otlp.proto.common.trace_encoder", "agents")
_json_format = require("google.protobuf.json_format", "agents")

__all__ = ["ID_FIELDS", "OTLPJsonLinesExporter", "hex_ids", "otlp_json"]

_SpanExporter: Any = _export.SpanExporter

#: The ``bytes`` fields of a span (and of its links) that OTLP/JSON writes in hexadecimal.
ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _from_base64(value: str) -> str:
    return base64.b64decode(value, validate=True).hex()


def _from_hex(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _recode(obj: Any, codec: Callable[[str], str]) -> Any:
    """``obj`` with every id field (:data:`ID_FIELDS`) passed through ``codec``."""
    if isinstance(obj, list):
        return [_recode(v, codec) for v in obj]
    if not isinstance(obj, dict):
        return obj
    return {
        k: codec(v) if k in ID_FIELDS and isinstance(v, str) else _recode(v, codec)
        for k, v in obj.items()
    }


def hex_ids(request: Mapping[str, Any], *, to: str = "base64") -> dict[str, Any]:
    """An OTLP/JSON request with its ids turned from hexadecimal into base64 (``to="base64"``:
    what ``google.protobuf.json_format.Parse`` reads into the protobuf message) or back
    (``to="hex"``).

    Parameters
    ----------
    request : mapping
        An ``ExportTraceServiceRequest`` as a JSON object.
    to : {"base64", "hex"}, default "base64"

    Returns
    -------
    dict
        A copy with every ``traceId``, ``spanId`` and ``parentSpanId`` re-encoded.

    Raises
    ------
    ValueError
        On an id that is not hexadecimal (``to="base64"``) or not base64 (``to="hex"``), or
        another ``to``.

    Examples
    --------
    >>> hex_ids({"spans": [{"spanId": "00f1"}]})
    {'spans': [{'spanId': 'APE='}]}
    >>> hex_ids({"spans": [{"spanId": "APE="}]}, to="hex")
    {'spans': [{'spanId': '00f1'}]}
    """
    codecs = {"base64": _from_hex, "hex": _from_base64}
    if to not in codecs:
        raise ValueError(f"to must be 'base64' or 'hex', got {to!r}")
    return dict(_recode(dict(request), codecs[to]))


def otlp_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` protobuf message in the OTLP/JSON encoding.

    Parameters
    ----------
    request : opentelemetry.proto.collector.trace.v1.trace_service_pb2.ExportTraceServiceRequest
        What ``encode_spans`` returns.

    Returns
    -------
    dict
        protobuf's JSON mapping (``json_format.MessageToDict``: lowerCamelCase field names,
        64-bit integers as strings) with enums as integers and ids in hexadecimal (32 digits
        for a trace id, 16 for a span id).
    """
    encoded = _json_format.MessageToDict(request, use_integers_for_enums=True)
    return dict(_recode(encoded, _from_base64))


class OTLPJsonLinesExporter(_SpanExporter):
    """An OpenTelemetry SDK span exporter writing one OTLP/JSON export request a line.

    Parameters
    ----------
    stream : text file
        Open for writing (:func:`ragnb.io.files.atomic_write` gives one that replaces its file
        only once the run ended well). Not closed by the exporter.

    Attributes
    ----------
    lines, spans : int
        Export requests (lines) and spans written so far.

    Examples
    --------
    >>> import io
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> out = io.StringIO()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(OTLPJsonLinesExporter(out)))
    >>> with provider.get_tracer("example").start_as_current_span("retrieval bm25"):
    ...     pass
    >>> provider.shutdown()
    >>> span = json.loads(out.getvalue())["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    >>> span["name"], len(span["traceId"]), len(span["spanId"])
    ('retrieval bm25', 32, 16)
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._closed = False
        self.lines = 0
        self.spans = 0

    def export(self, spans: Sequence[Any]) -> Any:
        """Write ``spans`` (SDK ``ReadableSpan`` objects) as one line; ``SpanExportResult``."""
        if self._closed:
            return _export.SpanExportResult.FAILURE
        if not spans:
            return _export.SpanExportResult.SUCCESS
        line = json.dumps(
            otlp_json(_encoder.encode_spans(spans)), ensure_ascii=False, separators=(",", ":")
        )
        with self._lock:
            self._stream.write(line + "\n")
            self.lines += 1
            self.spans += len(spans)
        return _export.SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the stream."""
        with self._lock:
            if not self._closed:
                self._stream.flush()
        return True

    def shutdown(self) -> None:
        """Flush the stream and refuse later exports (the stream stays open)."""
        self.force_flush()
        self._closed = True
