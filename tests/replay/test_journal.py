import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay._artifacts import read_artifacts
from replaygate.replay._errors import RunFileError
from replaygate.replay._journal import (
    HEADER_LATER,
    JournalWriter,
    journal_path,
    read_journal,
    restore_journal,
)
from replaygate.replay._runfile import Attempt, Measures, load_run
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import Scenario

from tests.conftest import make_scenario

ROOT = Path(__file__).resolve().parents[2]


def attempt(sid: str, i: int, status: str = "pass") -> Attempt:
    return Attempt(scenario_id=sid, index=i, status=status, measures=Measures(latency_s=0.1))  # type: ignore[arg-type]


def scenario(sid: str, repeats: int = 3) -> Scenario:
    return make_scenario(sid, repeats=repeats)


def test_journal_round_trip_and_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "run.json.journal"
    w = JournalWriter(path, header={"run_id": "r1", "fingerprint": {"k": 1}})
    for i in range(5):
        w.append(attempt("s", i))
    w.close()
    state = read_journal(path)
    assert state.header["run_id"] == "r1" and [a.index for a in state.attempts] == [0, 1, 2, 3, 4]
    assert not state.torn_tail and state.valid_bytes == path.stat().st_size
    with open(path, "ab") as fh:  # a write cut by SIGKILL
        fh.write(b'{"kind":"attempt","attempt":{"scenario_id":"s","ind')
    state = read_journal(path)
    assert state.torn_tail and len(state.attempts) == 5
    w = JournalWriter(path, header=None, truncate_at=state.valid_bytes)
    w.append(attempt("s", 5))
    w.close()
    state = read_journal(path)
    assert [a.index for a in state.attempts] == [0, 1, 2, 3, 4, 5] and not state.torn_tail


def test_a_header_written_later_comes_first_and_is_synced_even_without_attempts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import replaygate.replay._journal as journal

    synced: list[bytes] = []
    real_fsync = os.fsync
    path = tmp_path / "later.journal"

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append(path.read_bytes())

    monkeypatch.setattr(journal.os, "fsync", recording_fsync)
    w = JournalWriter(path, header=HEADER_LATER)
    with pytest.raises(RuntimeError, match="before the journal's header"):
        w.append(attempt("s", 0))
    w.write_header({"run_id": "r2"})
    with pytest.raises(RuntimeError, match="has its header already"):
        w.write_header({"run_id": "again"})
    w.append(attempt("s", 0))
    w.close()
    state = read_journal(path)
    assert state.header["run_id"] == "r2" and [a.index for a in state.attempts] == [0]

    synced.clear()
    empty = JournalWriter(path, header=HEADER_LATER)  # a run with nothing left to do
    empty.write_header({"run_id": "r3"})
    empty.close()
    assert read_journal(path).header["run_id"] == "r3"
    assert synced and synced[-1].startswith(b'{"kind":"header","run_id":"r3"')  # durable, not just closed


def test_corrupt_line_before_the_end_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "j"
    w = JournalWriter(path, header={"run_id": "r"})
    w.append(attempt("s", 0))
    w.close()
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(lines[0] + b"\nnot json\n" + lines[1] + b"\n")
    with pytest.raises(RunFileError, match=r"j:2: corrupt journal line"):
        read_journal(path)
    with pytest.raises(RunFileError, match="no journal to resume"):
        read_journal(tmp_path / "missing")
    path.write_bytes(b'{"kind":"attempt"}\n')
    with pytest.raises(RunFileError, match="no header"):
        read_journal(path)


def test_group_commit_shares_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import replaygate.replay._journal as journal

    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        time.sleep(0.005)
        real_fsync(fd)

    monkeypatch.setattr(journal.os, "fsync", slow_fsync)
    w = JournalWriter(tmp_path / "j", header={"run_id": "r"})

    def producer(n: int) -> None:
        for i in range(40):
            w.append(attempt(f"s{n}", i))

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.flush()
    assert len(read_journal(tmp_path / "j").attempts) == 200  # durable after flush, before close
    w.close()
    assert 1 <= w.fsyncs < 100


