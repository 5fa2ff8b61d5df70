"""The controller over a real store: signed starts, evidence, automatic rollback, audit, concurrency."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replaygate.canary import CanaryController, CanaryError, CanaryStore, parse_plan
from replaygate.canary._machine import rollback


def test_only_a_signed_pass_starts(make_controller: Callable[..., CanaryController]) -> None:
    ctl = make_controller()
    refused = ctl.start("dec-block", actor="ana")
    assert refused.outcome == "refused" and "only a signed pass" in refused.reason
    with pytest.raises(CanaryError, match="not found"):
        ctl.start("nope", actor="ana")
    t = ctl.start("dec-pass", actor="ana", reason="gate passed")
    assert t.outcome == "applied"
    state = ctl.state()
    assert state.status == "canary" and state.share == 0.01 and state.version == 1
    assert (state.baseline_config_id, state.candidate_config_id) == ("production", "candidate-fixed")
    assert [e.outcome for e in ctl.audit()] == ["applied", "refused"]


def test_widen_refused_with_reason_then_allowed(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    ctl = make_controller(min_count=30)
    ctl.start("dec-pass", actor="ana", plan=parse_plan("10,50,100"))
    t = ctl.widen(actor="ana")
    assert t.outcome == "refused" and "not enough traffic yet: 0 candidate and 0 baseline" in t.reason
    traces.add("baseline", 300)
    traces.add("candidate", 40)
    t = ctl.widen(actor="ana", reason="too early")
    assert t.outcome == "refused" and "error rate is not yet decided (needs ~" in t.reason
    traces.add("baseline", 1500)
    traces.add("candidate", 200)
    t = ctl.widen(actor="ana", reason="looks fine")
    assert t.outcome == "applied" and ctl.state().share == 0.5
    # the new step's window starts empty
    status = ctl.status()
    assert status.measures is not None and status.measures.candidate.n == 0
    audit = ctl.audit()
    assert audit[0].action == "widen" and audit[0].actor == "ana" and audit[0].reason == "looks fine"
    assert (
        audit[0].from_state == "canary 10% (step 1 of 3)" and audit[0].to_state == "canary 50% (step 2 of 3)"
    )


def test_check_rolls_back_a_breach_and_says_why(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    ctl = make_controller(min_count=50)
    ctl.start("dec-pass", actor="ana", plan=parse_plan("25,100"))
    traces.add("baseline", 600, escalated=False)
    traces.add("candidate", 150, escalated=True)
    traces.add("candidate", 150)
    result = ctl.check()
    assert result.breached and result.rollback is not None and result.rollback.changed
    assert "automatic rollback: escalation rate is confidently worse than the tolerance" in (
        result.rollback.reason
    )
    assert ctl.state().status == "rolled_back"
    assert ctl.audit()[0].actor == "replaygate check"
    # after the rollback, the status still shows the rolled-back step's measures (why it was rolled back)
    traces.add("baseline", 100)  # traffic after the rollback is not in that window
    after = ctl.status()
    assert (
        after.measures is not None and after.measures.candidate.n == 300 and after.measures.baseline.n == 600
    )
    # checking again is quiet: nothing left to roll back
    again = ctl.check()
    assert again.rollback is None


def test_check_reports_without_rollback_when_switched_off(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    ctl = make_controller(min_count=50)
    ctl.start("dec-pass", actor="ana", plan=parse_plan("25,100"), auto_rollback=False)
    traces.add("baseline", 300)
    traces.add("candidate", 100, error=True)
    result = ctl.check()
    assert result.breached and result.rollback is None and ctl.state().status == "canary"


def test_rollback_and_promote_are_idempotent(make_controller: Callable[..., CanaryController]) -> None:
    ctl = make_controller()
    ctl.start("dec-pass", actor="ana", plan=parse_plan("100"))
    assert ctl.promote(actor="ana").outcome == "applied"
    assert ctl.promote(actor="bo").outcome == "noop"
    assert ctl.state().status == "promoted"
    assert ctl.rollback(actor="ana", reason="bug").outcome == "applied"
    assert ctl.rollback(actor="bo", reason="bug").outcome == "noop"
    entries = ctl.audit()
    assert [(e.action, e.outcome, e.actor) for e in entries] == [
        ("rollback", "noop", "bo"),
        ("rollback", "applied", "ana"),
        ("promote", "noop", "bo"),
        ("promote", "applied", "ana"),
        ("start", "applied", "ana"),
    ]


def test_audit_log_is_append_only(tmp_path: Path) -> None:
    import sqlite3

    store = CanaryStore(tmp_path / "s.db")
    store.apply(lambda s: rollback(s, now_ns=1, reason="nothing"), actor="x")
    store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE canary_audit SET actor = 'mallory'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM canary_audit")
    finally:
        conn.close()


def _race(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def run(i: int, fn: Callable[[], Any]) -> None:
        barrier.wait()
        results[i] = fn()

    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results[0], results[1]


def test_concurrent_rollback_and_widen_threads(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    traces.add("baseline", 200)
    for round_ in range(5):
        ctl_a, ctl_b = make_controller(min_count=10), make_controller(min_count=10)
        ctl_a.start("dec-pass", actor="ana", plan=parse_plan("10,50,100"))
        traces.add("candidate", 20)
        traces.add("baseline", 200)
        rolled, widened = _race(
            lambda a=ctl_a, r=round_: a.rollback(actor="ana", reason=f"r{r}"),  # type: ignore[misc]
            lambda b=ctl_b: b.widen(actor="bo"),  # type: ignore[misc]
        )
        state = ctl_a.state()
        assert state.status == "rolled_back"  # the rollback always wins in the end
        assert rolled.outcome == "applied"
        applied = 1 + 1 + (widened.outcome == "applied")  # start, rollback, maybe widen
        rollout = [e for e in ctl_a.audit(limit=50) if e.rollout_id == state.rollout_id]
        assert {"rollback", "widen"} <= {e.action for e in rollout}
        assert sum(e.outcome == "applied" for e in rollout) == applied
        assert state.version == ctl_b.state().version


_WORKER = """
import sys, time
from replaygate.canary import CanaryStore
from replaygate.canary._machine import rollback, widen
path, action = sys.argv[1], sys.argv[2]
store = CanaryStore(path)
print("ready", flush=True)
sys.stdin.readline()  # the parent says go when both are ready
if action == "rollback":
    t = store.apply(lambda s: rollback(s, now_ns=2, reason="proc"), actor="proc-rollback")
