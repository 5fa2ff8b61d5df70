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

from dataclasses import dataclass

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer
from replaygate.instrumentation import SpanCollector, configure

__all__ = ["ATTEMPT_SPAN_NAME", "Capture", "open_capture"]

ATTEMPT_SPAN_NAME = "replay attempt"


@dataclass
class Capture:
    """The run's isolated provider, its span collector and the tracer of the attempt root spans."""

    provider: TracerProvider
    collector: SpanCollector
    tracer: Tracer

    def close(self) -> None:
        """Drop spans left over (from attempts that timed out) and shut the provider down."""
        self.collector.clear()
        self.provider.shutdown()


def open_capture() -> Capture:
    """Create the run's provider and collector and point the instrumentation at them."""
    provider = TracerProvider()
    configure(tracer_provider=provider, store=None, otlp_endpoint=False, langfuse=False)
    collector = SpanCollector()
    provider.add_span_processor(collector)
    return Capture(provider=provider, collector=collector, tracer=provider.get_tracer("replaygate.replay"))