def target_module(tmp_path: Path) -> str:
    (tmp_path / "rg_marker_target.py").write_text(
        textwrap.dedent("""
        import os, time
        from opentelemetry import trace

        def run(turns, context, config):
            span = trace.get_current_span()
            attrs = getattr(span, "attributes", {}) or {}
            line = "%s %s %s %s\\n" % (os.environ.get("RG_PHASE", "?"), attrs.get("replaygate.scenario.id"),
                                       attrs.get("replaygate.attempt.index"), os.getpid())
            fd = os.open(config["marker"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, line.encode())
            os.close(fd)
            time.sleep(config.get("sleep", 0.0))
            return "ok " + turns[0]
    """)
    )
    return "rg_marker_target:run"


def write_golden(root: Path, ids: list[str], repeats: int) -> Path:
    from replaygate.replay._scenario import save_scenario

    golden = root / "golden"
    golden.mkdir()
    for sid in ids:
        save_scenario(scenario(sid, repeats), golden)
    return golden


RUNNER = """
import sys
from replaygate.replay._candidate import load_config
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import load_scenarios

golden, config, out, resume = sys.argv[1:5]
run = run_suite(load_scenarios(golden), "rg_marker_target:run", load_config(config), out_path=out,
                resume=resume == "resume", concurrency=3, progress=False)
print(run.summary.attempts, run.summary.errors, run.summary.fails, run.summary.passes)
"""


def runner(tmp_path: Path, golden: Path, resume: bool, phase: str) -> subprocess.Popen[bytes]:
    # The Python API in a subprocess (the CLI's own resume path is tested in test_cli_run.py).
    env = {**os.environ, "RG_PHASE": phase}
    args = [str(golden), "config.yaml", "out/run.json", "resume" if resume else "fresh"]
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_sigkill_halfway_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    spec = target_module(tmp_path)
    ids = [f"sc-{i:02d}" for i in range(10)]
    golden = write_golden(tmp_path, ids, repeats=4)
    marker = tmp_path / "calls.txt"
    (tmp_path / "config.yaml").write_text(f"model: m\nmarker: {marker}\nsleep: 0.05\n")
    assert spec == "rg_marker_target:run"
    jpath = journal_path(tmp_path / "out" / "run.json")
    proc = runner(tmp_path, golden, resume=False, phase="1")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if jpath.exists() and jpath.read_bytes().count(b"\n") >= 16:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "out" / "run.json").exists()
    before = {(a.scenario_id, a.index) for a in read_journal(jpath).attempts}
    assert 15 <= len(before) < 40  # killed halfway

    proc = runner(tmp_path, golden, resume=True, phase="2")
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err.decode()
    run = load_run(tmp_path / "out" / "run.json")
    keys = [(a.scenario_id, a.index) for a in run.attempts]
    everything = {(s, i) for s in ids for i in range(4)}
    assert sorted(keys) == sorted(everything) and len(keys) == 40  # same set as an uninterrupted run
    assert {a.status for a in run.attempts} == {"pass"}
    assert not jpath.exists()  # completed: the journal is removed, the run file holds every attempt
    calls = [line.split() for line in marker.read_text().splitlines()]
    resumed = {(sid, int(i)) for phase, sid, i, _ in calls if phase == "2"}
    assert not resumed & before  # finished attempts were not run again
    assert resumed | before == everything
    assert len([c for c in calls if c[0] == "2"]) == len(resumed)  # each remaining attempt called once
    assert out.decode().split() == ["40", "0", "0", "40"]
    # Artifacts: one line per attempt at most (lines of attempts run again were dropped on resume), and
    # an attempt names the artifacts file exactly when its line is there.
    artifacts = tmp_path / "out" / run.run_id / "artifacts.jsonl"
    lines = [json.loads(line) for line in artifacts.read_text().splitlines()]
    keyed = [(d["scenario_id"], d["index"]) for d in lines]
    assert len(keyed) == len(set(keyed))
    named = str(Path("out") / run.run_id / "artifacts.jsonl")  # as given: the run file was out/run.json
    assert {(a.scenario_id, a.index) for a in run.attempts if a.artifact_path == named} == set(keyed)
    assert resumed <= set(keyed)
    by_key = {(a.scenario_id, a.index): a for a in run.attempts}
    assert all(d["trace_id"] == by_key[k].trace_id for k, d in zip(keyed, lines, strict=True))


