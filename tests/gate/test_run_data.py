"""The gate's reading of run files (``load_run_data``, ``scan_run``): the same report and the same errors.

``replaygate gate`` reads each run file attempt by attempt and keeps per-scenario numbers; these tests
check that it gates exactly as the run files loaded whole (``load_run``) do, and that a file edited in
the layout replaygate writes is refused with ``load_run``'s own message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import (
    Attempt,
    RunFile,
    RunFileError,
    attempt_digest,
    load_run,
    save_run,
    scan_run,
)

from replaygate.gate import Policy, RunData, compare_runs, gate_runs, load_run_data, verify_run
from replaygate.labels import with_judge_agreement
from tests.gate.conftest import make_run


def _runs(tmp_path: Path) -> dict[str, Path]:
    """Three run files with errors, judges, retrieval, a missing attempt, escalations and unknown cost."""
    k = 6
    base = make_run([6, 5, 4, 6, 2, 6, 6, 1], run_id="base", k=k, judge=0.8, errors={2: 1}, escalated_every=5)
    head = make_run([0, 5, 4, 6, 3, 6, 2, 1], run_id="head", k=k, judge=0.4, errors={1: 1, 6: 2}, cost=None)
    short = make_run([6, 5, 4, 6, 2, 6, 6, 1], run_id="short", k=k, attempts={7: 5, 3: 0})
    noise = make_run([6, 5, 3, 6, 2, 5, 6, 1], run_id="noise", k=k, judge=0.7, latency=0.7)
    out = {}
    for name, run in (("base", base), ("head", head), ("noise", noise), ("short", short)):
        out[name] = save_run(run, tmp_path / f"{name}.json")
    return out


def _without_time(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(report.model_dump_json())
    data.pop("created_at")
    return data


def test_the_gate_on_run_data_is_the_gate_on_run_files(tmp_path: Path) -> None:
    p = _runs(tmp_path)
    paths = (str(p["base"]), str(p["head"]), str(p["noise"]))
    whole = gate_runs(Policy(), *(load_run(x) for x in paths), paths=paths)
    read = gate_runs(Policy(), *(load_run_data(x) for x in paths), paths=paths)
    assert _without_time(read) == _without_time(whole)
    assert whole.comparison.scenarios[0].head.failure_details  # the runs exercise what is reduced
    assert any(s.head.error_messages for s in whole.comparison.scenarios)
    assert whole.comparison.graded and whole.comparison.guardrails[0].note  # judges; cost unknown


def test_a_comparison_with_missing_attempts_is_the_same(tmp_path: Path) -> None:
    p = _runs(tmp_path)
    whole = compare_runs(load_run(p["short"]), load_run(p["head"]), load_run(p["noise"]))
    read = compare_runs(load_run_data(p["short"]), load_run_data(p["head"]), load_run_data(p["noise"]))
    assert read == whole
    assert whole.problems  # the missing attempts are problems, on both


def test_scan_run_visits_each_attempt_with_its_digest(tmp_path: Path) -> None:
    path = _runs(tmp_path)["head"]
    run = load_run(path)
    seen: list[tuple[Attempt, str]] = []
    head = scan_run(path, lambda a, d: seen.append((a, d)))
    assert head is not None and head.attempts == [] and head.attempts_digest == run.attempts_digest
    assert [a for a, _ in seen] == run.attempts
    assert [d for _, d in seen] == [attempt_digest(a) for a in run.attempts]


def test_another_layout_is_read_whole(tmp_path: Path) -> None:
    path = _runs(tmp_path)["base"]
    run = load_run(path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=1), encoding="utf-8")
    assert scan_run(other, lambda a, d: None) is None
    data = load_run_data(other)
    assert data.scenarios == RunData.of(run).scenarios
    assert data.digest == run.attempts_digest


def _edit_line(path: Path, edit: Any, redigest: bool) -> Path:
    """Edit the first attempt line of a run file as written (``redigest``: and fix the digest)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith('    {"scenario_id"'))
    raw = json.loads(lines[at].strip().rstrip(","))
    edit(raw)
    lines[at] = "    " + json.dumps(raw, separators=(",", ":")) + ","
    out = path.with_name("edited.json")
    out.write_text("\n".join(lines), encoding="utf-8")
    if redigest:  # written again as replaygate writes it, with the digest of the edited attempts
        save_run(RunFile.model_validate(json.loads(out.read_text(encoding="utf-8"))), out)
    return out


@pytest.mark.parametrize(
    ("edit", "redigest"),
    [
        (lambda a: a.update(status="pass"), False),  # the recorded digest no longer matches
        (lambda a: a.update(status="maybe"), False),  # not a valid attempt
        (lambda a: a.update(extra=1), False),
        (lambda a: a["measures"].update(latency_s="slow"), False),
        (lambda a: a.update(status="pass"), True),  # valid, digest recomputed: read, not refused
    ],
)
def test_an_edited_line_is_refused_with_load_runs_message(tmp_path: Path, edit: Any, redigest: bool) -> None:
    edited = _edit_line(_runs(tmp_path)["head"], edit, redigest)
    if redigest:
        assert load_run_data(edited).scenarios == RunData.of(load_run(edited)).scenarios
        assert scan_run(edited, lambda a, d: None) is not None
        return
    with pytest.raises(RunFileError) as whole:
        load_run(edited)
    with pytest.raises(RunFileError) as read:
        load_run_data(edited)
    assert str(read.value) == str(whole.value)


def test_a_recomputed_digest_still_leaves_the_edit_to_integrity(tmp_path: Path) -> None:
    path = _runs(tmp_path)["head"]
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["attempts"].append(dict(raw["attempts"][0]))  # a duplicate attempt, digest recomputed
    run = RunFile.model_validate(raw)
    edited = save_run(run, tmp_path / "dup.json")
    data = load_run_data(edited)
    assert len(list(data.keys)) == len(run.attempts)
    with pytest.raises(Exception, match="appears more than once") as read:
        verify_run(data, "candidate")
    with pytest.raises(Exception, match="appears more than once") as whole:
        verify_run(load_run(edited), "candidate")
    assert str(read.value) == str(whole.value)


def test_judge_agreement_reads_the_judged_attempts_alike(tmp_path: Path) -> None:
    p = _runs(tmp_path)
    full, data = load_run(p["head"]), load_run_data(p["head"])
    judged = data.judged_run()
    assert len(judged.attempts) == sum(1 for a in full.attempts if a.judges)
    report = gate_runs(Policy(), load_run_data(p["base"]), data)
    for required in (False, True):
        a = with_judge_agreement(report, full, [], required=required)
        b = with_judge_agreement(report, judged, [], required=required)
        assert a == b
    assert with_judge_agreement(report, judged, [], required=True).judge_agreement
