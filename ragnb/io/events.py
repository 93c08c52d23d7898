"""Evaluation results back into the traces: OpenTelemetry GenAI ``gen_ai.evaluation.result``
events, written as OTLP JSON log records.

The event
---------
The GenAI semantic conventions (v1.41.1, ``docs/gen-ai/gen-ai-events.md``) define the event
``gen_ai.evaluation.result``: "the result of evaluating GenAI output", parented to the span of
the operation it judges. Its attributes:

=================================  ========  =========================================
attribute                          type      what ragnb writes
=================================  ========  =========================================
``gen_ai.evaluation.name``         string    the measure's name (``EvidenceRecall``)
``gen_ai.evaluation.score.value``  double    the value (left out when there is none)
``gen_ai.evaluation.score.label``  string    a low-cardinality label, when there is one
``gen_ai.evaluation.explanation``  string    how the value came about, in words
=================================  ========  =========================================

Events are log records (``docs/general/events.md``: an event is a ``LogRecord`` with an event
name, attributes, a severity and no body). Each result is one record with ``eventName``
``gen_ai.evaluation.result``, severity ``INFO`` (9), and the ``traceId`` and ``spanId`` of the
span it judges, so a backend shows it on that span. The file holds one
``ExportLogsServiceRequest`` a line (``resourceLogs[].scopeLogs[].logRecords[]``): the OTLP/JSON
encoding (ids in hex, 64-bit integers as strings) that the OpenTelemetry collector's
``otlpjsonfile`` receiver reads and its ``file`` exporter writes.

References
----------
OpenTelemetry semantic conventions v1.41.1, ``docs/gen-ai/gen-ai-events.md`` (event
``gen_ai.evaluation.result``) and ``docs/general/events.md``; OpenTelemetry protocol
(``opentelemetry-proto``), ``ExportLogsServiceRequest`` and its JSON encoding.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ragnb.errors import InputError
from ragnb.io.readers import iter_json_lines, open_text
from ragnb.io.traces import otlp_attributes, otlp_id

__all__ = [
    "EVALUATION_EVENT",
    "EVENT_COLUMNS",
    "evaluation_requests",
    "read_evaluation_events",
    "write_evaluation_events",
]

#: The event name of an evaluation result.
EVALUATION_EVENT = "gen_ai.evaluation.result"
#: The columns an events frame needs.
EVENT_COLUMNS = ("trace_id", "span_id", "name", "value", "label", "explanation")

_NAME = "gen_ai.evaluation.name"
_VALUE = "gen_ai.evaluation.score.value"
_LABEL = "gen_ai.evaluation.score.label"
_EXPLANATION = "gen_ai.evaluation.explanation"
_INFO = 9


def _pair(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _record(row: dict[str, Any], extra: list[str], now: str) -> dict[str, Any]:
    """One ``LogRecord`` of an events-frame row."""
    attributes = [_pair(_NAME, str(row["name"]))]
    value = row["value"]
    if not _absent(value):
        attributes.append(_pair(_VALUE, float(value)))
    for key, column in ((_LABEL, "label"), (_EXPLANATION, "explanation")):
        if not _absent(row[column]):
            attributes.append(_pair(key, str(row[column])))
    for key in extra:
        if not _absent(row[key]):
            v = row[key]
            attributes.append(_pair(key, v.item() if hasattr(v, "item") else v))
    record: dict[str, Any] = {
        "timeUnixNano": now,
        "observedTimeUnixNano": now,
        "severityNumber": _INFO,
        "severityText": "INFO",
        "eventName": EVALUATION_EVENT,
        "attributes": attributes,
    }
    if not _absent(row["trace_id"]):
        record["traceId"] = otlp_id(row["trace_id"])
    if not _absent(row["span_id"]):
        record["spanId"] = otlp_id(row["span_id"])
    return record


def _checked(events: pd.DataFrame) -> list[str]:
    """The extra attribute columns of an events frame (names with a dot), after the checks."""
    missing = [c for c in EVENT_COLUMNS if c not in events.columns]
    if missing:
        raise InputError(
            f"an events frame needs columns {list(EVENT_COLUMNS)}; missing {missing}",
            column=missing[0],
        )
    unnamed = events["name"].isna() | (events["name"].astype(str).str.strip() == "")
    if unnamed.any():
        raise InputError(f"events row {int(unnamed.to_numpy().argmax())}: no evaluation name")
    return [c for c in events.columns if c not in EVENT_COLUMNS and "." in str(c)]


def evaluation_requests(
    events: pd.DataFrame,
    *,
    service_name: str = "ragnb",
    time_unix_nano: int | None = None,
    batch: int = 1000,
) -> Iterator[dict[str, Any]]:
    """``ExportLogsServiceRequest`` objects holding one ``gen_ai.evaluation.result`` record
    per row of ``events``.

    Parameters
    ----------
    events : DataFrame
        :data:`EVENT_COLUMNS`: ``trace_id``, ``span_id`` (hex ids of the span judged; "" or
        NaN leaves one out), ``name`` (str, required), ``value`` (float, NaN: none), ``label``,
        ``explanation`` (str, "" or NaN: none). A further column whose name holds a dot
        (``ragnb.query.id``) is written as an attribute of that name.
    service_name : str, default "ragnb"
        The resource's ``service.name``: the evaluator.
    time_unix_nano : int, optional
        The records' time, nanoseconds since the epoch (default: now).
    batch : int >= 1, default 1000
        Records per request (one request is one line of the file).

    Yields
    ------
    dict
        ``{"resourceLogs": [{"resource": ..., "scopeLogs": [{"scope": ..., "logRecords":
        [...]}]}]}``.

    Raises
    ------
    InputError
        A missing column or a row without a name.
    """
    from ragnb import __version__

    extra = _checked(events)
    now = str(time.time_ns() if time_unix_nano is None else int(time_unix_nano))
    resource = {"attributes": [_pair("service.name", service_name)]}
    scope = {"name": "ragnb", "version": __version__}
    rows = events.to_dict(orient="records")
    for start in range(0, len(rows), max(int(batch), 1)):
        records = [_record(r, extra, now) for r in rows[start : start + max(int(batch), 1)]]
        yield {
            "resourceLogs": [
                {"resource": resource, "scopeLogs": [{"scope": scope, "logRecords": records}]}
            ]
        }


def write_evaluation_events(
    events: pd.DataFrame, path: str | os.PathLike[str], **options: Any
) -> Path:
    """Write ``events`` as an OTLP JSON file of ``gen_ai.evaluation.result`` log records,
    atomically (a crash leaves any earlier file whole).

    Parameters
    ----------
    events : DataFrame
        As :func:`evaluation_requests`
        (:meth:`ragnb.evaluation.trajectories.TrajectoryResult.events` builds one).
    path : str or PathLike
        The file (``.jsonl``), one ``ExportLogsServiceRequest`` a line.
    **options
        ``service_name``, ``time_unix_nano``, ``batch`` of :func:`evaluation_requests`.

    Returns
    -------
    Path
        ``path``.
    """
    from ragnb.io.files import atomic_write

    path = Path(path)
    with atomic_write(path) as f:
        for request in evaluation_requests(events, **options):
            f.write(json.dumps(request, ensure_ascii=False, separators=(",", ":")))
            f.write("\n")
    return path


def read_evaluation_events(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The ``gen_ai.evaluation.result`` records of an OTLP JSON logs file.

    Parameters
    ----------
    path : str or PathLike
        ``ExportLogsServiceRequest`` lines (``.gz`` allowed). Records of other events are
        skipped; an event named by the deprecated ``event.name`` attribute is read too.

    Returns
    -------
    DataFrame
        :data:`EVENT_COLUMNS` and ``time_unix_nano`` (int), one row per record, in file order.

    Raises
    ------
    InputError
        A line that is not a JSON object, naming the file and line.
    """
    path = Path(path)
    rows = []
    with open_text(path) as f:
        for lineno, obj in iter_json_lines(f, path, "not JSON: {error.msg}"):
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            for resource_logs in obj.get("resourceLogs") or []:
                for scope_logs in resource_logs.get("scopeLogs") or []:
                    for record in scope_logs.get("logRecords") or []:
                        a = otlp_attributes(record.get("attributes"))
                        if (record.get("eventName") or a.get("event.name")) != EVALUATION_EVENT:
                            continue
                        rows.append(
                            (
                                otlp_id(record.get("traceId")),
                                otlp_id(record.get("spanId")),
                                a.get(_NAME),
                                a.get(_VALUE, math.nan),
                                a.get(_LABEL, ""),
                                a.get(_EXPLANATION, ""),
                                int(record.get("timeUnixNano") or 0),
                            )
                        )
    frame = pd.DataFrame(rows, columns=[*EVENT_COLUMNS, "time_unix_nano"])
    return frame.astype({"value": "float64", "time_unix_nano": "int64"})
