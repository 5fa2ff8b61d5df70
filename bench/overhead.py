"""Per-call overhead of tracing one agent function: bare, a manual OTel span, @trace_agent, and the peers.

Peers: Langfuse's ``@observe``, OpenInference's ``@tracer.agent`` / ``@tracer.chain``
(openinference-instrumentation's ``OITracer``) and OpenLLMetry's ``@workflow`` (``traceloop-sdk``).

How it is timed, so that one run's verdict is steady on a loaded 2-core machine:

- Rows are interleaved. Each of ``BENCH_REPEATS`` (41) repetitions runs ``BENCH_BLOCKS`` (5) rounds;
  each round times one block of ``BENCH_CALLS`` (100) calls of every row, in a shuffled order. A
  repetition's rows thus share one stretch of time (and the load in it).
- Ratios are paired: for each repetition, a row's CPU time per call over the manual span's in that
  same repetition; the median of those per-repetition ratios is reported with its inter-quartile range,
  and the verdict line is computed from the medians.
- The collector is in the same state for every block: after the untimed warm-up the heap is collected
  and frozen (``gc.freeze``: the collector never walks the libraries' start-up objects), and each block
  starts right after a ``gc.collect()``. The collector stays on while timing: a row pays for the
  garbage it makes.
- Export never runs during a block: every provider's batch processor (replaygate's and the peers') has
  batches larger than a repetition and a 600 s timer, and all of them are flushed between repetitions
  (untimed), so no row pays for another's spans being exported. CPU time is the agent thread's only
  (``time.thread_time``); the wall-clock rows are printed with the machine's load.

The manual span and ``@trace_agent`` share one SDK setup: the same TracerProvider and the same
processors (replaygate's bounded batch pipeline in front of a no-op exporter). Langfuse's ``@observe``
runs with dummy keys, its own provider and batch processor, and a no-op exporter, so nothing reaches
the network (its host is a closed port on 127.0.0.1 in case anything tries).

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
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from replaygate.instrumentation import semconv as sc

CALLS = int(os.environ.get("BENCH_CALLS", "100"))
BLOCKS = int(os.environ.get("BENCH_BLOCKS", "5"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "41"))
WARM_UP = 300
TARGET = 1.2
MANUAL = "manual OTel span"
#: Export batches are big enough, and their timers slow enough, that no export worker wakes inside a
#: block: every block's spans are exported by settle(), between blocks, for every row alike.
BATCH = 4096
DELAY_S = 600
for _key, _value in (
    ("OTEL_BSP_SCHEDULE_DELAY", str(DELAY_S * 1000)),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", str(BATCH)),
    ("OTEL_BSP_MAX_QUEUE_SIZE", str(2 * BATCH)),
):
    os.environ.setdefault(_key, _value)
if CALLS * BLOCKS > BATCH // 2:
    raise SystemExit(f"BENCH_CALLS x BENCH_BLOCKS = {CALLS * BLOCKS}: at most {BATCH // 2} per repetition")
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
#: Each provider's force_flush, called between blocks (untimed).
FLUSHES: list[Callable[[], object]] = []
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
        max_batch_size=BATCH,
        max_queue_size=2 * BATCH,
        schedule_delay_s=DELAY_S,
    )
    FLUSHES.append(provider.force_flush)
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
    provider = TracerProvider()
    Langfuse(
        public_key="pk-lf-bench",
        secret_key="sk-lf-bench",
        host=f"http://127.0.0.1:{_closed_port()}",
        tracer_provider=provider,
        span_exporter=NoopExporter(),
        flush_at=BATCH,
        flush_interval=DELAY_S,
    )
    FLUSHES.append(provider.force_flush)
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
    FLUSHES.append(provider.force_flush)
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
    FLUSHES.append(trace.get_tracer_provider().force_flush)  # type: ignore[attr-defined]
    variants["openllmetry @workflow"] = workflow(name="support")(answer)


def settle() -> None:
    """Between blocks, untimed: export what the block queued, then collect its garbage."""
    for flush in FLUSHES:
        flush()
    # Each block starts with the collector's counts at zero and nothing young on the heap: the cycle
    # collector's work for garbage one row left behind is not charged to whichever row runs next.
    gc.collect()


class Samples:
    """Per-call seconds of each row, one value per repetition (index ``r`` of every row: repetition r)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.wall: dict[str, list[float]] = {name: [] for name in names}
        self.cpu: dict[str, list[float]] = {name: [] for name in names}

    def to_json(self) -> dict[str, Any]:
        return {"wall": self.wall, "cpu": self.cpu}


