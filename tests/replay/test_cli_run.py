import datetime as dt
import json
import textwrap
from pathlib import Path

import pytest
from replaygate.replay._journal import journal_path, restore_journal
from replaygate.replay._runfile import content_hash, load_run
from replaygate.replay._scenario import Scenario, save_scenario

from tests.replay.conftest import cli

TARGETS = textwrap.dedent("""
    import time

    def good(turns, context, config):
        return {"answer": "ok: " + turns[-1], "label": "answer"}

    def flaky(turns, context, config):
        if context.get("mode") == "raise":
            raise ConnectionError("upstream reset")
        if context.get("mode") == "garbage":
            return ["not", "an", "answer"]
        if context.get("mode") == "hang":
            time.sleep(2)
        return "ok"
""")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rg_cli_targets.py").write_text(TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPLAYGATE_GOLDEN", raising=False)
    golden = tmp_path / "golden"
    golden.mkdir()
    for sid, mode in [("a-fine", "fine"), ("b-raise", "raise"), ("c-garbage", "garbage"), ("d-hang", "hang")]:
        save_scenario(
            Scenario.model_validate(
                {
                    "id": sid,
                    "title": sid,
                    "owner": "qa",
                    "origin": "original-eval",
                    "added": dt.date(2026, 11, 29),
                    "turns": ["hello", "again"],
                    "context": {"mode": mode},
                    "repeats": 2,
                    "tags": {"risk": "high" if mode == "fine" else "low"},
                    "tiers": ["smoke", "release"],
                    "checks": [{"type": "contains", "values": ["ok"]}],
                }
            ),
            golden,
        )
    (tmp_path / "config.yaml").write_text("model: gpt-4o-mini\nprompt_version: p1\nagent_version: '1.0'\n")
    (tmp_path / "policy.yaml").write_text("alpha: 0.05\ntolerance: {overall: 0.02}\n")
    return tmp_path


BASE = ["run", "--config", "config.yaml", "--golden", "golden"]


