"""Fakes for the canary tests: an in-memory trace source and decision source, and a controller on them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation._records import Chunk, LlmCall, TraceRecord, TraceSummary

from replaygate.canary import CanaryController, CanarySettings, CanaryStore, EvidenceSettings
from replaygate.gate import SignedDecision


def make_trace(
    i: int,
    variant: str,
    start_ns: int,
    *,
    escalated: bool = False,
    error: bool = False,
    empty: bool = False,
    latency_s: float = 1.0,
    model: str | None = "gpt-4o-mini",
    output: str = "Your order ships tomorrow.",
    chunks: tuple[Chunk, ...] = (),
) -> TraceRecord:
    reasons = tuple(
        r
        for r, on in (("exception", error), ("empty_answer", empty and not error), ("escalation", escalated))
        if on
    )
    answer = None if error else ("" if empty else output)
    summary = TraceSummary(
        trace_id=f"{i:032x}",
        session_id=f"s{i}",
        user_id=f"u{i}",
        agent_name="support-agent",
        agent_version="1",
        turns=("Where is my order?",),
        output=answer,
        outputs=(answer,),
        error="TimeoutError: slow" if error else None,
        chunks=chunks,
        tool_calls=(),
        llm_calls=(LlmCall(model, "openai", 500, 100, latency_s),),
        escalated=escalated,
        escalation_reason=None,
        clarification=False,
        failure_reasons=reasons,
        latency_s=latency_s,
        input_tokens=500,
        output_tokens=100,
        variant=variant,
        config_id=variant,
    )
    return TraceRecord(summary, (), start_ns, start_ns + int(latency_s * 1e9))


class FakeTraces:
    def __init__(self) -> None:
        self.records: list[TraceRecord] = []
        self.counter = 0

    def add(self, variant: str, n: int, **kwargs: Any) -> None:
        now = time.time_ns()
        for _ in range(n):
            self.counter += 1
            self.records.append(make_trace(self.counter, variant, now + self.counter, **kwargs))

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        out = [
            r
            for r in self.records
            if (since_ns is None or r.start_ns >= since_ns)
            and (until_ns is None or r.start_ns < until_ns)
            and (variant is None or r.summary.variant == variant)
        ]
        out.sort(key=lambda r: r.start_ns, reverse=True)
        return out[:limit] if limit else out


def make_decision(decision_id: str, outcome: str = "pass") -> SignedDecision:
    return SignedDecision(
        id=decision_id,
        report_id="rep-1",
        outcome=outcome,  # type: ignore[arg-type]
        signed_by="ana",
        reason="gate passed",
        signed_at=datetime(2026, 11, 29, tzinfo=UTC),
        baseline_fingerprint={
            "agent_config_hash": "h-base",
            "declared_versions": {"config_id": "production"},
        },
        candidate_fingerprint={
            "agent_config_hash": "h-cand",
            "declared_versions": {"config_id": "candidate-fixed"},
        },
        candidate_target="examples.support_agent:target",
        candidate_config_id="candidate-fixed",
    )


class FakeDecisions:
    def __init__(self, *decisions: SignedDecision) -> None:
        self.by_id = {d.id: d for d in decisions}

    def get(self, decision_id: str) -> SignedDecision | None:
        return self.by_id.get(decision_id)

    def list_decisions(self, outcomes: list[str] | tuple[str, ...] | None = None) -> list[SignedDecision]:
        return [d for d in self.by_id.values() if outcomes is None or d.outcome in outcomes]


@pytest.fixture
def traces() -> FakeTraces:
    return FakeTraces()


@pytest.fixture
def decisions() -> FakeDecisions:
    return FakeDecisions(make_decision("dec-pass"), make_decision("dec-block", "block"))


@pytest.fixture
def make_controller(
    tmp_path: Path, traces: FakeTraces, decisions: FakeDecisions
) -> Iterator[Callable[..., CanaryController]]:
    stores: list[CanaryStore] = []

    def factory(min_count: int = 50, **settings: Any) -> CanaryController:
        store = CanaryStore(tmp_path / "store.db")
        stores.append(store)
        cfg = CanarySettings(
            evidence=EvidenceSettings(min_count=min_count, min_breach_count=min_count), **settings
        )
        return CanaryController(store, traces, decisions, settings=cfg)

    yield factory
    for s in stores:
        s.close()
