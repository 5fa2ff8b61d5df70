"""Evidence for widening and breaches for rolling back (pure: no I/O).

Tolerances are the gate policy's guardrails (``cost``, ``latency_p50``, ``latency_p95``,
``escalation_rate``, ``empty_rate``, ``error_rate``; each relative or absolute); the measures the gate
policy does not cover (negative-feedback rate, sampled groundedness) use :data:`EXTRA_TOLERANCES`.

- **Widen** needs at least ``min_count`` requests in both arms of the current step and, for every measure,
  enough evidence that the candidate is not worse than its tolerance: the one-sided upper bound of the
  worsening at ``widen_confidence`` (80% by default) must be within the tolerance. A clearly worse
  candidate therefore never widens on a lucky small sample; an equal one widens once the arms are large.
- **Breach** (automatic rollback): a measure worse than its tolerance whose difference is also
  significant at ``rollback_alpha`` divided by the number of measures checked (Bonferroni: eight
  measures are looked at on every check, and a live canary is checked again and again), with at least
  ``min_breach_count`` requests in both arms. A rollback is cheap and a missed breach is not, so the
  test is against "no difference" (a 10-point rise in escalations rolls back after ~150 candidate
  requests), not against the tolerance; the correction, and waiting until the candidate arm would hold
  ``min_expected_events`` events of a rate at the pooled rate, keep rare-event rates (1 error in 100)
  from rolling back an equal candidate on a small arm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from replaygate.canary._measures import LiveMeasures, MeasureDiff

__all__ = [
    "DEFAULT_TOLERANCES",
    "EXTRA_TOLERANCES",
    "Evidence",
    "EvidenceSettings",
    "Limit",
    "evaluate_evidence",
    "tolerances_from_policy",
]


@dataclass(frozen=True)
class Limit:
    """How much a measure may worsen: ``relative`` (0.2 = 20% of the baseline) or ``absolute``."""

    mode: Literal["relative", "absolute"]
    value: float

    def allowed(self, baseline: float) -> float:
        """The allowed worsening for this baseline value."""
        return self.value * abs(baseline) if self.mode == "relative" else self.value

    def describe(self) -> str:
        """``+20%`` or ``+0.05``."""
        return f"{self.value:.0%} relative" if self.mode == "relative" else f"{self.value:g} absolute"


#: Tolerances of measures the gate policy does not hold.
EXTRA_TOLERANCES: dict[str, Limit] = {
    "negative_feedback_rate": Limit("absolute", 0.05),
    "groundedness": Limit("absolute", 0.10),
}
#: Used when no gate policy is given (the gate policy's own defaults).
DEFAULT_TOLERANCES: dict[str, Limit] = {
    "cost_per_request": Limit("relative", 0.10),
    "latency_p50": Limit("relative", 0.20),
    "latency_p95": Limit("relative", 0.25),
    "escalation_rate": Limit("absolute", 0.05),
    "empty_rate": Limit("absolute", 0.02),
    "error_rate": Limit("absolute", 0.02),
    **EXTRA_TOLERANCES,
}
_POLICY_NAMES = {
    "cost": "cost_per_request",
    "latency_p50": "latency_p50",
    "latency_p95": "latency_p95",
    "escalation_rate": "escalation_rate",
    "empty_rate": "empty_rate",
    "error_rate": "error_rate",
}


def tolerances_from_policy(policy: Any) -> dict[str, Limit]:
    """Read the guardrail tolerances of a gate policy (``replaygate.gate.Policy`` or a mapping).

    A guardrail the policy switches off (``null``) is not checked live either. Sampled groundedness
    takes the policy's ``judge:groundedness`` tolerance (its graded-score tolerance) when it has one.
    """
    if policy is None:
        return dict(DEFAULT_TOLERANCES)
    guardrails = (
        policy.get("guardrails") if isinstance(policy, Mapping) else getattr(policy, "guardrails", None)
    )
    out: dict[str, Limit] = dict(EXTRA_TOLERANCES)
    for policy_name, name in _POLICY_NAMES.items():
        if guardrails is None:
            out[name] = DEFAULT_TOLERANCES[name]
            continue
        tol = (
            guardrails.get(policy_name)
            if isinstance(guardrails, Mapping)
            else getattr(guardrails, policy_name)
        )
        if tol is None:
            continue
        if isinstance(tol, Mapping):
            if tol.get("relative") is not None:
                out[name] = Limit("relative", float(tol["relative"]))
            elif tol.get("absolute") is not None:
                out[name] = Limit("absolute", float(tol["absolute"]))
            continue
        out[name] = Limit("relative" if tol.kind == "relative" else "absolute", float(tol.value))
    tolerance = policy.get("tolerance") if isinstance(policy, Mapping) else getattr(policy, "tolerance", None)
    metrics = (
        tolerance.get("metrics") if isinstance(tolerance, Mapping) else getattr(tolerance, "metrics", None)
    )
    if isinstance(metrics, Mapping) and metrics.get("judge:groundedness") is not None:
        out["groundedness"] = Limit("absolute", float(metrics["judge:groundedness"]))
    return out


@dataclass(frozen=True)
class EvidenceSettings:
    """Knobs of the widen and rollback rules."""

    min_count: int = 50
    min_breach_count: int = 50
    min_expected_events: float = 5.0
    rollback_alpha: float = 0.01
    widen_confidence: float = 0.8


@dataclass(frozen=True)
class Evidence:
    """Whether the current step may be widened (and why not), and any breach that calls for rollback."""

    can_widen: bool
    missing: tuple[str, ...]
    breaches: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def reason(self) -> str:
        """One line: what is missing for a widen, or that the evidence holds."""
        if self.can_widen:
            return "evidence holds: enough requests in both arms and every measure within tolerance"
        return "; ".join(self.missing)

    @property
    def breached(self) -> bool:
        """Whether a measure is significantly worse than its tolerance."""
        return bool(self.breaches)


def _fmt(name: str, value: float) -> str:
    if name.endswith("_rate"):
        return f"{value * 100:+.1f} points"
    if name.startswith("latency"):
        return f"{value:+.3f} s"
    return f"{value:+.4g}"


def _enough_events(d: MeasureDiff, nb: int, nc: int, minimum: float) -> bool:
    """A rate can breach only once the candidate arm would hold ``minimum`` events at the pooled rate.

    A handful of rare events (errors, empty answers) in a small arm is how a canary of an equal candidate
    gets rolled back by chance; waiting for a few expected events costs a real breach of a common rate
    (escalations) almost nothing.
    """
    if not d.name.endswith("_rate") or d.baseline is None or d.candidate is None:
        return True
    pooled = (d.baseline * nb + d.candidate * nc) / max(1, nb + nc)
    return pooled * nc >= minimum


def evaluate_evidence(
    measures: LiveMeasures, tolerances: Mapping[str, Limit], settings: EvidenceSettings = EvidenceSettings()
) -> Evidence:
    """Decide whether the evidence allows a widen and whether any measure breaches its tolerance."""
    missing: list[str] = []
    breaches: list[str] = []
    notes: list[str] = []
    nb, nc = measures.baseline.n, measures.candidate.n
    enough_for_breach = min(nb, nc) >= settings.min_breach_count
    checked = [d for d in measures.diffs if d.name in tolerances and d.delta is not None]
    breach_alpha = settings.rollback_alpha / max(1, len(checked))
    if nb < settings.min_count or nc < settings.min_count:
        missing.append(
            f"not enough traffic yet: {nc} candidate and {nb} baseline requests in this step "
            f"(need {settings.min_count} in each)"
        )
    for d in measures.diffs:
        limit = tolerances.get(d.name)
        if limit is None:
            continue
        if d.delta is None or d.baseline is None:
            if nb and nc:
                notes.append(f"{d.label}: no data in one arm, not checked")
            continue
        allowed = limit.allowed(d.baseline)
        worsening = d.worsening or 0.0
        if worsening > allowed + 1e-12:
            text = f"{d.label} is worse by {_fmt(d.name, worsening)} (tolerance {limit.describe()})"
            missing.append(text)
            if (
                enough_for_breach
                and d.p_value is not None
                and d.p_value < breach_alpha
                and _enough_events(d, nb, nc, settings.min_expected_events)
            ):
                breaches.append(f"{text}, p = {d.p_value:.2g} < {breach_alpha:.2g}")
        elif d.worst_case is not None and d.worst_case > allowed + 1e-12:
            missing.append(
                f"{d.label}: cannot yet rule out a worsening beyond tolerance "
                f"(observed {_fmt(d.name, worsening)}, up to {_fmt(d.name, d.worst_case)} at "
                f"{settings.widen_confidence:.0%} confidence; tolerance {limit.describe()})"
            )
    if measures.candidate.cost_unknown:
        notes.append(f"cost unknown for {measures.candidate.cost_unknown} candidate requests (unknown price)")
    return Evidence(not missing, tuple(missing), tuple(breaches), tuple(notes))
