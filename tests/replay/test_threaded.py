"""The sync-target threads of the runner (``replaygate.replay._threaded``): failures inside the runner fail
the run loudly instead of dropping attempts or hanging; what a call started elsewhere ends with it."""

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from replaygate.replay._artifacts import read_artifacts
from replaygate.replay._journal import journal_path, read_journal
from replaygate.replay._runfile import RunFile
from replaygate.replay._runner import run_suite, run_suite_async
from replaygate.replay._scenario import Scenario

from tests.conftest import make_scenario

KW: dict[str, Any] = {"progress": False, "code_commit": None}


def scenario(sid: str, repeats: int = 1, **extra: Any) -> Scenario:
    fields = {"title": f"scenario {sid}", "turns": [f"question of {sid}"], "repeats": repeats}
    checks = [{"type": "contains", "values": ["good"]}]
    return make_scenario(sid, **{**fields, "checks": checks, **extra})


class Unrenderable:
    def __str__(self) -> str:
        raise ValueError("cannot render")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_span_value_that_cannot_be_rendered_loses_no_attempt(tmp_path: Path, kind: str) -> None:
    loop: list[Any] = []
    loop.append(loop)  # contains itself

    def annotate(context: dict[str, Any]) -> None:
        if context.get("bad"):
            span = trace.get_current_span()
            span.set_attribute("agent.object", Unrenderable())  # type: ignore[arg-type]
            span.set_attribute("agent.loop", loop)  # type: ignore[arg-type]

    def sync_target(turns: list[str], context: dict[str, Any]) -> str:
        annotate(context)
        return "good"

    async def async_target(turns: list[str], context: dict[str, Any]) -> str:
        annotate(context)
        await asyncio.sleep(0)
        return "good"

    scenarios = [scenario("a-bad", context={"bad": True})] + [scenario(f"b{i}") for i in range(10)]
    target = sync_target if kind == "sync" else async_target
    t0 = time.monotonic()
    run = run_suite(scenarios, target, {}, out_path=tmp_path / "run.json", concurrency=4, timeout_s=5, **KW)
    assert time.monotonic() - t0 < 3
    assert sorted(a.scenario_id for a in run.attempts) == sorted(s.id for s in scenarios)
    assert {a.status for a in run.attempts} == {"pass"}
    bad = next(a for a in run.attempts if a.scenario_id == "a-bad")
    assert bad.artifact_path is not None
    root = read_artifacts(bad.artifact_path)[("a-bad", 0)]["spans"][0]
    assert root["attributes"]["agent.object"] == "<unrenderable Unrenderable>"
    assert root["attributes"]["agent.loop"] == "<unrenderable list>"


def test_a_replacement_thread_that_cannot_start_fails_the_run_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name == "replaygate-target-1":  # the replacement after the first timeout
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)

    def target(turns: list[str], context: dict[str, Any]) -> str:
        release.wait(10)  # every call hangs past the timeout
        return "good"

    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="can't start new thread"):
            run_suite(
                [scenario("a"), scenario("b")],
                target,
                {},
                out_path=tmp_path / "run.json",
                concurrency=1,
                timeout_s=0.2,
                **KW,
            )
    finally:
        release.set()
    assert time.monotonic() - t0 < 5


def test_an_awaitable_from_a_sync_target_is_cancelled_with_its_attempt_and_with_the_run(
    tmp_path: Path,
) -> None:
    effects: list[str] = []

    async def agent(tag: str) -> str:
        try:
            await asyncio.sleep(1.0)
        except asyncio.CancelledError:
            effects.append(f"{tag}: cancelled")
            raise
        effects.append(f"{tag}: finished after its attempt or run ended")
        return "good"

    async def main() -> RunFile:
        timed_out = await run_suite_async(
            [scenario("a")],
            lambda turns, context: agent("timeout"),
            {},
            out_path=tmp_path / "timeout.json",
            timeout_s=0.2,
            **KW,
        )
        task = asyncio.create_task(
            run_suite_async(
                [scenario("b")],
                lambda turns, context: agent("cancel"),
                {},
                out_path=tmp_path / "cancel.json",
                timeout_s=30,
                **KW,
            )
        )
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(1.2)  # the caller's loop lives on: nothing may finish behind the run's back
        return timed_out

    run = asyncio.run(main())
    assert [(a.status, a.error) for a in run.attempts] == [("error", "timed out after 0.2s")]
    assert sorted(effects) == ["cancel: cancelled", "timeout: cancelled"]


