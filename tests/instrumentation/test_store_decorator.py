"""End to end: ``configure(store=...)`` + ``@trace_agent`` and the span helpers → the trace store."""

from __future__ import annotations

from pathlib import Path

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation._store import TraceStore

DOCS = [
    {"id": "refunds-101", "score": 0.88, "text": "Refunds up to $50 without approval."},
    {"id": "shipping-2", "score": 0.31, "text": "Orders ship in 3 days."},
]


@ri.trace_agent(name="support", version="2.0")
def support(message: str, session_id: str, user_id: str) -> str:
    with ri.retrieval(message, data_source="kb") as found:
        found.record(DOCS)
    with ri.tool_call("lookup_order", {"order_id": "A-9"}) as tool:
        tool.set_result({"total": 80})
    with ri.llm_call("offline-model", provider="local") as llm:
        llm.set_usage(input_tokens=200, output_tokens=40)
    if "human" in message:
        ri.mark_escalation("asked for a human")
        return "A colleague will contact you."
    return f"Refund of $80 approved for {user_id}."


def test_decorated_agent_lands_in_the_store(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    provider = TracerProvider()
    ri.configure(tracer_provider=provider, store=str(db), otlp_endpoint=False, langfuse=False)
    try:
        first = support("refund for A-9 please", session_id="conv-1", user_id="u-7")
        second = support("let me talk to a human", session_id="conv-1", user_id="u-7")
    finally:
        ri.shutdown(timeout=5)
        provider.shutdown()
    with TraceStore(db) as store:
        session = store.session_traces("conv-1")
        assert [r.summary.turns for r in session] == [("refund for A-9 please",), ("let me talk to a human",)]
        assert [r.summary.output for r in session] == [first, second]
        refund, human = session
        assert [(c.id, c.score, c.rank) for c in refund.summary.chunks] == [
            ("refunds-101", 0.88, 1),
            ("shipping-2", 0.31, 2),
        ]
        assert refund.summary.tool_calls[0].name == "lookup_order"
        assert refund.summary.tool_calls[0].arguments == {"order_id": "A-9"}
        assert (refund.summary.input_tokens, refund.summary.output_tokens) == (200, 40)
        assert (refund.summary.agent_name, refund.summary.agent_version) == ("support", "2.0")
        assert refund.summary.user_id == "u-7" and refund.summary.failure_reasons == ()
        assert human.summary.escalated and human.summary.escalation_reason == "asked for a human"
        assert [r.summary.trace_id for r in store.failures()] == [human.summary.trace_id]
        assert store.failures()[0].summary.failure_reasons == ("escalation",)
        ri.record_feedback(refund.summary.trace_id, -1.0, "wrong amount", store=str(db))
        assert [r.summary.trace_id for r in store.failures(reasons=["negative_feedback"])] == [
            refund.summary.trace_id
        ]
