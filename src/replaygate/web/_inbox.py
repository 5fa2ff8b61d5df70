"""The failure inbox (read-only) and one trace's page; all trace content is escaped."""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, abort, render_template, request
from replaygate.instrumentation import ReplaygateError

from replaygate.web._app import controller, login_required

__all__ = ["bp"]

bp = Blueprint("inbox", __name__)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


@bp.route("/inbox")
@login_required
def inbox() -> str:
    """Failure candidates, newest first, each linked to its trace page."""
    traces = controller().traces
    reason = request.args.get("reason") or None
    failures: list[Any] = []
    error = None
    if traces is not None and hasattr(traces, "failures"):
        try:
            failures = traces.failures(reasons=[reason] if reason else None, limit=200)
        except ReplaygateError as exc:
            error = str(exc)
    return render_template("inbox.html", failures=failures, reason=reason, error=error)


@bp.route("/traces/<trace_id>")
@login_required
def trace(trace_id: str) -> str:
    """One trace: turns, answer, retrieved chunks, tool and LLM calls, failure reasons, feedback."""
    traces = controller().traces
    if traces is None or not hasattr(traces, "get_trace"):
        abort(404)
    try:
        record = traces.get_trace(trace_id)
    except ReplaygateError:
        abort(404)
    return render_template("trace.html", record=record, s=record.summary, as_json=_json)
