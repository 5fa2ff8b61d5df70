"""A canary is judged by the tolerances and max_hold it started with, whoever looks later and how."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from replaygate.canary import BUILT_IN, CanaryController, CanaryPolicy, CanaryStore, Limit, _control
from replaygate.cli import cli
from replaygate.store import Store, versions
from tests.canary.conftest import SqlTraces
from tests.conftest import FakeDecisions, make_decision

LOOSE = """format_version: 1
guardrails:
  latency_p50: {relative: 0.90}
  latency_p95: {relative: 0.90}
max_hold: 1h
"""
STRICT = LOOSE.replace("0.90", "0.10")


def _measure(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["evidence"]["measures"] if m["name"] == name)


@pytest.fixture
def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, SqlTraces, Path, Path]:
    """A real SQLite store the CLI opens, a signed decision to start from, and two policy files."""
    monkeypatch.setattr(_control, "DecisionStore", lambda store: FakeDecisions(make_decision("dec-pass")))
    path = tmp_path / "store.db"
    traces = SqlTraces(f"sqlite:///{path}")
    loose, strict = tmp_path / "loose.yaml", tmp_path / "strict.yaml"
    loose.write_text(LOOSE)
    strict.write_text(STRICT)
    yield str(path), traces, loose, strict
    traces.close()


def test_later_commands_judge_by_the_policy_the_canary_started_with(cli_store: Any) -> None:
    store, traces, loose, strict = cli_store
    runner = CliRunner()

    def canary(*args: str) -> Any:
        return runner.invoke(cli, ["canary", *args, "--store", store])

    started = canary("start", "dec-pass", "--by", "ana", "--plan", "50,100", "--policy", str(loose))
    assert started.exit_code == 0, started.output
    traces.add("baseline", 300, latency_s=1.0)
    traces.add("candidate", 300, latency_s=1.5)  # +50% latency: beyond the defaults' 20%, within 90%

    # the cron's check passes no --policy: it must not roll back by the built-in 20%
    check = canary("check", "--json")
    doc = json.loads(check.stdout)
    assert check.exit_code == 0 and doc["rolled_back"] is False, check.output
    assert doc["policy"]["source"] == str(loose) and doc["policy"]["max_hold_s"] == 3600
    assert doc["policy"]["digest"].startswith("sha256:")
    assert _measure(doc, "latency_p50")["tolerance"] == "+90%"
    assert doc["outlook"]["max_hold_s"] == 3600  # the policy's 1h, not the default 24h
    printed = canary("status")
    assert f"tolerances: {loose}" in printed.output and "recorded when the canary started" in printed.output

    # another policy cannot widen or promote it (refused and audited) ...
    for action in ("widen", "promote"):
        refused = canary(action, "--by", "bo", "--policy", str(strict))
        assert refused.exit_code == 1, refused.output
        assert "runs under the tolerances it started with" in refused.output
        assert "latency_p50 90% relative -> 10% relative" in refused.output
    audit = json.loads(canary("audit", "--json").output)
    assert [(e["action"], e["outcome"]) for e in audit[:2]] == [("promote", "refused"), ("widen", "refused")]
    # ... and a check given it still judges by the recorded one, and says so: a rollback never waits on it
    check = canary("check", "--json", "--policy", str(strict))
    doc = json.loads(check.stdout)
    assert check.exit_code == 0 and doc["rolled_back"] is False
    assert any("not the one given" in n for n in doc["notes"])
    assert _measure(doc, "latency_p50")["tolerance"] == "+90%"
    same = json.loads(canary("status", "--json", "--policy", str(loose)).stdout)
    assert not any("not the one given" in n for n in same["notes"])

    widened = canary("widen", "--by", "ana", "--reason", "clean")
    assert widened.exit_code == 0 and "canary 100%" in widened.output, widened.output


def test_a_canary_started_without_a_policy_keeps_the_defaults(cli_store: Any) -> None:
    store, traces, loose, _ = cli_store
    runner = CliRunner()
    started = runner.invoke(cli, ["canary", "start", "dec-pass", "--plan", "50,100", "--store", store])
    assert started.exit_code == 0
    doc = json.loads(runner.invoke(cli, ["canary", "status", "--json", "--store", store]).stdout)
    assert doc["policy"]["source"] == BUILT_IN and doc["policy"]["digest"] is None
    refused = runner.invoke(cli, ["canary", "widen", "--policy", str(loose), "--store", store])
    assert refused.exit_code == 1 and "started with, from the built-in defaults;" in refused.output
    assert "max_hold 86400s -> 3600s" in refused.output
    traces.add("baseline", 300, latency_s=1.0)
    traces.add("candidate", 300, latency_s=1.5)  # the first test's traffic: beyond the defaults' 20%
    check = runner.invoke(cli, ["canary", "check", "--json", "--store", store])
    assert check.exit_code == 1 and json.loads(check.stdout)["rolled_back"] is True
    doc = json.loads(runner.invoke(cli, ["canary", "status", "--json", "--store", store]).stdout)
    assert "outlook" in doc and doc["outlook"] is None  # a key, not missing, once rolled back


def test_the_policy_is_recorded_in_the_store(make_controller: Callable[..., CanaryController]) -> None:
    """On SQLite and PostgreSQL: a controller opened later, without tolerances, reads them back."""
    first = make_controller(min_count=20)
    limits = {**first.tolerances, "latency_p50": Limit("absolute", 0.75)}
    given = CanaryController(
        first.store, first.traces, first.decisions, tolerances=limits, settings=first.settings
    )
    assert given.start("dec-pass", actor="ana").changed
    later = make_controller(min_count=20)
    state = later.state()
    assert state.policy == given.policy and state.policy is not None
    assert state.policy.limits["latency_p50"] == Limit("absolute", 0.75)
    assert later.status().policy == given.policy and later.policy_conflict(state) is None
    start = later.audit(limit=1)[0]
    assert start.action == "start"
    assert start.details["policy"]["tolerances"]["latency_p50"] == {"absolute": 0.75}
    # widen keeps it, and so do promote and rollback
    assert later.rollback(actor="bo", reason="done").changed
    assert later.state().policy == given.policy


def test_a_damaged_record_blocks_widening_never_a_rollback(tmp_path: Path) -> None:
    decisions = FakeDecisions(make_decision("dec-pass"))
    store = CanaryStore(tmp_path / "store.db")
    ctl = CanaryController(store, None, decisions)
    assert ctl.start("dec-pass", actor="ana").changed
    with store.store.write() as conn:
        damaged = '{"tolerances": {"error_rate": {"x": 1}}}'
        conn.execute(text("UPDATE canary_state SET policy = :p"), {"p": damaged})
    state = ctl.state()
    assert state.policy is None and "cannot be read" in (state.policy_error or "")
    assert any("cannot be read" in n for n in ctl.status().notes)
    widen = ctl.widen(actor="ana")
    assert widen.outcome == "refused" and "tolerances are unknown" in widen.reason
    assert ctl.rollback(actor="bo", reason="record damaged").changed
    store.close()


def test_a_version_2_store_gets_the_policy_column(store_url: str) -> None:
    """On SQLite and PostgreSQL: a canary started before the policy was recorded keeps running."""
    decisions = FakeDecisions(make_decision("dec-pass"))
    path = store_url
    store = CanaryStore(path)
    assert CanaryController(store, None, decisions).start("dec-pass", actor="ana").changed
    with store.store.write() as conn:  # back to what a version 2 store looked like
        conn.execute(text("ALTER TABLE canary_state DROP COLUMN policy"))
        conn.execute(text("UPDATE store_schema SET version = 2"))
    store.close()
    store = CanaryStore(path)
    try:
        with store.store.read() as conn:
            assert versions(conn)[1] == 3
        ctl = CanaryController(store, None, decisions)
        state = ctl.state()
        assert state.status == "canary" and state.policy is None
        assert any("started before replaygate recorded" in n for n in ctl.status().notes)
        assert ctl.policy_for(state) == ctl.policy
    finally:
        store.close()


def test_a_recorded_policy_round_trips_and_bad_records_are_refused() -> None:
    policy = CanaryPolicy.of(
        {"cost_per_request": Limit("relative", 0.1), "error_rate": Limit("absolute", 0.02)},
        None,
        "p.yaml",
        "sha256:" + "0" * 64,
    )
    assert CanaryPolicy.loads(policy.dumps()) == policy
    for bad in ("{", "[]", '{"tolerances": {}, "source": 3}', '{"tolerances": {"a": {"relative": -1}}, '
                '"source": "s"}', '{"tolerances": {}, "source": "s", "max_hold_s": NaN}'):  # fmt: skip
        with pytest.raises(ValueError):
            CanaryPolicy.loads(bad)


def test_store_schema_is_3(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    try:
        with store.read() as conn:
            assert versions(conn) == (4, 3)
    finally:
        store.close()
