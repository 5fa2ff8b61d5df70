"""The guardrails over attempts held as arrays equal the guardrails over attempt records (issue 19).

``reference_compare`` is the comparison as it was written over records, one list per measure (kept here
as the oracle); the gate now compares ``MeasureColumns``.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.replay import (
    GuardrailMeasures,
    guardrail_measures,
    guardrail_measures_columns,
    measure_columns,
    scored_attempts,
)

from replaygate.gate._comparison_model import GuardrailComparison
from replaygate.gate._guardrails import _make, compare_guardrail_columns, compare_guardrails
from replaygate.gate._run_data import AttemptMeasures, MeasuredAttempt
from replaygate.stats import mann_whitney, two_proportion_diff


def _rate(name: str, base: Sequence[bool], head: Sequence[bool], confidence: float) -> GuardrailComparison:
    xb, xh = sum(base), sum(head)
    nb, nh = len(base), len(head)
    diff = two_proportion_diff(xb, nb, xh, nh, confidence)
    return _make(name, "rate", diff.base_rate, diff.head_rate, diff.p_value if nb and nh else None, nb, nh)


def _cost(
    base: Sequence[MeasuredAttempt],
    head: Sequence[MeasuredAttempt],
    b: GuardrailMeasures,
    h: GuardrailMeasures,
) -> GuardrailComparison:
    b_known = [a.measures.cost_usd for a in scored_attempts(base) if a.measures.cost_usd is not None]
    h_known = [a.measures.cost_usd for a in scored_attempts(head) if a.measures.cost_usd is not None]
    notes = [f"{side}: {m.cost_note}" for side, m in (("baseline", b), ("candidate", h)) if m.cost_note]
    note = "; ".join(notes) + ("; the cost guardrail could not be checked" if notes else "")
    known = b.cost_usd_mean is not None and h.cost_usd_mean is not None
    p = mann_whitney(b_known, h_known).p_value if known else None
    return _make(
        "cost", "USD per attempt", b.cost_usd_mean, h.cost_usd_mean, p, len(b_known), len(h_known), note
    )


def reference_compare(
    base: Sequence[MeasuredAttempt], head: Sequence[MeasuredAttempt], confidence: float
) -> list[GuardrailComparison]:
    """``compare_guardrails`` as written over records before issue 19."""
    b_ok, h_ok = scored_attempts(base), scored_attempts(head)
    b_m, h_m = guardrail_measures(base), guardrail_measures(head)
    b_lat = [a.measures.latency_s for a in b_ok]
    h_lat = [a.measures.latency_s for a in h_ok]
    lat_p = mann_whitney(b_lat, h_lat).p_value if b_lat and h_lat else None
    return [
        _cost(base, head, b_m, h_m),
        _make("latency_p50", "s", b_m.latency_p50_s, h_m.latency_p50_s, lat_p, len(b_lat), len(h_lat)),
        _make("latency_p95", "s", b_m.latency_p95_s, h_m.latency_p95_s, lat_p, len(b_lat), len(h_lat)),
        _rate(
            "escalation_rate",
            [a.measures.escalated for a in b_ok],
            [a.measures.escalated for a in h_ok],
            confidence,
        ),
        _rate("empty_rate", [a.measures.empty for a in b_ok], [a.measures.empty for a in h_ok], confidence),
        _rate(
            "error_rate", [a.status == "error" for a in base], [a.status == "error" for a in head], confidence
        ),
    ]


_floats = st.floats(min_value=0, max_value=1e3, allow_nan=False)
_attempt = st.builds(
    lambda status, latency, tin, tout, cost, esc, empty, calls: MeasuredAttempt(
        status, AttemptMeasures(latency, tin, tout, cost, esc, empty, calls)
    ),
    st.sampled_from(["pass", "fail", "error"]),
    _floats,
    st.none() | st.integers(0, 10**6),
    st.none() | st.integers(0, 10**6),
    st.none() | _floats | st.sampled_from([0.25, 0.5]),
    st.booleans(),
    st.booleans(),
    st.none() | st.integers(0, 3),
)
_attempts = st.lists(_attempt, max_size=25)


@settings(max_examples=300, deadline=None)
@given(_attempts)
def test_measures_of_columns_equal_the_measures_of_records(attempts: list[MeasuredAttempt]) -> None:
    assert guardrail_measures_columns(measure_columns(attempts)) == guardrail_measures(attempts)


@settings(max_examples=300, deadline=None)
@given(_attempts, _attempts, st.sampled_from([0.9, 0.95]))
def test_compare_of_columns_equals_the_compare_of_records(
    base: list[MeasuredAttempt], head: list[MeasuredAttempt], confidence: float
) -> None:
    want = reference_compare(base, head, confidence)
    assert compare_guardrails(base, head, confidence) == want
    got = compare_guardrail_columns(measure_columns(base), measure_columns(head), confidence)
    assert got == want


def test_a_comparison_with_every_measure_known_is_compared() -> None:
    """Not all None: the equality above covers computed p-values and notes too."""
    base = [
        MeasuredAttempt("pass", AttemptMeasures(0.1 * i, 10, 5, 0.01 * i, i % 3 == 0, False, 1))
        for i in range(1, 12)
    ]
    head = [
        MeasuredAttempt("fail" if i % 2 else "error", AttemptMeasures(0.2 * i, 10, 5, None, False, True, 0))
        for i in range(1, 12)
    ]
    got = compare_guardrails(base, head, 0.95)
    assert got == reference_compare(base, head, 0.95)
    by = {g.name: g for g in got}
    assert by["latency_p50"].p_value is not None and by["error_rate"].head == 5 / 11
    assert "no LLM call was captured in 6 of 6 attempts" in by["cost"].note
