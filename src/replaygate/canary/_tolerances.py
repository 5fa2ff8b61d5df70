"""The canary's tolerances: the gate policy's guardrails, and the measures the gate policy does not cover."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DEFAULT_TOLERANCES", "EXTRA_TOLERANCES", "Limit", "tolerances_from_policy"]


@dataclass(frozen=True)
class Limit:
    """How much a measure may worsen: ``relative`` (0.2 = 20% of the baseline) or ``absolute``."""

    mode: Literal["relative", "absolute"]
    value: float

    def allowed(self, baseline: float) -> float:
        """The allowed worsening for this baseline value."""
        return self.value * abs(baseline) if self.mode == "relative" else self.value

    def describe(self) -> str:
        """``35% relative`` or ``0.05 absolute``."""
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
