"""Who may sign what: the checks behind ``replaygate sign`` (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from replaygate.gate._errors import DecisionError, PolicyError
from replaygate.gate._gate_model import GateReport
from replaygate.gate._policy import policy_from_mapping
from replaygate.gate._rules import evaluate_gate

__all__ = [
    "DECISION_OUTCOMES",
    "DecisionOutcome",
    "check_review",
    "check_signable",
    "unread_scenarios",
    "verify_report",
]

DecisionOutcome = Literal["pass", "pass-with-sign-off", "block"]
DECISION_OUTCOMES: tuple[str, ...] = ("pass", "pass-with-sign-off", "block")


def unread_scenarios(report: GateReport, reviewed: Collection[str]) -> list[str]:
    """Newly failing scenarios nobody has marked read yet."""
    return [s for s in report.newly_failing if s not in reviewed]


def verify_report(report: GateReport) -> None:
    """Re-apply the gate to the report's own comparison and policy; refuse a report edited after the gate."""
    try:
        policy = policy_from_mapping(report.policy, f"report {report.report_id}")
    except PolicyError as exc:
        raise DecisionError(str(exc)) from None
    again = evaluate_gate(report.comparison, policy, created_at=report.created_at)
    if (again.outcome, again.findings, again.newly_failing) != (
        report.outcome,
        report.findings,
        report.newly_failing,
    ):
        raise DecisionError(
            f"report {report.report_id}: its outcome or findings do not follow from its own comparison "
            f"(recomputed: {again.outcome}, recorded: {report.outcome}); was report.json edited? "
            "Re-run replaygate gate"
        )


def check_review(report: GateReport, scenario_id: str) -> None:
    """Refuse to mark read a scenario that is not newly failing in this report."""
    if scenario_id not in report.newly_failing:
        listed = ", ".join(report.newly_failing) or "none"
        raise DecisionError(
            f"scenario {scenario_id} is not newly failing in report {report.report_id} "
            f"(newly failing: {listed}); only newly failing scenarios need a review"
        )


def check_signable(report: GateReport, outcome: str, reviewed: Collection[str]) -> None:
    """Raise :class:`DecisionError` when this outcome may not be signed (the message says why).

    Refused: a report whose outcome does not follow from its own comparison (edited); any decision while
    a newly failing scenario is unread (rule 4); ``pass`` unless the gate said
    pass; any pass when rule 1 fired or another finding cannot be signed away (missing data, errors).
    """
    if outcome not in DECISION_OUTCOMES:
        raise DecisionError(f"outcome {outcome!r} is not one of {', '.join(DECISION_OUTCOMES)}")
    verify_report(report)
    unread = unread_scenarios(report, reviewed)
    if unread:
        raise DecisionError(
            f"report {report.report_id}: {len(unread)} newly failing scenario(s) not yet read: "
            f"{', '.join(unread)}; "
            "mark each read first (replaygate review REPORT SCENARIO --by NAME --note ...) (rule 4)"
        )
    if outcome == "block":
        return
    if report.rule1_fired:
        ids = ", ".join(f.subject for f in report.findings if f.rule == "rule-1")
        raise DecisionError(
            f"report {report.report_id}: a newly failing must-pass scenario ({ids}) blocks and cannot be "
            "signed away (rule 1); fix it and re-run, or sign --outcome block"
        )
    hard = report.unsignable
    if hard:
        raise DecisionError(
            f"report {report.report_id}: cannot sign a pass over findings nobody may sign away: "
            + "; ".join(f"[{f.rule}] {f.subject}" for f in hard)
            + "; fix them and re-run"
        )
    if outcome == "pass" and report.outcome != "pass":
        raise DecisionError(
            f"report {report.report_id}: the gate said {report.outcome}, so `pass` cannot be signed; "
            "sign --outcome pass-with-sign-off with a reason (the trade-off), or block"
        )
