"""Tail sampling: every failing trace is kept whatever the ratio; the ratio applies to the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation import (
    InstrumentationError,
    TraceStore,
    configure,
    mark_escalation,
    shutdown,
    tool_call,
    trace_agent,
)


def test_failures_are_never_sampled_away(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    provider = TracerProvider()
    configure(store=db, sample_ratio=0.1, tracer_provider=provider)

    @trace_agent(name="agent")
    def answer(i: int) -> str:
        with tool_call("lookup", {"i": i}) as t:
            t.set_result({"ok": True})
        if i % 3 == 0:
            return ""  # empty answer: a failure
        if i % 3 == 1:
            mark_escalation("needs a person")
        return "fine"

    for i in range(300):
        answer(i)
    assert shutdown(10)
    with TraceStore(db) as store:
        failures = store.failures(limit=None)
        assert len(failures) == 200  # all 100 empty answers and all 100 escalations
        assert all(len(r.spans) == 2 for r in failures)  # with their child spans
        kept_ok = store.count() - len(failures)
    assert 0 < kept_ok < 30  # about 10% of the 100 good ones


def test_an_agent_cannot_write_a_postgres_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAYGATE_STORE", "postgresql+psycopg://u:secret@db/rg")
    with pytest.raises(InstrumentationError, match="replaygate collect") as caught:
        configure(tracer_provider=TracerProvider())
    assert "secret" not in str(caught.value)


def test_drops_are_shown_by_replaygate_traces(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from replaygate.instrumentation import health

    from replaygate.cli import cli

    db = tmp_path / "s.db"
    before = health()["exporters"].get("store", {}).get("dropped_spans", 0)
    configure(store=db, tracer_provider=TracerProvider(), max_queue_size=4, schedule_delay_s=5)

    @trace_agent(name="agent")
    def answer(i: int) -> str:
        return "fine"

    for i in range(200):
        answer(i)
    shutdown(10)
    dropped = health()["exporters"]["store"]["dropped_spans"] - before
    assert dropped > 0
    result = CliRunner().invoke(cli, ["traces", "--store", str(db)])
    assert result.exit_code == 0 and f"agents dropped {dropped} spans" in result.output
    as_json = CliRunner().invoke(cli, ["traces", "--store", str(db), "--json"])
    assert '"dropped_spans": ' + str(dropped) in as_json.output
