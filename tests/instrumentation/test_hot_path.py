"""The decorated call's hot path: what the fast paths skip must not change what a span records."""

import gc
from collections.abc import Iterator

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._agent import AgentRun

from tests.instrumentation.conftest import FlushingMemory


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _live_runs() -> int:
    return sum(1 for obj in gc.get_objects() if isinstance(obj, AgentRun))


def test_a_finished_call_leaves_nothing_for_the_cycle_collector(
    memory: InMemorySpanExporter, no_cycle_collector: None
) -> None:
    @ri.trace_agent(name="support")
    def answer(message: str, session_id: str | None = None) -> str:
        return "Refunds take five days."

    @ri.trace_agent(name="streamer")
    def stream(message: str) -> Iterator[str]:
        yield "a"
        yield "b"

    before = _live_runs()
    for _ in range(50):
        answer("refund?", session_id="s-1")
        assert "".join(stream("go")) == "ab"
    # The run and its context referred to each other: every call left a cycle (and its span) behind.
    assert _live_runs() == before
    assert len(memory.get_finished_spans()) == 100


@pytest.mark.parametrize(
    ("result", "reasons", "output"),
    [
        ("Refunds take five days.", (), "Refunds take five days."),
        ("   ", ("empty_answer",), "   "),
        ("", ("empty_answer",), ""),
        (None, ("empty_answer",), None),
        ({"answer": "From a mapping."}, (), "From a mapping."),
        (42, (), "42"),
    ],
)
def test_the_fast_path_records_what_the_full_path_does(
    memory: InMemorySpanExporter, result: object, reasons: tuple[str, ...], output: str | None
) -> None:
    @ri.trace_agent(name="support")
    def answer(message: str) -> object:
        return result

    assert answer("hello") == result
    (span,) = memory.get_finished_spans()
    attrs = span.attributes or {}
    assert tuple(attrs[sc.RG_FAILURE_REASONS]) == reasons  # type: ignore[arg-type]
    assert attrs.get(sc.OI_OUTPUT_VALUE) == output


def test_a_long_answer_is_still_cut_to_the_text_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAYGATE_MAX_TEXT_CHARS", "10")
    provider = TracerProvider()
    memory = FlushingMemory()
    ri.configure(tracer_provider=provider, store=None, exporters=[memory], schedule_delay_s=0.05)
    try:

        @ri.trace_agent(name="support")
        def answer(message: str) -> str:
            return "x" * 50

        answer("a question longer than ten characters")
        (span,) = memory.get_finished_spans()
    finally:
        ri.shutdown(timeout=2)
        provider.shutdown()
    attrs = span.attributes or {}
    assert str(attrs[sc.OI_OUTPUT_VALUE]).startswith("x" * 10 + "…[truncated 40")
    assert str(attrs[sc.OI_INPUT_VALUE]).startswith("a question…[truncated")
    assert tuple(attrs[sc.RG_FAILURE_REASONS]) == ()  # type: ignore[arg-type]


def test_escalation_and_explicit_marks_take_the_full_path(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="support")
    def answer(message: str) -> str:
        ri.mark_escalation("angry")
        ri.mark_failure("policy")
        return "Passing you to a person."

    answer("hello")
    (span,) = memory.get_finished_spans()
    assert tuple((span.attributes or {})[sc.RG_FAILURE_REASONS]) == ("escalation", "explicit")  # type: ignore[arg-type]
