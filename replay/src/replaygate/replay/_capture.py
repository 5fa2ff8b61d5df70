"""Capture an attempt's own spans in-process during a run: by trace, from the provider they really go to.

Each attempt runs under a root span ``replay attempt`` (:class:`AttemptSpan`) that starts a trace of its
own and registers it with the instrumentation's capture routing (``replaygate.instrumentation.capture`` is
the public form of the same thing): one router on each provider spans may go to — the global SDK provider
(created when there is none) and every provider ``configure`` wired — hands each finished span to the
attempt whose trace it belongs to. Nothing is detached or reconfigured: production export keeps running
during a run and after it (the attempts' own traces are left out of it), two runs in one process and
concurrent attempts of one run each get exactly their own spans, and spans of the ecosystem's instrumentors
(OpenInference, OpenLLMetry, the contrib openai instrumentor) writing to the global provider are captured
like replaygate's own.

:class:`AttemptSpan` is a light span made current by ``with AttemptSpan(attributes) as root:``; it records
what is set on it like an SDK span and is turned into a ``SpanRecord`` directly, without the SDK's span
machinery (a measurable share of a fast target's attempt). After the target returns, the runner pops that
trace's spans (:meth:`Capture.pop`) and summarizes them. An attempt under which spans were started that
never reached a watched provider (a ``TracerProvider`` the agent made and never registered) is counted in
:attr:`Capture.foreign_attempts`, so the run reports it once instead of scoring it as if no call was made.
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
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.util import types
from replaygate.instrumentation import SpanRecord, close_route, jsonable, open_route, watch_known_providers

__all__ = ["ATTEMPT_SPAN_NAME", "FOREIGN_PROVIDER_HINT", "AttemptSpan", "Capture", "open_capture"]

FOREIGN_PROVIDER_HINT = (
    "spans were started under {n} attempt(s) but never reached a tracer provider replaygate captures from "
    "(the agent uses a TracerProvider that is not the global one and was not given to configure()); "
    "their tokens, cost and tool calls are unknown. Register it (opentelemetry.trace.set_tracer_provider) "
    "or call replaygate.instrumentation.configure(tracer_provider=...) in the target module."
)

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


_SPAN_BITS = (1 << 64) - 1


def _new_ids() -> tuple[int, int, str]:
    """A new trace id (128 bits) and span id (64 bits), neither zero (the invalid id), and both in hex.

    One draw of 192 bits: the trace id is the high 128, the span id the low 64, and the 48 hex digits are
    the trace id's 32 followed by the span id's 16.
    """
    while True:
        bits = random.getrandbits(192)
        trace_id, span_id = bits >> 64, bits & _SPAN_BITS
        if trace_id and span_id:
            return trace_id, span_id, format(bits, "048x")


class AttemptSpan(NonRecordingSpan):
    """The root span of one attempt: a sampled parent for the agent's spans, recorded without the SDK.

    Attributes, events, the status and the name set on it before :meth:`end` are kept (as on an SDK
    span), so an agent that annotates the current span outside its own spans is still recorded.
    """

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        trace_id, span_id, digits = _new_ids()
        # The span context is made when something asks for it (a child span starting): most attempts of
        # a plain target never do. (NonRecordingSpan.__init__ only stores it.)
        self._context = None  # type: ignore[assignment]
        self.trace_id = digits[:32]
        """The attempt's trace id, 32 lowercase hex digits."""
        self.trace_number = trace_id  # the same id as a number (the capture routing's key)
        self.span_id = digits[32:]
        self._span_number = span_id
        self.asked = False  # whether anything asked for this span's context (a child span starting)
        open_route(trace_id, span_id)
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

    def get_span_context(self) -> SpanContext:
        self.asked = True
        context = self._context
        if context is None:
            context = self._context = SpanContext(
                self.trace_number, self._span_number, is_remote=False, trace_flags=_SAMPLED
            )
        return context

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


@dataclass
class Capture:
    """The run's capture: pops each attempt's spans and counts attempts whose spans went astray."""

    foreign_attempts: int = 0
    _open: set[int] = field(default_factory=set, repr=False)  # trace ids, as numbers

    def track(self, root: AttemptSpan) -> None:
        """Remember an attempt's trace, so :meth:`close` stops routing it even if it was never popped."""
        self._open.add(root.trace_number)

    def pop(self, root: AttemptSpan) -> list[SpanRecord]:
        """Stop routing the attempt's trace and return its spans, ordered by start."""
        number = root.trace_number
        self._open.discard(number)
        route = close_route(number)
        if route is None:
            return []
        if route.foreign(root.asked):
            self.foreign_attempts += 1
        spans = route.spans
        return sorted(spans, key=lambda s: (s.start_ns, s.end_ns)) if len(spans) > 1 else list(spans)

    def close(self) -> None:
        """Stop routing every trace still open (attempts that timed out keep nothing more)."""
        for trace_id in list(self._open):
            close_route(trace_id)
        self._open.clear()


def open_capture() -> Capture:
    """Watch every provider the agent's spans may go to and return the run's :class:`Capture`."""
    watch_known_providers()
    return Capture()
