"""Foreign spans made into replaygate's records through the same code path the in-process store uses.

A Phoenix span (REST JSON) or a Langfuse observation is rebuilt as an OpenTelemetry ``ReadableSpan``
with its original attributes and handed to ``span_to_record`` and ``summarize_spans``: the dialect is
read by replaygate's one normalisation, never parsed here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from replaygate.instrumentation import (
    FAILURE_REASONS,
    SpanRecord,
    TraceRecord,
    span_to_record,
    summarize_spans,
)

from replaygate.sources._errors import SourceError

__all__ = [
    "FeedbackItem",
    "build_record",
    "iso_to_ns",
    "ns_to_iso",
    "rebuild_span",
    "unique_prefix",
]

_STATUS = {"OK": StatusCode.OK, "ERROR": StatusCode.ERROR}


@dataclasses.dataclass(frozen=True)
class FeedbackItem:
    """One score a person or a tool gave a trace: ``score`` in [-1, 1] (negative = unhappy)."""

    score: float
    comment: str | None
    created_ns: int
    name: str = "feedback"

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "comment": self.comment,
            "created_ns": self.created_ns,
            "name": self.name,
        }


def iso_to_ns(value: str | datetime | None) -> int:
    """An ISO-8601 time (naive = UTC) or datetime as nanoseconds since the epoch (0 when absent)."""
    if value is None:
        return 0
    moment = (
        value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(moment.timestamp())
    return seconds * 1_000_000_000 + moment.microsecond * 1000


def ns_to_iso(ns: int) -> str:
    """Nanoseconds since the epoch as an ISO-8601 UTC time with microseconds."""
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds")


def _hex_id(value: str, width: int, what: str) -> int:
    text = str(value).strip().lower().removeprefix("0x")
    try:
        number = int(text, 16)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not hexadecimal") from None
    if len(text) > width or number == 0:
        raise ValueError(f"{what} {value!r} is not a {width}-digit OpenTelemetry id")
    return number


def rebuild_span(
    *,
    trace_id: str,
    span_id: str,
    parent_id: str | None,
    name: str,
    start_ns: int,
    end_ns: int,
    status: str | None,
    status_message: str | None,
    attributes: Mapping[str, Any],
    events: Iterable[tuple[str, int, Mapping[str, Any]]] = (),
) -> SpanRecord:
    """One foreign span as a :class:`SpanRecord`, built exactly as the store builds a finished SDK span.

    Raises:
        ValueError: an id that is not an OpenTelemetry hex id.
    """
    context = SpanContext(
        _hex_id(trace_id, 32, "trace id"),
        _hex_id(span_id, 16, "span id"),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    parent = (
        SpanContext(context.trace_id, _hex_id(parent_id, 16, "parent span id"), is_remote=True)
        if parent_id
        else None
    )
    code = _STATUS.get(str(status or "").upper(), StatusCode.UNSET)
    span = ReadableSpan(
        name=name,
        context=context,
        parent=parent,
        attributes=_plain_attributes(attributes),
        events=[Event(n, _plain_attributes(a), timestamp=t) for n, t, a in events],
        kind=SpanKind.INTERNAL,
        status=Status(code, status_message or None) if code is StatusCode.ERROR else Status(code),
        start_time=start_ns,
        end_time=max(end_ns, start_ns),
    )
    return span_to_record(span)


def _plain_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attribute values OpenTelemetry accepts: scalars and homogeneous lists; anything else as JSON text."""
    plain: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            plain[str(key)] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            plain[str(key)] = tuple(value)
        elif isinstance(value, list | tuple) and all(isinstance(v, bool) for v in value):
            plain[str(key)] = tuple(value)
        elif isinstance(value, list | tuple) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            plain[str(key)] = tuple(value)
        else:
            plain[str(key)] = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return plain


def build_record(spans: Sequence[SpanRecord], feedback: Sequence[FeedbackItem] = ()) -> TraceRecord | None:
    """The trace a set of spans and scores means, or None when none of its spans is an agent call."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    if not any(span.kind == "agent" for span in ordered):
        return None
    summary = summarize_spans(ordered)
    if any(item.score < 0 for item in feedback) and "negative_feedback" not in summary.failure_reasons:
        reasons = [*summary.failure_reasons, "negative_feedback"]
        known = [r for r in FAILURE_REASONS if r in reasons]
        summary = dataclasses.replace(
            summary, failure_reasons=tuple(known + [r for r in reasons if r not in known])
        )
    return TraceRecord(
        summary=summary,
        spans=tuple(ordered),
        start_ns=min(s.start_ns for s in ordered),
        end_ns=max(s.end_ns for s in ordered),
        feedback=tuple(item.as_dict() for item in sorted(feedback, key=lambda f: f.created_ns)),
    )


_HEX = frozenset("0123456789abcdef")


def unique_prefix(prefix: str, trace_ids: Iterable[str], where: str, scan: int) -> str:
    """The one id among ``trace_ids`` (the first ``scan``) that starts with ``prefix``.

    Raises:
        SourceError: not hexadecimal, too short, not found, or ambiguous.
    """
    value = str(prefix).strip().lower().removeprefix("0x")
    if not 6 <= len(value) <= 32 or not set(value) <= _HEX:
        raise SourceError(f"{prefix!r} is not a trace id or prefix: give 6 to 32 hexadecimal characters")
    if len(value) == 32:
        return value
    found: list[str] = []
    for index, trace_id in enumerate(trace_ids):
        if index >= scan:
            break
        if trace_id.lower().startswith(value) and trace_id.lower() not in found:
            found.append(trace_id.lower())
            if len(found) > 1:
                raise SourceError(f"several traces in {where} start with {value}: give more characters")
    if not found:
        raise SourceError(f"no trace id starting with {value} among the newest {scan} traces in {where}")
    return found[0]
