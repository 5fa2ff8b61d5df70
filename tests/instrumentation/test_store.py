"""The embedded trace store: SDK spans → StoreSpanExporter → TraceStore, feedback, order, failures."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from replaygate.instrumentation import _store
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._store import StoreSpanExporter, TraceStore
from replaygate.instrumentation._store_db import resolve_store_path


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "store" / "replaygate.db"


@pytest.fixture()
def memory() -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def run_agent(
    tracer: Tracer,
    question: str,
    answer: str | None,
    *,
    session: str = "s-1",
    variant: str | None = None,
    escalate: bool = False,
    raise_error: bool = False,
) -> str:
    """One agent run with a retrieval, a tool and an LLM span; returns the trace id."""
    attrs: dict[str, object] = {
        sc.OPERATION_NAME: "invoke_agent",
        sc.AGENT_NAME: "support",
        sc.AGENT_VERSION: "1.2",
        sc.OI_INPUT_VALUE: question,
        sc.CONVERSATION_ID: session,
        sc.OI_USER_ID: "u-1",
    }
    if variant is not None:
        attrs[sc.RG_VARIANT] = variant
        attrs[sc.RG_CONFIG_ID] = f"cfg-{variant}"
    try:
        with tracer.start_as_current_span("invoke_agent support", attributes=attrs) as agent:
            docs = [{"id": "refund-policy", "score": 0.91}, {"id": "shipping", "score": 0.42}]
            with tracer.start_as_current_span(
                "retrieval kb",
                attributes={sc.OPERATION_NAME: "retrieval", sc.RETRIEVAL_DOCUMENTS: json.dumps(docs)},
            ):
                pass
            tool = {
                sc.OPERATION_NAME: "execute_tool",
                sc.TOOL_NAME: "lookup_order",
                sc.TOOL_CALL_ARGUMENTS: json.dumps({"order_id": "A-17"}),
                sc.TOOL_CALL_RESULT: json.dumps({"total": 30}),
            }
            with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool):
                pass
            llm = {
                sc.OPERATION_NAME: "chat",
                sc.REQUEST_MODEL: "offline-1",
                sc.USAGE_INPUT_TOKENS: 120,
                sc.USAGE_OUTPUT_TOKENS: 30,
            }
            with tracer.start_as_current_span("chat offline-1", attributes=llm):
                pass
            if escalate:
                agent.set_attribute(sc.RG_ESCALATION, True)
                agent.set_attribute(sc.RG_ESCALATION_REASON, "asked for a human")
            if raise_error:
                raise KeyError("A-17")
            if answer is not None:
                agent.set_attribute(sc.OI_OUTPUT_VALUE, answer)
            return format(agent.get_span_context().trace_id, "032x")
    except KeyError:
        return ""


def stored_provider(db: Path) -> tuple[TracerProvider, StoreSpanExporter]:
    exporter = StoreSpanExporter(db)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_private_all_is_pinned() -> None:
    assert sorted(_store.__all__) == ["StoreSpanExporter", "TraceStore"]


def test_round_trip_through_the_sdk(db: Path) -> None:
    provider, exporter = stored_provider(db)
    tracer = provider.get_tracer("test")
    trace_id = run_agent(tracer, "Can I get a refund for A-17?", "Yes: $30 back.", variant="candidate")
    provider.shutdown()
    assert exporter.stats()["exported_spans"] == 4 and exporter.failed_batches == 0
    with TraceStore(db) as store:
        record = store.get_trace(trace_id.upper())  # ids are normalized
        summary = record.summary
        assert summary.trace_id == trace_id and len(record.spans) == 4
        assert summary.turns == ("Can I get a refund for A-17?",) and summary.output == "Yes: $30 back."
        assert [(c.id, c.score, c.rank) for c in summary.chunks] == [
            ("refund-policy", 0.91, 1),
            ("shipping", 0.42, 2),
        ]
        assert [(t.name, t.arguments, t.result) for t in summary.tool_calls] == [
            ("lookup_order", {"order_id": "A-17"}, {"total": 30})
        ]
        assert (summary.input_tokens, summary.output_tokens) == (120, 30)
        assert summary.llm_calls[0].model == "offline-1"
        assert summary.failure_reasons == ()
        assert (summary.session_id, summary.user_id, summary.agent_version) == ("s-1", "u-1", "1.2")
        assert (summary.variant, summary.config_id) == ("candidate", "cfg-candidate")
        assert record.start_ns <= record.end_ns and record.start_ns == min(s.start_ns for s in record.spans)
        assert store.count() == 1
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_failure_candidates_filters_and_sessions(db: Path) -> None:
    provider, _ = stored_provider(db)
    tracer = provider.get_tracer("test")
    ok = run_agent(tracer, "first", "fine", session="s-a", variant="baseline")
    time.sleep(0.002)
    escalated = run_agent(tracer, "second", "handing over", session="s-a", escalate=True)
    time.sleep(0.002)
    empty = run_agent(tracer, "third", "", session="s-b", variant="baseline")
    time.sleep(0.002)
    run_agent(tracer, "fourth", None, session="s-b", raise_error=True)
    provider.shutdown()
    with TraceStore(db) as store:
        assert store.count() == 4
        listed = store.list_traces()
        assert [r.summary.turns[0] for r in listed] == ["fourth", "third", "second", "first"]
        assert [r.summary.turns[0] for r in store.list_traces(limit=2)] == ["fourth", "third"]
        assert [r.summary.trace_id for r in store.list_traces(variant="baseline")] == [empty, ok]
        assert [r.summary.trace_id for r in store.list_traces(session_id="s-a")] == [escalated, ok]
        since = store.get_trace(escalated).start_ns
        assert [r.summary.turns[0] for r in store.list_traces(since_ns=since)] == [
            "fourth",
            "third",
            "second",
        ]
        assert [r.summary.turns[0] for r in store.list_traces(until_ns=since)] == ["first"]
        failures = store.failures()
        assert [(r.summary.turns[0], r.summary.failure_reasons) for r in failures] == [
            ("fourth", ("exception",)),
            ("third", ("empty_answer",)),
            ("second", ("escalation",)),
        ]
        assert failures[0].summary.error == "KeyError: 'A-17'"
        assert [r.summary.turns[0] for r in store.failures(reasons=["escalation", "empty_answer"])] == [
            "third",
            "second",
        ]
        assert store.failures(reasons=["negative_feedback"]) == []
        assert [r.summary.turns[0] for r in store.failures(since_ns=since, limit=1)] == ["fourth"]
        assert [r.summary.trace_id for r in store.session_traces("s-a")] == [ok, escalated]
        with pytest.raises(StoreError, match="f" * 32):
            store.get_trace("f" * 32)
        with pytest.raises(StoreError, match="not a trace id"):
            store.get_trace("nope")


def test_out_of_order_batches_build_the_trace_row(
    db: Path, memory: tuple[Tracer, InMemorySpanExporter]
) -> None:
    tracer, captured = memory
    trace_id = run_agent(tracer, "where is A-17?", "", escalate=True)
    spans = list(captured.get_finished_spans())
    children = [s for s in spans if s.parent is not None]
    parent = [s for s in spans if s.parent is None]
    exporter = StoreSpanExporter(f"sqlite:///{db}")
    with TraceStore(db) as store:
        assert exporter.export(children[:1]) is SpanExportResult.SUCCESS
        assert exporter.export(children[1:]) is SpanExportResult.SUCCESS
        assert store.count() == 0  # no agent span yet: nothing to list
        assert exporter.export(parent) is SpanExportResult.SUCCESS
        assert exporter.export(children[:1]) is SpanExportResult.SUCCESS  # a re-sent span is idempotent
        record = store.get_trace(trace_id)
        assert len(record.spans) == 4
        assert record.summary.failure_reasons == ("empty_answer", "escalation")
        assert [c.id for c in record.summary.chunks] == ["refund-policy", "shipping"]
        assert store.failures()[0].summary.trace_id == trace_id
        conn = sqlite3.connect(db)
        columns = "start_ns, end_ns, session_id, agent_name, input_preview, failure_reasons"
        start_ns, end_ns, session, agent, preview, reasons = conn.execute(
            f"SELECT {columns} FROM trace_traces"
        ).fetchone()
        conn.close()
        assert (start_ns, end_ns) == (
            min(s.start_time or 0 for s in spans),
            max(s.end_time or 0 for s in spans),
        )
        assert (session, agent, preview) == ("s-1", "support", "where is A-17?")
        assert json.loads(reasons) == ["empty_answer", "escalation"]


FEEDBACK_SCRIPT = """
import sys
from replaygate.instrumentation._store import TraceStore
store = TraceStore(sys.argv[1])
for trace_id, score in zip(sys.argv[2::2], sys.argv[3::2]):
    store.record_feedback(trace_id, float(score), "from another process")
