"""SpanCollector: finished spans per trace, for the replay engine (thread-safe, bounded)."""

import threading

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation import semconv as sc


@ri.trace_agent(name="collected")
def respond(message: str, session_id: str | None = None) -> str:
    ri.record_retrieval(message, [{"id": "d1", "score": 0.7, "text": "doc"}])
    with ri.llm_call("m", provider="p") as llm:
        llm.set_usage(5, 7)
    return "answer"


def test_collector_pops_one_trace_and_summarizes() -> None:
    collector = ri.SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    ri.configure(tracer_provider=provider, store=None)
    with provider.get_tracer("replay").start_as_current_span("replay attempt") as root:
        respond("hello", session_id="s-1")
        respond("again", session_id="s-1")
    trace_id = format(root.get_span_context().trace_id, "032x")
    spans = collector.pop(trace_id)
    assert collector.pop(trace_id) == []
    assert [s.kind for s in spans].count("agent") == 2 and spans[0].name == "replay attempt"
    agent = next(s for s in spans if s.kind == "agent")
    assert agent.attributes[sc.CONVERSATION_ID] == "s-1"  # derived for in-process consumers too
    summary = ri.summarize_spans(spans)
    assert summary.turns == ("hello", "again") and summary.output == "answer"
    assert [c.id for c in summary.chunks] == ["d1", "d1"] and summary.input_tokens == 10
    ri.shutdown(timeout=2)


def test_collector_is_thread_safe() -> None:
    collector = ri.SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(collector)
    ri.configure(tracer_provider=provider, store=None)

    def work() -> None:
        for _ in range(40):
            respond("x")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = collector.trace_ids()
    assert len(ids) == 160
    assert all(len(collector.pop(i)) == 3 for i in ids)
    ri.shutdown(timeout=2)


def test_collector_is_bounded() -> None:
    collector = ri.SpanCollector(max_traces=50)
    provider = TracerProvider()
    provider.add_span_processor(collector)
    ri.configure(tracer_provider=provider, store=None)
    for _ in range(80):
        respond("x")
    ids = collector.trace_ids()
    assert len(ids) == 50  # the 50 newest traces are kept, whole
    assert all(len(collector.pop(i)) == 3 for i in ids[:-1])
    collector.clear()
    assert collector.trace_ids() == []
    ri.shutdown(timeout=2)