def test_resume_refuses_a_different_fingerprint_and_completes_idempotently(tmp_path: Path) -> None:
    calls: list[str] = []

    def target(turns: list[str], context: dict[str, Any]) -> str:
        calls.append(turns[0])
        return "ok"

    scenarios = [scenario("a", 2), scenario("b", 2)]
    out = tmp_path / "run.json"
    kw: dict[str, Any] = {"out_path": out, "progress": False, "code_commit": None}
    first = run_suite(scenarios, target, {"model": "m"}, seed=1, **kw)
    assert len(calls) == 4
    # Cut the journal back to the header and one attempt, with a torn line after it.
    jpath = journal_path(out)
    assert not jpath.exists()  # a completed run removes its journal
    restore_journal(out)
    lines = jpath.read_bytes().split(b"\n")
    jpath.write_bytes(b"\n".join(lines[:2]) + b"\n" + lines[2][:20])
    with pytest.raises(RunFileError, match=r"seed: 1 != 2"):
        run_suite(scenarios, target, {"model": "m"}, seed=2, resume=True, **kw)
    with pytest.raises(RunFileError, match="agent_config_hash"):
        run_suite(scenarios, target, {"model": "other"}, seed=1, resume=True, **kw)
    with pytest.raises(RunFileError, match="suite_hash"):
        run_suite(scenarios[:1], target, {"model": "m"}, seed=1, resume=True, **kw)
    assert len(calls) == 4
    second = run_suite(scenarios, target, {"model": "m"}, seed=1, resume=True, **kw)
    assert len(calls) == 7  # three attempts were missing
    assert second.run_id == first.run_id and second.fingerprint.date == first.fingerprint.date
    assert [(a.scenario_id, a.index) for a in second.attempts] == [
        (a.scenario_id, a.index) for a in first.attempts
    ]
    # The artifacts of the three attempts run again replaced their old lines: one line per attempt.
    artifacts = read_artifacts(second.attempts[0].artifact_path or "")
    assert sorted(artifacts) == [(a.scenario_id, a.index) for a in second.attempts]
    assert all(artifacts[(a.scenario_id, a.index)]["trace_id"] == a.trace_id for a in second.attempts)
    assert len((out.parent / first.run_id / "artifacts.jsonl").read_text().splitlines()) == 4
    third = run_suite(scenarios, target, {"model": "m"}, seed=1, resume=True, **kw)
    assert len(calls) == 7 and third.attempts == second.attempts
    # A journaled attempt whose artifact line is gone (killed before it was written) keeps no path.
    path = out.parent / first.run_id / "artifacts.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]) + '{"scenario_id": "a", "ind')
    fourth = run_suite(scenarios, target, {"model": "m"}, seed=1, resume=True, **kw)
    assert len(calls) == 7 and [a.artifact_path is None for a in fourth.attempts].count(True) == 1
    assert len(read_artifacts(path)) == 3 and not path.read_text().endswith("ind")  # torn tail dropped
    assert json.loads(out.read_text())["run_id"] == first.run_id


def test_a_journal_that_cannot_be_written_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import replaygate.replay._journal as journal

    real_fsync = os.fsync
    calls = {"n": 0}

    def failing_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > 1:  # the header goes through; attempt lines do not
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(journal.os, "fsync", failing_fsync)

    def target(turns: list[str], context: dict[str, Any]) -> str:
        time.sleep(0.01)
        return "ok"

    scenarios = [scenario(f"s{i}", 3) for i in range(6)]
    with pytest.raises(RunFileError, match="cannot write the journal.*No space left"):
        run_suite(
            scenarios,
            target,
            {},
            out_path=tmp_path / "run.json",
            progress=False,
            code_commit=None,
            concurrency=2,
        )
    assert not (tmp_path / "run.json").exists()
