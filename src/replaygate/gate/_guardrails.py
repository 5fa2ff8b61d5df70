"""Guardrail measures of two runs: cost, latency p50/p95, escalation, empty-answer and error rates.

Each measure is the one definition in ``replaygate.replay`` (``guardrail_measures``), the same the run
summary and the canary report; this module adds the comparison (change, p-value). The gate compares
attempts held as arrays (:func:`compare_guardrail_columns`, ``replaygate.replay.MeasureColumns``): no
object per attempt for the 100,000 of two 5,000 x k=10 runs. A cost that is unknown
for any attempt (no LLM call was captured, or a price is unknown) makes the cost guardrail one that could
not be checked, said in its note, never a comparison of 0 with 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from replaygate.replay import GuardrailMeasures, MeasureColumns, guardrail_measures_columns, measure_columns

from replaygate.gate._comparison_model import GuardrailComparison
from replaygate.gate._run_data import MeasuredAttempt
from replaygate.stats import mann_whitney, two_proportion_diff

__all__ = ["compare_guardrail_columns", "compare_guardrails", "with_noise"]


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


def _rate(name: str, xb: int, nb: int, xh: int, nh: int, confidence: float) -> GuardrailComparison:
    diff = two_proportion_diff(xb, nb, xh, nh, confidence)
    return _make(name, "rate", diff.base_rate, diff.head_rate, diff.p_value if nb and nh else None, nb, nh)


def _cost(
    base: MeasureColumns, head: MeasureColumns, b: GuardrailMeasures, h: GuardrailMeasures
) -> GuardrailComparison:
    b_known = base.cost_usd[base.scored & base.cost_usd_known]
    h_known = head.cost_usd[head.scored & head.cost_usd_known]
    notes = [f"{side}: {m.cost_note}" for side, m in (("baseline", b), ("candidate", h)) if m.cost_note]
    note = "; ".join(notes) + ("; the cost guardrail could not be checked" if notes else "")
    known = b.cost_usd_mean is not None and h.cost_usd_mean is not None
    p = mann_whitney(b_known, h_known).p_value if known else None
    return _make(
        "cost", "USD per attempt", b.cost_usd_mean, h.cost_usd_mean, p, b_known.size, h_known.size, note
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
    return compare_guardrail_columns(
        measure_columns(base), measure_columns(head), confidence, base_measures=base_measures
    )


def compare_guardrail_columns(
    base: MeasureColumns,
    head: MeasureColumns,
    confidence: float = 0.95,
    *,
    base_measures: GuardrailMeasures | None = None,
) -> list[GuardrailComparison]:
    """:func:`compare_guardrails` of attempts held as arrays (the same comparison)."""
    b_ok, h_ok = base.scored, head.scored
    b_m = base_measures if base_measures is not None else guardrail_measures_columns(base)
    h_m = guardrail_measures_columns(head)
    b_lat, h_lat = base.latency_s[b_ok], head.latency_s[h_ok]
    lat_p = mann_whitney(b_lat, h_lat).p_value if b_lat.size and h_lat.size else None
    nb, nh = b_lat.size, h_lat.size
    return [
        _cost(base, head, b_m, h_m),
        _make("latency_p50", "s", b_m.latency_p50_s, h_m.latency_p50_s, lat_p, nb, nh),
        _make("latency_p95", "s", b_m.latency_p95_s, h_m.latency_p95_s, lat_p, nb, nh),
        _rate(
            "escalation_rate",
            int((base.escalated & b_ok).sum()),
            nb,
            int((head.escalated & h_ok).sum()),
            nh,
            confidence,
        ),
        _rate(
            "empty_rate", int((base.empty & b_ok).sum()), nb, int((head.empty & h_ok).sum()), nh, confidence
        ),
        _rate("error_rate", len(base) - nb, len(base), len(head) - nh, len(head), confidence),
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
