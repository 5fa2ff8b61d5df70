"""Capture an attempt's own spans in-process during a run.

One isolated SDK ``TracerProvider`` per run, with the instrumentation's ``SpanCollector``; the
instrumentation is pointed at it with ``configure(tracer_provider=..., store=None)`` so the agent's
decorators (which look the tracer up at call time) export there and nothing reaches the global provider
or the trace store (OTLP and Langfuse export are switched off for the run too: replayed attempts are not
production traffic). As ``configure`` is last-call-wins, a process that had configured its own export
must call ``configure`` again after a run. Each attempt runs under a root span ``replay attempt``; after
the target returns, the runner pops that trace's spans and summarizes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import Tracer
from replaygate.instrumentation import SpanCollector, configure

__all__ = ["ATTEMPT_SPAN_NAME", "Capture", "open_capture"]

ATTEMPT_SPAN_NAME = "replay attempt"


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
    """The run's isolated provider, its span collector and the tracer of the attempt root spans."""

    provider: TracerProvider
    collector: SpanCollector
    tracer: Tracer
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
    return Capture(
        provider=provider, collector=collector, tracer=provider.get_tracer("replaygate.replay"), _gate=gate
    )
