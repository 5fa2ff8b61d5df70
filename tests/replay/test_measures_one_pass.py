"""``guardrail_measures`` in one pass gives what one list per measure gives (the definition, kept here)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.replay import Attempt, Measures, guardrail_measures, percentile, scored_attempts
from replaygate.replay._measures import GuardrailMeasures, cost_note


def _rate(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def reference(attempts: Sequence[Attempt]) -> GuardrailMeasures:
    """The measures as defined, one list per measure (the implementation before the one-pass one)."""
    scored = scored_attempts(attempts)
    latencies = [a.measures.latency_s for a in scored]
    costs = [a.measures.cost_usd for a in attempts]
    known = [c for c in costs if c is not None]
    scored_known = [c for c in (a.measures.cost_usd for a in scored) if c is not None]
    in_tokens = [a.measures.input_tokens for a in attempts if a.measures.input_tokens is not None]
    out_tokens = [a.measures.output_tokens for a in attempts if a.measures.output_tokens is not None]
    n = len(attempts)
    return GuardrailMeasures(
        attempts=n,
        scored=len(scored),
        latency_mean_s=sum(latencies) / len(latencies) if latencies else None,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        input_tokens=sum(in_tokens) if in_tokens else None,
        output_tokens=sum(out_tokens) if out_tokens else None,
        cost_usd_total=sum(known) if n and len(known) == n else None,
        cost_usd_known=sum(known) if known else None,
        cost_usd_mean=(
            sum(scored_known) / len(scored_known)
            if scored_known and len(scored_known) == len(scored)
            else None
        ),
        cost_unknown_attempts=n - len(known),
        cost_note=cost_note(scored),
        escalation_rate=_rate([a.measures.escalated for a in scored]),
        empty_rate=_rate([a.measures.empty for a in scored]),
        error_rate=_rate([a.status == "error" for a in attempts]),
    )


_floats = st.floats(min_value=0, max_value=1e3, allow_nan=False)
_attempt = st.builds(
    lambda status, latency, tin, tout, cost, esc, empty, calls: Attempt(
        scenario_id="s",
        index=0,
        status=status,
        measures=Measures(
            latency_s=latency,
            input_tokens=tin,
            output_tokens=tout,
            cost_usd=cost,
            escalated=esc,
            empty=empty,
            llm_calls=calls,
        ),
    ),
    st.sampled_from(["pass", "fail", "error"]),
    _floats,
    st.none() | st.integers(0, 10**6),
    st.none() | st.integers(0, 10**6),
    st.none() | _floats,
    st.booleans(),
    st.booleans(),
    st.none() | st.integers(0, 3),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_attempt, max_size=30))
def test_one_pass_equals_the_definition(attempts: list[Attempt]) -> None:
    assert guardrail_measures(attempts) == reference(attempts)


def test_the_definition_is_not_trivially_met() -> None:
    """A set with every kind of attempt: the values the comparison above relies on are not all None."""
    attempts = [
        Attempt(scenario_id="s", index=0, status="pass", measures=Measures(latency_s=0.1, cost_usd=0.5)),
        Attempt(scenario_id="s", index=1, status="fail", measures=Measures(latency_s=0.3, llm_calls=0)),
        Attempt(scenario_id="s", index=2, status="error", measures=Measures(latency_s=9.0, escalated=True)),
    ]
    got = guardrail_measures(attempts)
    assert got == reference(attempts)
    assert got.scored == 2 and got.latency_mean_s == 0.2 and got.error_rate == 1 / 3
    assert got.cost_usd_total is None and got.cost_usd_known == 0.5 and got.cost_unknown_attempts == 2
    assert got.cost_note == "cost unknown, not 0: no LLM call was captured in 1 of 2 attempts"
