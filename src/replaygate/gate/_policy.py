"""The gate policy: tolerances fixed before the run, in a committed YAML file.

Its hash (:func:`policy_hash`, the canonical ``content_hash`` of the parsed YAML mapping) is recorded in the
run fingerprint when a run starts; :func:`is_wider` tells whether a policy given to the gate afterwards
loosens any tolerance of the recorded one. Every number is checked where it is read: NaN and infinity
are refused, tolerances lie in [0, 1] (guardrail tolerances are at least 0), ``format_version`` is 1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from replaygate.replay import (
    MAX_YAML_BYTES,
    content_hash,
    load_yaml_bounded,
    read_text_bounded,
    validation_summary,
)

from replaygate.gate._errors import PolicyError

__all__ = [
    "GUARDRAIL_NAMES",
    "GuardrailTolerance",
    "GuardrailTolerances",
    "Policy",
    "Tolerance",
    "is_wider",
    "load_policy",
    "policy_from_mapping",
    "policy_hash",
]

GUARDRAIL_NAMES = ("cost", "latency_p50", "latency_p95", "escalation_rate", "empty_rate", "error_rate")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # NaN and inf refused


class GuardrailTolerance(_Model):
    """How much a guardrail may worsen: ``relative`` (0.2 = 20% worse) or ``absolute`` (in its unit)."""

    relative: float | None = Field(default=None, ge=0)
    absolute: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_kind(self) -> GuardrailTolerance:
        if (self.relative is None) == (self.absolute is None):
            raise ValueError("a guardrail tolerance sets exactly one of `relative` or `absolute`")
        return self

    @property
    def kind(self) -> str:
        """``relative`` or ``absolute``."""
        return "relative" if self.relative is not None else "absolute"

    @property
    def value(self) -> float:
        """The tolerance itself."""
        return self.relative if self.relative is not None else float(self.absolute or 0.0)

    def describe(self) -> str:
        """A short human form: ``+20%`` or ``+0.05``."""
        return f"+{self.value:.0%}" if self.kind == "relative" else f"+{self.value:g}"


class GuardrailTolerances(_Model):
    """One tolerance per guardrail; ``null`` switches a guardrail off (a wider policy)."""

    cost: GuardrailTolerance | None = GuardrailTolerance(relative=0.10)
    latency_p50: GuardrailTolerance | None = GuardrailTolerance(relative=0.20)
    latency_p95: GuardrailTolerance | None = GuardrailTolerance(relative=0.25)
    escalation_rate: GuardrailTolerance | None = GuardrailTolerance(absolute=0.05)
    empty_rate: GuardrailTolerance | None = GuardrailTolerance(absolute=0.02)
    error_rate: GuardrailTolerance | None = GuardrailTolerance(absolute=0.02)

    def get(self, name: str) -> GuardrailTolerance | None:
        """Return the tolerance of one guardrail by name."""
        value: GuardrailTolerance | None = getattr(self, name)
        return value


class Tolerance(_Model):
    """Largest allowed drop (absolute, on a 0..1 scale) in pass rate and graded scores.

    ``categories`` maps ``tag_key=value`` (e.g. ``risk=high``) to its own tolerance; ``metrics`` maps a
    graded metric (``judge:groundedness``, ``retrieval:mrr``) to its own. Anything unlisted uses ``overall``.
    """

    overall: float = Field(default=0.05, ge=0, le=1)
    categories: dict[str, float] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)

    @field_validator("categories")
    @classmethod
    def _category_keys(cls, value: dict[str, float]) -> dict[str, float]:
        for key, tol in value.items():
            if "=" not in key or key.startswith("=") or key.endswith("="):
                raise ValueError(f"category {key!r}: write it as tag_key=value (e.g. risk=high)")
            if not 0 <= tol <= 1:
                raise ValueError(f"category {key!r}: tolerance must be in [0, 1], got {tol}")
        return value

    @field_validator("metrics")
    @classmethod
    def _metric_tolerances(cls, value: dict[str, float]) -> dict[str, float]:
        for key, tol in value.items():
            if not key.strip():
                raise ValueError(
                    "a metric tolerance needs a metric name (judge:<name> or retrieval:<metric>)"
                )
            if not 0 <= tol <= 1:  # also refuses NaN
                raise ValueError(f"metric {key!r}: tolerance must be in [0, 1], got {tol}")
        return value

    def for_category(self, name: str) -> float:
        """Tolerance of a ``tag_key=value`` category (``overall`` when unlisted)."""
        return self.categories.get(name, self.overall)

    def for_metric(self, metric: str) -> float:
        """Tolerance of a graded metric (``overall`` when unlisted)."""
        return self.metrics.get(metric, self.overall)


class JudgeCalibration(_Model):
    """When a judge is calibrated: enough labels for its current prompt and model, and kappa enough."""

    min_kappa: float | None = Field(default=None, ge=-1, le=1)
    min_labels: int = Field(default=10, ge=1)


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration_seconds(value: Any) -> Any:
    """``90``, ``"90s"``, ``"30m"``, ``"4h"``, ``"1d"`` to seconds (others are left for the type check)."""
    if isinstance(value, bool):
        raise ValueError(f"a duration like 90s, 30m, 4h or 1d, got {value!r}")
    if isinstance(value, str):
        text = value.strip().lower()
        unit = _DURATION_UNITS.get(text[-1:]) if text else None
        number = text[:-1] if unit is not None else text
        try:
            seconds = float(number) * (unit or 1.0)
        except ValueError:
            raise ValueError(f"a duration like 90s, 30m, 4h or 1d, got {value!r}") from None
        return seconds
    return value


class Policy(_Model):
    """The whole gate policy (YAML, ``extra`` keys are refused).

    ``max_hold`` (seconds, or ``30m`` / ``4h`` / ``1d``; ``null`` for none): how long a canary step may
    hold undecided before the canary notifies through its audit log and the page, and the time within
    which a step's share must gather the traffic its rule needs.
    """

    format_version: Literal[1] = 1
    alpha: float = Field(default=0.05, gt=0, lt=1)
    tolerance: Tolerance = Tolerance()
    guardrails: GuardrailTolerances = GuardrailTolerances()
    allow_errors: bool = False
    error_budget: float = Field(default=0.0, ge=0, le=1)
    n_resamples: int = Field(default=10_000, ge=100)
    seed: int = 0
    power: float = Field(default=0.8, gt=0, lt=1)
    judge_calibration: JudgeCalibration | None = None  # replaygate.labels: uncalibrated judges are marked
    max_hold: float | None = Field(default=86_400.0, gt=0, allow_inf_nan=False)

    _source: dict[str, Any] | None = PrivateAttr(default=None)

    @field_validator("max_hold", mode="before")
    @classmethod
    def _max_hold(cls, value: Any) -> Any:
        return _duration_seconds(value)

    @property
    def confidence(self) -> float:
        """Confidence level of intervals (1 - alpha)."""
        return 1.0 - self.alpha

    def error_allowance(self) -> float:
        """Fraction of a run's attempts that may error (0 unless ``allow_errors``)."""
        return self.error_budget if self.allow_errors else 0.0

    def source_mapping(self) -> dict[str, Any]:
        """The mapping this policy was parsed from (what the runner hashed), else its explicit fields."""
        if self._source is not None:
            return self._source
        dumped: dict[str, Any] = self.model_dump(mode="json", exclude_unset=True)
        return dumped


