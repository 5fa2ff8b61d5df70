"""Context across threads and asyncio tasks; streams consumed or closed elsewhere (otel-python#2606)."""

import asyncio
import gc
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import semconv as sc


def _no_detach_errors(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r.getMessage() for r in caplog.records if "detach" in r.getMessage().lower()]
    bad += [r.getMessage() for r in caplog.records if "different context" in r.getMessage().lower()]
    assert bad == []


def _agent_and_children(memory: InMemorySpanExporter) -> tuple[Any, list[Any]]:
    spans = list(memory.get_finished_spans())
    (agent,) = [s for s in spans if s.name.startswith("invoke_agent")]
    return agent, [s for s in spans if s is not agent]


def test_executor_helper_carries_context(memory: InMemorySpanExporter) -> None:
    def lookup(order_id: str) -> str:
        with ri.tool_call("lookup_order", {"order_id": order_id}) as t:
            t.set_result("ok")
        ri.mark_escalation("from a thread")
        return order_id

    @ri.trace_agent
    def respond(message: str) -> str:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(ri.wrap_for_executor(lookup), f"ORD-{i}") for i in range(3)]
            return ",".join(f.result() for f in futures)

    assert respond("q") == "ORD-0,ORD-1,ORD-2"
    agent, children = _agent_and_children(memory)
    assert len(children) == 3
    assert all(c.parent is not None and c.parent.span_id == agent.context.span_id for c in children)
    assert tuple((agent.attributes or {})[sc.RG_FAILURE_REASONS]) == ("escalation",)  # type: ignore[arg-type]


def test_without_the_helper_a_thread_loses_the_parent(memory: InMemorySpanExporter) -> None:
    def lookup() -> None:
        with ri.tool_call("lookup_order"):
            pass

    @ri.trace_agent
    def respond(message: str) -> str:
        t = threading.Thread(target=lookup)
        t.start()
        t.join()
        return "ok"

    respond("q")
    agent, (child,) = _agent_and_children(memory)
    assert child.parent is None and child.context.trace_id != agent.context.trace_id


def test_run_in_context_isolates_changes(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent
    def respond(message: str) -> str | None:
        return ri.run_in_context(ri.current_trace_id)

    respond("q")
    (agent,) = memory.get_finished_spans()
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == format(agent.context.trace_id, "032x")


def test_asyncio_tasks_inherit_the_agent(memory: InMemorySpanExporter) -> None:
    async def search(i: int) -> None:
        with ri.retrieval(f"q{i}", data_source="kb") as r:
            await asyncio.sleep(0.001)
            r.record([{"id": f"d{i}", "score": 1.0}])

    @ri.trace_agent
    async def respond(message: str) -> str:
        await asyncio.gather(*(asyncio.create_task(search(i)) for i in range(4)))
        return "ok"

    async def main() -> None:
        await asyncio.gather(respond("a"), respond("b"))

    asyncio.run(main())
    spans = list(memory.get_finished_spans())
    agents = {s.context.span_id: s for s in spans if s.name.startswith("invoke_agent")}
    children = [s for s in spans if s.name.startswith("retrieval")]
    assert len(agents) == 2 and len(children) == 8
    for child in children:
        assert child.parent is not None and child.parent.span_id in agents
        assert agents[child.parent.span_id].context.trace_id == child.context.trace_id
    assert sorted(sum(1 for c in children if c.parent and c.parent.span_id == a) for a in agents) == [4, 4]


def test_async_generator_consumed_and_closed_from_other_tasks(
    memory: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    @ri.trace_agent(name="streamer")
    async def stream(message: str) -> Any:
        for i in range(100):
            with ri.tool_call("step", {"i": i}):
                await asyncio.sleep(0)
            yield f"p{i} "

    async def main() -> None:
        gen = stream("q")
        first = await asyncio.create_task(gen.__anext__())
        second = await asyncio.create_task(gen.__anext__())
        assert (first, second) == ("p0 ", "p1 ")
        await asyncio.create_task(gen.aclose())  # closed early, from yet another task

    asyncio.run(main())
    _no_detach_errors(caplog)
    agent, children = _agent_and_children(memory)
    attrs = agent.attributes or {}
    assert attrs[sc.OI_OUTPUT_VALUE] == "p0 p1 " and attrs[sc.RG_STREAM_CLOSED_EARLY] is True
    assert tuple(attrs[sc.RG_FAILURE_REASONS]) == ()  # type: ignore[arg-type]
    assert all(c.parent is not None and c.parent.span_id == agent.context.span_id for c in children)
    assert agent.end_time is not None


def test_generator_consumed_in_another_thread_and_collected(
    memory: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    @ri.trace_agent(name="gen")
    def stream(message: str) -> Any:
        for i in range(10):
            with ri.tool_call("step"):
                pass
            yield str(i)

    holder = [stream("q")]
    got: list[str] = []
    t = threading.Thread(target=lambda: got.extend([next(holder[0]), next(holder[0])]))
    t.start()
    t.join()
    assert got == ["0", "1"]
    holder.clear()
    gc.collect()  # the generator is closed by the garbage collector, on this thread
    _no_detach_errors(caplog)
    agent, children = _agent_and_children(memory)
    assert (agent.attributes or {})[sc.RG_STREAM_CLOSED_EARLY] is True
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "01"
    assert len(children) == 2 and all(
        c.parent and c.parent.span_id == agent.context.span_id for c in children
    )


def test_async_generator_abandoned_is_finalized(
    memory: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    @ri.trace_agent(name="abandoned")
    async def stream(message: str) -> Any:
        for i in range(10):
            yield str(i)

    async def main() -> None:
        gen = stream("q")
        assert await gen.__anext__() == "0"
        del gen  # asyncio's async-generator hooks close it

    asyncio.run(main())
    gc.collect()
    _no_detach_errors(caplog)
    (agent,) = memory.get_finished_spans()
    attrs = agent.attributes or {}
    # asyncio.run cancels the pending aclose() task: a cancellation, never an agent failure
    assert attrs[sc.RG_STREAM_CLOSED_EARLY] is True
    assert tuple(attrs[sc.RG_FAILURE_REASONS]) == ()  # type: ignore[arg-type]


def test_stream_parent_is_the_call_site(memory: InMemorySpanExporter) -> None:
    @ri.trace_agent(name="inner")
    def inner(message: str) -> Any:
        yield "x"

    @ri.trace_agent(name="outer")
    def outer(message: str) -> Any:
        return inner(message)  # created inside outer, consumed after outer returned

    gen = outer("q")
    assert list(gen) == ["x"]
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert spans["invoke_agent inner"].parent is not None
    assert spans["invoke_agent inner"].parent.span_id == spans["invoke_agent outer"].context.span_id


def test_child_span_held_across_yield_and_resumed_in_another_task(
    memory: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    @ri.trace_agent(name="holder")
    async def stream(message: str) -> Any:
        with ri.tool_call("streaming_tool") as t:  # the tool span stays open across the yields
            yield "a"
            yield "b"
            t.set_result("done")

    async def main() -> list[str]:
        gen = stream("q")
        first = await asyncio.create_task(gen.__anext__())
        second = await asyncio.create_task(gen.__anext__())
        rest = [x async for x in gen]
        return [first, second, *rest]

    assert asyncio.run(main()) == ["a", "b"]
    _no_detach_errors(caplog)
    agent, (tool,) = _agent_and_children(memory)
    assert tool.parent is not None and tool.parent.span_id == agent.context.span_id
    assert (agent.attributes or {})[sc.OI_OUTPUT_VALUE] == "ab"
