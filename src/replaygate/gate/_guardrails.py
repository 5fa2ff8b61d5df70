"""Guardrail measures of two runs: cost, latency p50/p95, escalation, empty-answer and error rates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from replaygate.replay._runfile import Attempt

from replaygate.gate._comparison_model import GuardrailComparison
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


def _percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def _cost(base: Sequence[Attempt], head: Sequence[Attempt]) -> GuardrailComparison:
    b_known = [a.measures.cost_usd for a in base if a.measures.cost_usd is not None]
    h_known = [a.measures.cost_usd for a in head if a.measures.cost_usd is not None]
    b_unknown, h_unknown = len(base) - len(b_known), len(head) - len(h_known)
    b_mean = float(np.mean(b_known)) if b_known and not b_unknown else None
    h_mean = float(np.mean(h_known)) if h_known and not h_unknown else None
    note = ""
    if b_unknown or h_unknown:
        note = (
            f"price unknown for {b_unknown} baseline and {h_unknown} candidate attempts: "
            "cost per attempt is unknown, not 0"
        )
    p = mann_whitney(b_known, h_known).p_value if b_mean is not None and h_mean is not None else None
    return _make("cost", "USD per attempt", b_mean, h_mean, p, len(b_known), len(h_known), note)


def compare_guardrails(
    base: Sequence[Attempt], head: Sequence[Attempt], confidence: float = 0.95
) -> list[GuardrailComparison]:
    """Compare the guardrail measures of the counted attempts of two runs (higher is worse for all).

    Cost, latency, escalation and empty answers use the scored attempts (errors are measured by the error
    rate, over every attempt). An unknown price makes the cost unknown (never 0).
    """
    b_ok = [a for a in base if a.status != "error"]
    h_ok = [a for a in head if a.status != "error"]
    b_lat = [a.measures.latency_s for a in b_ok]
    h_lat = [a.measures.latency_s for a in h_ok]
    lat_p = mann_whitney(b_lat, h_lat).p_value if b_lat and h_lat else None
    return [
        _cost(b_ok, h_ok),
        _make(
            "latency_p50", "s", _percentile(b_lat, 50), _percentile(h_lat, 50), lat_p, len(b_lat), len(h_lat)
        ),
        _make(
            "latency_p95", "s", _percentile(b_lat, 95), _percentile(h_lat, 95), lat_p, len(b_lat), len(h_lat)
        ),
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
