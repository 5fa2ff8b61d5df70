"""Selection by tier, tags, status and origin; the holdout rule; what counts in the gate."""

from __future__ import annotations

import datetime as dt
from typing import Any

from replaygate.replay._scenario import (
    KnownFailureStatus,
    QuarantinedStatus,
    RetiredStatus,
    Scenario,
)
from replaygate.replay._selection import counts_in_gate, select_scenarios


def make(id: str, **kw: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": id,
        "title": id,
        "owner": "alice",
        "origin": "original-eval",
        "added": dt.date(2026, 11, 1),
        "turns": ["hi"],
        "tiers": ["smoke", "release", "scheduled"],
    }
    data.update(kw)
    return Scenario.model_validate(data)


Q = QuarantinedStatus(owner="bob", until=dt.date(2026, 12, 31), reason="flaky")
SET = [
    make("a-active", tags={"dimension": "safety"}),
    make("b-holdout", holdout=True),
    make("c-retired", status=RetiredStatus(reason="obsolete", date=dt.date(2026, 11, 2))),
    make("d-known", status=KnownFailureStatus(reason="bug 12")),
    make("e-quarantined", status=Q),
    make("f-quarantined-must", status=Q, must_pass=True),
    make("g-release-only", tiers=["release"], origin="production-incident", tags={"dimension": "tone"}),
]


def ids(scenarios: list[Scenario]) -> list[str]:
    return [s.id for s in scenarios]


def test_holdout_only_in_release_and_scheduled() -> None:
    assert "b-holdout" not in ids(select_scenarios(SET, tier="smoke"))
    assert "b-holdout" not in ids(select_scenarios(SET))
    assert "b-holdout" in ids(select_scenarios(SET, tier="release"))
    assert "b-holdout" in ids(select_scenarios(SET, tier="scheduled"))


def test_tier_filter() -> None:
    assert "g-release-only" not in ids(select_scenarios(SET, tier="smoke"))
    assert "g-release-only" in ids(select_scenarios(SET, tier="release"))


def test_retired_only_when_asked_and_known_failure_visible() -> None:
    default = ids(select_scenarios(SET, tier="release"))
    assert "c-retired" not in default
    assert {"d-known", "e-quarantined", "f-quarantined-must"} <= set(default)
    assert ids(select_scenarios(SET, tier="release", statuses=["retired"])) == ["c-retired"]


def test_tags_and_origins() -> None:
    assert ids(select_scenarios(SET, tier="release", tags={"dimension": "safety"})) == ["a-active"]
    assert ids(select_scenarios(SET, tier="release", origins=["production-incident"])) == ["g-release-only"]
    assert select_scenarios(SET, tier="release", tags={"dimension": "nope"}) == []


def test_counts_in_gate() -> None:
    by_id = {s.id: s for s in SET}
    assert counts_in_gate(by_id["a-active"])
    assert counts_in_gate(by_id["d-known"])
    assert not counts_in_gate(by_id["e-quarantined"])
    assert counts_in_gate(by_id["f-quarantined-must"])
    assert not counts_in_gate(by_id["c-retired"])
