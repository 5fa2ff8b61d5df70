"""A gate report as one span: the trace Langfuse and Phoenix show the gate outcome on."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from replaygate.sources._otlp import export_request
from replaygate.sources._records import ns_to_iso

if TYPE_CHECKING:  # the gate package is heavy; only its types are needed here
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


def gate_span_proto(report: GateReport, trace_id: str, now_ns: int, link: str | None) -> bytes:
    """The gate span as an OTLP/protobuf export request (for Langfuse's OpenTelemetry endpoint)."""
    record = {
        "trace_id": trace_id,
        "span_id": _span_id(trace_id),
        "name": f"replaygate gate {report.report_id}",
        "start_ns": now_ns,
        "end_ns": now_ns + 1000,
        "status": "ok",
        "attributes": gate_attributes(report, link),
    }
    return export_request([record], service_name="replaygate", scope="replaygate.gate")
