"""configure returns an Instrumentation handle; decorators find the active one through a context variable."""

import asyncio

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import trace_agent


@trace_agent(name="handle-agent")
def respond(message: str) -> str:
    return "ok " + message


def test_default_and_activated_handles_each_get_their_spans() -> None:
    default_memory, own_memory = InMemorySpanExporter(), InMemorySpanExporter()
    default_provider, own_provider = TracerProvider(), TracerProvider()
    default = ri.configure(tracer_provider=default_provider, store=None, exporters=[default_memory])
    own = ri.configure(tracer_provider=own_provider, store=None, exporters=[own_memory], default=False)
    assert isinstance(default, ri.Instrumentation) and default.provider is default_provider
    respond("to the default")
    with own.activate():
        respond("to the handle")

    async def in_a_task() -> None:
        respond("task of the handle")

    async def main() -> None:
        with own.activate():
            await asyncio.create_task(in_a_task())  # asyncio tasks inherit the active handle
        respond("back to the default")

    asyncio.run(main())
    assert own.pipeline is not None and own.pipeline.force_flush(5_000)
    assert default.pipeline is not None and default.pipeline.force_flush(5_000)
    inputs = lambda m: [s.attributes["input.value"] for s in m.get_finished_spans()]  # noqa: E731
    assert inputs(default_memory) == ["to the default", "back to the default"]
    assert inputs(own_memory) == ["to the handle", "task of the handle"]
    assert own.health()["active_exporters"] == ["InMemorySpanExporter#0"]
    assert own.shutdown(2) and own.pipeline is None
    assert ri.health()["configured"]  # the default handle is untouched
    assert ri.shutdown(2) and default.pipeline is None
    [s.shutdown() for s in (default_provider, own_provider)]