def policy_from_mapping(data: Any, where: str = "policy") -> Policy:
    """Validate a parsed policy mapping; errors name ``where`` and the offending field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"{where}: a gate policy is a YAML mapping, got {type(data).__name__}")
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(f"{where}: invalid gate policy: {validation_summary(exc)}") from None
    policy._source = data
    return policy


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate a gate policy YAML file.

    Raises:
        PolicyError: the file is missing, not YAML, or not a valid policy (the message says which field).
    """
    p = Path(path)
    text = read_text_bounded(p, what="policy file", error=PolicyError, max_bytes=MAX_YAML_BYTES)
    data, _ = load_yaml_bounded(text, str(p), PolicyError)
    return policy_from_mapping(data, str(p))


def policy_hash(policy: Policy | dict[str, Any]) -> str:
    """Return the policy's hash: ``content_hash`` of the parsed YAML mapping, as the runner records it."""
    mapping = policy.source_mapping() if isinstance(policy, Policy) else policy
    return content_hash(mapping)


def _wider_guardrail(name: str, new: GuardrailTolerance | None, old: GuardrailTolerance | None) -> str | None:
    if old is None:
        return None
    if new is None:
        return f"guardrail {name} switched off (was {old.describe()})"
    if new.kind != old.kind:
        return f"guardrail {name} changed from a {old.kind} to a {new.kind} tolerance (cannot be compared)"
    if new.value > old.value:
        return f"guardrail {name} {old.describe()} -> {new.describe()}"
    return None


def is_wider(new: Policy, recorded: Policy) -> list[str]:
    """List every way ``new`` is looser than ``recorded`` (empty: not wider).

    Wider means: a larger alpha, a larger tolerance (overall, per category, per metric), a guardrail
    tolerance raised, switched off or changed in kind, errors allowed or a larger error budget.
    """
    out: list[str] = []
    if new.alpha > recorded.alpha:
        out.append(f"alpha {recorded.alpha:g} -> {new.alpha:g}")
    if new.tolerance.overall > recorded.tolerance.overall:
        out.append(f"overall tolerance {recorded.tolerance.overall:g} -> {new.tolerance.overall:g}")
    for cat in sorted(set(recorded.tolerance.categories) | set(new.tolerance.categories)):
        before, after = recorded.tolerance.for_category(cat), new.tolerance.for_category(cat)
        if after > before:
            out.append(f"tolerance for {cat} {before:g} -> {after:g}")
    for metric in sorted(set(recorded.tolerance.metrics) | set(new.tolerance.metrics)):
        before, after = recorded.tolerance.for_metric(metric), new.tolerance.for_metric(metric)
        if after > before:
            out.append(f"tolerance for {metric} {before:g} -> {after:g}")
    for name in GUARDRAIL_NAMES:
        msg = _wider_guardrail(name, new.guardrails.get(name), recorded.guardrails.get(name))
        if msg:
            out.append(msg)
    if new.error_allowance() > recorded.error_allowance():
        out.append(f"error budget {recorded.error_allowance():g} -> {new.error_allowance():g}")
    return out
