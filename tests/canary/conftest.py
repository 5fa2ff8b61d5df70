"""Fakes for the canary tests: an in-memory trace source and decision source, and a controller on them."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import Chunk, LlmCall, SpanRecord, TraceRecord, TraceSummary
from replaygate.instrumentation import semconv as sc

from replaygate.canary import CanaryController, CanarySettings, CanaryStore, EvidenceSettings
from replaygate.store import TraceStore
from tests.conftest import FakeDecisions, make_decision


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


def make_spans(
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
) -> list[SpanRecord]:
    """The spans of the request :func:`make_trace` describes (what an instrumented agent exports)."""
    trace_id = hashlib.md5(f"{variant}-{i}".encode()).hexdigest()  # random-looking, like real ids
    end_ns = start_ns + int(latency_s * 1e9)
    attributes: dict[str, Any] = {
        sc.OPERATION_NAME: "invoke_agent",
        sc.AGENT_NAME: "support-agent",
        sc.AGENT_VERSION: "1",
        sc.OI_INPUT_VALUE: "Where is my order?",
        sc.OI_SESSION_ID: f"s{i}",
        sc.OI_USER_ID: f"u{i}",
        sc.RG_VARIANT: variant,
        sc.RG_CONFIG_ID: variant,
    }
    if not error:
        attributes[sc.OI_OUTPUT_VALUE] = "" if empty else output
    if escalated:
        attributes[sc.RG_ESCALATION] = True
    agent = SpanRecord(
        trace_id,
        f"{i:016x}",
        None,
        "invoke_agent support-agent",
        "agent",
        start_ns,
        end_ns,
        "error" if error else "ok",
        "TimeoutError: slow" if error else None,
        attributes,
        (),
    )
    llm_attributes: dict[str, Any] = {
        sc.OPERATION_NAME: "chat",
        sc.PROVIDER_NAME: "openai",
        sc.USAGE_INPUT_TOKENS: 500,
        sc.USAGE_OUTPUT_TOKENS: 100,
    }
    if model is not None:
        llm_attributes[sc.REQUEST_MODEL] = model
    spans = [
        agent,
        SpanRecord(
            trace_id,
            f"{i + 1 << 20:016x}",
            agent.span_id,
            "chat",
            "llm",
            start_ns + 1,
            end_ns - 1,
            "ok",
            None,
            llm_attributes,
            (),
        ),
    ]
    if chunks:
        docs: dict[str, Any] = {sc.OPERATION_NAME: "retrieval"}
        for j, c in enumerate(chunks):
            docs[sc.oi_document(j, sc.OI_DOCUMENT_ID)] = c.id
            docs[sc.oi_document(j, sc.OI_DOCUMENT_SCORE)] = c.score
            docs[sc.oi_document(j, sc.OI_DOCUMENT_CONTENT)] = c.text
        spans.append(
            SpanRecord(
                trace_id,
                f"{i + 2 << 20:016x}",
                agent.span_id,
                "retrieval",
                "retrieval",
                start_ns + 1,
                start_ns + 2,
                "ok",
                None,
                docs,
                (),
            )
        )
    return spans


class SqlTraces(TraceStore):
    """A real store (SQLite or PostgreSQL) with the fake's ``add``: the canary then measures in SQL."""

    counter = 0

    def add(self, variant: str, n: int, **kwargs: Any) -> None:
        now = time.time_ns()
        batch: list[SpanRecord] = []
        for _ in range(n):
            SqlTraces.counter += 1
            batch.extend(make_spans(SqlTraces.counter, variant, now + SqlTraces.counter, **kwargs))
        self.write_spans(batch)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def traces(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The controller's trace source: the in-memory fake, then a real store on SQLite and PostgreSQL."""
    if request.param == "memory":
        yield FakeTraces()
        return
    url = f"sqlite:///{tmp_path / 'store.db'}"
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres").new_database()
    store = SqlTraces(url)
    yield store
    store.close()


@pytest.fixture
def decisions() -> FakeDecisions:
    return FakeDecisions(make_decision("dec-pass"), make_decision("dec-block", "block"))


@pytest.fixture
def make_controller(
    tmp_path: Path, traces: FakeTraces, decisions: FakeDecisions
) -> Iterator[Callable[..., CanaryController]]:
    stores: list[CanaryStore] = []

    def factory(min_count: int = 50, **settings: Any) -> CanaryController:
        store = CanaryStore(traces.store if isinstance(traces, SqlTraces) else tmp_path / "store.db")
        stores.append(store)
        cfg = CanarySettings(
            evidence=EvidenceSettings(min_count=min_count, min_breach_count=min_count), **settings
        )
        return CanaryController(store, traces, decisions, settings=cfg)

    yield factory
    for s in stores:
        s.close()
