"""The canary rule: tests against each tolerance, valid at every look; its words; a pinned calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import log_ndtr

from replaygate.canary import (
    DEFAULT_TOLERANCES,
    WORDS,
    ArmSummary,
    EvidenceSettings,
    Limit,
    MeanSummary,
    evaluate_evidence,
    requests_needed,
)
from replaygate.canary._calibration import Arm, simulate_rollouts
from replaygate.canary._evidence import mixture_bound

POLICY_TOLERANCES = {
    "latency_p50": Limit("relative", 0.35),
    "latency_p95": Limit("relative", 0.50),
    "escalation_rate": Limit("absolute", 0.05),
    "empty_rate": Limit("absolute", 0.02),
    "error_rate": Limit("absolute", 0.02),
    "cost_per_request": Limit("relative", 0.10),
}


def arm(n: int, *, errors: int = 0, escalated: int = 0, latency: float = 0.8, seed: int = 0) -> ArmSummary:
    """An arm with exact counts and log-normal latencies (sigma 0.3) around ``latency``."""
    rng = np.random.default_rng(seed)
    events = {"error_rate": errors, "empty_rate": 0, "escalation_rate": escalated}
    events["negative_feedback_rate"] = 0
    lat = sorted(rng.lognormal(math.log(latency), 0.3, n).tolist())
    return ArmSummary(n, events, lat, MeanSummary(n, 0.0002 * n, 0.0002**2 * n))


def test_mixture_bound_is_the_one_sided_normal_mixture() -> None:
    # independently: solve 2/sqrt(1+r) exp(r x^2 / (2(1+r))) Phi(x sqrt(r/(1+r))) = 1/alpha for x
    for variance, tau, alpha in [(1e-4, 0.05, 0.01), (1e-3, 0.02, 0.1), (0.5, 0.3, 0.05), (1e-7, 0.05, 0.05)]:
        r = tau * tau / variance

        def f(x: float, r: float = r, alpha: float = alpha) -> float:
            scale = math.sqrt(r / (1 + r))
            return (
                math.log(2) - 0.5 * math.log1p(r) + r * x * x / (2 * (1 + r)) + float(log_ndtr(x * scale))
            ) - math.log(1 / alpha)

        expected = brentq(f, 0, 1e6) * math.sqrt(variance)
        assert mixture_bound(variance, tau, alpha) == pytest.approx(expected, rel=1e-6)
    assert mixture_bound(0.0, 0.05, 0.01) == 0.0 and mixture_bound(math.inf, 0.05, 0.01) == math.inf
    assert mixture_bound(1e-4, 0.05, 0.01) > mixture_bound(1e-4, 0.05, 0.1)  # stricter level, wider


def test_the_bound_holds_at_every_look() -> None:
    # 2,000 Gaussian paths with no effect, looked at after each of 200 steps: the one-sided boundary at
    # alpha = 5% is crossed at some look on at most ~5% of paths (a fixed-sample z bound on ~40%)
    rng = np.random.default_rng(7)
    steps = rng.standard_normal((2000, 200))
    n = np.arange(1, 201)
    means = np.cumsum(steps, axis=1) / n
    bounds = np.array([mixture_bound(1.0 / k, 0.3, 0.05) for k in n])
    crossed = (means > bounds).any(axis=1).mean()
    naive = (means > 1.645 / np.sqrt(n)).any(axis=1).mean()
    assert crossed <= 0.06 and naive > 0.25


def test_words_match_the_rule() -> None:
    base = arm(20_000, errors=200, escalated=2000)
    within = evaluate_evidence(base, arm(4000, errors=40, escalated=400, seed=1), POLICY_TOLERANCES)
    assert within.decision == "widen" and within.can_widen
    esc = within.measure("escalation_rate")
    assert esc.verdict == "within" and WORDS["within"] in esc.words
    assert esc.upper is not None and esc.upper <= 0.05
    worse = evaluate_evidence(base, arm(4000, errors=40, escalated=800, seed=2), POLICY_TOLERANCES)
    esc = worse.measure("escalation_rate")
    assert worse.decision == "rollback" and esc.verdict == "worse" and esc.lower is not None
    assert esc.lower > 0.05 and "escalation rate is confidently worse than the tolerance" in worse.breaches[0]
    early = evaluate_evidence(base, arm(80, errors=1, escalated=8, seed=3), POLICY_TOLERANCES)
    err = early.measure("error_rate")
    assert early.decision == "hold" and err.verdict == "undecided" and err.needed is not None
    assert f"error rate is not yet decided (needs ~{err.needed} more candidate requests)" in early.reason
    assert early.needed is not None and early.needed >= err.needed
    data = early.to_json()
    assert data["decision"] == "hold" and data["measures"][0]["verdict_words"] == WORDS["undecided"]


def test_needs_about_n_more_is_about_right() -> None:
    # at a 10% share with the same rates, N more candidate requests (and 9N baseline) decide it
    base, cand = arm(900, errors=9, escalated=90), arm(100, errors=1, escalated=10, seed=1)
    early = evaluate_evidence(base, cand, POLICY_TOLERANCES, share=0.1)
    n = early.needed
    assert early.decision == "hold" and n is not None and 100 < n < 5000
    scale = 1 + n / 100
    later = evaluate_evidence(
        arm(round(900 * scale), errors=round(9 * scale), escalated=round(90 * scale)),
        arm(100 + n, errors=round(scale), escalated=round(10 * scale), seed=1),
        POLICY_TOLERANCES,
        share=0.1,
    )
    assert later.decision == "widen", later.reason
    before = evaluate_evidence(
        arm(900 + 9 * n // 2, errors=9 + 9 * n // 200, escalated=90 + 9 * n // 20),
        arm(100 + n // 2, errors=1 + n // 200, escalated=10 + n // 20, seed=1),
        POLICY_TOLERANCES,
        share=0.1,
    )
    assert before.decision == "hold"  # half of it is not enough
    # a fresh step at 50% needs fewer candidate requests than one at 1% (the baseline arm is smaller there,
    # but a 1% step's candidate arm is the bottleneck either way): both are finite
    assert requests_needed(base, cand, POLICY_TOLERANCES, share=0.5) is not None


def test_relative_latency_is_judged_on_the_ratio() -> None:
    base = arm(9000, latency=0.8)
    # +30% against a 35% tolerance: never confidently worse, however much traffic
    near = evaluate_evidence(base, arm(3000, latency=0.8 * 1.30, seed=4), POLICY_TOLERANCES)
    assert near.measure("latency_p50").verdict != "worse" and not near.breached
    p50 = near.measure("latency_p50")
    assert p50.relative and p50.estimate == pytest.approx(0.30, abs=0.04) and p50.tolerance == "+35%"
    far = evaluate_evidence(base, arm(300, latency=0.8 * 1.70, seed=5), POLICY_TOLERANCES)
    assert far.breached and far.measure("latency_p50").verdict == "worse"


def test_a_few_rare_events_on_a_small_arm_hold_and_a_gross_rise_rolls_back() -> None:
    settings = EvidenceSettings()
    two_in_95 = evaluate_evidence(arm(900, errors=5), arm(95, errors=2, seed=1), DEFAULT_TOLERANCES, settings)
    assert not two_in_95.breached and two_in_95.measure("error_rate").verdict == "undecided"
    rise = evaluate_evidence(
        arm(3600, escalated=360), arm(400, escalated=80, seed=1), DEFAULT_TOLERANCES, settings
    )
    esc = rise.measure("escalation_rate")
    assert rise.breached and esc.gross and "gross-harm guard" in esc.words


def test_cost_unknown_is_not_checked_never_zero() -> None:
    base = arm(500)
    cand = ArmSummary(100, dict(arm(100).events), arm(100).latencies, None, cost_unknown=100)
    ev = evaluate_evidence(base, cand, POLICY_TOLERANCES)
    assert ev.measure("cost_per_request").verdict == "unchecked"
    assert any("unknown price" in n for n in ev.notes)


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="rollback_alpha"):
        EvidenceSettings(rollback_alpha=0.0)
    with pytest.raises(ValueError, match="guard_factor"):
        EvidenceSettings(guard_factor=1.0)


def test_calibration_cell_pinned() -> None:
    """A small cell of bench/canary_calibration.py: fixed seeds, 100 looks, the 10/25/50/100 plan."""
    plan = (0.10, 0.25, 0.50, 1.0)
    equal = simulate_rollouts(Arm(), Arm(), POLICY_TOLERANCES, plan=plan, rollouts=30)
    assert equal.share("rolled_back") == 0.0 and equal.share("widened") >= 0.95
    twice = simulate_rollouts(Arm(), Arm(escalation_rate=0.20), POLICY_TOLERANCES, plan=plan, rollouts=30)
    median = twice.median_requests("rolled_back")
    assert twice.share("rolled_back") >= 0.95 and median is not None and median <= 300
    slow = simulate_rollouts(Arm(), Arm(latency_s=0.8 * 1.7), POLICY_TOLERANCES, plan=plan, rollouts=30)
    assert slow.share("rolled_back") == 1.0
    half = simulate_rollouts(
        Arm(), Arm(escalation_rate=0.125), POLICY_TOLERANCES, plan=plan, rollouts=10, looks=60
    )
    assert half.share("rolled_back") == 0.0
