"""The current rollout and its buttons: start (a signed decision), widen, promote, rollback."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, url_for
from markupsafe import Markup
from werkzeug.wrappers import Response

from replaygate.canary import (
    CanaryController,
    CanaryError,
    CanaryStatus,
    RolloutState,
    Transition,
    parse_plan,
)
from replaygate.web._canary_series import measure_series, rollout_markers
from replaygate.web._context import (
    controller,
    current_user,
    login_required,
    page_state,
    releaser_required,
)
from replaygate.web._svg import measure_chart

__all__ = ["ROLLBACK_STATES", "bp", "canary_view", "decision_for", "measure_charts"]

#: States with something to roll back (the Roll back button is enabled only then).
ROLLBACK_STATES = ("canary", "promoted")

bp = Blueprint("rollout", __name__)


def decision_for(decision_id: str | None) -> Any:
    """The signed decision of a rollout, or None when unknown (or no decision store)."""
    ctl = controller()
    if decision_id is None or ctl.decisions is None:
        return None
    try:
        return ctl.decisions.get(decision_id)
    except Exception:
        return None


def measure_charts(ctl: CanaryController, state: RolloutState, bins: int = 12) -> list[Markup]:
    """One chart per live measure over the rollout, with the tolerance band and the action markers."""
    if state.status == "idle" or (state.started_ns or state.step_started_ns) is None:
        return []
    now = ctl.clock()
    start = state.started_ns or state.step_started_ns or now
    end = (state.updated_ns if state.status == "rolled_back" and state.updated_ns else now) + 1
    markers = rollout_markers(ctl, state)
    end = max([end, *(m.at_ns + 1 for m in markers)])
    return [measure_chart(s, markers, start, end) for s in measure_series(ctl, state, bins, now_ns=now)]


def canary_view(ctl: CanaryController, bins: int) -> tuple[CanaryStatus, list[Markup]]:
    """The current status and its charts, from the worker's view cache (see ``_view_cache``).

    The state row is read fresh (one ``SELECT``); the measures and charts computed for that same state
    are reused for a few seconds, so page views cost little whatever the traffic and the viewers.
    """
    state = ctl.state()

    def compute() -> tuple[CanaryStatus, list[Markup]]:
        status = ctl.status(state)  # reading only: the automatic check runs on a schedule
        return status, measure_charts(ctl, status.state, bins=bins)

    key = (state.rollout_id, state.status, state.version)
    view: tuple[CanaryStatus, list[Markup]] = page_state().views.get(f"canary-{bins}", key, compute)
    return view


def _flash(t: Transition) -> None:
    if t.outcome == "applied":
        flash(f"{t.action}: {t.reason} — now {t.after.label()}.", "ok")
    elif t.outcome == "noop":
        flash(f"{t.action}: nothing to do ({t.reason}).", "info")
    else:
        flash(f"{t.action} refused: {t.reason}", "error")


def _actor() -> str:
    user = current_user()
    assert user is not None
    return user.name


@bp.route("/")
@login_required
def index() -> str:
    """The rollout page: state, shares, decision and fingerprints, measures, series, buttons."""
    ctl = controller()
    status, charts = canary_view(ctl, bins=12)  # no GET changes state; measures cached a few seconds
    return render_template(
        "index.html",
        status=status,
        state=status.state,
        decision=decision_for(status.state.decision_id),
        decisions=ctl.signed_decisions(),
        charts=charts,
        tolerances=ctl.policy_for(status.state).limits,
        rollback_alpha=ctl.settings.evidence.rollback_alpha,
        widen_alpha=ctl.settings.evidence.widen_alpha,
        can_roll_back=status.state.status in ROLLBACK_STATES,
        audit=ctl.audit(limit=5),
        default_plan=",".join(f"{p * 100:g}" for p in ctl.settings.plan),
    )


@bp.route("/rollout/start", methods=["POST"])
@releaser_required
def start() -> Response:
    """Start a canary of a signed decision's candidate."""
    decision_id = request.form.get("decision_id", "").strip()
    reason = request.form.get("reason", "").strip()
    try:
        plan = parse_plan(request.form.get("plan", "")) if request.form.get("plan", "").strip() else None
        if not decision_id:
            raise CanaryError("pick a signed decision to start a canary")
        _flash(controller().start(decision_id, actor=_actor(), reason=reason, plan=plan))
    except (CanaryError, ValueError) as exc:
        flash(f"start refused: {exc}", "error")
    return redirect(url_for("rollout.index"))


@bp.route("/rollout/widen", methods=["POST"])
@releaser_required
def widen() -> Response:
    """Widen to the next step, with a reason (refused with the evidence's reason until it holds)."""
    reason = request.form.get("reason", "").strip()
    if not reason:
        flash("widen refused: say why (the reason is recorded in the audit log)", "error")
        return redirect(url_for("rollout.index"))
    _flash(controller().widen(actor=_actor(), reason=reason))
    return redirect(url_for("rollout.index"))


@bp.route("/rollout/promote", methods=["POST"])
@releaser_required
def promote() -> Response:
    """Promote the candidate to all traffic."""
    _flash(controller().promote(actor=_actor(), reason=request.form.get("reason", "").strip()))
    return redirect(url_for("rollout.index"))


@bp.route("/rollout/rollback", methods=["POST"])
@releaser_required
def rollback() -> Response:
    """Roll back to the baseline: one action, idempotent, audited; a reason is required (as in the CLI)."""
    reason = request.form.get("reason", "").strip()
    if not reason:
        flash("rollback refused: a rollback needs a reason (recorded in the audit log)", "error")
        return redirect(url_for("rollout.index"))
    _flash(controller().rollback(actor=_actor(), reason=reason))
    return redirect(url_for("rollout.index"))
