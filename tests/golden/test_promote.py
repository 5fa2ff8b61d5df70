"""Promotion of captured traces: every real turn in order, suggestions marked, idempotent, atomic."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import Chunk, SpanRecord, StoreError, ToolCall, TraceRecord, TraceSummary
from replaygate.replay import ExpectedToolsCheck, ForbiddenOutputRegexCheck, load_scenario

from replaygate.golden import GoldenError, GoldenSet, draft_forbidden_pattern, lint, promote_trace, read_lock

TODAY = dt.date(2026, 11, 29)
WRONG = "Sure! I have issued a refund of $450.00 to your card ending 4242. Anything else?"


def record(
    trace_id: str,
    turns: tuple[str, ...],
    start: int,
    *,
    session: str | None = "sess-1",
    output: str | None = "ok",
    chunks: tuple[Chunk, ...] = (),
    tools: tuple[ToolCall, ...] = (),
    reasons: tuple[str, ...] = (),
    attributes: dict[str, Any] | None = None,
) -> TraceRecord:
    summary = TraceSummary(
        trace_id=trace_id,
        session_id=session,
        user_id="u-17",
        agent_name="support",
        agent_version="1",
        turns=turns,
        output=output,
        outputs=(output,),
        error=None,
        chunks=chunks,
        tool_calls=tools,
        llm_calls=(),
        escalated=False,
        escalation_reason=None,
        clarification=False,
        failure_reasons=reasons,
        latency_s=0.1,
        input_tokens=None,
        output_tokens=None,
    )
    span = SpanRecord(
        trace_id, "0" * 16, None, "agent", "agent", start, start + 1, "ok", None, attributes or {}
    )
    return TraceRecord(summary=summary, spans=(span,), start_ns=start, end_ns=start + 1)


class FakeStore:
    def __init__(self, *records: TraceRecord) -> None:
        self.records = {r.summary.trace_id: r for r in records}

    def get_trace(self, trace_id: str) -> TraceRecord:
        if trace_id not in self.records:
            raise StoreError(f"trace {trace_id} not found")
        return self.records[trace_id]

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        found = [r for r in self.records.values() if r.summary.session_id == session_id]
        return sorted(found, key=lambda r: r.start_ns)


FAILING = "c" * 32


def conversation() -> FakeStore:
    return FakeStore(
        record("b" * 32, ("I ordered a blender", "it arrived broken"), 200),
        record("a" * 32, ("hello",), 100),
        record(
            FAILING,
            ("I want a refund of $450 for ORD-10042",),
            300,
            output=WRONG,
            chunks=(
                Chunk("refund-limits#1", 0.9, 1, "..."),
                Chunk("returns#0", 0.5, 3, "..."),
                Chunk("refund-limits#0", 0.7, 2, "..."),
            ),
            tools=(ToolCall("lookup_order", {"order_id": "ORD-10042"}, {}), ToolCall("issue_refund", {}, {})),
            reasons=("negative_feedback",),
            attributes={"replaygate.context.order_id": "ORD-10042"},
        ),
        record("d" * 32, ("a later turn, after the failure",), 400),
        record("e" * 32, ("another session",), 150, session="sess-2"),
    )


def promote(gs: GoldenSet, store: FakeStore | None = None, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "owner": "alice",
        "origin": "production-incident",
        "author": "alice",
        "today": TODAY,
    }
    args.update(kw)
    return promote_trace(store or conversation(), FAILING, gs, **args)


def test_multi_turn_failure_promotes_every_turn_in_order(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    result = promote(gs, must_pass=True, tags={"dimension": "safety"}, expected_behavior="Escalate.")
    s = load_scenario(result.path)
    assert result.created and s == result.scenario
    assert s.turns == [
        "hello",
        "I ordered a blender",
        "it arrived broken",
        "I want a refund of $450 for ORD-10042",
    ]
    assert s.source_trace == FAILING and s.must_pass and s.tags == {"dimension": "safety"}
    assert s.context == {"user_id": "u-17", "order_id": "ORD-10042"}
    assert s.retrieval is not None and s.retrieval.relevant == ["refund-limits", "returns"]
    assert s.retrieval.confirmed is False
    tools = [c for c in s.checks if isinstance(c, ExpectedToolsCheck)]
    assert tools and tools[0].tools == ["lookup_order", "issue_refund"] and tools[0].suggested
    assert "negative_feedback" in s.changelog[0].reason
    assert s.id.endswith("-" + FAILING[:8])
    lock = read_lock(gs.lock_path)
    assert lock is not None and s.id in lock
    assert [p for p in lint(gs, today=TODAY) if p.severity == "error"] == []
    assert any("confirm" in p.message for p in lint(gs, today=TODAY) if p.severity == "warning")


def test_promotion_is_idempotent(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    first = promote(gs)
    second = promote(gs, owner="bob", scenario_id="another-id")
    assert first.created and not second.created
    assert second.scenario == first.scenario and second.path == first.path
    assert [p.name for p in gs.files()] == [first.path.name]


def test_forbid_answer_drafts_an_escaped_distinctive_fragment(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    s = promote(gs, forbid_answer=True).scenario
    forbidden = [c for c in s.checks if isinstance(c, ForbiddenOutputRegexCheck)]
    assert len(forbidden) == 1
    pattern = forbidden[0].regex
    assert pattern.search(WRONG)
    assert pattern.search(WRONG.upper().replace(" ", "  "))
    assert "450" in forbidden[0].pattern and r"\$" in forbidden[0].pattern
    assert not pattern.search("I cannot issue refunds above $200; a specialist will contact you.")


def test_draft_forbidden_pattern_escapes_and_limits() -> None:
    text = "Call (555) 010-9999 now [urgent] *really*. Thanks."
    pattern = draft_forbidden_pattern(text, max_chars=30)
    assert re.search(pattern, text)
    assert len(pattern) < 80
    with pytest.raises(GoldenError, match="empty"):
        draft_forbidden_pattern("   ")


def test_interrupted_promotion_leaves_no_half_written_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gs = GoldenSet(tmp_path / "golden")
    promote(gs, store=conversation(), scenario_id="first")  # the set and its lock exist
    other = FakeStore(record("f" * 32, ("where is my parcel?",), 500, session=None))
    lock_before = gs.lock_path.read_bytes()

    def crash(*args: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(GoldenError):
        promote_trace(other, "f" * 32, gs, owner="alice", origin="near-miss", today=TODAY)
    monkeypatch.undo()
    assert sorted(p.name for p in gs.path.iterdir()) == ["first.yaml", "golden.lock"]
    assert gs.lock_path.read_bytes() == lock_before
    again = promote_trace(other, "f" * 32, gs, owner="alice", origin="near-miss", today=TODAY)
    assert again.created and again.scenario.turns == ["where is my parcel?"]


def test_crash_after_scenario_rename_is_completed_by_promoting_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    gs = GoldenSet(tmp_path / "golden")
    real = os.replace

    def no_lock(src: Any, dst: Any) -> None:
        if str(dst).endswith("golden.lock"):
            raise OSError("crash")
        real(src, dst)

    monkeypatch.setattr("os.replace", no_lock)
    with pytest.raises(GoldenError):
        promote(gs)
    monkeypatch.undo()
    assert any("no golden.lock yet" in p.message for p in lint(gs, today=TODAY))  # the first lock: a warning
    again = promote(gs)
    assert not again.created
    assert [p for p in lint(gs, today=TODAY) if p.severity == "error"] == []


def test_bad_promotion_arguments(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    with pytest.raises(GoldenError, match="origin"):
        promote(gs, origin="rumour")
    with pytest.raises(GoldenError, match="owner"):
        promote(gs, owner=" ")
    with pytest.raises(GoldenError, match=r"^cannot draft .*: id: String should match .*'Bad Id'") as bad_id:
        promote(gs, scenario_id="Bad Id")
    assert "\n" not in str(bad_id.value) and "errors.pydantic.dev" not in str(bad_id.value)
    with pytest.raises(StoreError):
        promote_trace(conversation(), "9" * 32, gs, owner="a", origin="near-miss")
    empty = FakeStore(record("9" * 32, (), 1, session=None))
    with pytest.raises(GoldenError, match="no user input"):
        promote_trace(empty, "9" * 32, gs, owner="a", origin="near-miss")
    assert not gs.path.exists() or gs.files() == []


def test_missed_escalation_drafts_expected_label(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    s = promote(gs, origin="missed-escalation").scenario
    assert any(c.type == "expected_label" and c.label == "escalate" for c in s.checks)  # type: ignore[union-attr]
