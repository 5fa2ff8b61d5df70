"""The CLI: scenarios lint/list/show/lifecycle, promote and import-csv, with exit codes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import Scenario

from replaygate.cli import main
from replaygate.golden import GoldenSet

TODAY = dt.date(2026, 11, 29)
SECRET_TITLE = "Holdout: secret-phrasing-about-warranty"
SECRET_TURN = "my kettle smells of fish, warranty?"


def scenario(id: str, **kw: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": id,
        "title": f"title of {id}",
        "owner": "alice",
        "origin": "original-eval",
        "added": TODAY,
        "turns": [f"question of {id}"],
        "tiers": ["smoke", "release"],
        "checks": [{"type": "contains", "values": ["refund"]}],
        "changelog": [{"date": TODAY, "author": "alice", "reason": "created"}],
    }
    data.update(kw)
    return Scenario.model_validate(data)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def golden(tmp_path: Path) -> GoldenSet:
    gs = GoldenSet(tmp_path / "golden")
    gs.write(
        [
            scenario("a-1", must_pass=True, tags={"dimension": "safety"}),
            scenario("b-1"),
            scenario("h-1", holdout=True, tiers=["release"], title=SECRET_TITLE, turns=[SECRET_TURN]),
        ]
    )
    return gs


def test_tuning_listing_never_shows_holdout_content(
    golden: GoldenSet, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["--tier", "smoke"], [], ["--json"], ["--tier", "smoke", "--json"]):
        code, out, _ = run(capsys, "scenarios", "list", "--golden", str(golden.path), *args)
        assert code == 0
        assert "h-1" not in out and SECRET_TITLE not in out and SECRET_TURN not in out
        assert "a-1" in out
        if "--json" in args:
            assert json.loads(out)["hidden_holdout"] == 1
        else:
            assert "1 holdout scenario(s) hidden" in out
    code, out, _ = run(capsys, "scenarios", "list", "--golden", str(golden.path), "--tier", "release")
    assert code == 0 and "h-1" in out
    code, out, err = run(capsys, "scenarios", "show", "h-1", "--golden", str(golden.path))
    assert code == 3 and SECRET_TURN not in out + err and "holdout" in err
    code, out, _ = run(capsys, "scenarios", "show", "h-1", "--golden", str(golden.path), "--reveal-holdout")
    assert code == 0 and SECRET_TURN in out


def test_list_filters(golden: GoldenSet, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "scenarios", "list", "--golden", str(golden.path), "--tag", "dimension=safety", "--json"
    )
    assert code == 0 and [r["id"] for r in json.loads(out)["scenarios"]] == ["a-1"]
    code, out, err = run(capsys, "scenarios", "list", "--golden", str(golden.path), "--tag", "nonsense")
    assert code == 3 and "key=value" in err


def test_lifecycle_commands_and_lint_exit_codes(
    golden: GoldenSet, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAYGATE_GOLDEN", str(golden.path))
    monkeypatch.setenv("REPLAYGATE_AUTHOR", "erin")
    assert run(capsys, "scenarios", "lint")[0] == 0
    code, _, err = run(capsys, "scenarios", "retire", "b-1")
    assert code == 3 and "needs a reason" in err
    assert run(capsys, "scenarios", "retire", "b-1", "--reason", "obsolete")[0] == 0
    assert (
        run(
            capsys,
            "scenarios",
            "quarantine",
            "a-1",
            "--owner",
            "bob",
            "--until",
            "2099-01-01",
            "--reason",
            "flaky",
        )[0]
        == 0
    )
    code, _, err = run(
        capsys, "scenarios", "quarantine", "a-1", "--owner", "b", "--until", "soon", "--reason", "x"
    )
    assert code == 3 and "YYYY-MM-DD" in err
    assert run(capsys, "scenarios", "mark-known-failure", "a-1", "--reason", "bug 7")[0] == 0
    assert run(capsys, "scenarios", "reactivate", "a-1")[0] == 0
    code, out, _ = run(capsys, "scenarios", "show", "a-1")
    assert code == 0 and "author: erin" in out and "bug 7" in out
    assert run(capsys, "scenarios", "lint")[0] == 0
    path = golden.file_for("a-1")
    path.write_text(path.read_text().replace("values: [refund]", "values: [money]"))
    code, out, _ = run(capsys, "scenarios", "lint")
    assert code == 1 and f"{path}:" in out and "without a new changelog entry" in out
    assert run(capsys, "scenarios", "lock")[0] == 1
    code, _, err = run(capsys, "scenarios", "show", "zzz")
    assert code == 3 and "no scenario" in err


def test_import_csv_both_spellings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_file = tmp_path / "q.csv"
    csv_file.write_text("id,title,owner,question\nq-1,Question,alice,Where is my order?\n")
    g1, g2 = tmp_path / "g1", tmp_path / "g2"
    assert run(capsys, "import-csv", str(csv_file), "--golden", str(g1))[0] == 0
    assert run(capsys, "scenarios", "import-csv", str(csv_file), "--golden", str(g2))[0] == 0
    assert (g1 / "q-1.yaml").exists() and (g2 / "q-1.yaml").exists()
    assert run(capsys, "scenarios", "lint", "--golden", str(g1))[0] == 0
    csv_file.write_text("id,title,owner,question\nBAD ID,Question,alice,Where?\n")
    code, _, err = run(capsys, "import-csv", str(csv_file), "--golden", str(tmp_path / "g3"))
    assert code == 3 and ":2: column id" in err and not (tmp_path / "g3").exists()


def test_promote_needs_an_existing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "promote",
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "--owner",
        "alice",
        "--origin",
        "near-miss",
        "--store",
        str(tmp_path / "missing.db"),
        "--golden",
        str(tmp_path / "g"),
    )
    assert code == 3 and err.strip()
    assert not (tmp_path / "g").exists()


def test_lint_update_lock_and_missing_directory(
    golden: GoldenSet, capsys: pytest.CaptureFixture[str]
) -> None:
    path = golden.file_for("b-1")
    path.write_text(path.read_text() + "  - {date: 2026-11-30, author: bob, reason: threshold raised}\n")
    path.write_text(path.read_text().replace("threshold: 0.8", "threshold: 0.9"))
    g = str(golden.path)
    assert run(capsys, "scenarios", "lint", "--golden", g)[0] == 1
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", g, "--update-lock")
    assert code == 0 and "accepted b-1" in out
    code, _, err = run(capsys, "scenarios", "lint", "--golden", g + "-missing")
    assert code == 3 and "no golden-set directory" in err


def test_lint_warns_of_a_threshold_its_repeats_cannot_confirm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gs = GoldenSet(tmp_path / "golden")
    gs.write(
        [
            scenario("strict-1", threshold=0.8, repeats=5),
            scenario("enough-1", threshold=0.8, repeats=16),
            scenario("lenient-1", threshold=0.5, repeats=5),
            scenario("must-1", must_pass=True, threshold=0.8, repeats=5),  # pass^k: the threshold is unused
            scenario("low-1", threshold=0.2, repeats=5),
        ]
    )
    assert run(capsys, "scenarios", "lock", "--golden", str(gs.path))[0] == 0
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(gs.path))
    assert code == 0  # warnings, not errors
    warned = [line for line in out.splitlines() if "threshold" in line]
    assert len(warned) == 2
    strict = next(line for line in warned if "strict-1" in line)
    assert (
        f"{gs.file_for('strict-1')}:" in strict
        and "warning: strict-1: threshold 0.8 needs at least 16 repeats to be confirmed at 95%; at 5 it can "
        "only be inconclusive or fail"
        in strict
    )
    assert any("low-1" in line and "to be refuted" in line for line in warned)
