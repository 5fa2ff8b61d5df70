"""Live measures, their intervals and tests, and the tolerances read from the gate policy."""

from __future__ import annotations

import pytest

from replaygate.canary import (
    DEFAULT_TOLERANCES,
    Limit,
    RequestSample,
    compute_live_measures,
    tolerances_from_policy,
)
from replaygate.canary._measures import arm_measures, failure_series


def _samples(n: int, *, escalated: int = 0, errors: int = 0, latency: float = 1.0, cost: float | None = 0.001,
             start: int = 0) -> list[RequestSample]:  # fmt: skip
    return [
        RequestSample(
            start_ns=start + i,
            error=i < errors,
            empty=False,
            escalated=errors <= i < errors + escalated,
            negative_feedback=False,
            latency_s=latency + (i % 10) * 0.01,
            cost_usd=cost,
        )
        for i in range(n)
    ]


def test_arm_rates_and_quantiles() -> None:
    arm = arm_measures(_samples(100, escalated=10, errors=5))
    assert arm.n == 100
    assert arm.rates["escalation_rate"] == pytest.approx(0.10)
    assert arm.rates["error_rate"] == pytest.approx(0.05)
    assert arm.latency_p50 == pytest.approx(1.045)
    assert arm.cost_per_request == pytest.approx(0.001)
    empty = arm_measures([])
    assert empty.n == 0 and empty.rates["error_rate"] is None and empty.latency_p50 is None


def test_unknown_price_is_none_never_zero() -> None:
    samples = _samples(10) + _samples(1, cost=None)
    arm = arm_measures(samples)
    assert arm.cost_per_request is None and arm.cost_unknown == 1


def test_differences_have_intervals_and_tests() -> None:
    m = compute_live_measures(_samples(400, escalated=40), _samples(400, escalated=80, latency=1.5))
    esc = m.diff("escalation_rate")
    assert esc.delta == pytest.approx(0.10)
    assert esc.low is not None and esc.high is not None and esc.low < 0.10 < esc.high
    assert esc.p_value is not None and esc.p_value < 0.001
    assert "z-test" in esc.test
    lat = m.diff("latency_p50")
    assert lat.delta == pytest.approx(0.5) and lat.low is not None and lat.low <= 0.5 <= (lat.high or 0)
    assert lat.p_value is not None and lat.p_value < 0.001 and "Mann-Whitney" in lat.test
    assert m.diff("groundedness").delta is None  # not sampled here


def test_rare_events_use_fisher() -> None:
    # 2 of 29 against 0 of 271: the z-test would call this significant at p ~ 1e-5
    base = _samples(271)
    cand = _samples(29, errors=2)
    d = compute_live_measures(base, cand).diff("error_rate")
    assert "Fisher" in d.test and d.p_value is not None and d.p_value > 0.005


def test_tolerances_from_gate_policy() -> None:
    from replaygate.gate import policy_from_mapping

    policy = policy_from_mapping(
        {
            "guardrails": {
                "escalation_rate": {"absolute": 0.03},
                "cost": {"relative": 0.5},
                "latency_p95": None,
            }
        }
    )
    tol = tolerances_from_policy(policy)
    assert tol["escalation_rate"] == Limit("absolute", 0.03)
    assert tol["cost_per_request"] == Limit("relative", 0.5)
    assert "latency_p95" not in tol  # switched off in the policy
    assert tol["negative_feedback_rate"] == DEFAULT_TOLERANCES["negative_feedback_rate"]
    assert tolerances_from_policy(None) == DEFAULT_TOLERANCES
    as_mapping = tolerances_from_policy({"guardrails": {"error_rate": {"absolute": 0.01}}})
    assert as_mapping["error_rate"] == Limit("absolute", 0.01)


def test_failure_series_bins() -> None:
    base = _samples(100, escalated=10, start=0)
    cand = _samples(100, escalated=50, start=0)
    series = failure_series(base, cand, 0, 100, bins=4)
    assert len(series) == 4
    assert sum(p.baseline_n for p in series) == 100
    assert series[0].candidate_rate == pytest.approx(1.0)  # the first 25 candidate requests escalated
    assert series[-1].baseline_rate == pytest.approx(0.0)
