"""Capture by trace: the spans of one trace, from whatever provider they really go to.

Usage::

    from replaygate.instrumentation import capture

    with capture() as cap:            # a trace of its own; spans of the code inside are kept for cap
        respond("Where is ORD-10042?")
    cap.spans                         # SpanRecord list (any producer: @trace_agent, OpenInference, ...)
    cap.summary                       # TraceSummary (tokens, tool calls, LLM calls ...)

replaygate's span processor (one per provider; it also exports for ``configure``) is on each provider spans
may go to: the global SDK provider (created when there is none, as ``configure`` does) and every provider
``configure`` wired (``watch(provider)`` adds another). It routes each finished span to the capture whose
trace it belongs to, by trace id, so captures running at once in one process (two replay runs, concurrent
attempts) each get exactly their own spans. Nothing is detached or swapped: production export keeps running
during a capture and after it; the captured traces themselves are not production traffic and are left out of
replaygate's own export (store, OTLP, Langfuse), also for spans that end after their capture closed (a
timed-out call).

A span started under a capture in a ``TracerProvider`` that is neither global nor configured is never seen:
``CaptureResult.foreign`` says so (the capture's root was asked for its context, and nothing came
back), so callers can report it instead of scoring an attempt as if it had made no call.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from replaygate.instrumentation._export import Slot
from replaygate.instrumentation._records import SpanRecord, TraceSummary
from replaygate.instrumentation._state import STATE
from replaygate.instrumentation._summary import summarize_spans
from replaygate.instrumentation._trace_routes import close_route, open_route

__all__ = ["CaptureResult", "capture", "global_provider", "watch", "watch_known_providers"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def watch(provider: TracerProvider) -> None:
    """Attach replaygate's span processor to ``provider`` (once): spans it finishes can be captured.

    ``configure`` does this for the provider it wires; call it for a provider of your own that is neither
    the global one nor given to ``configure``.
    """
    with STATE.lock:
        if provider in STATE.slots:
            return
        slot = STATE.slots[provider] = Slot()
    provider.add_span_processor(slot)


def global_provider(service_name: str | None = None) -> TracerProvider | None:
    """The global SDK provider, created and registered when there is none; None when it is not an SDK one."""
    current = trace.get_tracer_provider()
    if isinstance(current, trace.ProxyTracerProvider):
        attrs = {"service.name": service_name} if service_name else {}
        trace.set_tracer_provider(TracerProvider(resource=Resource.create(attrs)))
        current = trace.get_tracer_provider()
    return current if isinstance(current, TracerProvider) else None


def watch_known_providers() -> None:
    """Watch the global SDK provider (created when there is none) and every provider ``configure`` wired."""
    provider = global_provider()
    if provider is not None:
        watch(provider)
    for configured in list(STATE.slots.keys()):
        watch(configured)


def _new_id(bits: int) -> int:
    value = 0
    while value == 0:  # zero is the invalid id
        value = random.getrandbits(bits)
    return value


class _Root(NonRecordingSpan):
    """A sampled parent for the captured code's spans; remembers being asked for its context."""

    def __init__(self) -> None:
        super().__init__(SpanContext(_new_id(128), _new_id(64), is_remote=False, trace_flags=_SAMPLED))
        self.asked = False

    def get_span_context(self) -> SpanContext:
        self.asked = True
        return super().get_span_context()


@dataclass
class CaptureResult:
    """What :func:`capture` saw: filled in when the ``with`` block ends."""

    trace_id: str
    spans: list[SpanRecord] = field(default_factory=list)
    summary: TraceSummary | None = None
    foreign: bool = False
    """Spans were started inside but none reached a provider replaygate watches (pass it to ``watch``)."""
    started_ns: int = 0


@contextmanager
def capture(*, settle_s: float = 0.0) -> Iterator[CaptureResult]:
    """Run the ``with`` block in a trace of its own and keep that trace's spans, from any watched provider.

    Args:
        settle_s: wait this long at the end for spans finishing on other threads.

    Yields:
        A :class:`CaptureResult` whose ``spans`` and ``summary`` are set when the block ends.
    """
    provider = global_provider()
    if provider is not None:
        watch(provider)
    root = _Root()
    context = root.get_span_context()
    root.asked = False
    result = CaptureResult(trace_id=format(context.trace_id, "032x"), started_ns=time.time_ns())
    open_route(context.trace_id, context.span_id)
    token = otel_context.attach(trace.set_span_in_context(root))
    try:
        yield result
    finally:
        otel_context.detach(token)
        if settle_s > 0:
            time.sleep(settle_s)
        route = close_route(context.trace_id)
        spans = sorted(route.spans, key=lambda s: (s.start_ns, s.end_ns)) if route is not None else []
        result.spans = spans
        result.summary = summarize_spans(spans)
        result.foreign = route is not None and route.foreign(root.asked)
