"""The reading queue on the release page: a signed decision's candidate run, sampled for people to label.

``GET /reports/<decision id>/queue`` lists the queue of the run the decision's gate report judged as the
candidate (the same reproducible sample as ``replaygate label``, plus every attempt of its newly failing
scenarios) with each attempt's answer, checks and judge verdict, escaped; ``POST`` (CSRF-protected, any
logged-in user) records one answer to the judge's question for the logged-in person, with when, in the
run's labels file (``<run file>.labels.jsonl``). Which run is read comes from the stored decision, never
from the request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, redirect, render_template, request, url_for
from replaygate.instrumentation import ReplaygateError
from replaygate.replay import load_run
from werkzeug.wrappers import Response

from replaygate.labels import (
    QUESTIONS,
    HumanLabel,
    append_label,
    draw_sample,
    judge_fingerprint,
    labels_path,
    now_utc,
    read_labels,
)
from replaygate.web._context import controller, current_user, login_required

__all__ = ["bp"]

bp = Blueprint("labels", __name__)


def _report(decision_id: str) -> tuple[dict[str, Any], Path]:
    ctl = controller()
    decision = ctl.decisions.get(decision_id) if ctl.decisions is not None else None
    raw = getattr(decision, "report_path", None)
    if not raw:
        abort(404)
    path = Path(raw)
    path = path / "report.json" if path.is_dir() else path.with_name("report.json")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        run_path = Path(report["comparison"]["candidate"]["path"])
    except (OSError, ValueError, KeyError, TypeError):
        abort(404)
    return report, run_path


def _queue(decision_id: str) -> tuple[Any, Path, list[Any]]:
    report, run_path = _report(decision_id)
    try:
        run = load_run(run_path)
    except ReplaygateError:
        abort(404)
    newly = [n if isinstance(n, str) else str(n.get("id")) for n in report.get("newly_failing", [])]
    return run, run_path, draw_sample(run, newly_failing=newly)


@bp.route("/reports/<decision_id>/queue", methods=["GET"])
@login_required
def queue(decision_id: str) -> str:
    """The reading queue of the decision's candidate run, with what the logged-in person labelled."""
    run, run_path, items = _queue(decision_id)
    user = current_user()
    error: str | None = None
    try:
        labels = read_labels(labels_path(run_path))
    except ReplaygateError as exc:
        labels, error = [], str(exc)
    mine = {(lab.scenario_id, lab.index): lab for lab in labels if user is not None and lab.by == user.name}
    attempts = {(a.scenario_id, a.index): a for a in run.attempts}
    rows = [
        {
            "item": item,
            "attempt": attempts[item.key],
            "question": QUESTIONS.get(item.judge, QUESTIONS["checks"]),
            "label": mine.get(item.key),
        }
        for item in items
    ]
    return render_template("queue.html", decision_id=decision_id, run=run, rows=rows, error=error)


@bp.route("/reports/<decision_id>/queue", methods=["POST"])
@login_required
def label(decision_id: str) -> Response:
    """Record the logged-in person's answer for one attempt of the queue."""
    run, run_path, items = _queue(decision_id)
    user = current_user()
    if user is None:  # pragma: no cover - login_required
        abort(403)
    try:
        key = (str(request.form["scenario_id"]), int(request.form["index"]))
        answer = str(request.form["answer"])
    except (KeyError, ValueError):
        abort(400)
    item = next((i for i in items if i.key == key), None)
    if item is None or answer not in ("yes", "no"):
        abort(400)
    model, prompt = judge_fingerprint(run.fingerprint, item.judge)
    append_label(
        labels_path(run_path),
        HumanLabel(
            run_id=run.run_id, scenario_id=item.scenario_id, index=item.index, judge=item.judge,
            judge_model=model, judge_prompt_version=prompt, judge_verdict=item.verdict,
            human=answer == "yes", note=str(request.form.get("note", ""))[:2000], by=user.name, at=now_utc(),
        ),
    )  # fmt: skip
    return redirect(url_for("labels.queue", decision_id=decision_id))
