"""A few rare events in a small canary arm do not roll back an equal candidate; a common rate's rise does."""

from replaygate.canary import RequestSample, compute_live_measures, evaluate_evidence
from replaygate.canary._evidence import DEFAULT_TOLERANCES


def samples(n: int, *, errors: int = 0, escalated: int = 0) -> list[RequestSample]:
    return [
        RequestSample(
            start_ns=i,
            error=i < errors,
            empty=False,
            escalated=i < escalated,
            negative_feedback=False,
            latency_s=0.8,
            cost_usd=0.0002,
        )
        for i in range(n)
    ]


def test_seven_errors_in_ninety_five_is_not_yet_a_breach() -> None:
    # 7/95 against 5/900: significant at the per-look alpha, but fewer than five errors were expected
    measures = compute_live_measures(samples(900, errors=5), samples(95, errors=7))
    diff = measures.diff("error_rate")
    assert diff.p_value is not None and diff.p_value < 0.01 / 8
    assert not evaluate_evidence(measures, DEFAULT_TOLERANCES).breached


def test_the_same_error_excess_on_a_larger_arm_is_a_breach() -> None:
    measures = compute_live_measures(samples(4000, errors=40), samples(600, errors=36))
    evidence = evaluate_evidence(measures, DEFAULT_TOLERANCES)
    assert evidence.breached and "error rate" in evidence.breaches[0]


def test_a_ten_point_escalation_rise_breaches_on_a_small_arm() -> None:
    measures = compute_live_measures(samples(1350, escalated=135), samples(150, escalated=30))
    evidence = evaluate_evidence(measures, DEFAULT_TOLERANCES)
    assert evidence.breached and "escalation rate" in evidence.breaches[0]