else:
    t = store.apply(lambda s: widen(s, now_ns=2, evidence_ok=True, evidence_reason=""), actor="proc-widen")
print(t.outcome, flush=True)
store.close()
"""


def test_concurrent_rollback_and_widen_processes(tmp_path: Path) -> None:
    from replaygate.canary._machine import start

    path = str(tmp_path / "p.db")
    store = CanaryStore(path)
    store.apply(
        lambda s: start(
            s, rollout_id="r", decision_id="d", decision_outcome="pass", baseline_config_id="b",
            candidate_config_id="c", salt="x", now_ns=1, plan=(0.1, 0.5, 1.0),
        ),
        actor="t",
    )  # fmt: skip
    procs = {
        a: subprocess.Popen(
            [sys.executable, "-c", _WORKER, path, a], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for a in ("rollback", "widen")
    }
    for p in procs.values():  # both imported and opened the store
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outcomes = {a: p.communicate(timeout=90)[0].strip() for a, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values())
    assert outcomes["rollback"] == "applied"
    state = store.load()
    assert state.status == "rolled_back"
    entries = store.audit()
    assert {e.actor for e in entries} >= {"proc-rollback", "proc-widen"}
    applied = [e for e in entries if e.outcome == "applied"]
    assert state.version == len(applied)  # one version per applied action: none lost or doubled
    store.close()


def test_groundedness_is_sampled_with_the_offline_judge(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    from replaygate.instrumentation import Chunk

    text = "Orders ship within 2 business days from our Berlin warehouse."
    doc = (Chunk("shipping#1", 0.9, 1, text),)
    ctl = make_controller(min_count=5, groundedness_sample=10)
    ctl.start("dec-pass", actor="ana")
    traces.add(
        "baseline", 20, chunks=doc, output="Orders ship within 2 business days from our Berlin warehouse."
    )
    traces.add("candidate", 20, chunks=doc, output="Orders ship within 9 days from our Paris warehouse.")
    status = ctl.status()
    assert status.measures is not None
    g = status.measures.diff("groundedness")
    assert status.measures.baseline.groundedness_n == 10 and status.measures.candidate.groundedness_n == 10
    assert g.baseline is not None and g.candidate is not None and g.baseline > g.candidate
    assert g.worsening is not None and g.worsening > 0
