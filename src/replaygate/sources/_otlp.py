"""Spans as an OTLP/protobuf export request, for the tools' OpenTelemetry endpoints (Phoenix, Langfuse).

Used by ``push`` to send a replay's attempt traces (from the run's artifacts) and a gate report's own
span. With ``hash_content`` every content-bearing attribute (any dialect's, as the instrumentation
names them) is replaced by ``sha256:<hex>``, as OTLP export does by default.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status
from replaygate.instrumentation import is_content_attribute

__all__ = ["any_value", "export_request", "hash_attributes"]

_STATUS = {"ok": Status.STATUS_CODE_OK, "error": Status.STATUS_CODE_ERROR}


def any_value(value: Any) -> AnyValue:
    """One attribute value in OTLP's form (lists as arrays; mappings as JSON text)."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, Mapping):
        return AnyValue(string_value=json.dumps(value, ensure_ascii=False, default=str, sort_keys=True))
    return AnyValue(string_value=str(value))


def _sha(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_attributes(attributes: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """The attributes with their content hashed, and whether anything was."""
    out: dict[str, Any] = {}
    hashed = False
    for key, value in attributes.items():
        if is_content_attribute(key) and value not in (None, ""):
            out[key] = _sha(value)
            hashed = True
        else:
            out[key] = value
    return out, hashed


def _span(record: Mapping[str, Any], hash_content: bool) -> Span:
    attributes = dict(record.get("attributes") or {})
    if hash_content:
        attributes, hashed = hash_attributes(attributes)
        if hashed:
            attributes["replaygate.content_hashed"] = True
    status = str(record.get("status") or "unset")
    span = Span(
        trace_id=bytes.fromhex(str(record["trace_id"])),
        span_id=bytes.fromhex(str(record["span_id"])),
        name=str(record.get("name") or ""),
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=int(record.get("start_ns") or 0),
        end_time_unix_nano=int(record.get("end_ns") or record.get("start_ns") or 0),
        attributes=[KeyValue(key=k, value=any_value(v)) for k, v in attributes.items() if v is not None],
        status=Status(
            code=_STATUS.get(status, Status.STATUS_CODE_UNSET),
            message=str(record.get("status_message") or "") if status == "error" and not hash_content else "",
        ),
    )
    if record.get("parent_id"):
        span.parent_span_id = bytes.fromhex(str(record["parent_id"]))
    for event in record.get("events") or ():
        added = span.events.add()
        added.name = str(event.get("name") or "")
        added.time_unix_nano = int(event.get("timestamp_ns") or 0)
        event_attributes = dict(event.get("attributes") or {})
        if hash_content:
            event_attributes = {
                k: _sha(v) if k == "exception.message" else v for k, v in event_attributes.items()
            }
        added.attributes.extend(KeyValue(key=k, value=any_value(v)) for k, v in event_attributes.items())
    return span


def export_request(
    spans: Iterable[Mapping[str, Any]],
    *,
    service_name: str,
    resource: Mapping[str, Any] | None = None,
    scope: str = "replaygate",
    hash_content: bool = False,
) -> bytes:
    """Span records (``SpanRecord`` fields as a mapping) as one serialized ``ExportTraceServiceRequest``."""
    items: Sequence[Mapping[str, Any]] = list(spans)
    attributes = {"service.name": service_name, **dict(resource or {})}
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(
                    attributes=[KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]
                ),
                scope_spans=[
                    ScopeSpans(
                        scope=InstrumentationScope(name=scope), spans=[_span(s, hash_content) for s in items]
                    )
                ],
            )
        ]
    )
    return bytes(request.SerializeToString())
