"""The comparison of a baseline run and a candidate run: a versioned pydantic document.

Each scenario's ``change`` says how it moved. ``newly_failing`` means passed before, fails now: a
must-pass scenario passed every attempt in the baseline and not in the candidate (pass^k); another
scenario went from a confirmed pass to a confirmed fail, or fell significantly (``SCENARIO_TEST``:
one-sided Fisher exact, Benjamini-Hochberg-adjusted over the suite). ``worse_unconfirmed`` is a verdict
that got worse without that evidence (``inconclusive`` -> ``fail`` at a k too small to confirm either):
reported, never a reason to sign by itself. ``flaky`` marks a scenario whose two baseline runs disagree.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from replaygate.replay import Fingerprint

__all__ = [
    "COMPARISON_FORMAT_VERSION",
    "Change",
    "Comparison",
    "ErrorSummary",
    "GradedComparison",
    "GuardrailComparison",
    "NoiseInfo",
    "RateComparison",
    "RunRef",
    "ScenarioComparison",
    "SideStats",
]

COMPARISON_FORMAT_VERSION = 1

Change = Literal[
    "newly_failing",
    "worse_unconfirmed",
    "newly_passing",
    "still_failing",
    "still_passing",
    "inconclusive",
    "unknown",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=_Model)
_IMMUTABLE = (type(None), bool, int, float, str)
_set = object.__setattr__


@cache
def _defaults(cls: type[_Model]) -> tuple[tuple[str, bool, Any], ...]:
    """Each field of ``cls``: its name, whether its default is a plain immutable value, and that value."""
    out = []
    for name, info in cls.model_fields.items():
        plain = info.default_factory is None and isinstance(info.default, _IMMUTABLE)
        out.append((name, plain, info.default if plain else None))
    return tuple(out)


def constructed(cls: type[M], values: dict[str, Any]) -> M:
    """``cls.model_construct(**values)`` for the comparison's models (tens of thousands per gate), cheaper.

    These models have no alias, private attribute or post-init and ``values`` holds field names only, so
    the instance is made as ``model_construct`` makes it (the given values, each missing field's default
    or factory in field order, the given names as the fields set) without its generic steps.
    """
    fields: dict[str, Any] = {}
    for name, plain, default in _defaults(cls):
        if name in values:
            fields[name] = values[name]
        elif plain:
            fields[name] = default
        else:
            info = cls.model_fields[name]
            if not info.is_required():
                fields[name] = info.get_default(call_default_factory=True, validated_data=fields)
    m = cls.__new__(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(values))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


class RunRef(_Model):
    """Which run a side of the comparison is."""

    run_id: str
    fingerprint: Fingerprint  # the run's own, as recorded in its run file
    path: str | None = None


class SideStats(_Model):
    """One scenario in one run: its counts (errors apart), rate, Wilson interval and verdict."""

    present: bool = True
    attempts: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    rate: float | None = None  # passed / (passed + failed); errors are not failures
    low: float | None = None
    high: float | None = None
    verdict: Literal["pass", "fail", "inconclusive"] | None = None
    error_messages: list[str] = Field(default_factory=list)
    failure_details: list[str] = Field(default_factory=list)
    sample_answer: str | None = None  # untrusted model output: escape before display

    @property
    def scored(self) -> int:
        """Attempts that passed or failed (errors excluded)."""
        return self.passed + self.failed


class ScenarioComparison(_Model):
    """One scenario, baseline against candidate."""

    id: str
    title: str = ""
    must_pass: bool = False
    threshold: float = 0.8
    counts: bool = True  # False: reported, does not count in the gate
    tags: dict[str, str] = Field(default_factory=dict)
    required_attempts: int
    base: SideStats
    head: SideStats
    change: Change
    # one-sided Fisher exact p that the candidate passes less often, and its Benjamini-Hochberg adjustment
    # over the suite's scenarios that are not must-pass (None: not tested)
    fisher_p: float | None = None
    fisher_p_adjusted: float | None = None
    # why it is newly failing: "pass^k", "confirmed" (Wilson pass -> Wilson fail) or "significant"
    evidence: str = ""
    # smallest fall of this scenario's pass rate the per-scenario test flags with the policy's power,
    # planned from (passed + 1/2) / (scored + 1) so that 5 of 5 is not taken for certain
    detectable_drop: float | None = None
    # the threshold cannot be confirmed at this k: what it needs (empty when it can, or for must-pass)
    cant_tell: str = ""
    second: SideStats | None = None  # the second baseline run, when given
    flaky: bool = False
    flaky_reason: str = ""
    problems: list[str] = Field(default_factory=list)  # blocking data problems (missing, short, no data)


class RateComparison(_Model):
    """Pass rates of a group of scenarios (``overall`` or ``tag_key=value``), base against head."""

    name: str
    scenarios: int
    base_rate: float | None
    head_rate: float | None
    delta: float | None  # mean over scenarios of head rate - base rate
    low: float | None
    high: float | None
    p_value: float | None
    p_adjusted: float | None = None  # Holm across categories (equals p_value for ``overall``)
    exact: bool = False
    noise_magnitude: float | None = None
    # smallest drop of this group's pass rate that rule 2 blocks on with the policy's power: significant
    # (alpha shared by the categories, Holm's first step), beyond the tolerance and the noise floor;
    # None when no drop is
    detectable_drop: float | None = None


class GradedComparison(_Model):
    """A graded score (``judge:<name>`` or ``retrieval:<metric>``) over a group, base against head."""

    metric: str
    group: str
    scenarios: int
    base_mean: float | None
    head_mean: float | None
    delta: float | None
    low: float | None
    high: float | None
    p_value: float | None
    p_adjusted: float | None = None
    noise_magnitude: float | None = None


class GuardrailComparison(_Model):
    """One guardrail (higher is worse), base against head."""

    name: str
    unit: str
    base: float | None
    head: float | None
    change: float | None  # head - base
    relative_change: float | None  # (head - base) / base; None when base is 0 or unknown
    p_value: float | None = None
    base_n: int = 0
    head_n: int = 0
    note: str = ""
    # the same guardrail between the two baseline runs (run-to-run noise); None without a second baseline
    noise_change: float | None = None
    noise_relative_change: float | None = None


class NoiseInfo(_Model):
    """The noise floor: two runs of the baseline configuration compared with each other."""

    run_id: str
    delta: float
    low: float
    high: float
    p_value: float
    magnitude: float


class ErrorSummary(_Model):
    """Attempts with status ``error`` in each run (counted apart from failures)."""

    base_errors: int
    base_attempts: int
    head_errors: int
    head_attempts: int
    base_scenarios: list[str] = Field(default_factory=list)
    head_scenarios: list[str] = Field(default_factory=list)

    @property
    def base_rate(self) -> float:
        """Fraction of baseline attempts that errored."""
        return self.base_errors / self.base_attempts if self.base_attempts else 0.0

    @property
    def head_rate(self) -> float:
        """Fraction of candidate attempts that errored."""
        return self.head_errors / self.head_attempts if self.head_attempts else 0.0


class Comparison(_Model):
    """Everything the gate and the reports need, computed once from two (or three) run files."""

    format_version: int = COMPARISON_FORMAT_VERSION
    baseline: RunRef
    candidate: RunRef
    noise_run: RunRef | None = None
    suite_hash: str
    k: int
    confidence: float
    noise: NoiseInfo | None = None
    minimum_detectable_drop: float | None = None
    scenario_test: str = ""  # the per-scenario test that confirms "newly failing"
    scenario_family: int = 0  # scenarios its p-values are adjusted over
    # smallest fall of a scenario that passed every baseline attempt that the test flags; None: none can be
    scenario_detectable_drop: float | None = None
    # share of the baseline runs' disagreement (sum of per-scenario |rate difference|) on flaky scenarios
    flaky_noise_share: float | None = None
    overall: RateComparison
    categories: list[RateComparison] = Field(default_factory=list)
    graded: list[GradedComparison] = Field(default_factory=list)
    guardrails: list[GuardrailComparison] = Field(default_factory=list)
    errors: ErrorSummary
    scenarios: list[ScenarioComparison]
    problems: list[str] = Field(default_factory=list)

    def by_change(self, change: Change, counted_only: bool = False) -> list[ScenarioComparison]:
        """Scenarios with one kind of change, in suite order."""
        return [s for s in self.scenarios if s.change == change and (s.counts or not counted_only)]

    @property
    def flaky(self) -> list[ScenarioComparison]:
        """Scenarios whose two baseline runs disagree, in suite order (empty without a second baseline)."""
        return [s for s in self.scenarios if s.flaky]
