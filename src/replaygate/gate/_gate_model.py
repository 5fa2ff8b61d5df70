"""The gate's report: the outcome, each finding with the rule it broke and what would fix it."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from replaygate.gate._comparison_model import Comparison
from replaygate.gate._integrity import RunDigest

__all__ = ["REPORT_FORMAT_VERSION", "RULE_TITLES", "Finding", "GateOutcome", "GateReport", "Rule"]

REPORT_FORMAT_VERSION: Final = 1

GateOutcome = Literal["pass", "needs-sign-off", "block"]
Rule = Literal["data", "errors", "rule-1", "rule-2", "rule-3", "rule-4"]

RULE_TITLES: dict[str, str] = {
    "data": "every scenario must be run k times in both runs",
    "errors": "errors block unless the policy's error budget allows them",
    "rule-1": "a newly failing must-pass scenario blocks (cannot be signed away)",
    "rule-2": "a significant graded drop beyond tolerance and above the noise floor blocks unless signed",
    "rule-3": "an improvement does not count if a guardrail worsens beyond tolerance (blocks unless signed)",
    "rule-4": "every newly failing scenario (passed before, fails now beyond noise) must be marked read "
    "before signing",
}


class Finding(BaseModel):
    """One reason the gate did not simply pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: Rule
    severity: Literal["block", "review"]
    signable: bool  # True: a named person may sign the trade-off (pass-with-sign-off)
    subject: str  # scenario id, category, metric or guardrail
    message: str
    fix: str


class GateReport(BaseModel):
    """What ``replaygate gate`` decided, with the comparison it decided on (``report.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: Literal[1] = REPORT_FORMAT_VERSION
    report_id: str
    created_at: str
    outcome: GateOutcome
    headline: str
    findings: list[Finding] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # informative: within noise, not significant, ...
    can_tell: bool = True  # False: the suite cannot detect a drop as small as the tolerance
    newly_failing: list[str] = Field(default_factory=list)
    # looked worse without the evidence to confirm it at this k (no signature needed by itself)
    worse_unconfirmed: list[str] = Field(default_factory=list)
    # the two baseline runs disagree; share of the baselines' disagreement they carry (None: unknown)
    flaky: list[str] = Field(default_factory=list)
    flaky_noise_share: float | None = None
    policy: dict[str, Any]
    policy_hash: str
    policy_notes: list[str] = Field(default_factory=list)
    comparison: Comparison
    run_digests: dict[str, RunDigest] = Field(default_factory=dict)  # by run label: run file and journal

    @property
    def rule1_fired(self) -> bool:
        """True when a newly failing must-pass scenario blocks (no pass can be signed)."""
        return any(f.rule == "rule-1" for f in self.findings)

    @property
    def unsignable(self) -> list[Finding]:
        """Blocking findings nobody may sign away."""
        return [f for f in self.findings if f.severity == "block" and not f.signable]
