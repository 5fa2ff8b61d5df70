"""Per-call overhead of tracing one agent function: bare, a manual OTel span, @trace_agent, and the peers.

Peers: Langfuse's ``@observe``, OpenInference's ``@tracer.agent`` / ``@tracer.chain``
(openinference-instrumentation's ``OITracer``) and OpenLLMetry's ``@workflow`` (``traceloop-sdk``).

All variants of one process run the same function, interleaved (each repetition times every variant in a
shuffled order) so load changes on the machine hit them alike; the median over repetitions is reported.
Between blocks, untimed, the export queues drain and the heap is collected (``gc.collect()``), so no
block pays for the spans or the garbage of the block before it (a peer's, as often as not). The manual
span and ``@trace_agent`` share one SDK setup: the same TracerProvider and the same processors
(replaygate's bounded batch pipeline in front of a no-op exporter). Langfuse's ``@observe`` runs with
dummy keys, its own provider and batch processor, and a no-op exporter, so nothing reaches the network
(its host is a closed port on 127.0.0.1 in case anything tries).

Where each row runs: ``traceloop-sdk`` cannot be installed beside the workspace's OpenTelemetry SDK (see
``bench/_openllmetry_env.py``), so unless it is importable here the ``@workflow`` row runs in a second
process, started by this one right after its own measurement, from a cached virtual environment
(``~/.cache/replaygate/openllmetry-<version>``, installed on first use). That process measures the bare
function, the same manual span and ``@trace_agent`` (this checkout's source) beside ``@workflow``
(``Traceloop.init`` with a no-op exporter, no instrumentors, telemetry off), so its ratios are taken within
one process too; the output says which process and which OpenTelemetry SDK each row ran on, and the
closing table puts every row's ratio to its own process's manual span side by side.
``BENCH_OPENLLMETRY=0`` skips the second process.

Target: ``@trace_agent`` within 1.2x of the manual span in CPU per call, and below every peer. CPU time
moves with the load on a shared machine; ``bench/overhead_instructions.py`` counts instructions per call of
the manual span and ``@trace_agent`` with valgrind, which the load does not change.
"""

from __future__ import annotations

import gc
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
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


Variants = dict[str, Callable[[str, str], Any]]
CHILD_FLAG = "--openllmetry-child"
JSON_MARK = "BENCH-JSON:"
PEERS = ("langfuse @observe", "openinference @agent", "openinference @chain", "openllmetry @workflow")


def base_variants(exporters: Sequence[SpanExporter] | None = None) -> Variants:
    """The bare function, the manual span and ``@trace_agent`` on one replaygate-configured provider.

    ``exporters`` default to one no-op exporter; ``[]`` leaves the pipeline without any (the instruction
    count of ``bench/overhead_instructions.py``).
    """
    provider = TracerProvider()
    ri.configure(
        tracer_provider=provider,
        store=None,
        exporters=[NoopExporter()] if exporters is None else list(exporters),
    )
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
    return {"bare function": answer, "manual OTel span": manual, "@trace_agent": traced}


def build_variants() -> Variants:
    variants = base_variants()
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
    if openllmetry_here():
        _add_openllmetry(variants)
    return variants


def openllmetry_here() -> bool:
    """Whether traceloop-sdk is importable in this process."""
    try:
        import traceloop.sdk  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


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


def _add_openllmetry(variants: Variants) -> None:
    from traceloop.sdk import Traceloop  # type: ignore[import-not-found]
    from traceloop.sdk.decorators import workflow  # type: ignore[import-not-found]

    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    # Its own provider and batch processor in front of a no-op exporter; no LLM library instrumented.
    Traceloop.init(
        app_name="bench",
        exporter=NoopExporter(),
        telemetry_enabled=False,
        instruments=set(),
        disable_batch=False,
    )
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
    # Each block starts on a collected heap: the cycle collector's work for garbage one variant left behind
    # (or for the peers' larger heaps) is not charged to whichever variant happens to run next.
    gc.collect()


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


