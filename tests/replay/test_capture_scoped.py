"""Capture by trace: two runs at once, production export during a run, a provider nobody can see.

Each run's attempts must be scored exactly as if alone (their own tool calls), while the process keeps
exporting its production traffic (which must still arrive, without any replayed attempt in it).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import capture, tool_call, trace_agent
from replaygate.replay import Scenario, run_suite_async

from tests.conftest import make_scenario


def scenario(sid: str, tool: str) -> Scenario:
    checks = [{"type": "expected_tools", "tools": [tool]}, {"type": "forbidden_tools", "tools": ["other"]}]
    return make_scenario(sid, turns=[f"please use {tool}"], repeats=6, checks=checks)


@trace_agent(name="scoped-agent")
async def respond(message: str) -> str:
    tool = message.removeprefix("please use ")
    await asyncio.sleep(0.002)  # interleave the two runs' attempts
    with tool_call(tool, {"q": message}) as t:
        await asyncio.sleep(0.002)
        t.set_result({"ok": True})
    return f"used {tool}"


async def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    return {"answer": await respond(turns[-1])}


def test_two_runs_at_once_while_production_keeps_exporting(tmp_path: Path) -> None:
    provider = TracerProvider()
    exported = InMemorySpanExporter()
    handle = ri.configure(tracer_provider=provider, store=None, exporters=[exported], schedule_delay_s=0.02)
    stop = threading.Event()
    production: list[str] = []

    @trace_agent(name="production-agent")
    def serve(message: str) -> str:
        with tool_call("production_tool", {}) as t:
            t.set_result(1)
        return "ok"

    def traffic() -> None:
        while not stop.is_set():
            serve("live request")
            production.append("x")
            time.sleep(0.001)

    thread = threading.Thread(target=traffic)
    thread.start()
    try:

        async def both() -> tuple[Any, Any]:
            return await asyncio.gather(
                run_suite_async(
                    [scenario("a", "alpha")],
                    target,
                    {},
                    out_path=tmp_path / "a.json",
                    progress=False,
                    code_commit=None,
                    concurrency=4,
                ),
                run_suite_async(
                    [scenario("b", "beta")],
                    target,
                    {},
                    out_path=tmp_path / "b.json",
                    progress=False,
                    code_commit=None,
                    concurrency=4,
                ),
            )

        run_a, run_b = asyncio.run(both())
    finally:
        stop.set()
        thread.join(10)
    for run, tool in ((run_a, "alpha"), (run_b, "beta")):
        assert len(run.attempts) == 6
        for attempt in run.attempts:
            assert attempt.status == "pass", (tool, attempt.checks, attempt.error)
            assert attempt.answer == f"used {tool}"
    # production export was never detached: its traffic still arrives, during the runs and after them
    assert handle.pipeline is not None and ri.health()["configured"]
    before = len(production)
    serve("after the runs")
    assert handle.pipeline.force_flush(10_000)
    spans = exported.get_finished_spans()
    names = {s.name for s in spans}
    assert "execute_tool production_tool" in names
    attempt_traces = {a.trace_id for a in run_a.attempts + run_b.attempts}
    exported_traces = {format(s.context.trace_id, "032x") for s in spans if s.context is not None}
    assert not attempt_traces & exported_traces  # replayed attempts are not production traffic
    agent_spans = [s for s in spans if s.name == "invoke_agent production-agent"]
    assert len(agent_spans) >= before + 1
    ri.shutdown(timeout=2)
    provider.shutdown()


def test_capture_keeps_its_own_trace_and_reports_a_foreign_provider() -> None:
    foreign = TracerProvider()  # made by the agent, never registered nor given to configure
    seen = InMemorySpanExporter()
    foreign.add_span_processor(SimpleSpanProcessor(seen))
    with capture() as cap:
        with foreign.get_tracer("agent").start_as_current_span("agent step"):
            pass
    assert cap.spans == [] and cap.foreign
    assert len(seen.get_finished_spans()) == 1  # the spans exist; replaygate just cannot see them
    ri.watch(foreign)
    with capture() as cap:
        with foreign.get_tracer("agent").start_as_current_span("agent step"):
            pass
    assert [s.name for s in cap.spans] == ["agent step"] and not cap.foreign
    assert cap.summary is not None and cap.summary.trace_id == cap.trace_id
    foreign.shutdown()
