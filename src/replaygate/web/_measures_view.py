"""Live measures of the current step, side by side with intervals and tests."""

from __future__ import annotations

from flask import Blueprint, render_template

from replaygate.web._context import controller, login_required
from replaygate.web._rollout import canary_view

__all__ = ["bp"]

bp = Blueprint("measures", __name__)


@bp.route("/measures")
@login_required
def measures() -> str:
    """The measures page (the same table as the rollout page, with the series)."""
    ctl = controller()
    status, charts = canary_view(ctl, bins=24)
    return render_template(
        "measures.html",
        status=status,
        state=status.state,
        charts=charts,
        tolerances=ctl.policy_for(status.state).limits,
        rollback_alpha=ctl.settings.evidence.rollback_alpha,
        widen_alpha=ctl.settings.evidence.widen_alpha,
    )