def report(title: str, results: dict[str, float], where: str) -> None:
    bare = results["bare function"]
    manual = results["manual OTel span"]
    traced = results["@trace_agent"]
    print(f"{title} [{where}], median of {REPEATS} interleaved repetitions x {CALLS} calls:")
    for name, seconds in results.items():
        print(f"  {name:<22} {seconds * 1e6:9.2f} us   (+{(seconds - bare) * 1e6:8.2f} us over bare)")
    print(f"  ratio @trace_agent / manual OTel span            = {traced / manual:5.2f}   (target <= 1.2)")
    for peer in PEERS:
        if peer in results:
            other = results[peer]
            print(f"  ratio @trace_agent / {peer:<27} = {traced / other:5.2f}   (target < 1.0)")
            print(f"  ratio {peer} / manual OTel span {'':<{22 - len(peer)}}= {other / manual:5.2f}")


def otel_sdk_version() -> str:
    from opentelemetry.sdk.version import __version__

    return str(__version__)


def run_openllmetry_child() -> dict[str, Any] | None:
    """Measure the @workflow row (with its own manual span and @trace_agent) in the cached venv."""
    if os.environ.get("BENCH_OPENLLMETRY", "1") == "0":
        print("BENCH_OPENLLMETRY=0: OpenLLMetry @workflow skipped", file=sys.stderr)
        return None
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from _openllmetry_env import OpenLLMetryInstallError, install_openllmetry, venv_path

    try:
        python = install_openllmetry()
    except (OpenLLMetryInstallError, OSError, subprocess.SubprocessError) as exc:
        print(
            f"OpenLLMetry @workflow skipped: its virtual environment could not be made: {exc}",
            file=sys.stderr,
        )
        return None
    env = {
        **os.environ,
        "PYTHONPATH": str(here.parent / "instrumentation" / "src"),
        "TRACELOOP_TELEMETRY": "false",
        "BENCH_CALLS": str(CALLS),
        "BENCH_REPEATS": str(REPEATS),
    }
    result = subprocess.run(
        [str(python), str(Path(__file__).resolve()), CHILD_FLAG],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    for line in result.stdout.splitlines():
        if line.startswith(JSON_MARK):
            data: dict[str, Any] = json.loads(line[len(JSON_MARK) :])
            data["where"] = (
                f"process 2: {venv_path()}, OTel SDK {data['otel_sdk']}, traceloop-sdk {data['traceloop']}"
            )
            return data
    print(
        f"OpenLLMetry @workflow failed in its process (exit {result.returncode}): {result.stderr[-1500:]}",
        file=sys.stderr,
    )
    return None


def child_main() -> None:
    """The second process: bare, manual span, @trace_agent and @workflow; results as one JSON line."""
    from importlib.metadata import version

    variants = base_variants()
    _add_openllmetry(variants)
    wall, cpu = measure(variants)
    ri.shutdown(timeout=5)
    data = {"wall": wall, "cpu": cpu, "otel_sdk": otel_sdk_version(), "traceloop": version("traceloop-sdk")}
    print(JSON_MARK + json.dumps(data), flush=True)


def side_by_side(runs: list[tuple[str, dict[str, float]]]) -> None:
    """Every row's CPU ratio to the manual span of its own process, in one table."""
    print("side by side: CPU per call / the manual OTel span of the same process")
    for label, cpu in runs:
        manual = cpu["manual OTel span"]
        for name, seconds in cpu.items():
            if name != "bare function":
                print(f"  {name:<22} {seconds / manual:5.2f}x   [{label}]")


def main() -> None:
    where = f"process 1: the workspace venv, OTel SDK {otel_sdk_version()}"
    variants = build_variants()
    wall, cpu = measure(variants)
    health = ri.health()
    ri.shutdown(timeout=5)
    child = None if "openllmetry @workflow" in variants else run_openllmetry_child()
    report("per-call wall time", wall, where)
    report("per-call CPU time of the agent's thread (export workers excluded)", cpu, where)
    print(f"replaygate health: exported={health['exported_spans']} dropped={health['dropped_spans']}")
    runs = [("process 1", cpu)]
    if child is not None:
        print()
        report("per-call wall time", child["wall"], child["where"])
        report(
            "per-call CPU time of the agent's thread (export workers excluded)", child["cpu"], child["where"]
        )
        runs.append(("process 2", child["cpu"]))
    print()
    side_by_side(runs)


if __name__ == "__main__":
    if CHILD_FLAG in sys.argv:
        child_main()
    else:
        main()
