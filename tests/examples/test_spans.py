"""The agent's traces, through replaygate's instrumentation on an isolated provider."""

from collections.abc import Iterator

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider

from examples.support_agent import ORDERS, SupportAgent, load_config
from examples.support_agent.traffic import simulate

LARGE = next(o for o in ORDERS if o.status == "delivered" and o.amount > 400)


def clean(name="production", **changes):
    data = load_config(name).to_dict()
    data.update({"rates": {}, "latency_ms": 0, **changes})
    return data


@pytest.fixture
def collector() -> Iterator[ri.SpanCollector]:
    provider = TracerProvider()
    spans = ri.SpanCollector()
    provider.add_span_processor(spans)
    ri.configure(tracer_provider=provider, store=None)
    yield spans
    ri.shutdown(timeout=2)


def summary(collector, trace_id):
    assert trace_id is not None
    return ri.summarize_spans(collector.pop(trace_id))


def test_one_trace_per_turn_with_retrieval_tool_and_llm_spans(collector):
    agent = SupportAgent(clean(), seed=1)
    turn = agent.respond_turn(f"I want a refund for {LARGE.order_id}", session_id="s1", user_id=LARGE.user_id)
    spans = collector.pop(turn.trace_id)
    kinds = [s.kind for s in spans]
    assert kinds.count("agent") == 1 and "retrieval" in kinds and "tool" in kinds and "llm" in kinds
    root = next(s for s in spans if s.kind == "agent")
    assert root.parent_id is None and root.name == "invoke_agent support-agent"
    assert all(s.trace_id == turn.trace_id for s in spans)
    assert all(s.parent_id == root.span_id for s in spans if s is not root)
    s = ri.summarize_spans(spans)
    assert s.turns == (turn.message,) and s.output == turn.answer
    assert s.session_id == "s1" and s.user_id == LARGE.user_id
    assert s.config_id == "support-prod-2026-11" and s.agent_version == "1.4.0"
    assert [c.id for c in s.chunks] == list(turn.chunk_ids) and [c.rank for c in s.chunks] == [1, 2, 3]
    assert all(c.text and c.score is not None for c in s.chunks)
    assert s.retrieval_threshold == 0.15 and s.retrieval_filtered == 0
    assert [t.name for t in s.tool_calls] == ["lookup_order", "escalate_to_human"]
    assert s.tool_calls[0].arguments == {"order_id": LARGE.order_id}
    assert s.escalated and "above the limit" in (s.escalation_reason or "")
    assert s.failure_reasons == ("escalation",)
    assert s.llm_calls and all(c.model == "gpt-4o-mini" and c.provider == "openai" for c in s.llm_calls)
    assert s.input_tokens and s.output_tokens


def test_clarification_empty_answer_and_explicit_failure_signals(collector):
    turn = SupportAgent(clean(), seed=2).respond_turn("I want a refund please")
    assert summary(collector, turn.trace_id).clarification

    turn = SupportAgent(clean(rates={"empty_answer": 1.0}), seed=2).respond_turn("Do you accept PayPal?")
    assert "empty_answer" in summary(collector, turn.trace_id).failure_reasons

    fixed = clean("candidate_fixed", rates={"refund_over_limit": 1.0})
    turn = SupportAgent(fixed, seed=2).respond_turn(f"I want a refund for {LARGE.order_id}")
    s = summary(collector, turn.trace_id)
    assert s.config_id == "support-cand-fixed-2026-11"
    assert set(s.failure_reasons) == {"explicit", "escalation"}
    refused = s.tool_calls[1]
    assert refused.name == "issue_refund" and refused.result["status"] == "refused"
    assert refused.error is not None and "RefundRefused" in refused.error  # the tool call ended in error
    assert s.error is None  # the agent handled it: not an exception of the agent


def test_turns_of_a_session_share_the_session_id(collector):
    agent = SupportAgent(clean(), seed=3)
    first = agent.respond_turn("Do you ship to Canada?", session_id="conv-9")
    second = agent.respond_turn("and how long does it take?", session_id="conv-9")
    assert first.trace_id != second.trace_id
    assert (
        summary(collector, first.trace_id).session_id
        == summary(collector, second.trace_id).session_id
        == "conv-9"
    )


def test_traffic_feedback_flags_the_right_traces_in_the_store(tmp_path):
    db = tmp_path / "rg.db"
    ri.configure(tracer_provider=TracerProvider(), store=str(db))
    try:
        counts = simulate(150, load_config("production").to_dict() | {"latency_ms": 0}, seed=4, store=db)
    finally:
        assert ri.shutdown(timeout=10)
    assert counts["feedback_skipped"] == 0 and counts["negative_feedback"] > 0
    with ri.TraceStore(db) as store:
        assert store.count() == counts["requests"]
        flagged = store.failures(reasons=["negative_feedback"], limit=None)
        assert len(flagged) == counts["negative_feedback"]
        assert all(any(f["score"] < 0 for f in r.feedback) for r in flagged)
        sessions = {r.summary.session_id for r in store.list_traces(limit=None)}
        assert len(sessions) == counts["sessions"]
