"""Fixtures for the instrumentation tests: an isolated SDK provider with an in-memory exporter.

Tests instrument in set-up (``configure(tracer_provider=...)``) and shut down in tear-down; nothing here
touches the global tracer provider (tests that need it run in a subprocess).
"""

from collections.abc import Iterator

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture
def memory() -> Iterator[InMemorySpanExporter]:
    """Configure replaygate on an isolated provider whose spans land in an in-memory exporter."""
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ri.configure(tracer_provider=provider, store=None)
    yield exporter
    ri.shutdown(timeout=2)
    provider.shutdown()
