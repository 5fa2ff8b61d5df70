"""Fixtures for the instrumentation tests: an isolated SDK provider and an in-memory exporter.

Tests instrument in set-up (``configure(tracer_provider=..., exporters=[memory])``) and shut down in
tear-down, so they assert on what an exporter really receives (after redaction and derived attributes).
Nothing here touches the global tracer provider (tests that need it run in a subprocess).
"""

from collections.abc import Iterator

import pytest
import replaygate.instrumentation as ri
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation._state import STATE


class FlushingMemory(InMemorySpanExporter):
    """An in-memory exporter that flushes replaygate's pipeline before it is read."""

    def get_finished_spans(self) -> tuple[ReadableSpan, ...]:
        pipeline = STATE.pipeline
        if pipeline is not None:
            assert pipeline.force_flush(10_000)
        return super().get_finished_spans()


@pytest.fixture
def memory() -> Iterator[InMemorySpanExporter]:
    """Configure replaygate on an isolated provider whose exported spans land in memory."""
    provider = TracerProvider()
    exporter = FlushingMemory()
    ri.configure(tracer_provider=provider, store=None, exporters=[exporter], schedule_delay_s=0.05)
    yield exporter
    ri.shutdown(timeout=2)
    provider.shutdown()


@pytest.fixture(autouse=True)
def _no_leaked_context() -> Iterator[None]:
    """Fail the test that leaves an OpenTelemetry context attached (it would leak into the next tests)."""
    before = otel_context.get_current()
    yield
    leaked = otel_context.get_current()
    if leaked is not before:
        otel_context.attach(before)  # restore, so that only the leaking test fails
        pytest.fail(f"the test left an OpenTelemetry context attached: {dict(leaked)!r}")
