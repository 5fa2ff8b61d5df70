"""A gate report as one span: the trace Langfuse and Phoenix show the gate outcome on."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from replaygate.sources._records import ns_to_iso

if TYPE_CHECKING:  # the gate and replay packages are heavy; only their types are needed here
    from replaygate.gate import GateReport

__all__ = ["gate_attributes", "gate_span_json", "gate_span_proto"]


def _span_id(trace_id: str) -> str:
    return hashlib.sha256(trace_id.encode()).hexdigest()[:16]


def gate_attributes(report: GateReport, link: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "openinference.span.kind": "CHAIN",
        "replaygate.gate.report_id": report.report_id,
        "replaygate.gate.outcome": report.outcome,
        "replaygate.gate.newly_failing": list(report.newly_failing),
        "input.value": report.comparison.candidate.run_id,
        "output.value": report.headline,
        "langfuse.trace.tags": ["replaygate", "gate", report.outcome],
    }
    if link:
        attributes["replaygate.gate.report"] = link
    return attributes


def gate_span_json(report: GateReport, trace_id: str, now_ns: int, link: str | None) -> dict[str, Any]:
    """The gate span in Phoenix's REST shape (``POST /v1/projects/{project}/spans``)."""
    return {
        "name": f"replaygate gate {report.report_id}",
        "context": {"trace_id": trace_id, "span_id": _span_id(trace_id)},
        "span_kind": "CHAIN",
        "parent_id": None,
        "start_time": ns_to_iso(now_ns),
        "end_time": ns_to_iso(now_ns + 1000),
        "status_code": "OK",
        "status_message": "",
        "attributes": gate_attributes(report, link),
        "events": [],
    }


def _any(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(_any(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def gate_span_proto(report: GateReport, trace_id: str, now_ns: int, link: str | None) -> bytes:
    """The gate span as an OTLP/protobuf export request (for Langfuse's OpenTelemetry endpoint)."""
    span = Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(_span_id(trace_id)),
        name=f"replaygate gate {report.report_id}",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=now_ns,
        end_time_unix_nano=now_ns + 1000,
        attributes=[KeyValue(key=k, value=_any(v)) for k, v in gate_attributes(report, link).items()],
        status=Status(code=Status.STATUS_CODE_OK),
    )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[KeyValue(key="service.name", value=_any("replaygate"))]),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="replaygate.gate"), spans=[span])],
            )
        ]
    )
    return bytes(request.SerializeToString())
