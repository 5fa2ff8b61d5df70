from pathlib import Path
from typing import Any

import pytest
from replaygate.replay._errors import RunFileError
from replaygate.replay._merge import merge_runs
from replaygate.replay._runfile import RunFile, save_run
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import Scenario
from replaygate.replay._shard import in_shard, parse_shard

from tests.conftest import make_scenario


def scenario(sid: str) -> Scenario:
    return make_scenario(sid)


def target(turns: list[str], context: dict[str, Any]) -> str:
    return "ok" if turns[0][-1] in "02468" else "no"


def run(scenarios: list[Scenario], out: Path, **kw: Any) -> RunFile:
    return run_suite(
        scenarios, target, {"model": "m"}, out_path=out, progress=False, code_commit="c1", seed=3, **kw
    )


def test_shard_assignment_is_a_stable_partition() -> None:
    ids = [f"scenario-{i}" for i in range(200)]
    for n in (1, 2, 3, 7):
        owners = [[i for i in range(1, n + 1) if in_shard(s, i, n)] for s in ids]
        assert all(len(o) == 1 for o in owners)
        if n > 1:
            assert len({o[0] for o in owners}) == n  # every shard gets work
    assert parse_shard(" 2/5 ") == (2, 5)
    for bad in ("0/2", "3/2", "1/0", "a/b", "1"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_shards_merged_equal_one_whole_run(tmp_path: Path) -> None:
    scenarios = [scenario(f"s-{i}") for i in range(12)]
    whole = run(scenarios, tmp_path / "whole.json")
    shard_files = []
    for i in (1, 2, 3):
        shard = run(scenarios, tmp_path / f"shard{i}.json", shard=f"{i}/3")
        assert shard.shard == f"{i}/3" and len(shard.scenarios) < 12
        assert shard.fingerprint.suite_hash == whole.fingerprint.suite_hash
        shard_files.append(tmp_path / f"shard{i}.json")
    merged = merge_runs(list(reversed(shard_files)))

    def key(r: RunFile) -> list[tuple[str, int, str]]:
        return [(a.scenario_id, a.index, a.status) for a in r.attempts]

    assert key(merged) == key(whole)
    assert [s.id for s in merged.scenarios] == [s.id for s in whole.scenarios]
    assert merged.summary.passes == whole.summary.passes and merged.summary.fails == whole.summary.fails
    assert merged.shard is None
    ignore = {"date"}
    assert merged.fingerprint.model_dump(exclude=ignore) == whole.fingerprint.model_dump(exclude=ignore)


def test_merge_refuses_mismatches_duplicates_and_missing_shards(tmp_path: Path) -> None:
    scenarios = [scenario(f"s-{i}") for i in range(6)]
    a = run(scenarios, tmp_path / "a.json", shard="1/2")
    b = run(scenarios, tmp_path / "b.json", shard="2/2")
    with pytest.raises(RunFileError, match=r"missing shard\(s\) 2/2"):
        merge_runs([a])
    with pytest.raises(RunFileError, match="given twice"):
        merge_runs([a, a, b])
    other = run_suite(
        scenarios,
        target,
        {"model": "other"},
        out_path=tmp_path / "o.json",
        progress=False,
        code_commit="c1",
        seed=3,
        shard="2/2",
    )
    with pytest.raises(RunFileError, match="agent_config_hash"):
        merge_runs([a, other])
    whole = run(scenarios, tmp_path / "whole.json")
    with pytest.raises(RunFileError, match="not a shard"):
        merge_runs([whole])
    dup = b.model_copy(update={"attempts": b.attempts + [a.attempts[0]], "scenarios": b.scenarios})
    save_run(dup, tmp_path / "dup.json")
    with pytest.raises(RunFileError, match="appears twice"):
        merge_runs([tmp_path / "a.json", tmp_path / "dup.json"])
    with pytest.raises(RunFileError, match="no such run file"):
        merge_runs([tmp_path / "nope.json"])
    assert len(merge_runs([tmp_path / "a.json", tmp_path / "b.json"]).attempts) == 12


def test_the_gate_refuses_a_shard_and_takes_the_merged_run(tmp_path: Path) -> None:
    """A shard is not a comparison's candidate: a data error (exit 3) that says to merge, never a block."""
    from click.testing import CliRunner

    from replaygate.cli import cli
    from replaygate.gate import GateError, Policy, gate_runs

    scenarios = [scenario(f"s-{i}") for i in range(12)]
    whole = run(scenarios, tmp_path / "whole.json")
    shards = [tmp_path / f"shard{i}.json" for i in (1, 2)]
    for i, path in enumerate(shards, 1):
        run(scenarios, path, shard=f"{i}/2")
    with pytest.raises(GateError, match=r"shard 1/2 of a sharded run.*replaygate merge"):
        gate_runs(Policy(), whole, RunFile.model_validate_json(shards[0].read_text()))
    (tmp_path / "policy.yaml").write_text("format_version: 1\n")
    out = CliRunner().invoke(
        cli, ["gate", "--policy", str(tmp_path / "policy.yaml"), "--baseline", str(tmp_path / "whole.json"),
              "--candidate", str(shards[1]), "--out", str(tmp_path / "report")],
    )  # fmt: skip
    assert out.exit_code == 3 and "shard 2/2" in out.output and "replaygate merge" in out.output, out.output
    assert not (tmp_path / "report").exists()  # refused before any report is written
    save_run(merge_runs(shards), tmp_path / "merged.json")
    merged = RunFile.model_validate_json((tmp_path / "merged.json").read_text())
    # latency off: microsecond targets on a busy machine differ by more than +20% between any two runs
    steady = Policy.model_validate({"guardrails": {"latency_p50": None, "latency_p95": None}})
    report = gate_runs(steady, whole, merged)
    assert report.outcome == "pass", report.findings
