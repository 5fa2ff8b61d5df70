"""Issue 14: an edited run file never turns the demo's blocked candidate into a pass.

Real replays of the support agent (production and the candidate that grants an over-limit refund); the
candidate's run file is then edited the ways a reviewer tried: duplicated attempts, ``counts: false``,
attempts of unknown scenarios, a missing index, every scenario quarantined, an attempt's status flipped.
Each edit is tried twice: as it is (the recorded digest no longer matches) and with the digest
recomputed by the editor; the gate refuses (exit 3) or blocks every time, never passes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import RunFile, RunFileError, digest_of, load_run, restore_journal, suite_hash_of

from replaygate.gate import GateError, gate_runs, load_policy, load_run_data
from tests.gate.test_worked_example import POLICY

Edit = Callable[[dict[str, Any]], None]
MUST = "refund-over-limit-001"


_REPLAY = """
import sys
from pathlib import Path
from tests.gate.test_worked_example import replay
replay(Path(sys.argv[1]), "production", "production")
replay(Path(sys.argv[1]), "candidate", "candidate")
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # In a process of their own: the example agent's replays in one process depend on what ran before
    # (a second candidate replay there passes all five refund attempts), and the worked example's too.
    tmp = tmp_path_factory.mktemp("tamper")
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", _REPLAY, str(tmp)], cwd=root, check=True, timeout=300)
    # A completed run removes its journal; the one it had is written back from the pristine run file.
    restore_journal(tmp / "candidate.json")
    return {"baseline": tmp / "production.json", "candidate": tmp / "candidate.json"}


def _write(raw: dict[str, Any], path: Path, redigest: bool) -> None:
    if redigest:  # the editor recomputes the digest (and the suite hash when asked to)
        raw["attempts_digest"] = digest_of(RunFile.model_validate(raw))
    path.write_text(json.dumps(raw), encoding="utf-8")


def _tampered(demo: dict[str, Path], tmp_path: Path, edit: Edit, redigest: bool, journal: bool) -> Path:
    raw = json.loads(demo["candidate"].read_text(encoding="utf-8"))
    edit(raw)
    out = tmp_path / "candidate.json"
    _write(raw, out, redigest)
    if journal:
        shutil.copy(f"{demo['candidate']}.journal", f"{out}.journal")
    return out


def _gate(demo: dict[str, Path], candidate: Path) -> str:
    """The gate's outcome, or the error that refused the run (read as ``replaygate gate`` reads them)."""
    try:
        base = load_run_data(demo["baseline"])
        head = load_run_data(candidate)
        report = gate_runs(
            load_policy(POLICY), base, head, paths=(str(demo["baseline"]), str(candidate), None)
        )
    except (RunFileError, GateError) as exc:
        return f"refused: {exc}"
    return report.outcome


def _duplicate_passes(raw: dict[str, Any]) -> None:
    """Replace the must-pass scenario's failing attempts by copies of its passing ones."""
    mine = [a for a in raw["attempts"] if a["scenario_id"] == MUST]
    passing = [a for a in mine if a["status"] == "pass"]
    raw["attempts"] = [a for a in raw["attempts"] if a["scenario_id"] != MUST] + passing * 5


def _counts_false(raw: dict[str, Any]) -> None:
    for e in raw["scenarios"]:
        e["counts"] = False


def _unknown_ids(raw: dict[str, Any]) -> None:
    extra = [dict(a, scenario_id="ghost-001") for a in raw["attempts"] if a["status"] == "pass"][:5]
    raw["attempts"].extend(extra)


def _missing_index(raw: dict[str, Any]) -> None:
    raw["attempts"] = [a for a in raw["attempts"] if not (a["scenario_id"] == MUST and a["status"] == "fail")]


def _quarantine_all(raw: dict[str, Any]) -> None:
    for e in raw["scenarios"]:
        e.update(status="quarantined", must_pass=False, counts=False)
    raw["fingerprint"]["suite_hash"] = suite_hash_of(
        (e["id"], e["status"], e["content_hash"]) for e in raw["scenarios"]
    )


def _flip_status(raw: dict[str, Any]) -> None:
    for a in raw["attempts"]:
        if a["scenario_id"] == MUST and a["status"] == "fail":
            a["status"] = "pass"
            a["checks"] = [dict(c, passed=True) for c in a["checks"]]


EDITS: dict[str, Edit] = {
    "duplicates": _duplicate_passes,
    "counts-false": _counts_false,
    "unknown-ids": _unknown_ids,
    "missing-index": _missing_index,
    "all-quarantined": _quarantine_all,
    "flipped-status": _flip_status,
}


