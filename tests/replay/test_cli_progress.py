"""``replaygate run`` in CI: plain progress lines when the output is not a terminal, no ``--config``
needed, and no journal left behind once the run file is saved."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from replaygate.replay import ProgressLines, run_suite
from replaygate.replay._journal import journal_path
from replaygate.replay._runfile import load_run
from replaygate.replay._scenario import Scenario, save_scenario

from tests.conftest import make_scenario

ROOT = Path(__file__).resolve().parents[2]
RG = str(Path(sys.executable).with_name("replaygate"))  # the console script, as CI runs it
LINE = re.compile(
    r"^replay: (\d+)/40 \((\d+)%\)  pass (\d+)  fail (\d+)  error (\d+)  elapsed \d+:\d\d:\d\d  eta (\S+)$"
)


def scenario(sid: str, repeats: int) -> Scenario:
    return make_scenario(sid, turns=[sid], repeats=repeats)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "rg_slow_target.py").write_text(
        textwrap.dedent("""
            import time

            def run(turns, context):
                time.sleep(0.03)
                return "ok" if not turns[0].startswith("f") else "no"
        """)
    )
    golden = tmp_path / "golden"
    golden.mkdir()
    for sid in ("a-pass", "b-pass", "c-pass", "f-fail"):
        save_scenario(scenario(sid, 10), golden)
    return tmp_path


def test_run_with_output_not_a_terminal_prints_progress_lines(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}", "REPLAYGATE_GOLDEN": ""}
    proc = subprocess.run(
        [
            RG,
            "run",
            "--target",
            "rg_slow_target:run",
            "--golden",
            "golden",
        ]
        + ["--concurrency", "1", "--progress-every", "0.1", "--out", "runs/r.json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("replay: ")]
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    done = [int(m[1]) for m in parsed if m]
    assert done == sorted(done) and done[0] == 0 and done[-1] == 40
    percents = {int(m[2]) for m in parsed if m}
    assert {10, 20, 30, 40, 50, 60, 70, 80, 90, 100} <= percents  # a line at every 10% step
    assert len(lines) > 12  # and timed lines between the steps (40 attempts take over a second)
    last = parsed[-1]
    assert last and (last[3], last[4], last[5], last[6]) == ("30", "10", "0", "0:00:00")
    assert parsed[0] and parsed[0][6] == "?"  # no ETA before the first attempt
    assert "run file: runs/r.json" in proc.stdout
    # no --config: the target gets {} and the fingerprint says so; the journal is gone
    run = load_run(project / "runs" / "r.json")
    assert run.fingerprint.agent_config_hash == "no config"
    assert not journal_path(project / "runs" / "r.json").exists()


def test_quiet_prints_no_progress_and_resume_of_a_finished_run_is_idempotent(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{project}{os.pathsep}{ROOT}", "REPLAYGATE_GOLDEN": ""}
    args = [RG, "run", "--target", "rg_slow_target:run", "--quiet"]
    args += ["--golden", "golden", "--tier", "release", "--repeats", "1", "--out", "r.json"]
    first = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "replay: " not in first.stderr
    again = subprocess.run(
        args + ["--resume"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert load_run(project / "r.json").run_id == first.stdout.split()[1].rstrip(":")
    assert again.stdout == first.stdout  # nothing ran again
    assert not journal_path(project / "r.json").exists()


def test_progress_lines_in_the_library(project: Path) -> None:
    stream = io.StringIO()
    scenarios = [scenario("a-pass", 5), scenario("f-fail", 5)]

    def target(turns: list[str], context: dict[str, object]) -> str:
        return "ok" if turns[0] == "a-pass" else "no"

    run_suite(scenarios, target, None, out_path=project / "lib.json", progress=ProgressLines(60, stream))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("replay: 0/10 (0%)")
    assert lines[-1].startswith("replay: 10/10 (100%)  pass 5  fail 5  error 0")
    assert len(lines) == 11  # the first line and one per 10% (each attempt is 10% here)
