"""Global vs isolated providers, in a fresh process (the global provider can be set once per process)."""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import replaygate.instrumentation as ri
    from replaygate.instrumentation._state import STATE

    @ri.trace_agent(name="agent")                  # decorated before any configure
    def agent(message: str) -> str:
        with trace.get_tracer("httpx-like").start_as_current_span("POST /v1/chat"):
            pass                                   # another library's span nested in the agent call
        return "ok " + message

    out = {}
    out["noop_returns"] = agent("nothing configured")
    out["noop_tracer_is_none"] = STATE.active_tracer() is None

    # another tool owns the global SDK provider
    global_mem = InMemorySpanExporter()
    global_provider = TracerProvider()
    global_provider.add_span_processor(SimpleSpanProcessor(global_mem))
    trace.set_tracer_provider(global_provider)
    agent("global, not configured")

    # replaygate on an isolated provider: nothing reaches the global one, and vice versa
    iso_mem, rg_iso = InMemorySpanExporter(), InMemorySpanExporter()
    iso_provider = TracerProvider()
    iso_provider.add_span_processor(SimpleSpanProcessor(iso_mem))
    ri.configure(tracer_provider=iso_provider, store=None, exporters=[rg_iso])
    agent("isolated")
    with trace.get_tracer("other-tool").start_as_current_span("other tool work"):
        pass
    ri.shutdown(5)

    # replaygate attached to the existing global provider (not replacing it)
    rg_global = InMemorySpanExporter()
    ri.configure(store=None, exporters=[rg_global])
    out["global_kept"] = trace.get_tracer_provider() is global_provider
    agent("attached")
    with trace.get_tracer("other-tool").start_as_current_span("unrelated request"):
        pass
    ri.shutdown(5)
    agent("after shutdown")

    def names(mem):
        return sorted(
            s.name + ((" " + str(s.attributes.get("input.value"))) if s.attributes.get("input.value") else "")
            for s in mem.get_finished_spans()
        )

    out.update(global_spans=names(global_mem), iso_spans=names(iso_mem), rg_iso=names(rg_iso),
               rg_global=names(rg_global))
    print(json.dumps(out))
    """
)


def test_global_and_isolated_providers() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["noop_returns"] == "ok nothing configured" and out["noop_tracer_is_none"] is True
    assert out["global_kept"] is True
    # the global provider saw its own tool's spans and replaygate's global-phase spans, never the isolated
    # agent span (a library nested in the isolated agent call uses the global provider, as OTel does)
    assert out["global_spans"] == sorted(
        ["POST /v1/chat"] * 4
        + [
            "invoke_agent agent global, not configured",
            "other tool work",
            "invoke_agent agent attached",
            "unrelated request",
            "invoke_agent agent after shutdown",
        ]
    )
    assert out["iso_spans"] == ["invoke_agent agent isolated"]
    assert out["rg_iso"] == ["invoke_agent agent isolated"]
    # attached to the global provider, replaygate exports the agent's trace (nested library span included)
    # but not another tool's unrelated trace, and nothing after shutdown
    assert out["rg_global"] == ["POST /v1/chat", "invoke_agent agent attached"]
