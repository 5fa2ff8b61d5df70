"""The whole gate, simulated as a team sees it (fixed seeds, the real compare + rules, the example policy).

A small cell of ``bench/gate_calibration.py``: 12 scenarios x k=5 with two must-pass scenarios that never
fail. Before "newly failing" meant "beyond noise" this cell asked for a signature in 64% of no-change
releases.
"""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from replaygate.gate import SimulatedSuite, heterogeneous_suite, load_policy, simulate_gate

POLICY = load_policy(Path(__file__).resolve().parents[2] / "examples" / "gate-policy.yaml")


def test_no_change_rarely_asks_for_a_signature_and_rarely_blocks() -> None:
    rng = np.random.default_rng(17)
    sims = 20
    outcomes = Counter(
        simulate_gate(heterogeneous_suite(12, 5, rng, must_pass=2), POLICY, rng).outcome for _ in range(sims)
    )
    assert outcomes["needs-sign-off"] / sims <= 0.10
    assert outcomes["block"] / sims <= 0.05
    assert outcomes["pass"] >= 0.85 * sims


def test_the_seed_collapse_never_passes() -> None:
    rng = np.random.default_rng(18)
    base = (1.0,) * 9 + (0.8, 0.8, 0.0)
    suite = SimulatedSuite(base_rates=base, head_rates=(0.0,) * 3 + base[3:], k=5)
    reports = [simulate_gate(suite, POLICY, rng) for _ in range(6)]
    assert all(r.outcome != "pass" for r in reports)
    assert all({"sim-001", "sim-002", "sim-003"} <= set(r.newly_failing) for r in reports)


def test_a_reliable_must_pass_scenario_failing_one_of_five_always_blocks() -> None:
    rng = np.random.default_rng(19)
    for _ in range(5):
        report = simulate_gate(heterogeneous_suite(12, 5, rng, must_pass=2), POLICY, rng, fixed_head={0: 4})
        assert report.outcome == "block" and report.rule1_fired
        assert [f.subject for f in report.findings if f.rule == "rule-1"] == ["sim-001"]


def test_a_simulated_suite_is_validated() -> None:
    with pytest.raises(ValueError, match="same scenarios"):
        SimulatedSuite(base_rates=(1.0,), head_rates=(1.0, 0.5), k=5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        SimulatedSuite(base_rates=(1.5,), head_rates=(1.0,), k=5)
