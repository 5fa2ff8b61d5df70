"""Capture an attempt's own spans in-process during a run.

One isolated SDK ``TracerProvider`` per run, with the instrumentation's ``SpanCollector``; the
instrumentation is pointed at it with ``configure(tracer_provider=..., store=None)`` so the agent's
decorators (which look the tracer up at call time) export there and nothing reaches the global provider
or the trace store (OTLP and Langfuse export are switched off for the run too: replayed attempts are not
production traffic). As ``configure`` is last-call-wins, a process that had configured its own export
must call ``configure`` again after a run.

Each attempt runs under a root span ``replay attempt`` (:class:`AttemptSpan`): a light span made current by
``with AttemptSpan(attributes) as root:``, so the agent's spans become its children in a trace of their own;
it records what is set on it like an SDK span and is turned into a ``SpanRecord`` directly, without the SDK's
span machinery (a measurable share of a fast target's attempt). After the target returns, the runner pops that
trace's spans and summarizes them.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Mapping
from contextvars import Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.util import types
from replaygate.instrumentation import SpanCollector, configure
from replaygate.instrumentation._records import SpanRecord
from replaygate.instrumentation._summary import jsonable

__all__ = ["ATTEMPT_SPAN_NAME", "AttemptSpan", "Capture", "open_capture"]

ATTEMPT_SPAN_NAME = "replay attempt"
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_STATUS = {StatusCode.OK: "ok", StatusCode.ERROR: "error", StatusCode.UNSET: "unset"}


_PLAIN = frozenset((str, int, float, bool, type(None)))


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    # dict() first: a timed-out sync target may still be setting attributes from its thread.
    return {k: v if type(v) in _PLAIN else _plain_value(v) for k, v in dict(attributes).items()}


def _plain_value(value: Any) -> Any:
    """``jsonable(value)``, or a placeholder naming the type of a value that cannot be rendered.

    What an agent sets on its span never breaks the attempt: a ``str`` that raises, a list that contains
    itself (RecursionError) are recorded as ``<unrenderable TYPE>``.
    """
    try:
        return jsonable(value)
    except Exception:
        return f"<unrenderable {type(value).__name__}>"


def _new_id(bits: int) -> int:
    value = 0
    while value == 0:  # zero is the invalid id
        value = random.getrandbits(bits)
    return value


class AttemptSpan(NonRecordingSpan):
    """The root span of one attempt: a sampled parent for the agent's spans, recorded without the SDK.

    Attributes, events, the status and the name set on it before :meth:`end` are kept (as on an SDK
    span), so an agent that annotates the current span outside its own spans is still recorded.
    """

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        trace_id, span_id = _new_id(128), _new_id(64)
        super().__init__(SpanContext(trace_id, span_id, is_remote=False, trace_flags=_SAMPLED))
        self.trace_id = format(trace_id, "032x")
        """The attempt's trace id, 32 lowercase hex digits."""
        self.span_id = format(span_id, "016x")
        self.name = ATTEMPT_SPAN_NAME
        self.attributes: dict[str, Any] = dict(attributes)
        self.events: list[dict[str, Any]] = []
        self.status: str = "unset"
        self.status_message: str | None = None
        self.start_ns = time.time_ns()
        self.end_ns: int | None = None
        self._token: Token[Context] | None = None

    def __enter__(self) -> AttemptSpan:
        """Make this span the current one (a new trace) until ``__exit__``, which also ends it."""
        self._token = otel_context.attach(trace.set_span_in_context(self))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            otel_context.detach(self._token)
            self._token = None
        self.end()

    def is_recording(self) -> bool:
        return self.end_ns is None

    def end(self, end_time: int | None = None) -> None:
        if self.end_ns is None:
            self.end_ns = end_time if end_time is not None else time.time_ns()

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        if self.end_ns is None:
            self.attributes.update(attributes)

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        if self.end_ns is None:
            self.attributes[key] = value

    def add_event(self, name: str, attributes: types.Attributes = None, timestamp: int | None = None) -> None:
        if self.end_ns is None:
            event = {
                "name": name,
                "timestamp_ns": timestamp or time.time_ns(),
                "attributes": dict(attributes or {}),
            }
            self.events.append(event)

    def update_name(self, name: str) -> None:
        if self.end_ns is None:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if self.end_ns is not None:
            return
        code = status.status_code if isinstance(status, Status) else status
        if isinstance(status, Status):
            description = status.description
        self.status = _STATUS.get(code, "unset")
        self.status_message = description if code is StatusCode.ERROR else None

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        kind = type(exception)
        name = (
            kind.__qualname__
            if kind.__module__ in (None, "builtins")
            else f"{kind.__module__}.{kind.__qualname__}"
        )
        attrs: dict[str, Any] = {
            "exception.type": name,
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        attrs.update(attributes or {})
        self.add_event("exception", attrs, timestamp)

    def to_record(self) -> SpanRecord:
        """The span as a ``SpanRecord`` (ends it first if still open); values become plain JSON data."""
        self.end()
        return SpanRecord(
            trace_id=self.trace_id,
            span_id=self.span_id,
            parent_id=None,
            name=self.name,
            kind="other",
            start_ns=self.start_ns,
            end_ns=self.end_ns or self.start_ns,
            status=self.status,  # type: ignore[arg-type]
            status_message=self.status_message,
            attributes=_plain(self.attributes),
            events=tuple({**e, "attributes": _plain(e["attributes"])} for e in self.events)
            if self.events
            else (),
        )


class _WhileOpen(SpanProcessor):
    """Forwards finished spans to the collector until the run closes (later agent calls keep nothing)."""

    def __init__(self, collector: SpanCollector) -> None:
        self.collector = collector
        self.open = True

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self.open:
            self.collector.on_end(span)

    def shutdown(self) -> None:
        self.open = False
        self.collector.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@dataclass
class Capture:
    """The run's isolated provider and its span collector."""

    provider: TracerProvider
    collector: SpanCollector
    _gate: _WhileOpen = field(repr=False)

    def close(self) -> None:
        """Stop collecting, drop spans left over (from attempts that timed out), shut the provider down."""
        self._gate.shutdown()
        self.provider.shutdown()


def open_capture() -> Capture:
    """Create the run's provider and collector and point the instrumentation at them."""
    provider = TracerProvider()
    configure(tracer_provider=provider, store=None, otlp_endpoint=False, langfuse=False)
    collector = SpanCollector()
    gate = _WhileOpen(collector)
    provider.add_span_processor(gate)
    return Capture(provider=provider, collector=collector, _gate=gate)
