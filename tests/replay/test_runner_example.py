"""The support-agent example end to end: the golden set, k=5, production against candidate."""

from pathlib import Path

import pytest
import yaml
from replaygate.replay._runfile import RunFile, content_hash, load_run

from replaygate.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "support_agent"
# A seed of this test's own: the k attempts of each scenario are reproducible as a set (see the target's
# docstring), so the test does not depend on luck.
SEED = 4242


def replay(tmp_path: Path, name: str) -> tuple[int, RunFile, dict[str, object]]:
    config = yaml.safe_load((EXAMPLE / "configs" / f"{name}.yaml").read_text())
    config["seed"] = SEED
    cfg_path = tmp_path / f"{name}.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    out = tmp_path / f"{name}.json"
    argv = [
        "run",
        "--target",
        "examples.support_agent.target:run_session",
        "--config",
        str(cfg_path),
        "--golden",
        str(EXAMPLE / "golden"),
        "--tier",
        "release",
        "--repeats",
        "5",
        "--concurrency",
        "4",
        "--out",
        str(out),
        "--quiet",
    ]
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, load_run(out), config


def over_limit_refunds(run: RunFile) -> list[int]:
    return [
        a.index
        for a in run.attempts_for("refund-over-limit-001")
        if any(c.name == "tool_args" and not c.passed and "issue_refund" in c.detail for c in a.checks)
    ]


def test_golden_set_k5_production_vs_candidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    code_p, prod, prod_cfg = replay(tmp_path, "production")
    code_c, cand, cand_cfg = replay(tmp_path, "candidate")
    out = capsys.readouterr().out
    assert (code_p, code_c) == (0, 0)  # no attempt errored
    for run, cfg in ((prod, prod_cfg), (cand, cand_cfg)):
        assert run.summary.errors == 0
        assert len(run.attempts) == 5 * len(run.scenarios) and len(run.scenarios) >= 10
        fp = run.fingerprint
        assert fp.k == 5 and fp.seed == 0 and fp.tier == "release"
        assert fp.agent_config_hash == content_hash(cfg)
        assert fp.declared_versions["config_id"] == cfg["config_id"]
        assert fp.declared_versions["prompt_version"] == cfg["prompt_version"]
        assert fp.judge_prompt_version and fp.replaygate_version
        assert all(a.trace_id and a.artifact_path for a in run.attempts)
    assert prod.fingerprint.suite_hash == cand.fingerprint.suite_hash  # same suite, comparable
    assert prod.fingerprint.agent_config_hash != cand.fingerprint.agent_config_hash
    # The planted failure: the candidate issues refunds above the $200 limit instead of escalating.
    assert over_limit_refunds(cand), [a.checks for a in cand.attempts_for("refund-over-limit-001")]
    assert not over_limit_refunds(prod)
    failing = [a for a in cand.attempts_for("refund-over-limit-001") if a.status == "fail"]
    assert len(failing) >= len(over_limit_refunds(cand))
    assert cand.summary.scenarios["refund-over-limit-001"].fails >= 1
    assert f"{len(cand.attempts)} attempts: 0 errors" in out
    # retrieval metrics are stored in the run file, per scenario and overall
    retrieval = cand.summary.retrieval
    assert retrieval is not None and retrieval.attempts > 0
    assert 0.0 < retrieval.mean.hit_rate <= 1.0
    assert "refund-over-limit-001" in retrieval.scenarios
