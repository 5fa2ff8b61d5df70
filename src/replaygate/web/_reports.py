"""Gate reports: every signed decision with its outcome, fingerprints and report files.

The Markdown report is shown as escaped text; the self-contained HTML report is served under a sandboxing
Content-Security-Policy (no script runs, no request leaves the page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Blueprint, abort, render_template, send_file
from werkzeug.wrappers import Response

from replaygate.web._app import controller, login_required

__all__ = ["bp"]

bp = Blueprint("reports", __name__)
REPORT_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _decisions() -> list[Any]:
    ctl = controller()
    if ctl.decisions is None:
        return []
    try:
        return list(ctl.decisions.list_decisions())
    except Exception:
        return []


def _decision(decision_id: str) -> Any:
    ctl = controller()
    return ctl.decisions.get(decision_id) if ctl.decisions is not None else None


def _report_file(decision: Any, name: str) -> Path | None:
    raw = getattr(decision, "report_path", None)
    if not raw:
        return None
    path = Path(raw)
    base = path if path.is_dir() else path.parent
    candidate = base / name
    return candidate if candidate.is_file() else None


@bp.route("/reports")
@login_required
def reports() -> str:
    """The list of signed gate decisions."""
    return render_template("reports.html", decisions=_decisions())


@bp.route("/reports/<decision_id>")
@login_required
def report(decision_id: str) -> str:
    """One decision: outcome, signer, reason, fingerprints and the Markdown report as text."""
    decision = _decision(decision_id)
    if decision is None:
        abort(404)
    md = _report_file(decision, "report.md")
    return render_template(
        "report.html",
        d=decision,
        markdown=md.read_text(encoding="utf-8") if md else None,
        has_html=_report_file(decision, "report.html") is not None,
    )


@bp.route("/reports/<decision_id>/report.html")
@login_required
def report_html(decision_id: str) -> Response:
    """The self-contained HTML report, sandboxed."""
    decision = _decision(decision_id)
    html = _report_file(decision, "report.html") if decision is not None else None
    if html is None:
        abort(404)
    response = send_file(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = REPORT_CSP
    return response
