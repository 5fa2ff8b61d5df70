"""The canary's tolerances: the gate policy's guardrails, and the measures the gate policy does not cover.

A canary runs under the tolerances and ``max_hold`` it started with: :class:`CanaryPolicy` is what
``start`` records with the rollout (the ``policy`` column of ``canary_state``), so a later look without
``--policy`` (the cron's ``check``, the page) judges by the same lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = [
    "BUILT_IN",
    "DEFAULT_TOLERANCES",
    "EXTRA_TOLERANCES",
    "CanaryPolicy",
    "Limit",
    "RecordError",
    "tolerances_from_policy",
]

#: The ``source`` of a canary policy taken from replaygate's defaults (no ``--policy`` given).
BUILT_IN = "the built-in defaults"
_DEFAULT_MAX_HOLD_S = 86_400.0


class RecordError(ValueError):
    """A recorded canary policy that cannot be read back (a damaged or foreign ``canary_state.policy``)."""


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


@dataclass(frozen=True)
class CanaryPolicy:
    """The tolerances and ``max_hold`` a canary judges by, and where they came from.

    ``source`` is the gate policy file given to ``canary start`` (or :data:`BUILT_IN`), ``digest`` its
    ``policy_hash`` (None for the defaults). Two canary policies are the same when their tolerances and
    ``max_hold`` are: a file with another alpha but the same guardrails changes nothing live.
    """

    tolerances: tuple[tuple[str, Limit], ...]
    max_hold_s: float | None = _DEFAULT_MAX_HOLD_S
    source: str = BUILT_IN
    digest: str | None = None

    @classmethod
    def of(
        cls,
        tolerances: Mapping[str, Limit],
        max_hold_s: float | None = _DEFAULT_MAX_HOLD_S,
        source: str = BUILT_IN,
        digest: str | None = None,
    ) -> CanaryPolicy:
        """A canary policy from a mapping of limits (kept sorted by measure)."""
        return cls(tuple(sorted(tolerances.items())), max_hold_s, source, digest)

    @property
    def limits(self) -> dict[str, Limit]:
        """The tolerances by measure name."""
        return dict(self.tolerances)

    def same_lines(self, other: CanaryPolicy) -> bool:
        """Whether both judge by the same tolerances and ``max_hold``."""
        return self.tolerances == other.tolerances and self.max_hold_s == other.max_hold_s

    def differences(self, other: CanaryPolicy) -> list[str]:
        """What ``other`` changes, e.g. ``latency_p50 20% relative -> 35% relative``."""
        mine, theirs = self.limits, other.limits
        out = []
        for name in sorted(set(mine) | set(theirs)):
            a, b = mine.get(name), theirs.get(name)
            if a != b:
                out.append(
                    f"{name} {'not checked' if a is None else a.describe()} -> "
                    f"{'not checked' if b is None else b.describe()}"
                )
        if self.max_hold_s != other.max_hold_s:
            out.append(f"max_hold {_hold(self.max_hold_s)} -> {_hold(other.max_hold_s)}")
        return out

    def describe(self) -> str:
        """``examples/gate-policy.yaml (sha256:ab12…)`` or ``the built-in defaults``."""
        return self.source if self.digest is None else f"{self.source} ({self.digest[:19]})"

    def to_json(self) -> dict[str, Any]:
        """The recorded form (also the ``policy`` of ``canary status --json``)."""
        return {
            "source": self.source,
            "digest": self.digest,
            "max_hold_s": self.max_hold_s,
            "tolerances": {name: {limit.mode: limit.value} for name, limit in self.tolerances},
        }

    def dumps(self) -> str:
        """The text stored in ``canary_state.policy``."""
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> CanaryPolicy:
        """Read a recorded canary policy back.

        Raises:
            RecordError: the text is not a canary policy this replaygate recorded (it says what is wrong).
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise RecordError(f"not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("tolerances"), dict):
            raise RecordError("expected a mapping with `tolerances`")
        source, digest, hold = data.get("source"), data.get("digest"), data.get("max_hold_s")
        if not isinstance(source, str) or not (digest is None or isinstance(digest, str)):
            raise RecordError("`source` must be text and `digest` text or null")
        if hold is not None and (not _finite(hold) or hold <= 0):
            raise RecordError(f"`max_hold_s` must be a positive number of seconds or null, got {hold!r}")
        limits: dict[str, Limit] = {}
        for name, raw in data["tolerances"].items():
            if not isinstance(raw, dict) or len(raw) != 1:
                raise RecordError(f"tolerance {name!r} must be one of {{relative: x}}, {{absolute: x}}")
            ((mode, value),) = raw.items()
            if mode not in ("relative", "absolute") or not _finite(value) or value < 0:
                raise RecordError(f"tolerance {name!r}: {raw!r} is not a relative or absolute limit >= 0")
            limits[name] = Limit(cast(Literal["relative", "absolute"], mode), float(value))
        return cls.of(limits, None if hold is None else float(hold), source, digest)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _hold(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:g}s"
