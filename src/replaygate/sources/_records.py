"""Foreign spans made into replaygate's records through the same code path the in-process store uses.

A Phoenix span (REST JSON) or a Langfuse observation is rebuilt as an OpenTelemetry ``ReadableSpan``
with its original attributes and handed to ``span_to_record`` and ``summarize_spans``: the dialect is
read by replaygate's one normalisation, never parsed here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from replaygate.instrumentation import (
    FAILURE_REASONS,
    SpanRecord,
    TraceRecord,
    span_record,
    summarize_spans,
)

from replaygate.sources._errors import SourceError

_HEX = frozenset("0123456789abcdef")

__all__ = [
    "NEGATIVE_LABELS",
    "OWN_PREFIX",
    "FeedbackItem",
    "build_record",
    "iso_to_ns",
    "ns_to_iso",
    "rebuild_span",
    "unique_prefix",
]

#: Labels (Phoenix) and categories (Langfuse) that are negative feedback, lowercased.
NEGATIVE_LABELS = frozenset(
    {"negative", "thumbs-down", "thumbs_down", "bad", "incorrect", "unhelpful", "wrong"}
)
#: replaygate's own scores and annotations start with this; they are never feedback.
OWN_PREFIX = "replaygate."


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
    """One foreign span as a :class:`SpanRecord`, classified by replaygate's one normalisation.

    Raises:
        ValueError: an id that is not an OpenTelemetry hex id.
    """
    for value, width, what in (
        (trace_id, 32, "trace id"),
        (span_id, 16, "span id"),
        (parent_id, 16, "parent id"),
    ):
        text = str(value or "").strip().lower().removeprefix("0x")
        if value is not None and (not 0 < len(text) <= width or set(text) - _HEX or not text.strip("0")):
            raise ValueError(f"{what} {value!r} is not a {width}-digit OpenTelemetry id")
    code = str(status or "").upper()
    return span_record(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id or None,
        name=name,
        attributes=attributes,
        start_ns=start_ns,
        end_ns=max(end_ns, start_ns),
        status={"OK": "ok", "ERROR": "error"}.get(code, "unset"),
        status_message=(status_message or None) if code == "ERROR" else None,
        events=[{"name": n, "timestamp_ns": t, "attributes": dict(a)} for n, t, a in events],
    )


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
