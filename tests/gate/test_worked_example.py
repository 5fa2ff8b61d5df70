"""Issue 5's worked example, reproduced with the support agent (real replays, real statistics).

A candidate prompt raises the overall score but grants a refund above the $200 limit in some of the five
attempts of a must-pass scenario: the gate blocks it (rule 1). With the limit enforced in the tool the
gate passes, with no newly failing scenario and every guardrail within tolerance. Seeds make the replays
reproducible. The candidate's seed was picked among 31-40 as one whose five attempts show the story's
premise (a higher overall score, an over-limit refund in one of five attempts), which the test asserts;
the gate's outcomes played no part in the choice. Over 40 attempts a scenario, production passes 78% and
the candidate 87%.
"""

from pathlib import Path

import pytest
import yaml
from replaygate.replay import RunFile, create_judges, load_scenarios, run_suite, select_scenarios

from examples.demo_release import SEEDS  # the demo tells the same story with the same seeds
from replaygate.gate import gate_runs, load_policy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support_agent"
POLICY = ROOT / "examples" / "gate-policy.yaml"


def replay(tmp_path: Path, name: str, key: str) -> RunFile:
    config = yaml.safe_load((EXAMPLE / "configs" / f"{name}.yaml").read_text())
    config["seed"] = SEEDS[key]
    scenarios = select_scenarios(load_scenarios(EXAMPLE / "golden"), tier="release")
    return run_suite(
        scenarios,
        "examples.support_agent.target:run_session",
        config,
        repeats=5,
        concurrency=8,
        judges=create_judges("offline"),
        policy=yaml.safe_load(POLICY.read_text()),
        out_path=tmp_path / f"{key}.json",
        progress=False,
        tier="release",
        artifacts=False,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunFile]:
    tmp = tmp_path_factory.mktemp("worked")
    plan = [
        ("production", "production"),
        ("production", "production-2"),
        ("candidate", "candidate"),
        ("candidate_fixed", "candidate_fixed"),
    ]
    return {key: replay(tmp, name, key) for name, key in plan}


def test_candidate_scores_higher_but_is_blocked(runs: dict[str, RunFile]) -> None:
    report = gate_runs(load_policy(POLICY), runs["production"], runs["candidate"], runs["production-2"])
    overall = report.comparison.overall
    assert overall.head_rate is not None and overall.base_rate is not None
    assert overall.head_rate > overall.base_rate  # the overall score rises...
    assert report.outcome == "block"  # ...and still the gate blocks
    rule1 = [f for f in report.findings if f.rule == "rule-1"]
    assert [f.subject for f in rule1] == ["refund-over-limit-001"] and not rule1[0].signable
    failing = [a for a in runs["candidate"].attempts_for("refund-over-limit-001") if a.status == "fail"]
    assert 1 <= len(failing) < 5  # an intermittent failure: pass^k catches what a mean hides
    assert all(any(c.name == "tool_args" and not c.passed for c in a.checks) for a in failing)


def test_limit_enforced_in_the_tool_passes(runs: dict[str, RunFile]) -> None:
    report = gate_runs(load_policy(POLICY), runs["production"], runs["candidate_fixed"], runs["production-2"])
    assert report.outcome == "pass", [f.message for f in report.findings]
    assert report.newly_failing == []
    assert not [f for f in report.findings if f.rule == "rule-3"]  # guardrails within tolerance
    assert all(a.status != "error" for a in runs["candidate_fixed"].attempts)
    refunds = runs["candidate_fixed"].attempts_for("refund-over-limit-001")
    assert all(a.status == "pass" for a in refunds)
