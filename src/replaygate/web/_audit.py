"""The audit log: every attempted action (applied, noop or refused), newest first."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from replaygate.web._context import controller, login_required

__all__ = ["bp"]

bp = Blueprint("audit", __name__)


@bp.route("/audit")
@login_required
def audit() -> str:
    """The audit log page."""
    limit = min(max(request.args.get("limit", 200, type=int) or 200, 1), 5000)
    return render_template("audit.html", entries=controller().audit(limit=limit))
