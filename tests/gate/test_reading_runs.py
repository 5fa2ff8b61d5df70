"""``RunData.reading``: run files read side by side in forked processes give what reading them here gives.

The files here are small, so each test lowers :data:`PARALLEL_BYTES` to take the forked path (and checks
that it did: every reader started is counted, since one that reads a small file may be gone at once).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import RunFileError, save_run

import replaygate.gate._run_data as run_data
from replaygate.gate import RunData, load_run_data
from tests.conftest import run_main
from tests.gate.conftest import make_run


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    out = []
    for name, counts in (("base2", [6, 5, 4, 6, 2]), ("head", [0, 5, 4, 6, 3]), ("base", [6, 5, 3, 6, 2])):
        run = make_run(counts, run_id=name, k=6, judge=0.7, errors={1: 1})
        out.append(save_run(run, tmp_path / f"{name}.json"))
    return out


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every process this process forks from here on (the readers)."""
    process = multiprocessing.get_context("fork").Process
    real = process.start
    out: list[str] = []

    def start(self: Any) -> None:
        out.append(self.name)
        real(self)

    monkeypatch.setattr(process, "start", start)
    return out


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch, starts: list[str]) -> list[str]:
    if "fork" not in multiprocessing.get_all_start_methods() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("reading side by side needs fork and two cores")  # (CI has both)
    monkeypatch.setattr(run_data, "PARALLEL_BYTES", 0)
    # the suite's servers may run threads in this worker: these readers take no lock they hold
    monkeypatch.setattr(run_data, "_other_threads", lambda: False)
    return starts


def _readers() -> int:
    return len(multiprocessing.active_children())


def test_side_by_side_gives_what_reading_here_gives(runs: list[Path], forked: list[str]) -> None:
    with RunData.reading(runs) as read:
        assert len(forked) == 2  # the second and third file, each in a forked process
        got = read()
    assert got == [load_run_data(p) for p in runs]
    assert got[1].scenarios["s01"].passed == 0 and got[1].scenarios["s02"].errors == 1
    assert _readers() == 0


def test_the_first_bad_file_in_order_is_the_error(
    runs: list[Path], tmp_path: Path, forked: list[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format_version": 1, "run_id": ', encoding="utf-8")
    edited = tmp_path / "edited.json"
    edited.write_text(runs[1].read_text(encoding="utf-8").replace('"index":0', '"index":1', 1), "utf-8")
    for paths, bad in (
        ([runs[0], edited, broken], edited),  # both read in forked processes: the first in order
        ([runs[0], runs[1], broken], broken),
        ([broken, edited, runs[2]], broken),  # read here, while the others are read there
    ):
        with pytest.raises(RunFileError) as here:
            load_run_data(bad)
        forked.clear()
        with pytest.raises(RunFileError) as side, RunData.reading(paths) as read:
            assert len(forked) == 2
            read()
        assert str(side.value) == str(here.value)
        assert _readers() == 0
    missing = tmp_path / "missing.json"
    forked.clear()
    with pytest.raises(RunFileError, match="missing.json"), RunData.reading([runs[0], missing]) as read:
        assert forked == []  # a file that is not there: read here, in order, for its message
        read()


def test_a_reader_that_dies_leaves_its_file_to_be_read_here(
    runs: list[Path], monkeypatch: pytest.MonkeyPatch, forked: list[str]
) -> None:
    def die(path: Any, sender: Any) -> None:
        os._exit(1)  # killed before it sends (as the out-of-memory killer would)

    monkeypatch.setattr(run_data, "_read_into", die)
    with RunData.reading(runs) as read:
        got = read()
    assert len(forked) == 2
    assert got == [load_run_data(p) for p in runs]


def test_a_result_that_does_not_pickle_is_read_here_without_a_traceback(
    runs: list[Path], monkeypatch: pytest.MonkeyPatch, forked: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    parent, real = os.getpid(), run_data.load_run_data

    def in_reader_unpicklable(path: Any) -> Any:
        if os.getpid() != parent:
            error = RunFileError("in the reader")
            error.hook = lambda: None  # type: ignore[attr-defined]  # a lambda does not pickle
            raise error
        return real(path)

    monkeypatch.setattr(run_data, "load_run_data", in_reader_unpicklable)
    with RunData.reading(runs) as read:
        got = read()
    assert len(forked) == 2
    assert got == [real(p) for p in runs]
    assert "Traceback" not in capfd.readouterr().err


def test_a_block_that_fails_stops_its_readers(
    runs: list[Path], forked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(path: Any, sender: Any) -> None:
        time.sleep(60)  # still reading when the block fails

    monkeypatch.setattr(run_data, "_read_into", slow)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="policy"), RunData.reading(runs):
        assert len(forked) == 2 and _readers() == 2
        raise ValueError("bad policy")
    assert _readers() == 0  # stopped, not waited for
    assert time.monotonic() - t0 < 30


def test_no_fork_while_other_threads_run(
    runs: list[Path], monkeypatch: pytest.MonkeyPatch, starts: list[str]
) -> None:
    monkeypatch.setattr(run_data, "PARALLEL_BYTES", 0)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with RunData.reading(runs) as read:
            assert starts == []  # read here, one by one
            got = read()
    finally:
        stop.set()
        other.join()
    assert got == [load_run_data(p) for p in runs]


def test_small_files_are_read_here(runs: list[Path], starts: list[str]) -> None:
    with RunData.reading(runs) as read:
        assert starts == []
        assert read() == [load_run_data(p) for p in runs]


def _gate(runs: list[Path], out: Path) -> tuple[int, dict[str, Any]]:
    """``replaygate gate`` on the three runs: its exit code and its JSON report (without its time)."""
    policy = out.parent / f"{out.name}-policy.yaml"
    policy.write_text("{}\n", encoding="utf-8")
    code = run_main(
        ["gate", "--policy", str(policy), "--baseline", str(runs[2]), "--candidate", str(runs[1]),
         "--baseline-2", str(runs[0]), "--out", str(out), "--format", "json"]
    )  # fmt: skip
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    report.pop("created_at")
    return code, report


def test_the_gate_command_reads_side_by_side_to_the_same_report(
    runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = _gate(runs, tmp_path / "here")
    taken: list[bool] = []
    real = run_data._side_by_side

    def recorded(paths: Any) -> bool:
        taken.append(real(paths))
        return taken[-1]

    monkeypatch.setattr(run_data, "_side_by_side", recorded)
    monkeypatch.setattr(run_data, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(run_data, "_other_threads", lambda: False)
    side = _gate(runs, tmp_path / "side")
    assert taken == [True] or len(os.sched_getaffinity(0)) < 2  # read side by side where the machine can
    assert side == here and here[0] in (0, 1, 2)
    assert here[1]["comparison"]["scenarios"][0]["head"]["passed"] == 0


def test_the_compare_command_reads_side_by_side_to_the_same_comparison(
    runs: list[Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], starts: list[str]
) -> None:
    args = ["compare", str(runs[2]), str(runs[1]), "--baseline-2", str(runs[0]), "--json"]
    assert run_main(args) == 0
    here = capsys.readouterr().out
    monkeypatch.setattr(run_data, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(run_data, "_other_threads", lambda: False)
    assert run_main(args) == 0
    side = capsys.readouterr().out
    assert len(starts) == 2 or len(os.sched_getaffinity(0)) < 2  # the candidate and the baseline, forked
    assert json.loads(side) == json.loads(here)
    assert json.loads(here)["scenarios"][0]["head"]["passed"] == 0
