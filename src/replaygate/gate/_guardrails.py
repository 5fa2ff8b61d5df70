"""Guardrail measures of two runs: cost, latency p50/p95, escalation, empty-answer and error rates.

Each measure is the one definition in ``replaygate.replay`` (``guardrail_measures``), the same the run
summary and the canary report; this module adds the comparison (change, p-value). A cost that is unknown
for any attempt (no LLM call was captured, or a price is unknown) makes the cost guardrail one that could
not be checked, said in its note, never a comparison of 0 with 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from replaygate.replay import GuardrailMeasures, guardrail_measures, scored_attempts

from replaygate.gate._comparison_model import GuardrailComparison
from replaygate.gate._run_data import MeasuredAttempt
from replaygate.stats import mann_whitney, two_proportion_diff

__all__ = ["compare_guardrails", "with_noise"]


def _relative(base: float | None, head: float | None) -> float | None:
    if base is None or head is None or base == 0:
        return None
    return (head - base) / base


def _make(
    name: str,
    unit: str,
    base: float | None,
    head: float | None,
    p: float | None,
    bn: int,
    hn: int,
    note: str = "",
) -> GuardrailComparison:
    change = None if base is None or head is None else head - base
    return GuardrailComparison(
        name=name,
        unit=unit,
        base=base,
        head=head,
        change=change,
        relative_change=_relative(base, head),
        p_value=p,
        base_n=bn,
        head_n=hn,
        note=note,
    )


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


def compare_guardrails(
    base: Sequence[MeasuredAttempt],
    head: Sequence[MeasuredAttempt],
    confidence: float = 0.95,
    *,
    base_measures: GuardrailMeasures | None = None,
) -> list[GuardrailComparison]:
    """Compare the guardrail measures of the counted attempts of two runs (higher is worse for all).

    Cost, latency, escalation and empty answers use the scored attempts (errors are measured by the error
    rate, over every attempt). An unknown price makes the cost unknown (never 0). ``base_measures``:
    ``guardrail_measures(base)`` when already measured (the baseline is compared twice).
    """
    b_ok, h_ok = scored_attempts(base), scored_attempts(head)
    b_m = base_measures if base_measures is not None else guardrail_measures(base)
    h_m = guardrail_measures(head)
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


def with_noise(
    guardrails: Sequence[GuardrailComparison], noise: Sequence[GuardrailComparison]
) -> list[GuardrailComparison]:
    """Attach to each guardrail its change between the two baseline runs (the run-to-run noise).

    Latency in particular moves with the load of the machine that ran the replay; two runs of one
    configuration show how much of a candidate's change that alone explains.
    """
    by_name = {g.name: g for g in noise}
    out = []
    for g in guardrails:
        n = by_name.get(g.name)
        update = {} if n is None else {"noise_change": n.change, "noise_relative_change": n.relative_change}
        out.append(g.model_copy(update=update))
    return out
