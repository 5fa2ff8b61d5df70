"""The release page's reading queue: a signed decision's candidate run, labelled by the logged-in person."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replaygate.replay import Scenario, run_suite

from replaygate.labels import labels_path, read_labels

XSS = "<script>alert(1)</script>"


def _decision_with_run(env: Any, tmp_path: Path) -> Path:
    scenario = Scenario.model_validate(
        {"id": "q-001", "title": "t", "owner": "o", "origin": "original-eval", "added": "2026-12-01",
         "turns": ["q"], "checks": [{"type": "contains", "values": ["ok"]}], "repeats": 12}
    )  # fmt: skip
    run_path = tmp_path / "candidate.json"
    run_suite(
        [scenario], lambda turns, ctx: f"ok {XSS}", {}, out_path=run_path, progress=False, code_commit=None
    )
    report = tmp_path / "report"
    report.mkdir()
    doc = {"report_id": "rep-q", "newly_failing": [], "comparison": {"candidate": {"path": str(run_path)}}}
    (report / "report.json").write_text(json.dumps(doc), encoding="utf-8")
    decisions = env.controller.decisions
    decisions.by_id["dec-q"] = decisions.by_id["dec-pass"].model_copy(
        update={"id": "dec-q", "report_path": str(report / "report.json")}
    )
    return run_path


def test_queue_page_lists_escapes_and_records_labels(env: Any, helpers: Any, tmp_path: Path) -> None:
    run_path = _decision_with_run(env, tmp_path)
    client = env.app.test_client()
    assert client.get("/reports/dec-q/queue").status_code in (302, 401)  # login first
    helpers.login(client, "vic")
    page = client.get("/reports/dec-q/queue").get_data(as_text=True)
    assert page.count('name="scenario_id" value="q-001"') == 10  # the default sample: 10 of 12 attempts
    assert XSS not in page and "&lt;script&gt;" in page
    assert "Is the answer acceptable?" in page
    refused = client.post(
        "/reports/dec-q/queue", data={"scenario_id": "q-001", "index": "0", "answer": "yes"}
    )
    assert refused.status_code == 400 and not labels_path(run_path).exists()  # no CSRF token
    index = int(page.split('name="index" value="', 1)[1].split('"', 1)[0])
    data = {"scenario_id": "q-001", "index": str(index), "answer": "no", "note": "script tag in the answer",
            "csrf_token": helpers.csrf(page)}  # fmt: skip
    assert client.post("/reports/dec-q/queue", data=data).status_code == 302
    [label] = read_labels(labels_path(run_path))
    assert (label.by, label.human, label.index, label.note) == (
        "vic",
        False,
        index,
        "script tag in the answer",
    )
    assert label.judge == "checks" and label.judge_verdict is True
    bad = {**data, "index": "999"}
    assert client.post("/reports/dec-q/queue", data=bad).status_code == 400  # not in the queue
    assert client.get("/reports/no-such/queue").status_code == 404
