"""Read a newly failing scenario side by side, mark it read, and sign the report, from the page.

The rules are the gate's own: ``DecisionStore.add_review`` refuses a scenario that is not newly failing,
``DecisionStore.sign`` runs ``check_signable`` (every newly failing scenario read, no pass over rule 1 or
an unsignable finding, no ``pass`` unless the gate said pass), so the page refuses exactly what
``replaygate review`` and ``replaygate sign`` refuse, with the same messages. Every attempt, refused or
applied, is an audit row; a signature also writes ``decision.json`` beside the report, as the CLI does.
A report already signed is signed again only when the form says it supersedes the decision in force,
with a reason.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from replaygate.instrumentation import ReplaygateError
from werkzeug.wrappers import Response

from replaygate.gate import DECISION_OUTCOMES, DecisionError, unread_scenarios
from replaygate.report import atomic_write
from replaygate.web._attempts import scenario_sides
from replaygate.web._context import (
    current_user,
    login_required,
    releaser_required,
    reviewer_required,
    web_store,
)
from replaygate.web._gate_reports import ReportEntry
from replaygate.web._reports import report_index

__all__ = ["bp"]

bp = Blueprint("review", __name__)


def _entry(report_id: str) -> ReportEntry:
    entry = report_index().get(report_id)
    if entry is None:
        abort(404)
    return entry


def _name() -> str:
    user = current_user()
    assert user is not None
    return user.name


@bp.route("/reports/<report_id>/scenarios/<scenario_id>")
@login_required
def scenario(report_id: str, scenario_id: str) -> str:
    """One scenario of a report: baseline and candidate attempts side by side, with the review form."""
    entry = _entry(report_id)
    comparison = next((s for s in entry.report.comparison.scenarios if s.id == scenario_id), None)
    if comparison is None:
        abort(404)
    base, head = scenario_sides(entry.report, scenario_id)
    return render_template(
        "scenario.html",
        e=entry,
        s=comparison,
        sides=(base, head),
        newly_failing=scenario_id in entry.report.newly_failing,
        reviews=[r for r in entry.reviews if r.scenario_id == scenario_id],
    )


@bp.route("/reports/<report_id>/scenarios/<scenario_id>/review", methods=["POST"])
@reviewer_required
def review(report_id: str, scenario_id: str) -> Response:
    """Mark a newly failing scenario read with a note (the gate's ``add_review``), audited."""
    entry = _entry(report_id)
    note = request.form.get("note", "").strip()
    subject = f"report:{entry.id}/{scenario_id}"
    store = report_index().decisions
    try:
        if not note:
            raise DecisionError("a review needs a note: what you concluded from reading the attempts")
        if store is None or not hasattr(store, "add_review"):
            raise DecisionError("no decision store: reviews cannot be recorded")
        store.add_review(entry.report, scenario_id, _name(), note)
        left = unread_scenarios(entry.report, {r.scenario_id for r in store.reviews(entry.id)})
    except ReplaygateError as exc:
        web_store().audit(actor=_name(), action="review", outcome="refused", subject=subject, reason=str(exc))
        flash(f"review refused: {exc}", "error")
        return redirect(url_for("review.scenario", report_id=entry.id, scenario_id=scenario_id))
    web_store().audit(actor=_name(), action="review", outcome="applied", subject=subject, reason=note)
    flash(
        f"{scenario_id} marked read by {_name()}; "
        + (f"still unread: {', '.join(left)}" if left else "every newly failing scenario has been read"),
        "ok",
    )
    return redirect(url_for("reports.report", report_id=entry.id) + "#review")


@bp.route("/reports/<report_id>/sign", methods=["POST"])
@releaser_required
def sign(report_id: str) -> Response:
    """Sign the report (the gate's ``sign``), audited; refused with the gate's reason."""
    entry = _entry(report_id)
    outcome = request.form.get("outcome", "")
    reason = request.form.get("reason", "").strip()
    supersede = request.form.get("supersede") == "yes"
    subject = f"report:{entry.id}"
    store = report_index().decisions
    try:
        if outcome not in DECISION_OUTCOMES:
            raise DecisionError(f"choose an outcome: {', '.join(DECISION_OUTCOMES)}")
        if not reason:
            raise DecisionError("a signed decision needs a reason (the trade-off, or why it blocks)")
        if store is None or not hasattr(store, "sign"):
            raise DecisionError("no decision store: decisions cannot be signed here")
        decision = store.sign(
            entry.report,
            signed_by=_name(),
            outcome=outcome,
            reason=reason,
            report_path=str(entry.path),
            supersede=supersede,
        )
        atomic_write(entry.path.parent / "decision.json", decision.model_dump_json(indent=2))
    except (ReplaygateError, OSError) as exc:
        web_store().audit(
            actor=_name(), action="sign", outcome="refused", subject=subject, reason=str(exc),
            details={"outcome": outcome, "reason": reason, "supersede": supersede},
        )  # fmt: skip
        flash(f"sign refused: {exc}", "error")
        return redirect(url_for("reports.report", report_id=entry.id) + "#sign")
    web_store().audit(
        actor=_name(), action="sign", outcome="applied", subject=subject, reason=reason,
        details={"decision_id": decision.id, "outcome": decision.outcome, "supersede": supersede},
    )  # fmt: skip
    flash(f"decision {decision.id}: {decision.outcome} signed by {decision.signed_by}", "ok")
    return redirect(url_for("reports.report", report_id=entry.id) + "#decisions")