store.close()
"""


def test_feedback_from_another_process_flags_the_right_trace(db: Path) -> None:
    provider, _ = stored_provider(db)
    tracer = provider.get_tracer("test")
    first = run_agent(tracer, "refund?", "yes")
    second = run_agent(tracer, "shipping?", "3 days")
    with TraceStore(db) as store:
        assert store.failures() == []
        subprocess.run(
            [sys.executable, "-c", FEEDBACK_SCRIPT, str(db), second, "-0.5", first, "1"], check=True
        )
        failures = store.failures(reasons=["negative_feedback"])
        assert [r.summary.trace_id for r in failures] == [second]
        assert failures[0].summary.failure_reasons == ("negative_feedback",)
        assert failures[0].feedback[0]["score"] == -0.5
        assert failures[0].feedback[0]["comment"] == "from another process"
        assert store.get_trace(first).summary.failure_reasons == ()
        assert store.get_trace(first).feedback[0]["score"] == 1.0

        # feedback that arrives before its trace is kept and applied when the trace is written
        with tracer.start_as_current_span("invoke_agent support") as span:
            early = format(span.get_span_context().trace_id, "032x")
            store.record_feedback(early, False)
            span.set_attributes(
                {sc.OPERATION_NAME: "invoke_agent", sc.OI_INPUT_VALUE: "late", "output.value": "x"}
            )
        record = store.get_trace(early)
        assert record.summary.failure_reasons == ("negative_feedback",)
        assert record.feedback[0]["score"] == -1.0
        assert [r.summary.trace_id for r in store.failures()] == [early, second]
        with pytest.raises(StoreError, match="-1, 1"):
            store.record_feedback(first, 2.0)
    provider.shutdown()


def test_unwritable_and_corrupted_stores_never_raise(
    tmp_path: Path, memory: tuple[Tracer, InMemorySpanExporter]
) -> None:
    tracer, captured = memory
    run_agent(tracer, "q", "a")
    spans: list[ReadableSpan] = list(captured.get_finished_spans())
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    corrupted = tmp_path / "corrupted.db"
    corrupted.write_bytes(b"this is not an SQLite database" * 100)
    for target in (blocker / "sub" / "replaygate.db", corrupted):
        exporter = StoreSpanExporter(target)
        assert exporter.export(spans[:2]) is SpanExportResult.FAILURE
        assert exporter.export(spans[2:]) is SpanExportResult.FAILURE
        assert exporter.failed_batches == 2 and exporter.failed_spans == len(spans)
        assert exporter.exported_spans == 0 and exporter.last_error
        # through a real provider the agent code never sees the failure
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        assert run_agent(provider.get_tracer("t"), "q", "a")
        provider.shutdown()
        assert exporter.failed_spans == len(spans) * 2
        assert exporter.export(spans) is SpanExportResult.FAILURE  # after shutdown
    with pytest.raises(StoreError, match="corrupted.db"):
        TraceStore(corrupted)


def test_store_location_schema_version_and_missing_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAYGATE_STORE", f"sqlite:///{tmp_path}/env/x.db")
    assert resolve_store_path(None) == tmp_path / "env" / "x.db"
    monkeypatch.delenv("REPLAYGATE_STORE")
    assert resolve_store_path(None) == Path(".replaygate/replaygate.db")
    assert resolve_store_path("sqlite:///rel/x.db") == Path("rel/x.db")
    with pytest.raises(StoreError, match="not SQLite"):
        resolve_store_path("postgresql://host/db")
    with pytest.raises(StoreError, match="no trace store"):
        TraceStore(tmp_path / "missing.db", create=False)
    for create in (True, False):
        with pytest.raises(StoreError, match="is a directory: give the store file"):
            TraceStore(tmp_path, create=create)
    deep = tmp_path / "a" / "b" / "c.db"
    TraceStore(deep).close()
    assert deep.is_file()
    TraceStore(deep, create=False).close()
    conn = sqlite3.connect(deep)
    conn.execute("UPDATE trace_schema SET version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 99"):
        TraceStore(deep)


def _make_read_only(paths: list[Path]) -> Callable[[], None]:
    """Make ``paths`` unwritable for this process (chmod; for root, ``chattr +i``); return the undo."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in paths}
        for p in paths:
            p.chmod(0o555 if p.is_dir() else 0o444)

        def restore_modes() -> None:
            for p, mode in modes.items():
                p.chmod(mode)

        return restore_modes
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", *map(str, paths)], capture_output=True).returncode:
        pytest.skip("root, and this filesystem cannot make a file immutable: nothing is read-only to root")

    def mutable_again() -> None:
        subprocess.run([chattr, "-i", *map(str, paths)], check=True)

    return mutable_again


def test_a_read_only_store_is_named_read_only_never_damaged(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from replaygate.cli import cli

    folder = tmp_path / "mounted"
    folder.mkdir()
    path = folder / "replaygate.db"
    TraceStore(path).close()
    undo = _make_read_only([path, folder])
    try:
        out = CliRunner().invoke(cli, ["traces", "--store", str(path)])
    finally:
        undo()
    assert out.exit_code == 3, out.output
    assert "read-only for this user" in out.output and "copy the store to a writable folder" in out.output
    assert "move a damaged" not in out.output  # that advice would lose a good store
    assert "Traceback" not in out.output
