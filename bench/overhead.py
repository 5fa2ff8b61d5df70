"""Per-call overhead of tracing one agent function: bare, a manual OTel span, @trace_agent, and the peers.

Peers: Langfuse's ``@observe`` and OpenInference's ``@tracer.agent`` / ``@tracer.chain``
(openinference-instrumentation's ``OITracer``). OpenLLMetry's ``@workflow`` needs ``traceloop-sdk``, which
brings some fifty instrumentation packages and pins an older OpenTelemetry SDK than the project's, so it
is not a dev dependency; the row is measured when it is installed.

All variants run the same function in one process, interleaved (each repetition times every variant
in a shuffled order) so load changes on the machine hit them alike; the median over repetitions is
reported. The manual span and ``@trace_agent`` share one SDK setup: the same TracerProvider and the same
processors (replaygate's bounded batch pipeline in front of a no-op exporter). Langfuse's ``@observe``
runs with dummy keys, its own provider and batch processor, and a no-op exporter, so nothing reaches
the network (its host is a closed port on 127.0.0.1 in case anything tries).

Target: ``@trace_agent`` within 1.2x of the manual span in CPU per call, and below every peer.
"""

from __future__ import annotations

import os
import random
import socket
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from replaygate.instrumentation import semconv as sc

CALLS = int(os.environ.get("BENCH_CALLS", "2000"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "9"))
MESSAGE = "Hello, I ordered a kettle (ORD-10042) two weeks ago and it arrived broken. Can I get a refund?"


class NoopExporter(SpanExporter):
    """Accepts every batch and drops it: the cost measured is the agent's, not the network's."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def answer(message: str, session_id: str | None = None) -> str:
    return "Refunds for damaged items are issued within 5 business days. " + message[:20]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_variants() -> dict[str, Callable[[str, str], Any]]:
    provider = TracerProvider()
    ri.configure(tracer_provider=provider, store=None, exporters=[NoopExporter()])
    tracer = provider.get_tracer("bench")

    def manual(message: str, session_id: str) -> str:
        with tracer.start_as_current_span(
            "invoke_agent support",
            attributes={
                sc.OPERATION_NAME: "invoke_agent",
                sc.AGENT_NAME: "support",
                sc.OI_INPUT_VALUE: message,
                sc.OI_SESSION_ID: session_id,
            },
        ) as span:
            out = answer(message, session_id)
            span.set_attribute(sc.OI_OUTPUT_VALUE, out)
            return out

    traced = ri.trace_agent(name="support")(answer)

    variants: dict[str, Callable[[str, str], Any]] = {
        "bare function": answer,
        "manual OTel span": manual,
        "@trace_agent": traced,
    }
    try:
        from langfuse import Langfuse, observe
    except ImportError:  # pragma: no cover - langfuse is a dev dependency
        print("langfuse is not installed: @observe skipped", file=sys.stderr)
        return variants
    Langfuse(
        public_key="pk-lf-bench",
        secret_key="sk-lf-bench",
        host=f"http://127.0.0.1:{_closed_port()}",
        tracer_provider=TracerProvider(),
        span_exporter=NoopExporter(),
    )
    variants["langfuse @observe"] = observe(name="support")(answer)
    _add_openinference(variants)
    _add_openllmetry(variants)
    return variants


def _add_openinference(variants: dict[str, Callable[[str, str], Any]]) -> None:
    try:
        from openinference.instrumentation import TracerProvider as OITracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:  # pragma: no cover - a dev dependency
        print("openinference-instrumentation is not installed: @tracer.agent skipped", file=sys.stderr)
        return
    provider = OITracerProvider()
    provider.add_span_processor(BatchSpanProcessor(NoopExporter()))
    tracer = provider.get_tracer("bench")
    variants["openinference @agent"] = tracer.agent(name="support")(answer)
    variants["openinference @chain"] = tracer.chain(name="support")(answer)


def _add_openllmetry(variants: dict[str, Callable[[str, str], Any]]) -> None:
    try:
        from traceloop.sdk.decorators import workflow  # type: ignore[import-not-found]
    except ImportError:
        print(
            "traceloop-sdk is not installed: OpenLLMetry @workflow skipped (see the docstring)",
            file=sys.stderr,
        )
        return
    variants["openllmetry @workflow"] = workflow(name="support")(answer)


def settle() -> None:
    """Let the export workers drain between blocks, so no block pays for the previous one's spans."""
    deadline = time.monotonic() + 10
    while ri.health()["queued_spans"] and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        from langfuse import get_client

        get_client().flush()
    except Exception:  # noqa: BLE001 - langfuse missing or not configured
        pass
    time.sleep(0.02)


def measure(variants: dict[str, Callable[[str, str], Any]]) -> tuple[dict[str, float], dict[str, float]]:
    """Median per-call wall seconds and agent-thread CPU seconds of each variant, interleaved."""
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    rng = random.Random(7)
    for fn in variants.values():  # warm-up
        for _ in range(200):
            fn(MESSAGE, "s-1")
    for _ in range(REPEATS):
        rng.shuffle(order)
        for name in order:
            fn = variants[name]
            start, start_cpu = time.perf_counter(), time.thread_time()
            for _ in range(CALLS):
                fn(MESSAGE, "s-1")
            cpu[name].append((time.thread_time() - start_cpu) / CALLS)
            wall[name].append((time.perf_counter() - start) / CALLS)
            settle()
    return (
        {name: statistics.median(values) for name, values in wall.items()},
        {name: statistics.median(values) for name, values in cpu.items()},
    )


def report(title: str, results: dict[str, float]) -> None:
    bare = results["bare function"]
    manual = results["manual OTel span"]
    traced = results["@trace_agent"]
    print(f"{title}, median of {REPEATS} interleaved repetitions x {CALLS} calls:")
    for name, seconds in results.items():
        print(f"  {name:<20} {seconds * 1e6:9.2f} us   (+{(seconds - bare) * 1e6:8.2f} us over bare)")
    print(f"  ratio @trace_agent / manual OTel span          = {traced / manual:5.2f}   (target <= 1.2)")
    for peer in (
        "langfuse @observe",
        "openinference @agent",
        "openinference @chain",
        "openllmetry @workflow",
    ):
        if peer in results:
            other = results[peer]
            print(f"  ratio @trace_agent / {peer:<25} = {traced / other:5.2f}   (target < 1.0)")
            print(f"  ratio {peer} / manual OTel span {'':<4}= {other / manual:5.2f}")


def main() -> None:
    variants = build_variants()
    wall, cpu = measure(variants)
    report("per-call wall time", wall)
    report("per-call CPU time of the agent's thread (export workers excluded)", cpu)
    health = ri.health()
    print(f"replaygate health: exported={health['exported_spans']} dropped={health['dropped_spans']}")
    ri.shutdown(timeout=5)


if __name__ == "__main__":
    main()
