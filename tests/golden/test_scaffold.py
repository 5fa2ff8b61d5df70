"""``scenarios new`` writes a scaffold that lints; ``scenarios schema`` prints the schema; a golden set
without ``golden.lock`` still has its scenarios checked."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from replaygate.replay import Scenario, scenario_json_schema

from replaygate.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_new_scaffold_lints_names_every_field_and_never_overwrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "golden"
    code, out, _ = run(
        capsys, "scenarios", "new", "refund-first-001", "--golden", str(golden), "--owner", "bob"
    )
    assert code == 0 and "created" in out
    path = golden / "refund-first-001.yaml"
    text = path.read_text(encoding="utf-8")
    for name in Scenario.model_fields:  # present or commented, each one
        assert f"\n{name}:" in text or f"\n# {name}:" in text, name
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(golden))
    assert code == 0, out
    assert "0 error(s)" in out
    edited = path.read_text(encoding="utf-8") + "# my notes\n"
    path.write_text(edited, encoding="utf-8")
    code, _, err = run(
        capsys, "scenarios", "new", "refund-first-001", "--golden", str(golden), "--owner", "x"
    )
    assert code == 3 and "exists already" in err
    assert path.read_text(encoding="utf-8") == edited
    code, _, err = run(capsys, "scenarios", "new", "Bad Id", "--golden", str(golden), "--owner", "x")
    assert code == 3 and "is not a scenario id" in err
    code, out, _ = run(
        capsys, "scenarios", "new", "other-001", "--stdout", "--owner", "x", "--origin", "near-miss"
    )
    assert code == 0 and out.startswith("# A replaygate scenario") and "origin: near-miss" in out
    assert not (golden / "other-001.yaml").exists()


def test_a_new_scaffold_in_a_locked_set_says_to_lock_it_and_lints_once_locked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "golden"
    run(capsys, "scenarios", "new", "first-001", "--golden", str(golden), "--owner", "bob")
    assert run(capsys, "scenarios", "lock", "--golden", str(golden))[0] == 0  # the set has a lock now
    code, out, _ = run(capsys, "scenarios", "new", "second-001", "--golden", str(golden), "--owner", "bob")
    assert code == 0 and "`replaygate scenarios lock --golden" in out
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(golden))
    assert code == 1 and "second-001 is not in golden.lock" in out
    assert run(capsys, "scenarios", "lock", "--golden", str(golden))[0] == 0
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(golden))
    assert code == 0 and "0 error(s)" in out, out


def test_schema_command_prints_the_schema_and_it_accepts_a_scaffold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "scenarios", "schema")
    assert code == 0
    schema = json.loads(out)
    assert schema == json.loads(json.dumps(scenario_json_schema()))
    run(capsys, "scenarios", "new", "x-001", "--golden", str(tmp_path), "--owner", "bob")
    data = json.loads(json.dumps(yaml.safe_load((tmp_path / "x-001.yaml").read_text()), default=str))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


def test_lint_without_a_lock_checks_the_scenarios_and_says_how_to_create_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = tmp_path / "golden"
    run(capsys, "scenarios", "new", "good-001", "--golden", str(golden), "--owner", "bob")
    bad = (golden / "good-001.yaml").read_text().replace("id: good-001", "id: bad-001")
    (golden / "bad-001.yaml").write_text(bad.replace("  - max_chars: 1200", "  - {type: contains, value: x}"))
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(golden))
    assert code == 1
    assert "checks[0].value: `value` is not a field of a contains check; did you mean `values`" in out
    assert "warning: no golden.lock yet" in out and f"`replaygate scenarios lock --golden {golden}`" in out
    assert "not in golden.lock" not in out  # no second complaint per scenario
    (golden / "bad-001.yaml").unlink()
    assert run(capsys, "scenarios", "lock", "--golden", str(golden))[0] == 0
    code, out, _ = run(capsys, "scenarios", "lint", "--golden", str(golden))
    assert code == 0 and "no golden.lock" not in out


def test_written_files_get_the_mode_open_would_give_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from replaygate.replay import write_atomic

    golden = tmp_path / "golden"
    old = os.umask(0o022)
    try:
        code, _, _ = run(capsys, "scenarios", "new", "mode-001", "--golden", str(golden), "--owner", "bob")
        assert code == 0
        code, out, err = run(capsys, "scenarios", "lock", "--golden", str(golden))  # golden.lock, atomically
        assert code == 0, out + err
        scenario = golden / "mode-001.yaml"
        assert scenario.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600: teammates and CI read it
        assert (golden / "golden.lock").stat().st_mode & 0o777 == 0o644
        scenario.chmod(0o664)
        os.replace(write_atomic(scenario, scenario.read_text(encoding="utf-8")), scenario)  # keeps its mode
        assert scenario.stat().st_mode & 0o777 == 0o664
        assert not [p for p in golden.iterdir() if p.name.endswith(".tmp")]
    finally:
        os.umask(old)