def test_a_run_cancelled_while_calls_run_is_quiet_and_resumable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0
    lock = threading.Lock()
    busy = threading.Event()

    def target(turns: list[str], context: dict[str, Any]) -> str:
        nonlocal calls
        with lock:
            calls += 1
            if calls == 40:
                busy.set()
        time.sleep(0.01)
        return "good"

    scenarios = [scenario(f"s{i:02d}", repeats=4) for i in range(30)]
    out = tmp_path / "run.json"

    async def cancel(when: threading.Event | None) -> None:
        task = asyncio.create_task(run_suite_async(scenarios, target, {}, out_path=out, concurrency=8, **KW))
        await asyncio.sleep(0)  # the run has started its calls, not yet written its journal header
        if when is not None:
            assert await asyncio.to_thread(when.wait, 30)
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with caplog.at_level("ERROR", logger="asyncio"):
        asyncio.run(cancel(None))  # before the journal's header was written
        header_only = read_journal(journal_path(out))
        assert header_only.header["run_id"] and header_only.attempts == []
        asyncio.run(cancel(busy))  # in the middle of the run, after 40 calls started
    assert not [r for r in caplog.records if "Exception in callback" in r.getMessage()]
    journaled = read_journal(journal_path(out)).attempts
    assert 0 < len(journaled) < 120
    run = run_suite(scenarios, target, {}, out_path=out, resume=True, concurrency=8, **KW)
    keys = [(a.scenario_id, a.index) for a in run.attempts]
    assert len(keys) == len(set(keys)) == 120 and {a.status for a in run.attempts} == {"pass"}
    assert json.loads(out.read_text())["run_id"] == run.run_id


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_finished_run_leaves_no_cycle_holding_its_attempts(tmp_path: Path, kind: str) -> None:
    import gc

    def sync_target(turns: list[str], context: dict[str, Any]) -> str:
        return "good"

    async def async_target(turns: list[str], context: dict[str, Any]) -> str:
        return "good"

    target = sync_target if kind == "sync" else async_target
    scenarios = [scenario(f"s{i}", repeats=3) for i in range(5)]
    gc.collect()
    gc.disable()  # no collection during the run: only what reference counting frees is freed
    try:
        out = tmp_path / "run.json"
        run = run_suite(scenarios, target, {}, out_path=out, concurrency=4, timeout_s=5, **KW)
        assert run.summary.passes == 15
        del run
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    # the runner's loop, its threads' state and the attempts are freed when the run is done, not by
    # the cycle collector some time later
    assert not kinds & {"_Loop", "ThreadedCalls", "Attempt", "AttemptRunner"}, kinds


def test_calls_racing_their_deadline_are_each_recorded_once_either_way(tmp_path: Path) -> None:
    # The threads take no lock between calls: a call returning just as the watchdog gives it up is one
    # attempt, a pass or a timeout, never both and never lost; and a call past its deadline is an error.
    def target(turns: list[str], context: dict[str, Any]) -> str:
        if context.get("slow"):
            time.sleep(0.3)  # past the deadline
        elif context.get("edge"):
            time.sleep(0.2)  # about at it
        return "good"

    scenarios = (
        [scenario(f"fast{i:02d}", repeats=20) for i in range(20)]
        + [scenario(f"edge{i}", repeats=4, context={"edge": True}) for i in range(8)]
        + [scenario(f"slow{i}", repeats=2, context={"slow": True}) for i in range(4)]
    )
    run = run_suite(
        scenarios, target, {}, out_path=tmp_path / "run.json", concurrency=16, timeout_s=0.2, **KW
    )
    keys = [(a.scenario_id, a.index) for a in run.attempts]
    assert len(keys) == len(set(keys)) == 20 * 20 + 8 * 4 + 4 * 2
    by_status = {s: [a for a in run.attempts if a.status == s] for s in ("pass", "fail", "error")}
    assert not by_status["fail"]
    assert all(a.status == "pass" for a in run.attempts if a.scenario_id.startswith("fast"))
    slow = [a for a in run.attempts if a.scenario_id.startswith("slow")]
    assert slow and all(a.status == "error" and a.error == "timed out after 0.2s" for a in slow)
    assert run.summary.attempts == len(keys)
    edge = [a for a in run.attempts if a.scenario_id.startswith("edge")]
    assert all(a.status == "pass" or a.error == "timed out after 0.2s" for a in edge)
    assert not journal_path(tmp_path / "run.json").exists()  # finished: the run file holds everything