def test_errors_exit_1_with_a_clear_summary_and_are_never_passes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli(BASE + ["--target", "rg_cli_targets:flaky", "--timeout", "0.3", "--out", "run.json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "6 of 8 attempts errored" in err
    assert "8 attempts: 6 errors, 0 fails, 2 passes" in out
    lines = out.splitlines()
    errors_at = next(i for i, line in enumerate(lines) if line.startswith("ERRORS (6)"))
    assert errors_at == 1  # errors come first, right after the headline
    assert "b-raise#0: target raised ConnectionError: upstream reset" in out
    assert "c-garbage#1: bad target output: got list" in out
    assert "d-hang#0: timed out after 0.3s" in out
    run = load_run(project / "run.json")
    assert {a.status for a in run.attempts if a.scenario_id != "a-fine"} == {"error"}


def test_clean_run_exits_0_and_records_the_fingerprint(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli(
        BASE
        + [
            "--target",
            "rg_cli_targets:good",
            "--tier",
            "smoke",
            "--tag",
            "risk=high",
            "--repeats",
            "3",
            "--seed",
            "5",
            "--policy",
            "policy.yaml",
            "--out",
            "runs/good.json",
            "--quiet",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert out.splitlines()[0].endswith("3 attempts: 0 errors, 0 fails, 3 passes")
    assert len(out.splitlines()) == 1  # --quiet: the summary line only
    run = load_run(project / "runs" / "good.json")
    assert [s.id for s in run.scenarios] == ["a-fine"]
    assert all(a.artifact_path and Path(a.artifact_path).is_file() for a in run.attempts)
    fp = run.fingerprint
    assert (fp.k, fp.seed, fp.tier, fp.target) == (3, 5, "smoke", "rg_cli_targets:good")
    assert (
        fp.policy_hash == content_hash({"alpha": 0.05, "tolerance": {"overall": 0.02}})
        and run.policy is not None
    )
    assert fp.declared_versions == {"model": "gpt-4o-mini", "prompt_version": "p1", "agent_version": "1.0"}
    assert fp.judge_prompt_version  # the offline judges' prompt version
    assert cli(["fingerprint", "runs/good.json", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["suite_hash"] == fp.suite_hash and printed["run_id"] == run.run_id
    assert cli(["fingerprint", "runs/good.json"]) == 0
    text = capsys.readouterr().out
    assert f"agent_config_hash: {fp.agent_config_hash}" in text and "  model: gpt-4o-mini" in text


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--golden", "nowhere"], "no such directory"),
        (["--tag", "risk"], "expected key=value"),
        (["--shard", "5/2"], "--shard"),
        (["--resume"], "--resume needs --out"),
        (["--tag", "risk=none"], "no scenario"),
        (["--config", "missing.yaml"], "no such configuration file"),
        (["--judge", "llm"], "needs a model and a base URL"),
        (["--policy", "config.yaml"], "invalid gate policy"),
    ],
)
def test_usage_and_data_errors_exit_3(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    needle: str,
) -> None:
    for name in ("REPLAYGATE_JUDGE_BASE_URL", "REPLAYGATE_JUDGE_MODEL", "REPLAYGATE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    code = cli(BASE + ["--target", "rg_cli_targets:good"] + extra)
    out, err = capsys.readouterr()
    assert code == 3
    assert needle in out + err


def test_an_empty_policy_file_is_the_default_policy_as_for_the_gate(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from replaygate.gate import load_policy, policy_hash

    (project / "empty-policy.yaml").write_text("# defaults only\n")
    args = BASE + ["--target", "rg_cli_targets:good", "--quiet", "--policy", "empty-policy.yaml"]
    assert cli(args + ["--out", "runs/empty-policy.json"]) == 0
    run = load_run(project / "runs" / "empty-policy.json")
    assert run.policy == {}
    assert run.fingerprint.policy_hash == policy_hash(load_policy(project / "empty-policy.yaml"))


def test_resume_and_shards_through_the_cli(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = BASE + ["--target", "rg_cli_targets:good", "--tag", "risk=low", "--quiet"]
    assert cli(args + ["--out", "whole.json"]) == 0
    whole = load_run(project / "whole.json")
    jpath = journal_path(project / "whole.json")
    assert not jpath.exists()  # a completed run removes its journal
    restore_journal(project / "whole.json")
    lines = jpath.read_bytes().split(b"\n")
    jpath.write_bytes(b"\n".join(lines[:3]) + b"\n")  # as if killed after two attempts
    (project / "whole.json").unlink()
    assert cli(args + ["--out", "whole.json", "--resume"]) == 0
    resumed = load_run(project / "whole.json")
    assert resumed.run_id == whole.run_id
    assert [(a.scenario_id, a.index) for a in resumed.attempts] == [
        (a.scenario_id, a.index) for a in whole.attempts
    ]
    assert cli(args + ["--out", "whole.json", "--resume", "--seed", "9"]) == 3
    assert "cannot resume" in capsys.readouterr().err

    for i in (1, 2):
        assert cli(args + ["--out", f"shard{i}.json", "--shard", f"{i}/2", "--no-artifacts"]) == 0
        assert all(a.artifact_path is None for a in load_run(project / f"shard{i}.json").attempts)
    assert cli(["merge", "merged.json", "shard2.json", "shard1.json"]) == 0
    merged = load_run(project / "merged.json")
    assert [(a.scenario_id, a.index, a.status) for a in merged.attempts] == [
        (a.scenario_id, a.index, a.status) for a in whole.attempts
    ]
    assert cli(["merge", "bad.json", "shard1.json"]) == 3
    assert "missing shard(s) 2/2" in capsys.readouterr().err
    assert not (project / "bad.json").exists()


def test_merge_of_shards_with_errors_lists_them_and_exits_1(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = BASE + ["--target", "rg_cli_targets:flaky", "--tag", "risk=low", "--timeout", "0.3", "--quiet"]
    for i in (1, 2):
        assert cli(args + ["--out", f"s{i}.json", "--shard", f"{i}/2", "--no-artifacts"]) == 1
    capsys.readouterr()
    assert cli(["merge", "all.json", "s1.json", "s2.json"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[0].endswith("6 attempts: 6 errors, 0 fails, 0 passes")
    assert out.splitlines()[1].startswith("ERRORS (6)") and "b-raise#0: target raised ConnectionError" in out
    assert "run file: all.json" in out and "6 of 6 attempts errored" in err
    assert cli(["merge", "all.json", "s1.json", "s2.json", "--quiet", "--force"]) == 1
    quiet = capsys.readouterr().out.splitlines()  # --quiet: the headline and the errors, nothing else
    assert quiet[0].endswith("6 attempts: 6 errors, 0 fails, 0 passes") and quiet[1].startswith("ERRORS (6)")
    assert len(quiet) == 2 + 6 and all(line.startswith("  ") for line in quiet[2:])


def test_holdout_scenarios_are_left_out_and_said_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    held = Scenario.model_validate(
        {
            "id": "e-holdout",
            "title": "held out",
            "owner": "qa",
            "origin": "original-eval",
            "added": dt.date(2026, 11, 29),
            "turns": ["hi"],
            "holdout": True,
            "tiers": ["smoke", "release"],
            "tags": {"risk": "secret"},
        }
    )
    save_scenario(held, project / "golden")
    args = BASE + ["--target", "rg_cli_targets:good", "--tag", "risk=high", "--out", "r.json"]
    assert cli(args) == 0
    err = capsys.readouterr().err
    assert "note: 1 holdout scenario(s) left out: they run only with --tier release" in err
    assert [s.id for s in load_run(project / "r.json").scenarios] == ["a-fine"]
    assert cli(BASE + ["--target", "rg_cli_targets:good", "--tag", "risk=secret", "--tier", "smoke"]) == 3
    assert "no scenario in golden matches tier=smoke" in capsys.readouterr().err
    assert cli(BASE + ["--target", "rg_cli_targets:good", "--tag", "risk=secret", "--tier", "release"]) == 0
    out, err = capsys.readouterr()
    assert "  e-holdout: " in out and "left out" not in err


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for option in (
        "--target",
        "--config",
        "--golden",
        "--tier",
        "--tag",
        "--repeats",
        "--concurrency",
        "--timeout",
        "--seed",
        "--policy",
        "--judge",
        "--judge-model",
        "--out",
        "--resume",
        "--quiet",
        "--shard",
        "--no-artifacts",
    ):
        assert option in text
    assert all(cli([c, "--help"]) == 0 for c in ("merge", "fingerprint"))
    capsys.readouterr()


def test_run_json_is_one_versioned_document_with_the_exit_code(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = BASE + ["--target", "rg_cli_targets:flaky", "--timeout", "0.3", "--out", "r.json", "--json"]
    assert cli(args) == 1  # an attempt errored: still exit 1 under --json
    out, err = capsys.readouterr()
    doc = json.loads(out)  # stdout is the document alone; notes and the error line go to stderr
    assert (doc["format_version"], doc["kind"], doc["exit_code"]) == (1, "run", 1)
    run = load_run(project / "r.json")
    assert doc["run_id"] == run.run_id and doc["summary"]["errors"] == run.summary.errors > 0
    assert Path(doc["run_file"]) == Path("r.json") and "attempts errored" in err


def test_a_run_refused_by_the_lock_moves_nothing_of_the_run_holding_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from replaygate.replay import exclusive_lock

    args = BASE + ["--target", "rg_cli_targets:good", "--tag", "risk=low", "--quiet", "--out", "live.json"]
    assert cli(args) == 0
    out, jpath = project / "live.json", journal_path(project / "live.json")
    restore_journal(out)  # as if a run were still writing: its run file's journal beside it
    before = {p.name: p.read_bytes() for p in (out, jpath)}
    capsys.readouterr()
    with exclusive_lock(project / "live.json.lock", wait_s=0, what="the live run"):
        assert cli(args + ["--force"]) == 3
        assert "being written by another process" in capsys.readouterr().err
        jpath.unlink()  # a finished run's journal is removed; --resume would restore it from the run file
        assert cli(args + ["--resume"]) == 3
        assert "being written by another process" in capsys.readouterr().err
    assert not jpath.exists()  # not restored while another process held the lock
    assert out.read_bytes() == before["live.json"]
    assert not (project / "live.json.bak").exists() and not (project / "live.json.journal.bak").exists()


def test_a_target_that_cannot_be_imported_touches_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(BASE + ["--target", "rg_cli_targets:good", "--quiet", "--out", "runs/a.json"]) == 0
    before = (project / "runs" / "a.json").read_bytes()
    capsys.readouterr()
    code = cli(BASE + ["--target", "rg_cli_targets_missing:run", "--force", "--out", "runs/a.json"])
    _, err = capsys.readouterr()
    assert code == 3 and "cannot import module 'rg_cli_targets_missing'" in err
    assert "journal:" not in err  # no journal line for a run that never starts
    assert (project / "runs" / "a.json").read_bytes() == before
    left = [p.name for p in (project / "runs").iterdir()]
    assert not [n for n in left if n.startswith("a.json") and n != "a.json"], left  # no .bak, no journal