def test_the_untouched_candidate_is_blocked_and_the_report_records_both_digests(
    demo: dict[str, Path],
) -> None:
    assert _gate(demo, demo["candidate"]) == "block"
    head = load_run(demo["candidate"])
    report = gate_runs(
        load_policy(POLICY),
        load_run(demo["baseline"]),
        head,
        paths=(str(demo["baseline"]), str(demo["candidate"]), None),
    )
    digests = report.run_digests["candidate"]
    assert digests.run_file == head.attempts_digest == digests.journal  # the journal agrees with the file
    assert report.run_digests["baseline"].run_id == load_run(demo["baseline"]).run_id


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_that_keeps_the_old_digest_is_refused(
    demo: dict[str, Path], tmp_path: Path, name: str
) -> None:
    result = _gate(demo, _tampered(demo, tmp_path, EDITS[name], redigest=False, journal=False))
    assert result.startswith("refused:"), result
    if name not in ("counts-false", "all-quarantined"):  # those edit the scenario list, not the attempts
        assert "edited after the run" in result, result


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_with_a_recomputed_digest_is_refused_or_blocked(
    demo: dict[str, Path], tmp_path: Path, name: str
) -> None:
    result = _gate(demo, _tampered(demo, tmp_path, EDITS[name], redigest=True, journal=True))
    assert result != "pass" and result != "needs-sign-off", result
    assert result.startswith("refused:"), result
    assert "candidate" in result and str(tmp_path) in result  # names the run and its file


def test_each_edit_names_what_is_wrong(demo: dict[str, Path], tmp_path: Path) -> None:
    why = {
        name: _gate(demo, _tampered(demo, tmp_path, edit, redigest=True, journal=False))
        for name, edit in EDITS.items()
    }
    assert "appears more than once" in why["duplicates"]
    assert f"scenario {MUST}" in why["counts-false"] or "counts: false" in why["counts-false"]
    assert "ghost-001#" in why["unknown-ids"] and "does not list" in why["unknown-ids"]
    assert f"{MUST}#" in why["missing-index"] and "missing" in why["missing-index"]
    # all quarantined, suite hash recomputed: the baseline's suite differs, or nothing is left to compare
    assert "suite hash" in why["all-quarantined"] or "nothing is left" in why["all-quarantined"]


def test_a_flipped_attempt_is_named_by_the_journal(demo: dict[str, Path], tmp_path: Path) -> None:
    result = _gate(demo, _tampered(demo, tmp_path, _flip_status, redigest=True, journal=True))
    assert "differ from its journal" in result and f"{MUST}#" in result


def test_an_all_quarantined_suite_on_both_sides_does_not_pass(demo: dict[str, Path], tmp_path: Path) -> None:
    base = json.loads(demo["baseline"].read_text(encoding="utf-8"))
    _quarantine_all(base)
    (tmp_path / "b").mkdir()
    _write(base, tmp_path / "b" / "production.json", redigest=True)
    head = _tampered(demo, tmp_path, _quarantine_all, redigest=True, journal=False)
    result = _gate({"baseline": tmp_path / "b" / "production.json"}, head)
    assert result.startswith("refused:") and "nothing is left to compare" in result


def test_the_cli_refuses_a_tampered_run_with_exit_3(demo: dict[str, Path], tmp_path: Path) -> None:
    head = _tampered(demo, tmp_path, _duplicate_passes, redigest=True, journal=False)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "replaygate"), "gate", "--policy", str(POLICY), "--baseline",
         str(demo["baseline"]), "--candidate", str(head), "--out", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and str(head) in done.stderr and "more than once" in done.stderr


def test_an_edit_is_named_by_the_journal_before_the_digest(demo: dict[str, Path], tmp_path: Path) -> None:
    """Digest not recomputed, journal still beside: the refusal names the attempts, not only two hashes."""
    result = _gate(demo, _tampered(demo, tmp_path, _flip_status, redigest=False, journal=True))
    assert result.startswith("refused:") and "edited after the run" in result
    assert "differ from its journal" in result and f"{MUST}#" in result, result


def test_a_partial_journal_of_the_same_run_names_no_edit(demo: dict[str, Path], tmp_path: Path) -> None:
    """An interrupted earlier try of the run left part of its journal: the untouched run file is gated."""
    head = tmp_path / "candidate.json"
    shutil.copy(demo["candidate"], head)
    lines = Path(f"{demo['candidate']}.journal").read_text(encoding="utf-8").splitlines(keepends=True)
    Path(f"{head}.journal").write_text("".join(lines[:4]), encoding="utf-8")  # header and three attempts
    assert _gate(demo, head) == "block"
    # an edit of an attempt the partial journal holds is still named by it
    first = json.loads(lines[1])["attempt"]
    raw = json.loads(demo["candidate"].read_text(encoding="utf-8"))
    for a in raw["attempts"]:
        if (a["scenario_id"], a["index"]) == (first["scenario_id"], first["index"]):
            a["answer"] = (a["answer"] or "") + " (edited)"
    _write(raw, head, redigest=True)
    result = _gate(demo, head)
    assert "differ from its journal" in result, result
    assert f"{first['scenario_id']}#{first['index']}" in result
