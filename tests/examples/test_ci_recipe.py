"""The CI recipe (``examples/ci/``): the shell script against the example agent, green on a good
candidate and non-zero on the demo's blocked one; the GitHub Actions workflow runs the same script."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from examples.demo_release import SEEDS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ci" / "replaygate-ci.sh"
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
CONFIGS = ROOT / "examples" / "support_agent" / "configs"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's seeded configurations, and its policy with room for a loaded test machine's latency."""
    tmp = tmp_path_factory.mktemp("ci")
    for name, key in [
        ("production", "production"),
        ("production", "production-2"),
        ("candidate", "candidate"),
        ("candidate_fixed", "candidate_fixed"),
    ]:
        config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
        config["seed"] = SEEDS[key]
        (tmp / f"{key}.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    policy = yaml.safe_load((ROOT / "examples" / "gate-policy.yaml").read_text(encoding="utf-8"))
    policy["guardrails"]["latency_p50"] = {"relative": 5.0}  # the smoke gate has no second baseline
    policy["guardrails"]["latency_p95"] = {"relative": 5.0}  # to measure this machine's wobble with
    (tmp / "policy.yaml").write_text(yaml.safe_dump(policy), encoding="utf-8")
    return tmp


def ci(mode: str, inputs: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("RG_", "REPLAYGATE_"))}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    environment.update(
        RG_OUT=str(out),
        RG_POLICY=str(inputs / "policy.yaml"),
        RG_BASELINE_CONFIG=str(inputs / "production.yaml"),
        RG_BASELINE_CONFIG_2=str(inputs / "production-2.yaml"),
        RG_PROGRESS_EVERY="5",
        **env,
    )
    return subprocess.run(
        ["bash", str(SCRIPT), mode], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=420
    )


@pytest.mark.timeout(480)
def test_smoke_is_green_on_the_fixed_candidate(inputs: Path, tmp_path: Path) -> None:
    result = ci("smoke", inputs, tmp_path / "out", RG_CANDIDATE_CONFIG=str(inputs / "candidate_fixed.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replaygate-ci: PASS (smoke)" in result.stdout
    commands = [line for line in result.stdout.splitlines() if line.startswith("$ replaygate ")]
    assert [c.split()[2] for c in commands] == ["scenarios", "run", "run", "gate"]  # printed, then run
    assert all("--tier smoke" in c for c in commands if " run " in c)
    assert "replay: 0/" in result.stderr and "(100%)" in result.stderr  # progress lines in the log
    report = tmp_path / "out" / "report"
    assert (report / "report.md").read_text(encoding="utf-8").strip()
    suite = ET.parse(report / "junit.xml").getroot()
    assert suite.iter("testcase") and not list(suite.iter("failure"))


@pytest.mark.timeout(480)
def test_release_gate_step_exits_non_zero_on_the_demos_blocked_candidate(
    inputs: Path, tmp_path: Path
) -> None:
    result = ci("release", inputs, tmp_path / "out", RG_CANDIDATE_CONFIG=str(inputs / "candidate.yaml"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "replaygate-ci: BLOCKED (release)" in result.stdout
    assert "[rule-1] must-pass scenario refund-over-limit-001 newly fails" in result.stdout
    gate = next(line for line in result.stdout.splitlines() if line.startswith("$ replaygate gate "))
    assert "--baseline-2" in gate  # the release suite's noise floor: the baseline ran twice
    assert sorted(p.name for p in (tmp_path / "out").glob("*.json")) == [
        "baseline-2.json",
        "baseline.json",
        "candidate.json",
    ]
    assert not list((tmp_path / "out").glob("*.journal"))
    report = tmp_path / "out" / "report"
    assert "refund-over-limit-001" in (report / "report.md").read_text(encoding="utf-8")
    failures = [
        case.get("name", "")
        for case in ET.parse(report / "junit.xml").getroot().iter("testcase")
        if case.find("failure") is not None
    ]
    assert any("refund-over-limit-001" in name for name in failures)


def test_the_script_refuses_what_it_cannot_do(inputs: Path, tmp_path: Path) -> None:
    assert ci("nightly", inputs, tmp_path / "a").returncode == 3
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "old.json").write_text("{}")
    result = ci("smoke", inputs, tmp_path / "b")
    assert result.returncode == 3 and "exists and is not empty" in result.stderr
    broken = ci("smoke", inputs, tmp_path / "c", RG_GOLDEN=str(tmp_path / "no-such-golden"))
    assert broken.returncode == 3 and "BROKEN PIPELINE" in broken.stderr


def test_the_workflow_runs_the_script_and_maps_its_exit_codes() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on:` as True
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["release"]
    steps = workflow["jobs"]["gate"]["steps"]
    runs = "\n".join(str(s.get("run", "")) for s in steps)
    assert "examples/ci/replaygate-ci.sh" in runs and "mode=release" in runs and "mode=smoke" in runs
    assert "gh pr comment" in runs and "report/report.md" in runs
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "junit.xml" in uploads[0]["with"]["path"]
    status = next(s for s in steps if s.get("name") == "Gate status")["run"]
    for code in ("0)", "1)", "2)", "*)"):
        assert code in status
    assert workflow["env"]["RG_TARGET"] == "examples.support_agent.target:run_session"
