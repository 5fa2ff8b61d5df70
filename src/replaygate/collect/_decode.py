"""OTLP/HTTP trace requests (protobuf or JSON) decoded into SDK spans, then into replaygate records.

A request body is an ``ExportTraceServiceRequest`` (``opentelemetry-proto``). Each span becomes an
``opentelemetry.sdk.trace.ReadableSpan`` and then a record through ``span_to_record``, the same code the
in-process store exporter runs, so a span reads the same whether it came in-process or over OTLP. OTLP/JSON
carries trace and span ids as hex strings (not base64), as the OTLP specification says.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status as ProtoStatus
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from replaygate.instrumentation import SpanRecord, span_to_record

from replaygate.collect._errors import BadRequest

__all__ = ["decode_request", "encode_response", "records_from_request"]

_KINDS = {
    ProtoSpan.SPAN_KIND_SERVER: SpanKind.SERVER,
    ProtoSpan.SPAN_KIND_CLIENT: SpanKind.CLIENT,
    ProtoSpan.SPAN_KIND_PRODUCER: SpanKind.PRODUCER,
    ProtoSpan.SPAN_KIND_CONSUMER: SpanKind.CONSUMER,
}
_STATUS = {ProtoStatus.STATUS_CODE_OK: StatusCode.OK, ProtoStatus.STATUS_CODE_ERROR: StatusCode.ERROR}
_ID_FIELDS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _hex_ids_to_base64(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str) and value:
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError as exc:
                    raise BadRequest(f"{key} {value[:40]!r} is not a hex id (OTLP/JSON ids are hex)") from exc
            out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def decode_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """Parse an OTLP/HTTP body: ``application/x-protobuf`` or ``application/json``.

    Raises:
        BadRequest: the content type is neither, or the body does not parse.
    """
    kind = content_type.split(";", 1)[0].strip().lower()
    request = ExportTraceServiceRequest()
    if kind == "application/x-protobuf":
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadRequest(f"the body is not an OTLP ExportTraceServiceRequest (protobuf): {exc}") from exc
        return request
    if kind == "application/json":
        try:
            data = json.loads(body)
            json_format.ParseDict(_hex_ids_to_base64(data), request, ignore_unknown_fields=True)
        except (ValueError, json_format.ParseError) as exc:
            raise BadRequest(f"the body is not an OTLP ExportTraceServiceRequest (JSON): {exc}") from exc
        return request
    raise BadRequest(
        f"unsupported content type {content_type!r}: send application/x-protobuf or application/json"
    )


def encode_response(content_type: str) -> tuple[bytes, str]:
    """An empty (full success) ``ExportTraceServiceResponse`` in the request's encoding."""
    response = ExportTraceServiceResponse()
    if content_type.split(";", 1)[0].strip().lower() == "application/json":
        return json_format.MessageToJson(response).encode(), "application/json"
    return response.SerializeToString(), "application/x-protobuf"


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        items = [_value(v) for v in value.array_value.values]
        return tuple(i for i in items if i is not None and not isinstance(i, tuple))
    if which == "kvlist_value":
        return json.dumps({kv.key: _plain(_value(kv.value)) for kv in value.kvlist_value.values})
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


_SCALARS = frozenset({"string_value", "bool_value", "int_value", "double_value"})


def _attributes(items: Sequence[KeyValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    scalars = _SCALARS
    for kv in items:
        value = kv.value
        which = value.WhichOneof("value")
        if which in scalars:  # most attributes: read here, without _value's call
            out[kv.key] = getattr(value, which)
        elif which is not None:
            decoded = _value(value)
            if decoded is not None:
                out[kv.key] = decoded
    return out


def _id(raw: bytes, size: int, what: str) -> int:
    if len(raw) != size:
        raise BadRequest(f"a span's {what} has {len(raw)} bytes, expected {size}")
    return int.from_bytes(raw, "big")


def _span(span: ProtoSpan, resource: Resource, scope: InstrumentationScope) -> ReadableSpan:
    trace_id = _id(span.trace_id, 16, "trace id")
    context = SpanContext(trace_id, _id(span.span_id, 8, "span id"), False, TraceFlags(TraceFlags.SAMPLED))
    parent = None
    if span.parent_span_id:
        parent = SpanContext(trace_id, _id(span.parent_span_id, 8, "parent span id"), True)
    code = _STATUS.get(span.status.code, StatusCode.UNSET)
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=_attributes(span.attributes),
        events=[
            Event(e.name, _attributes(e.attributes), timestamp=e.time_unix_nano or None) for e in span.events
        ],
        kind=_KINDS.get(span.kind, SpanKind.INTERNAL),
        status=Status(code, span.status.message or None) if code is StatusCode.ERROR else Status(code),
        start_time=span.start_time_unix_nano,
        end_time=span.end_time_unix_nano or span.start_time_unix_nano,
        instrumentation_scope=scope,
    )


def records_from_request(request: ExportTraceServiceRequest) -> list[SpanRecord]:
    """Every span of a request as a record (through ``span_to_record``).

    Raises:
        BadRequest: a span with a malformed id.
    """
    records = []
    for resource_spans in request.resource_spans:
        resource = Resource(_attributes(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            scope = InstrumentationScope(scope_spans.scope.name, scope_spans.scope.version or None)
            for span in scope_spans.spans:
                records.append(span_to_record(_span(span, resource, scope)))
    return records
