"""``replaygate traces``, ``trace`` and ``failures`` through click's CliRunner."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Tracer
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._store import StoreSpanExporter, TraceStore

from replaygate.cli import _traces, main

HOSTILE_INPUT = "hi <script>alert(1)</script> [bold red]not markup[/bold red]"
HOSTILE_OUTPUT = "[link=http://evil]click[/link] <b>&amp;</b> [/] \x1b[31mred"


def agent(tracer: Tracer, question: str, answer: str, session: str, **flags: object) -> str:
    attrs = {
        sc.OPERATION_NAME: "invoke_agent",
        sc.AGENT_NAME: "support",
        sc.OI_INPUT_VALUE: question,
        sc.CONVERSATION_ID: session,
    }
    with tracer.start_as_current_span("invoke_agent support", attributes=attrs) as span:
        docs = [{"id": "doc-refunds", "score": 0.8}, {"id": "doc-returns", "score": 0.5}]
        retrieval = {sc.OPERATION_NAME: "retrieval", sc.RETRIEVAL_DOCUMENTS: json.dumps(docs)}
        with tracer.start_as_current_span("retrieval kb", attributes=retrieval):
            pass
        tool = {sc.OPERATION_NAME: "execute_tool", sc.TOOL_NAME: "issue_refund", sc.TOOL_CALL_ARGUMENTS: "{}"}
        with tracer.start_as_current_span("execute_tool issue_refund", attributes=tool):
            pass
        span.set_attribute(sc.OI_OUTPUT_VALUE, answer)
        if flags.get("escalate"):
            span.set_attribute(sc.RG_ESCALATION, True)
        if flags.get("note"):
            span.set_attribute(sc.RG_FAILURE_REASONS, ("explicit",))
            span.set_attribute(sc.RG_FAILURE_REASON, str(flags["note"]))
        trace_id = format(span.get_span_context().trace_id, "032x")
    time.sleep(0.002)  # distinct start times: newest-first order is well defined
    return trace_id


@pytest.fixture()
def store(tmp_path: Path) -> tuple[Path, list[str]]:
    db = tmp_path / "cli.db"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(StoreSpanExporter(db)))
    tracer = provider.get_tracer("test")
    ids = [
        agent(tracer, "where is my order?", "It ships today.", "s-1"),
        agent(tracer, HOSTILE_INPUT, HOSTILE_OUTPUT, "s-2", escalate=True),
        agent(tracer, "refund please", "", "s-2"),
        agent(tracer, "cancel it", "Cancelled.", "s-3", note="wrong order cancelled"),
    ]
    provider.shutdown()
    with TraceStore(db) as trace_store:
        trace_store.record_feedback(ids[0], -0.5, "not helpful")
    return db, ids


def run(*args: str) -> Result:
    group = click.Group()
    _traces.register(group)
    return CliRunner(env={"COLUMNS": "220"}).invoke(group, list(args), catch_exceptions=False)


def test_private_all_is_pinned() -> None:
    assert sorted(_traces.__all__) == [
        "JSON_FORMAT_VERSION",
        "is_store_source",
        "open_traces",
        "parse_since",
        "register",
        "source_label",
        "source_option",
        "trace_to_json",
    ]


def test_traces_table_prints_model_output_literally(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    result = run("traces", "--store", str(db))
    assert result.exit_code == 0, result.output
    for trace_id in ids:
        assert trace_id in result.output
    assert "<script>alert(1)</script>" in result.output
    assert "[bold red]not markup[/bold red]" in result.output
    assert "[link=http://evil]click[/link]" in result.output
    assert "\x1b" not in result.output
    assert result.output.index(ids[3]) < result.output.index(ids[0])  # newest first
    assert "negative_feedback" in result.output and "escalation" in result.output
    limited = run("traces", "--store", str(db), "--limit", "1")
    assert ids[3] in limited.output and ids[2] not in limited.output


def test_traces_json_and_filters(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    data = json.loads(run("traces", "--store", str(db), "--json").output)
    assert data["format_version"] == 1 and data["store"] == str(db)
    assert [t["trace_id"] for t in data["traces"]] == ids[::-1]
    hostile = data["traces"][2]
    assert hostile["turns"] == [HOSTILE_INPUT] and hostile["output"] == HOSTILE_OUTPUT
    assert hostile["failure_reasons"] == ["escalation"] and hostile["escalated"] is True
    assert data["traces"][0]["failure_note"] == "wrong order cancelled"
    assert data["traces"][3]["feedback"][0]["comment"] == "not helpful"
    session = json.loads(run("traces", "--store", str(db), "--session", "s-2", "--json").output)
    assert [t["trace_id"] for t in session["traces"]] == [ids[2], ids[1]]
    assert json.loads(run("traces", "--store", str(db), "--since", "1h", "--json").output)["traces"]
    future = json.loads(run("traces", "--store", str(db), "--since", "2999-01-01", "--json").output)
    assert future["traces"] == []


def test_trace_shows_tree_chunks_and_tool_calls(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    result = run("trace", ids[1], "--store", str(db))
    assert result.exit_code == 0, result.output
    assert ids[1] in result.output
    assert HOSTILE_INPUT in result.output
    assert "[link=http://evil]click[/link] <b>&amp;</b> [/]" in result.output
    assert "\x1b" not in result.output  # control characters from model output are not passed through
    for text in ("invoke_agent support", "retrieval kb", "execute_tool issue_refund", "doc-refunds", "0.800"):
        assert text in result.output
    assert "└──" in result.output or "├──" in result.output  # a tree
    by_prefix = run("trace", ids[1][:10], "--store", str(db), "--json")
    detail = json.loads(by_prefix.output)["trace"]
    assert detail["trace_id"] == ids[1]
    assert [(c["id"], c["score"], c["rank"]) for c in detail["chunks"]] == [
        ("doc-refunds", 0.8, 1),
        ("doc-returns", 0.5, 2),
    ]
    assert [t["name"] for t in detail["tool_calls"]] == ["issue_refund"]
    assert len(detail["spans"]) == 3 and {s["kind"] for s in detail["spans"]} == {
        "agent",
        "retrieval",
        "tool",
    }


def test_failures_inbox_filters(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    data = json.loads(run("failures", "--store", str(db), "--json").output)
    assert [(t["trace_id"], t["failure_reasons"]) for t in data["traces"]] == [
        (ids[3], ["explicit"]),
        (ids[2], ["empty_answer"]),
        (ids[1], ["escalation"]),
        (ids[0], ["negative_feedback"]),
    ]
    picked = run(
        "failures", "--store", str(db), "--reason", "escalation", "--reason", "negative_feedback", "--json"
    )
    assert [t["trace_id"] for t in json.loads(picked.output)["traces"]] == [ids[1], ids[0]]
    limited = json.loads(run("failures", "--store", str(db), "--limit", "2", "--json").output)
    assert [t["trace_id"] for t in limited["traces"]] == [ids[3], ids[2]]
    table = run("failures", "--store", str(db), "--reason", "escalation", "--since", "30m")
    assert table.exit_code == 0 and ids[1] in table.output and ids[2] not in table.output
    assert "<script>alert(1)</script>" in table.output
    empty = run("failures", "--store", str(db), "--since", datetime(2999, 1, 1, tzinfo=UTC).isoformat())
    assert empty.exit_code == 0 and "no failure candidates" in empty.output


def test_missing_store_unknown_trace_and_bad_since(tmp_path: Path, store: tuple[Path, list[str]]) -> None:
    db, _ = store
    missing = run("traces", "--store", str(tmp_path / "nowhere.db"))
    assert missing.exit_code == 3 and "no trace store" in missing.output and "Traceback" not in missing.output
    assert not (tmp_path / "nowhere.db").exists()
    unknown = run("trace", "0" * 32, "--store", str(db))
    assert unknown.exit_code == 3 and "0" * 32 in unknown.output
    with pytest.raises(SystemExit) as exited:
        main(["failures", "--store", str(db), "--since", "yesterday"])
    assert exited.value.code == 3
    with pytest.raises(SystemExit) as exited:
        main(["failures", "--store", str(tmp_path / "nowhere.db")])
    assert exited.value.code == 3


def test_parse_since() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    hour_ns = 3600 * 10**9
    noon_ns = int(now.timestamp()) * 10**9
    assert _traces.parse_since("2h", now) == noon_ns - 2 * hour_ns
    assert _traces.parse_since("30m", now) == noon_ns - hour_ns // 2
    assert _traces.parse_since("1d", now) == noon_ns - 24 * hour_ns
    assert _traces.parse_since("2026-11-29T11:00:00Z", now) == noon_ns - hour_ns
    assert _traces.parse_since("2026-11-29T11:00", now) == noon_ns - hour_ns
    with pytest.raises(click.BadParameter):
        _traces.parse_since("last week", now)
    # a duration reaching back before 1970 means every trace (it used to raise OverflowError)
    assert _traces.parse_since("1000000d", now) == 0
    assert _traces.parse_since("99999999999d", now) == 0
    assert _traces.parse_since("9" * 400 + "w", now) == 0
    assert _traces.parse_since("20000d", now) == noon_ns - 20000 * 24 * hour_ns
