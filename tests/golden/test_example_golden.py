"""The support agent's golden set is valid, locked, and covers what the example needs."""

from __future__ import annotations

from pathlib import Path

from replaygate.replay import ToolArgsCheck, load_scenarios, select_scenarios

from replaygate.golden import GoldenSet, lint

GOLDEN = Path(__file__).resolve().parents[2] / "examples" / "support_agent" / "golden"


def test_example_golden_set_lints_clean() -> None:
    problems = lint(GoldenSet(GOLDEN))
    assert [str(p) for p in problems] == []


def test_example_golden_set_covers_the_required_cases() -> None:
    scenarios = {s.id: s for s in load_scenarios(GOLDEN)}
    assert len(scenarios) >= 12
    over = scenarios["refund-over-limit-001"]
    assert over.must_pass
    assert any(isinstance(c, ToolArgsCheck) and c.max == 200 for c in over.checks)
    assert any(c.type == "expected_label" and c.label == "escalate" for c in over.checks)  # type: ignore[union-attr]
    assert any(len(s.turns) > 1 for s in scenarios.values())
    assert any(s.status.state == "known-failure" for s in scenarios.values())
    assert any(s.judges for s in scenarios.values())
    holdout = [s for s in scenarios.values() if s.holdout]
    assert holdout and all(s.tiers == ["release"] for s in holdout)
    smoke = {s.id for s in select_scenarios(scenarios.values(), tier="smoke")}
    assert smoke and not smoke & {s.id for s in holdout}
    assert {s.id for s in holdout} <= {s.id for s in select_scenarios(scenarios.values(), tier="release")}
