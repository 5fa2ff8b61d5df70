import asyncio
import sys
import time
from typing import Any

import pytest
from replaygate.replay._errors import TargetError
from replaygate.replay._http_target import HttpTarget, retry_after_seconds
from replaygate.replay._target import CallableTarget, load_target, parse_target_output


def call(target: Any, turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> Any:
    async def go() -> Any:
        try:
            return await target.call(turns, context, config, session_id="s-1")
        finally:
            await target.aclose()

    return asyncio.run(go())


def test_parse_output_accepts_str_and_mapping() -> None:
    assert parse_target_output("hi").answer == "hi"
    out = parse_target_output({"answer": "ok", "label": "escalate", "messages": [{"role": "user"}]})
    assert (out.answer, out.label, out.messages) == ("ok", "escalate", [{"role": "user"}])
    assert parse_target_output({"answer": ""}).answer == ""


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (None, "NoneType"),
        (42, "int"),
        (["a"], "list"),
        ({"text": "no answer key"}, "'answer' is None"),
        ({"answer": 3}, "'answer' is 3"),
        ({"answer": "x", "label": 1}, "'label'"),
        ({"answer": "x", "messages": "nope"}, "'messages'"),
    ],
)
def test_parse_output_rejects_garbage_with_a_clear_message(value: Any, needle: str) -> None:
    with pytest.raises(TargetError, match="bad target output") as info:
        parse_target_output(value)
    assert needle in str(info.value)