def measure(variants: Variants) -> Samples:
    """Time every row ``BLOCKS`` times per repetition, ``CALLS`` calls a block, the rows interleaved.

    Each repetition runs the rows block by block in a shuffled order, ``BLOCKS`` rounds (ABC..ABC..),
    so the rows of one repetition share the same stretch of time and the load on the machine in it;
    a row's value for the repetition is its time over all its blocks. Warm-up is untimed; then the
    heap is collected and frozen (``gc.freeze``), so the collector's passes walk only what the rows
    allocate, not the libraries' start-up objects, and every block starts from a collected heap.
    """
    samples = Samples(list(variants))
    order = list(variants)
    rng = random.Random(7)
    for fn in variants.values():
        for _ in range(WARM_UP):
            fn(MESSAGE, "s-1")
    settle()
    gc.freeze()
    calls = CALLS * BLOCKS
    try:
        for _ in range(REPEATS):
            wall = dict.fromkeys(variants, 0.0)
            cpu = dict.fromkeys(variants, 0.0)
            for _ in range(BLOCKS):
                rng.shuffle(order)
                for name in order:
                    fn = variants[name]
                    gc.collect()
                    start, start_cpu = time.perf_counter(), time.thread_time()
                    for _ in range(CALLS):
                        fn(MESSAGE, "s-1")
                    cpu[name] += time.thread_time() - start_cpu
                    wall[name] += time.perf_counter() - start
            for name in variants:
                samples.cpu[name].append(cpu[name] / calls)
                samples.wall[name].append(wall[name] / calls)
            settle()
    finally:
        gc.unfreeze()
    return samples


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The lower quartile, median and upper quartile of ``values``."""
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def paired(per_rep: dict[str, list[float]], name: str, base: str) -> tuple[float, float, float]:
    """Quartiles of the per-repetition ratio ``name`` / ``base`` (each pair timed in one repetition)."""
    return quartiles([a / b for a, b in zip(per_rep[name], per_rep[base], strict=True)])


def _fmt(q: tuple[float, float, float]) -> str:
    return f"{q[1]:5.2f}  (IQR {q[0]:4.2f}-{q[2]:4.2f})"


def report(title: str, per_rep: dict[str, list[float]], where: str) -> None:
    """Median per-call time of each row, and the paired ratios with their inter-quartile range."""
    print(f"{title} [{where}]")
    print(
        f"  {REPEATS} repetitions x {BLOCKS} interleaved blocks x {CALLS} calls per row; median per call, and"
    )
    print("  the median (inter-quartile range) of the per-repetition ratio of two rows timed side by side:")
    bare = statistics.median(per_rep["bare function"])
    for name, values in per_rep.items():
        seconds = statistics.median(values)
        print(f"  {name:<22} {seconds * 1e6:9.2f} us   (+{(seconds - bare) * 1e6:8.2f} us over bare)")
    print(f"  @trace_agent / manual OTel span {'':<19}= {_fmt(paired(per_rep, '@trace_agent', MANUAL))}")
    for peer in PEERS:
        if peer in per_rep:
            print(f"  @trace_agent / {peer:<35}= {_fmt(paired(per_rep, '@trace_agent', peer))}")
            print(
                f"  {peer} / manual OTel span {'':<{26 - len(peer)}}= {_fmt(paired(per_rep, peer, MANUAL))}"
            )


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
        "BENCH_BLOCKS": str(BLOCKS),
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
    """The second process: bare, manual span, @trace_agent and @workflow; per-repetition times as JSON."""
    from importlib.metadata import version

    variants = base_variants()
    _add_openllmetry(variants)
    samples = measure(variants)
    ri.shutdown(timeout=5)
    data = {**samples.to_json(), "otel_sdk": otel_sdk_version(), "traceloop": version("traceloop-sdk")}
    print(JSON_MARK + json.dumps(data), flush=True)


def side_by_side(runs: list[tuple[str, dict[str, list[float]]]]) -> None:
    """Every row's paired CPU ratio to the manual span of its own process, in one table."""
    print("side by side: CPU per call / the manual OTel span of the same process (paired median, IQR)")
    for label, cpu in runs:
        for name in cpu:
            if name not in ("bare function", MANUAL):
                print(f"  {name:<22} {_fmt(paired(cpu, name, MANUAL))}   [{label}]")


def verdict(runs: list[tuple[str, dict[str, list[float]]]]) -> str:
    """The target line, from the paired medians: <= 1.2x the manual span, below every peer (every process)."""
    to_manual = [(label, paired(cpu, "@trace_agent", MANUAL)) for label, cpu in runs]
    to_peers = [
        (peer, paired(cpu, "@trace_agent", peer)[1]) for _, cpu in runs for peer in PEERS if peer in cpu
    ]
    holds = all(q[1] <= TARGET for _, q in to_manual) and all(r < 1.0 for _, r in to_peers)
    manual_text = ", ".join(f"{q[1]:.2f} (IQR {q[0]:.2f}-{q[2]:.2f}) [{label}]" for label, q in to_manual)
    peers_text = ", ".join(f"{r:.2f} {peer}" for peer, r in to_peers) or "no peer measured"
    return (
        f"verdict: {'HOLDS' if holds else 'DOES NOT HOLD'}: @trace_agent / manual OTel span CPU per call "
        f"{manual_text} (target <= {TARGET}); @trace_agent / peer {peers_text} (target < 1.0)"
    )


def load() -> str:
    """The machine's load averages (wall-clock figures mean little without them)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    where = f"process 1: the workspace venv, OTel SDK {otel_sdk_version()}"
    load_before = load()
    variants = build_variants()
    samples = measure(variants)
    health = ri.health()
    ri.shutdown(timeout=5)
    child = None if "openllmetry @workflow" in variants else run_openllmetry_child()
    print(f"machine: {load_before} at the start, {load()} at the end")
    report("per-call wall time", samples.wall, where)
    report("per-call CPU time of the agent's thread (export workers excluded)", samples.cpu, where)
    print(f"replaygate health: exported={health['exported_spans']} dropped={health['dropped_spans']}")
    runs = [("process 1", samples.cpu)]
    if child is not None:
        print()
        report("per-call wall time", child["wall"], child["where"])
        report(
            "per-call CPU time of the agent's thread (export workers excluded)", child["cpu"], child["where"]
        )
        runs.append(("process 2", child["cpu"]))
    print()
    side_by_side(runs)
    print(verdict(runs))


if __name__ == "__main__":
    if CHILD_FLAG in sys.argv:
        child_main()
    else:
        main()
