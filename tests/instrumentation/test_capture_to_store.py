"""End to end: a decorated agent writes to the embedded store; feedback arrives from another process."""

import pathlib
import subprocess
import sys

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider


@ri.trace_agent(name="support-agent", version="3")
def respond(message: str, session_id: str, user_id: str) -> str:
    with ri.retrieval(message, data_source="kb") as r:
        r.record(
            [{"id": "refund-policy", "score": 0.8, "text": "Refunds within 30 days, write to help@shop.com"}]
        )
    with ri.tool_call("lookup_order", {"order_id": "ORD-7"}) as t:
        t.set_result({"status": "delivered"})
    if "lawyer" in message:
        ri.mark_escalation("legal threat")
        return "A human will contact you."
    return "" if "empty" in message else "Refunds take 30 days."


def test_store_round_trip_and_feedback_from_another_process(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "traces" / "replaygate.db"
    ri.configure(tracer_provider=TracerProvider(), store=str(db), schedule_delay_s=0.05)
    for message in ("how do refunds work?", "my lawyer will call", "empty please"):
        respond(message, session_id="s-9", user_id="u-1")
    assert ri.shutdown(timeout=10)
    with ri.TraceStore(db) as store:
        traces = store.list_traces(limit=10)
        assert len(traces) == 3
        by_turn = {t.summary.turns[0]: t for t in traces}
        ids = {turn: t.summary.trace_id for turn, t in by_turn.items()}
        ok = store.get_trace(ids["how do refunds work?"]).summary
        assert ok.output == "Refunds take 30 days." and ok.session_id == "s-9" and ok.agent_version == "3"
        assert [(c.id, c.rank) for c in ok.chunks] == [("refund-policy", 1)]
        assert ok.chunks[0].text == "Refunds within 30 days, write to [REDACTED:email]"
        assert ok.tool_calls[0].arguments == {"order_id": "ORD-7"}
        reasons = {t.summary.turns[0]: set(t.summary.failure_reasons) for t in store.failures()}
        assert reasons == {"my lawyer will call": {"escalation"}, "empty please": {"empty_answer"}}

    code = (
        "import sys, replaygate.instrumentation as ri; "
        "ri.record_feedback(sys.argv[1], -1.0, 'wrong refund period', store=sys.argv[2])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, ids["how do refunds work?"], str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    with ri.TraceStore(db) as store:
        flagged = {t.summary.trace_id: set(t.summary.failure_reasons) for t in store.failures()}
        assert flagged[ids["how do refunds work?"]] == {"negative_feedback"}
        assert len(flagged) == 3