def test_callable_with_two_or_three_parameters_sync_and_async() -> None:
    seen: list[Any] = []

    def two(turns: list[str], context: dict[str, Any]) -> str:
        seen.append(("two", turns, context))
        return "a2"

    def three(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        seen.append(("three", turns, context, config))
        return {"answer": "a3", "label": "answer"}

    async def three_async(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> str:
        seen.append(("async", turns, config["model"]))
        return "a4"

    assert call(load_target(two), ["q"], {"u": 1}, {"model": "m"}).answer == "a2"
    assert call(load_target(three), ["q"], {}, {"model": "m"}).label == "answer"
    assert call(load_target(three_async), ["q1", "q2"], {}, {"model": "m"}).answer == "a4"
    assert seen == [
        ("two", ["q"], {"u": 1}),
        ("three", ["q"], {}, {"model": "m"}),
        ("async", ["q1", "q2"], "m"),
    ]


def test_load_target_from_module_spec(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rg_target_spec_mod.py").write_text(
        "class Agent:\n"
        "    @staticmethod\n"
        "    def run(turns, context, config):\n"
        "        return ' | '.join(turns) + ' / ' + config['name']\n"
        "def one(turns):\n    return 'x'\n"
        "value = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    target = load_target("rg_target_spec_mod:Agent.run")
    assert isinstance(target, CallableTarget)
    assert target.spec == "rg_target_spec_mod:Agent.run"
    assert call(target, ["a", "b"], {}, {"name": "cfg"}).answer == "a | b / cfg"
    with pytest.raises(TargetError, match="positional parameter"):
        load_target("rg_target_spec_mod:one")
    with pytest.raises(TargetError, match="not callable"):
        load_target("rg_target_spec_mod:value")
    with pytest.raises(TargetError, match="no attribute 'missing'"):
        load_target("rg_target_spec_mod:missing")
    with pytest.raises(TargetError, match="cannot import module 'rg_no_such_module_xyz'"):
        load_target("rg_no_such_module_xyz:f")
    with pytest.raises(TargetError, match="module:function"):
        load_target("no-colon-here")
    sys.modules.pop("rg_target_spec_mod", None)


def test_http_spec_makes_an_http_target() -> None:
    target = load_target("http://127.0.0.1:9/agent", timeout_s=2)
    assert isinstance(target, HttpTarget)
    assert target.timeout_s == 2


def test_retry_after_parsing() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0) == pytest.approx(6.0)
    assert retry_after_seconds("Thu, 01 Jan 1970 00:00:10 GMT", now=20.0) == 0.0


def test_thread_pool_hands_back_results_errors_and_context_and_drops_cancelled_calls() -> None:
    import contextvars
    import threading

    from replaygate.replay._daemon_pool import DaemonThreadPool

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hang() -> str:
        started.set()
        release.wait(5)
        ran.append("hang")
        return "late"

    def record(x: str) -> str:
        ran.append(x)
        return x + var.get()

    def boom() -> None:
        raise KeyError("k")

    async def main() -> None:
        pool = DaemonThreadPool(1)
        var.set("-ctx")
        many = await asyncio.gather(
            *(pool.run(contextvars.copy_context().run, record, str(i)) for i in range(20))
        )
        assert many == [
            f"{i}-ctx" for i in range(20)
        ]  # every result to its own caller, in the caller's context
        with pytest.raises(KeyError):
            await pool.run(boom)
        ran.clear()
        stuck = asyncio.ensure_future(pool.run(hang))
        await asyncio.to_thread(started.wait, 5)
        queued = asyncio.ensure_future(pool.run(record, "dropped"))  # the only thread is busy: it waits
        await asyncio.sleep(0.01)
        queued.cancel()
        stuck.cancel()  # the hung call is given up: one more thread may start in its place
        results = await asyncio.gather(queued, stuck, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        assert await pool.run(record, "next") == "nextunset"  # no context copied: the default
        release.set()
        await asyncio.sleep(0.05)
        assert ran == ["next", "hang"]  # the cancelled call never ran; the late one ended on its own
        assert pool.threads == 2
        pool.shutdown()

    asyncio.run(main())


def test_the_one_thread_pool_also_serves_the_runners_loops_bounded_daemon_and_replaced_when_stuck() -> None:
    import threading

    from replaygate.replay._daemon_pool import DaemonThreadPool

    pool = DaemonThreadPool(2)
    release, gate = threading.Event(), threading.Event()
    seen: list[tuple[str, str, bool]] = []
    lock = threading.Lock()

    def job(name: str, wait: threading.Event | None = None) -> None:
        with lock:
            seen.append((name, threading.current_thread().name, threading.current_thread().daemon))
        if wait is not None:
            wait.wait(5)

    def ran() -> list[str]:
        with lock:
            return [name for name, _, _ in seen]

    def soon(names: list[str]) -> bool:
        for _ in range(500):
            if set(names) <= set(ran()):
                return True
            time.sleep(0.01)
        return False

    try:
        pool.spawn(lambda: job("hang", release))
        pool.spawn(lambda: job("busy", gate))
        assert soon(["hang", "busy"])
        pool.spawn(lambda: job("queued"))
        time.sleep(0.05)
        assert sorted(ran()) == ["busy", "hang"]  # at the bound: it waits for a free thread
        pool.give_up()  # the hung call is given up: one more thread may take its place
        pool.spawn(lambda: job("after"))
        assert soon(["hang", "busy", "queued", "after"])  # on the new thread, "busy" still holding its own
        gate.set()
        assert pool.threads == 3
        assert all(daemon for _, _, daemon in seen)  # a hung call never keeps the process from exiting
        assert {thread for _, thread, _ in seen} == {f"replaygate-target-{i}" for i in range(3)}
    finally:
        release.set()
        gate.set()
        pool.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.spawn(lambda: None)


def test_a_worker_that_cannot_start_withdraws_its_job_and_the_pool_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from replaygate.replay._daemon_pool import DaemonThreadPool

    pool = DaemonThreadPool(3)
    ran: list[str] = []
    release = threading.Event()
    start = threading.Thread.start
    refuse = [False]

    def start_or_refuse(self: threading.Thread) -> None:
        if refuse[0]:
            raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", start_or_refuse)
    try:
        pool.spawn(lambda: (ran.append("first"), release.wait(5)))
        refuse[0] = True
        with pytest.raises(RuntimeError, match="can't start new thread"):
            pool.spawn(lambda: ran.append("withdrawn"))
        refuse[0] = False
        release.set()
        pool.spawn(lambda: ran.append("after"))  # the first worker is free again: it takes this one
        for _ in range(500):
            if "after" in ran:
                break
            time.sleep(0.01)
        time.sleep(0.05)
        assert ran == ["first", "after"]  # the job whose thread could not start never ran
        assert pool.threads <= 2
    finally:
        release.set()
        pool.shutdown()
