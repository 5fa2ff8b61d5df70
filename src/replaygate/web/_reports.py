"""Gate reports: every report the gate wrote, newest first, and one report's page.

The list holds blocked, sign-off-needed and passed reports, signed or not (``?outcome=``,
``?config=``, ``?signed=yes|no``), plus signed decisions whose report file is not reachable here. A
report's page leads with the outcome, the headline and the findings with their fixes; then the evidence
(the change in pass rate against the tolerance and noise floor, per-scenario pass rates with Wilson
intervals, each scenario's verdict); then the review and signing forms; fingerprints folded at the end.
The self-contained HTML report is served under a sandboxing Content-Security-Policy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, redirect, render_template, request, send_file, url_for
from markupsafe import Markup
from werkzeug.wrappers import Response

from replaygate.gate import RULE_TITLES, policy_from_mapping
from replaygate.report import group_tolerances, scenario_interval_chart, suite_delta_chart
from replaygate.web._context import controller, login_required, page_state, web_config, web_store
from replaygate.web._gate_reports import OUTCOME_LABELS, ReportEntry, ReportIndex

__all__ = ["bp", "report_index"]

bp = Blueprint("reports", __name__)
REPORT_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
DEFAULT_REPORTS = ".replaygate/reports"


def report_index() -> ReportIndex:
    """The running app's report index (reports folder and decision store)."""
    config, state = web_config(), page_state()
    if state.report_index is None:
        folder = config.reports_dir or os.environ.get("REPLAYGATE_REPORTS") or DEFAULT_REPORTS
        state.report_index = ReportIndex(folder, controller().decisions)
    return state.report_index


def _decision(decision_id: str) -> Any:
    ctl = controller()
    return ctl.decisions.get(decision_id) if ctl.decisions is not None else None


def _report_file(entry: ReportEntry | None, decision: Any, name: str) -> Path | None:
    raw = str(entry.path) if entry is not None else getattr(decision, "report_path", None)
    if not raw:
        return None
    path = Path(raw)
    candidate = (path if path.is_dir() else path.parent) / name
    return candidate if candidate.is_file() else None


def _fix(text: str, entry: ReportEntry) -> str:
    """A fix command with the report's real folder instead of the ``REPORT`` placeholder."""
    return text.replace("review REPORT ", f"review {entry.path.parent} ")


def _threshold_note(entry: ReportEntry) -> str:
    """Where the significance threshold comes from (alpha, Holm over the categories)."""
    c = entry.report.comparison
    try:
        alpha = policy_from_mapping(entry.report.policy, entry.id).alpha
    except Exception:
        return ""
    m = len(c.categories)
    smallest = f"{alpha / m:.2g} = {alpha:g} / {m} categories" if m else f"{alpha:g}"
    return (
        f"Significant means p < {alpha:g} (the policy's alpha) for the suite; category p-values are Holm-"
        f"adjusted over {m} categories, so the smallest category needs p < {smallest} before adjustment."
    )


@bp.route("/reports")
@login_required
def reports() -> str:
    """Every gate report, newest first, filterable by outcome, configuration and signature."""
    entries, problems, orphans = report_index().entries()
    outcome = request.args.get("outcome") or ""
    config = request.args.get("config") or ""
    signed = request.args.get("signed") or ""
    configs = sorted({e.candidate_config for e in entries})
    shown = [
        e
        for e in entries
        if (not outcome or e.report.outcome == outcome)
        and (not config or e.candidate_config == config)
        and (not signed or (signed == "yes") == (e.decision is not None))
    ]
    return render_template(
        "reports.html",
        entries=shown,
        total=len(entries),
        problems=problems,
        orphans=[] if (outcome or config or signed == "no") else orphans,
        outcomes=OUTCOME_LABELS,
        configs=configs,
        outcome=outcome,
        config=config,
        signed=signed,
    )


@bp.route("/reports/<report_id>")
@login_required
def report(report_id: str) -> str | Response:
    """One report (by report id), or a signed decision (by decision id) whose report is elsewhere."""
    entry = report_index().get(report_id)
    if entry is None:
        decision = _decision(report_id)
        if decision is None:
            abort(404)
        found = report_index().get(decision.report_id)
        if found is not None:
            return redirect(url_for("reports.report", report_id=found.id) + "#decisions")
        return render_template(
            "decision.html",
            d=decision,
            has_html=_report_file(None, decision, "report.html") is not None,
        )
    c = entry.report.comparison
    return render_template(
        "report.html",
        e=entry,
        r=entry.report,
        c=c,
        fix=lambda text: _fix(text, entry),
        rule_titles=RULE_TITLES,
        delta_chart=Markup(suite_delta_chart(c, group_tolerances(entry.report))),
        scenario_chart=Markup(scenario_interval_chart(c)),
        tolerances=group_tolerances(entry.report),
        threshold_note=_threshold_note(entry),
        audit=web_store().audit_entries(limit=50, subject=f"report:{entry.id}"),
        has_html=_report_file(entry, None, "report.html") is not None,
    )


@bp.route("/reports/<report_id>/report.html")
@login_required
def report_html(report_id: str) -> Response:
    """The self-contained HTML report, sandboxed."""
    entry = report_index().get(report_id)
    decision = _decision(report_id) if entry is None else None
    html = _report_file(entry, decision, "report.html") if (entry or decision) else None
    if html is None:
        abort(404)
    response = send_file(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = REPORT_CSP
    return response
