"""End to end: a conversation captured by ``@trace_agent`` into the store, promoted with the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation import TraceStore
from replaygate.replay import load_scenario

from replaygate.cli import main
from replaygate.golden import GoldenSet, lint


@ri.trace_agent(name="support", version="1.0")
def support(message: str, session_id: str, user_id: str) -> str:
    with ri.retrieval(message, data_source="kb") as found:
        found.record([{"id": "refund-policy", "score": 0.9, "text": "Refunds up to $200."}])
    with ri.tool_call("lookup_order", {"order_id": "ORD-10042"}) as tool:
        tool.set_result({"total": 450})
    if "refund" in message:
        ri.mark_failure("refunded above the limit")
        return "I have refunded $450 to your card."
    return "Your order ORD-10042 was delivered."


def test_captured_multi_turn_failure_promotes_with_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    provider = TracerProvider()
    ri.configure(tracer_provider=provider, store=str(db), otlp_endpoint=False, langfuse=False)
    try:
        support("where is ORD-10042?", session_id="conv-9", user_id="u-17")
        support("it is broken", session_id="conv-9", user_id="u-17")
        support("I want a refund of $450", session_id="conv-9", user_id="u-17")
        support("unrelated", session_id="conv-10", user_id="u-18")
    finally:
        ri.shutdown(timeout=5)
        provider.shutdown()
    with TraceStore(db) as store:
        failing = store.failures()[0].summary.trace_id
    golden = tmp_path / "golden"
    args = ["promote", failing[:12], "--owner", "alice", "--origin", "production-incident", "--must-pass"]
    args += ["--store", str(db), "--golden", str(golden), "--forbid-answer", "--tag", "risk=high", "--json"]
    for expected_created in (True, False):
        main(args)
        doc = json.loads(capsys.readouterr().out)
        assert doc["created"] is expected_created
    s = load_scenario(doc["path"])
    assert s.turns == ["where is ORD-10042?", "it is broken", "I want a refund of $450"]
    assert s.source_trace == failing and s.must_pass and s.tags == {"risk": "high"}
    assert s.context == {"user_id": "u-17"}
    assert s.retrieval is not None and s.retrieval.relevant == ["refund-policy"] and not s.retrieval.confirmed
    forbidden = [c for c in s.checks if c.type == "forbidden_output_regex"]
    assert forbidden and forbidden[0].regex.search("I have refunded $450 to your card.")  # type: ignore[union-attr]
    assert [p for p in lint(GoldenSet(golden)) if p.severity == "error"] == []
    assert len(GoldenSet(golden).files()) == 1
