"""The pure rollout state machine and plan parsing."""

from __future__ import annotations

import pytest

from replaygate.canary import DEFAULT_PLAN, RolloutState, parse_plan
from replaygate.canary._machine import promote, rollback, start, widen


def _started(outcome: str = "pass", plan: tuple[float, ...] = DEFAULT_PLAN) -> tuple[RolloutState, str]:
    t = start(
        RolloutState(),
        rollout_id="r1",
        decision_id="d1",
        decision_outcome=outcome,
        baseline_config_id="b",
        candidate_config_id="c",
        salt="x",
        now_ns=10,
        plan=plan,
    )
    return t.after, t.outcome


def test_start_needs_a_signed_pass() -> None:
    state, outcome = _started("pass")
    assert outcome == "applied" and state.status == "canary" and state.share == 0.01
    assert _started("pass-with-sign-off")[1] == "applied"
    blocked, outcome = _started("block")
    assert outcome == "refused" and blocked.status == "idle"
    t = start(
        state, rollout_id="r2", decision_id="d2", decision_outcome="pass", baseline_config_id="b",
        candidate_config_id="c", salt="y", now_ns=11,
    )  # fmt: skip
    assert t.outcome == "refused" and "already running" in t.reason


def test_widen_steps_through_the_plan_only_on_evidence() -> None:
    state, _ = _started()
    refused = widen(state, now_ns=20, evidence_ok=False, evidence_reason="not enough traffic yet")
    assert (
        refused.outcome == "refused" and refused.reason == "not enough traffic yet" and refused.after == state
    )
    shares = [state.share]
    while not state.at_final_step:
        t = widen(state, now_ns=30, evidence_ok=True, evidence_reason="")
        assert t.outcome == "applied" and t.after.step_started_ns == 30
        state = t.after
        shares.append(state.share)
    assert shares == [0.01, 0.05, 0.25, 0.5, 1.0]
    last = widen(state, now_ns=40, evidence_ok=True, evidence_reason="")
    assert last.outcome == "refused" and "promote" in last.reason


def test_promote_from_last_step_or_on_evidence() -> None:
    state, _ = _started(plan=(0.5, 1.0))
    assert promote(state, now_ns=1, evidence_ok=False, evidence_reason="why").outcome == "refused"
    t = promote(state, now_ns=1, evidence_ok=True, evidence_reason="")
    assert t.outcome == "applied" and t.after.status == "promoted" and t.after.share == 1.0
    assert promote(t.after, now_ns=2, evidence_ok=False, evidence_reason="").outcome == "noop"
    final = widen(state, now_ns=1, evidence_ok=True, evidence_reason="").after
    assert promote(final, now_ns=3, evidence_ok=False, evidence_reason="x").outcome == "applied"
    assert promote(RolloutState(), now_ns=1, evidence_ok=True, evidence_reason="").outcome == "refused"


def test_rollback_is_idempotent_and_always_allowed() -> None:
    state, _ = _started()
    t = rollback(state, now_ns=5, reason="complaints")
    assert t.outcome == "applied" and t.after.status == "rolled_back" and t.after.share == 0.0
    assert t.after.reason == "complaints"
    again = rollback(t.after, now_ns=6, reason="again")
    assert again.outcome == "noop" and again.after == t.after
    assert rollback(RolloutState(), now_ns=1, reason="").outcome == "noop"
    promoted = promote(state, now_ns=1, evidence_ok=True, evidence_reason="").after
    assert rollback(promoted, now_ns=2, reason="late bug").after.status == "rolled_back"
    # a new rollout may start after a rollback
    restarted = start(
        t.after, rollout_id="r2", decision_id="d", decision_outcome="pass", baseline_config_id="b",
        candidate_config_id="c", salt="z", now_ns=9,
    )  # fmt: skip
    assert restarted.outcome == "applied" and restarted.after.rollout_id == "r2"


def test_labels() -> None:
    state, _ = _started()
    assert state.label() == "canary 1% (step 1 of 5)"
    assert state.next_share == 0.05
    assert RolloutState(status="rolled_back").label() == "rolled back"


def test_parse_plan() -> None:
    assert parse_plan("1,5,25,50,100") == DEFAULT_PLAN
    assert parse_plan([10, 100]) == (0.1, 1.0)
    for bad in ("", "5,1,100", "1,5,50", "0,100", "1,x,100", "50,150"):
        with pytest.raises(ValueError):
            parse_plan(bad)
