"""Promotion drafts that can pass: drafted checks are checked against the trace's own answer and label."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import ToolCall, TraceRecord
from replaygate.replay import ExpectedToolsCheck, ForbiddenOutputRegexCheck

from replaygate.golden import GoldenError, GoldenSet, Promotion, lint, promote_trace
from tests.golden.test_promote import TODAY, FakeStore, record

ESCALATION = "I've passed this conversation to a human colleague, who will reply by e-mail within a day."


def escalated(trace_id: str = "e" * 32) -> TraceRecord:
    base = record(
        trace_id,
        ("What's the status of ORD-10061?",),
        100,
        output=ESCALATION,
        tools=(
            ToolCall("lookup_order", {"order_id": "ORD-10061"}, "shipped"),
            ToolCall("escalate_to_human", {}, "ok"),
        ),
        reasons=("escalation",),
    )
    summary = dataclasses.replace(base.summary, escalated=True, escalation_reason="unsure")
    return dataclasses.replace(base, summary=summary)


def promote(store: FakeStore, golden: GoldenSet, **kw: Any) -> Promotion:
    return promote_trace(store, "e" * 32, golden, owner="ana", author="ana", today=TODAY, **kw)


def test_forbidding_an_escalation_does_not_also_suggest_the_escalating_tools(tmp_path: Path) -> None:
    golden = GoldenSet(tmp_path / "golden")
    result = promote(FakeStore(escalated()), golden, origin="production-incident", forbid_answer=True)
    checks = result.scenario.checks
    assert [type(c) for c in checks] == [ForbiddenOutputRegexCheck]
    assert not any(isinstance(c, ExpectedToolsCheck) for c in checks)
    notes = result.notes
    assert notes == (
        "expected_tools ['lookup_order', 'escalate_to_human'] not suggested: those calls escalated and gave "
        "the answer --forbid-answer forbids, so an attempt repeating them would fail",
    )
    assert "not suggested" in result.scenario.changelog[0].reason
    assert [p for p in lint(golden, today=TODAY) if p.severity == "error"] == []


def test_a_draft_that_could_never_pass_is_not_written(tmp_path: Path) -> None:
    golden = GoldenSet(tmp_path / "golden")
    with pytest.raises(
        GoldenError, match="origin missed-escalation expects an escalation, so every escalating"
    ):
        promote(FakeStore(escalated()), golden, origin="missed-escalation", forbid_answer=True)
    with pytest.raises(GoldenError, match="which --expected-behavior describes as the right answer"):
        promote(
            FakeStore(escalated()),
            golden,
            origin="production-incident",
            forbid_answer=True,
            expected_behavior="I've passed this conversation to a human colleague, who will reply by e-mail.",
        )
    assert golden.files() == []  # nothing written
    # without --forbid-answer the same trace drafts its tools as a suggestion, as before
    result = promote(FakeStore(escalated()), golden, origin="missed-escalation")
    assert [type(c).__name__ for c in result.scenario.checks] == ["ExpectedToolsCheck", "ExpectedLabelCheck"]
    assert result.notes == ()
