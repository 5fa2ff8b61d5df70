"""A plan that can finish: the traffic a step needs, the time it takes, max_hold and its audited notice."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from replaygate.canary import CanaryController, parse_plan
from replaygate.cli import _canary, cli
from replaygate.gate import PolicyError, policy_from_mapping

HOUR_NS = 3600 * 10**9


class Clock:
    """Real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = 0

    def __call__(self) -> int:
        return time.time_ns() + self.offset


def test_max_hold_in_the_gate_policy() -> None:
    assert policy_from_mapping({"max_hold": "4h"}).max_hold == 4 * 3600
    assert policy_from_mapping({"max_hold": "30m"}).max_hold == 1800
    assert policy_from_mapping({"max_hold": 90}).max_hold == 90
    assert policy_from_mapping({"max_hold": None}).max_hold is None
    assert policy_from_mapping({}).max_hold == 86_400
    for bad in ("-1h", "soon", 0, float("nan"), float("inf"), True):
        with pytest.raises(PolicyError, match="max_hold"):
            policy_from_mapping({"max_hold": bad}, "p.yaml")


def test_a_hold_past_max_hold_is_notified_once(
    make_controller: Callable[..., CanaryController], traces: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    ctl = make_controller(min_count=30, max_hold_s=3600.0)
    ctl.clock = clock
    ctl.start("dec-pass", actor="ana", plan=parse_plan("10,50,100"))
    traces.add("baseline", 300)
    traces.add("candidate", 40)
    first = ctl.check()
    assert first.notice is None and first.status.outlook is not None and not first.status.outlook.overdue
    clock.offset = 2 * HOUR_NS
    late = ctl.check()
    assert late.status.evidence is not None and late.status.evidence.decision == "hold"
    assert late.notice is not None and late.notice.outcome == "notified"
    assert late.status.outlook is not None and late.status.outlook.overdue
    assert any("longer than max_hold (60 min)" in n for n in late.status.notes)
    entry = ctl.audit()[0]
    assert (entry.action, entry.outcome, entry.actor) == ("hold", "notified", "replaygate check")
    assert "max_hold exceeded" in entry.reason and entry.details["held_s"] >= 7200
    assert ctl.check().notice is None  # once per step
    assert [e.action for e in ctl.audit()].count("hold") == 1
    assert ctl.state().status == "canary"  # a notice changes nothing
    monkeypatch.setattr(_canary, "_controller", lambda store, policy, min_count=None: ctl)
    out = CliRunner().invoke(cli, ["canary", "status", "--json"])
    data = json.loads(out.output)
    assert data["outlook"]["overdue"] is True and data["outlook"]["max_hold_s"] == 3600.0
    assert data["evidence"]["decision"] == "hold" and data["state"]["step_started_ns"] is not None


def test_a_step_that_cannot_gather_its_traffic_suggests_the_next_share(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    clock = Clock()
    ctl = make_controller(min_count=50, max_hold_s=1.5 * 3600)
    ctl.clock = clock
    ctl.start("dec-pass", actor="ana")  # the default plan: 1% first
    started = time.time_ns()
    traces.add("baseline", 9801)
    traces.add("baseline", 99, error=True)  # errors are rare: 1 in 100
    traces.add("candidate", 99)
    traces.add("candidate", 1, error=True)
    # that took an hour (however long the inserts really took): 100 candidate requests an hour at 1%
    clock.offset = started + HOUR_NS - time.time_ns()
    status = ctl.status()
    outlook = status.outlook
    assert outlook is not None and outlook.needed is not None and outlook.eta_s is not None
    assert outlook.candidate_per_hour == pytest.approx(100, rel=0.01)
    assert outlook.fits is False and outlook.suggested_share == 0.05
    assert outlook.suggested_eta_s is not None and outlook.suggested_eta_s <= 1.5 * 3600
    assert "at 1% this step cannot gather them within max_hold; suggested next share 5%" in outlook.text
    assert outlook.text in status.notes
