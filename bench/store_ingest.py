"""Ingest speed: spans/s into the embedded SQLite store from 1 and 4 agent processes (the decorator, the
bounded queue, the batched writer), and through `replaygate collect` (the real SDK OTLP/HTTP exporter)
into SQLite and PostgreSQL, side by side. Also the drops at a 2,000 calls/s burst for 5 s, from one
process and from 4 at once, with the default queue, and whether the store reports each drop.

    uv run --locked python bench/store_ingest.py [--calls 4000] [--quick] [--stages]

Each row gives spans/s per process (wall clock, so it moves with the machine's load: read it with the
``uptime`` printed beside it) and CPU microseconds per span (all threads of the agent process, or of the
``replaygate collect`` command's processes, run as a user runs it: gunicorn, one worker), which is what
to trust on a shared machine. Two rows split one process's CPU: the agent's own work (decorator and
OpenTelemetry SDK, no exporter) and the store's export path alone
(redaction, the span record, the trace row, the SQLite write) over the same spans.

``--stages`` prints only the CPU us/span of each stage of the export path (normalise, encode, trace rows,
SQL), in one process. Each target gets a PASS / NOT MET line at the end.

Target: >= 10k spans/s per process into SQLite (the export path's CPU per span is the ingest ceiling:
1e6 / us-per-span); no loss at a 2,000 calls/s burst with the default queue, or every drop reported.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pg import postgres  # noqa: E402
from _proc import cpu_of_tree, free_port  # noqa: E402

SPANS_PER_CALL = 4  # agent + retrieval + tool + llm
TARGET_SPANS_PER_S = 10_000
_SETTLED = ("exported_spans", "dropped_spans", "failed_spans")


def _cpu_s() -> float:
    """CPU seconds of this process, every thread (the export workers included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _agent(i: int) -> str:
    from replaygate.instrumentation import llm_call, retrieval, tool_call

    with retrieval("where is my order", data_source="kb") as r:
        r.record([{"id": f"doc-{i % 50}", "score": 0.9, "text": "Orders ship in 2 days."}])
    with tool_call("lookup_order", {"order_id": i}) as t:
        t.set_result({"status": "shipped"})
    with llm_call("gpt-4o-mini", provider="openai") as llm:
        # token counts vary per call, as in production (no price is looked up twice by accident)
        llm.set_usage(input_tokens=400 + i % 997, output_tokens=40 + i % 89)
        llm.set_output("It ships tomorrow.")
    return "It ships tomorrow."


def _agent_calls(n: int, rate: float | None = None) -> float:
    """Run ``n`` agent calls (paced at ``rate`` calls/s when given); returns the calls/s achieved."""
    from replaygate.instrumentation import trace_agent

    respond = trace_agent(name="bench-agent")(_agent)
    start = time.perf_counter()
    for i in range(n):
        respond(i)
        if rate:
            ahead = (i + 1) / rate - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)
    return n / (time.perf_counter() - start)


def _export_thread_clock() -> int:
    """The CPU clock of this process's store export worker thread (``replaygate-export-store``)."""
    for thread in threading.enumerate():
        if thread.name == "replaygate-export-store" and thread.ident is not None:
            return time.pthread_getcpuclockid(thread.ident)
    raise RuntimeError("no store export thread: is the store configured?")


def _embedded_worker(db: str, n: int, rate: float | None, out: Any) -> None:
    from replaygate.instrumentation import configure, health, shutdown

    configure(store=db, otlp_endpoint=False, langfuse=False)
    _agent_calls(50)  # warm-up (imports, first store open)
    while sum(health()["exporters"].get("store", {}).get(k, 0) for k in _SETTLED) < 50 * SPANS_PER_CALL:
        time.sleep(0.01)
    before = health()["exporters"]["store"]
    clock = _export_thread_clock()
    t0, agent0, export0 = time.perf_counter(), time.thread_time(), time.clock_gettime(clock)
    achieved = _agent_calls(n, rate)
    agent_cpu = time.thread_time() - agent0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the worker has handled every span, then read its clock
        now = health()["exporters"]["store"]
        if sum(now.get(k, 0) - before.get(k, 0) for k in _SETTLED) >= n * SPANS_PER_CALL:
            break
        time.sleep(0.005)
    wall, export_cpu = time.perf_counter() - t0, time.clock_gettime(clock) - export0
    shutdown(120)
    h = health()["exporters"]["store"]
    exported = h.get("exported_spans", 0) - before.get("exported_spans", 0)
    dropped = h.get("dropped_spans", 0) - before.get("dropped_spans", 0)
    out.put((wall, agent_cpu, export_cpu, exported, dropped, achieved, h.get("dropped_spans", 0)))


def embedded(processes: int, calls: int, rate: float | None = None) -> dict[str, Any]:
    from replaygate.store import TraceStore

    with tempfile.TemporaryDirectory() as d:
        db = str(Path(d) / "s.db")
        TraceStore(db).close()
        ctx = mp.get_context("spawn")
        out: Any = ctx.Queue()
        procs = [ctx.Process(target=_embedded_worker, args=(db, calls, rate, out)) for _ in range(processes)]
        for p in procs:
            p.start()
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
        with TraceStore(db) as store:
            stored = store.count()
            reported = store.drops().total
    exported = sum(r[3] for r in results)
    produced = processes * calls * SPANS_PER_CALL
    return {
        "rate": sum(r[3] / r[0] for r in results) / processes,  # spans/s per process
        "agent_us": 1e6 * sum(r[1] for r in results) / produced,
        "export_us": 1e6 * sum(r[2] for r in results) / max(1, exported),
        "dropped": sum(r[4] for r in results),
        "reported": reported,
        "all_dropped": sum(r[6] for r in results),
        "traces": stored,
        "expected": processes * (calls + 50),
        "calls_per_s": sum(r[5] for r in results) / processes,
        "spans": produced,
    }


def _otlp_worker(url: str, token: str, n: int, out: Any) -> None:
    from replaygate.instrumentation import configure, health, shutdown

    configure(
        store=None,
        otlp_endpoint=url,
        otlp_headers={"Authorization": f"Bearer {token}"},
        otlp_capture_content=True,
        langfuse=False,
    )
    t0 = time.perf_counter()
    achieved = _agent_calls(n)
    shutdown(300)
    h = health()["exporters"].get("otlp", {})
    out.put((time.perf_counter() - t0, h.get("exported_spans", 0), h.get("dropped_spans", 0), achieved))


def through_collect(store_url: str, processes: int, calls: int, workers: int = 1) -> dict[str, Any]:
    """The real ``replaygate collect`` command (gunicorn) in its own process, 4 OTLP agents sending to it."""
    import subprocess

    import httpx

    from replaygate.store import TraceStore

    port, token = free_port(), "bench"
    env = {**os.environ, "REPLAYGATE_COLLECT_TOKEN": token, "REPLAYGATE_STORE": store_url}
    log = tempfile.TemporaryFile()
    cmd = [
        sys.executable,
        "-c",
        "from replaygate.cli import main; main()",
        "collect",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    store = None
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise SystemExit("replaygate collect did not start:\n" + log.read().decode(errors="replace"))
            try:
                if httpx.get(
                    f"{base}/v1/collect/health", headers={"Authorization": f"Bearer {token}"}
                ).is_success:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        ctx = mp.get_context("spawn")
        out: Any = ctx.Queue()
        c0 = cpu_of_tree(server.pid)
        procs = [
            ctx.Process(target=_otlp_worker, args=(f"{base}/v1/traces", token, calls, out))
            for _ in range(processes)
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
        receiver_cpu = cpu_of_tree(server.pid) - c0  # the receiver's processes: decode, normalise, write
        wall = max(r[0] for r in results)
        store = TraceStore(store_url)
        spans = sum(r[1] for r in results)  # acknowledged by collect (200 only once committed)
        return {
            "rate": spans / wall / processes,
            "agent_us": None,
            "export_us": 1e6 * receiver_cpu / max(1, spans),
            "dropped": sum(r[2] for r in results),
            "reported": store.drops().total,  # carried on the agents' spans to collect's store
            "all_dropped": sum(r[2] for r in results),
            "traces": store.count(),
            "expected": processes * calls,
            "calls_per_s": sum(r[3] for r in results) / processes,
            "spans": processes * calls * SPANS_PER_CALL,
        }
    finally:
        server.terminate()
        server.wait(60)
        log.close()
        if store is not None:
            store.close()


def stages(calls: int = 1000) -> None:
    """CPU us/span of each stage of the store's export path, best of 5, over the same finished spans."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from replaygate.instrumentation import (
        BatchRows,
        StoreSpanExporter,
        TraceStore,
        configure,
        health,
        record_to_row,
        shutdown,
        span_to_record,
    )

    provider, memory = TracerProvider(), InMemorySpanExporter()
    configure(tracer_provider=provider, store=None, exporters=[memory], max_queue_size=1 << 20)
    _agent_calls(calls)
    provider.force_flush(60_000)
    spans = list(memory.get_finished_spans())
    shutdown(10)
    records = [span_to_record(s) for s in spans]
    batches = [records[i : i + 512] for i in range(0, len(records), 512)]

    def best(work: Any) -> float:
        times = []
        for _ in range(5):
            start = time.thread_time()
            work()
            times.append(time.thread_time() - start)
        return 1e6 * min(times) / len(spans)

    with tempfile.TemporaryDirectory() as d:
        made = iter(range(1000))

        def write() -> None:
            with TraceStore(str(Path(d) / f"w{next(made)}.db")) as store:
                for batch in batches:
                    store.write_spans(batch)

        def export() -> None:
            exporter = StoreSpanExporter(str(Path(d) / f"e{next(made)}.db"))
            for i in range(0, len(spans), 512):
                exporter.export(spans[i : i + 512])
            exporter.shutdown()

        def worker_cpu() -> float:
            """The store worker's CPU us/span for the whole batch path (redaction too), on its thread."""
            handle = configure(
                tracer_provider=TracerProvider(),
                store=str(Path(d) / f"s{next(made)}.db"),
                otlp_endpoint=False,
                langfuse=False,
                max_queue_size=1 << 20,
            )
            assert handle.pipeline is not None
            clock = _export_thread_clock()
            done = health()["exporters"].get("store", {}).get("exported_spans", 0) + len(spans)
            before = time.clock_gettime(clock)
            for span in spans:
                handle.pipeline.on_end(span)
            while health()["exporters"].get("store", {}).get("exported_spans", 0) < done:
                time.sleep(0.002)
            used = time.clock_gettime(clock) - before
            shutdown(10)
            return 1e6 * used / len(spans)

        rows = [record_to_row(r) for r in records]
        trace_rows = [[tuple(v.values()) for v in BatchRows(b).rows(set(), dict, {})] for b in batches]
        figures = {
            "floor: OTel SDK alone, 4 spans, no-op processor": _floor_sdk(calls),
            "agent thread: decorator + helpers + SDK, no sink": _floor_agent(calls),
            "floor: sqlite3 executemany of prepared rows": _floor_sqlite(rows, trace_rows),
            "span -> record (normalise)": best(lambda: [span_to_record(s) for s in spans]),
            "record -> span row (JSON)": best(lambda: [record_to_row(r) for r in records]),
            "trace rows (BatchRows)": best(lambda: [BatchRows(b) for b in batches]),
            "write_spans (rows + trace rows + SQL)": best(write),
            "StoreSpanExporter.export (all but redaction)": best(export),
            "the store worker's whole path (redaction too)": min(worker_cpu() for _ in range(3)),
        }
    print(f"stages of the store's export path, CPU us/span over {len(spans)} spans (best of 5):")
    for name, us in figures.items():
        print(f"  {name:52} {us:7.1f}")
    print(f"  {'memory of one queued span (bytes, tracemalloc)':52} {_queue_bytes_per_span():7.0f}")


def _floor_sdk(calls: int) -> float:
    """CPU us/span of the OpenTelemetry SDK alone: the bench agent's 4 spans and attributes, a no-op sink."""
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    class Noop(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            pass

        def on_end(self, span: Any) -> None:
            pass

    provider = TracerProvider()
    provider.add_span_processor(Noop())
    tracer = provider.get_tracer("floor")
    docs = '[{"id":"doc-0","rank":1,"score":0.9,"content":"Orders ship in 2 days."}]'

    def call(i: int) -> None:
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench-agent"}
        agent |= {"openinference.span.kind": "AGENT", "replaygate.failure.reasons": (), "input.value": "{}"}
        with tracer.start_as_current_span("invoke_agent bench-agent", attributes=agent) as span:
            with tracer.start_as_current_span("retrieval kb") as r:
                r.set_attributes({"gen_ai.operation.name": "retrieval"})
                r.set_attributes({"openinference.span.kind": "RETRIEVER"})
                r.set_attributes({"gen_ai.data_source.id": "kb", "replaygate.retrieval.query": "where"})
                r.set_attributes({"gen_ai.retrieval.query.text": "where", "input.value": "where"})
                r.set_attributes({"gen_ai.retrieval.documents": docs, "output.value": docs})
                r.set_attributes({"retrieval.documents.0.document.id": "doc-0"})
                r.set_attributes({"retrieval.documents.0.document.score": 0.9})
                r.set_attributes({"retrieval.documents.0.document.content": "Orders ship in 2 days."})
            with tracer.start_as_current_span("execute_tool lookup_order") as t:
                t.set_attributes({"gen_ai.operation.name": "execute_tool", "openinference.span.kind": "TOOL"})
                t.set_attributes({"gen_ai.tool.name": "lookup_order", "tool.name": "lookup_order"})
                t.set_attributes({"gen_ai.tool.call.arguments": "{}", "input.value": "{}"})
                t.set_attributes({"gen_ai.tool.call.result": "{}", "output.value": "{}"})
            with tracer.start_as_current_span("chat gpt-4o-mini") as m:
                m.set_attributes({"gen_ai.operation.name": "chat", "openinference.span.kind": "LLM"})
                m.set_attributes({"gen_ai.request.model": "gpt-4o-mini", "llm.model_name": "gpt-4o-mini"})
                m.set_attributes({"gen_ai.provider.name": "openai", "llm.provider": "openai"})
                m.set_attributes({"gen_ai.usage.input_tokens": 400 + i, "gen_ai.usage.output_tokens": 40})
                m.set_attributes({"llm.token_count.prompt": 400 + i, "llm.token_count.completion": 40})
                m.set_attributes({"output.value": "It ships.", "gen_ai.output.messages": "[]"})
            span.set_attribute("output.value", "It ships tomorrow.")

    for i in range(100):
        call(i)
    start = time.thread_time()
    for i in range(calls):
        call(i)
    return 1e6 * (time.thread_time() - start) / (calls * SPANS_PER_CALL)


def _floor_agent(calls: int) -> float:
    """CPU us/span of the agent thread with replaygate's decorator, helpers and processors, no exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from replaygate.instrumentation import configure, shutdown

    configure(tracer_provider=TracerProvider(), store=None, otlp_endpoint=False, langfuse=False)
    _agent_calls(100)
    start = time.thread_time()
    _agent_calls(calls)
    used = time.thread_time() - start
    shutdown(5)
    return 1e6 * used / (calls * SPANS_PER_CALL)


def _floor_sqlite(rows: list[tuple[Any, ...]], trace_rows: list[list[tuple[Any, ...]]]) -> float:
    """CPU us/span of sqlite3 alone: executemany of prepared span and trace rows, one transaction a batch."""
    import sqlite3

    from replaygate.instrumentation import TRACE_COLUMNS, TraceStore

    with tempfile.TemporaryDirectory() as d:
        TraceStore(str(Path(d) / "f.db")).close()  # the store's schema and indexes
        conn = sqlite3.connect(str(Path(d) / "f.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        span_sql = f"INSERT OR REPLACE INTO trace_spans VALUES ({', '.join('?' * len(rows[0]))})"
        trace_sql = f"INSERT OR REPLACE INTO trace_traces ({', '.join(TRACE_COLUMNS)}) VALUES "
        trace_sql += f"({', '.join('?' * len(TRACE_COLUMNS))})"
        start = time.thread_time()
        for k, i in enumerate(range(0, len(rows), 512)):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(span_sql, rows[i : i + 512])
            conn.executemany(trace_sql, trace_rows[k])
            conn.execute("COMMIT")
        used = time.thread_time() - start
        conn.close()
    return 1e6 * used / len(rows)


def _queue_bytes_per_span(calls: int = 2000) -> float:
    """Memory one finished span of the bench agent holds while it waits in an export queue (tracemalloc)."""
    import gc
    import tracemalloc

    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from replaygate.instrumentation import configure, shutdown

    kept: list[Any] = []

    class Keep(SpanProcessor):
        def on_end(self, span: Any) -> None:
            kept.append(span)

    provider = TracerProvider()
    provider.add_span_processor(Keep())
    configure(tracer_provider=provider, store=None, otlp_endpoint=False, langfuse=False)
    _agent_calls(50)
    kept.clear()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    _agent_calls(calls)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    shutdown(5)
    return (after - before) / max(1, len(kept))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=4000, help="agent calls per process")
    parser.add_argument("--quick", action="store_true", help="fewer calls, no burst of 4 processes")
    parser.add_argument("--stages", action="store_true", help="only the export path's stages, in-process")
    args = parser.parse_args()
    if args.stages:
        print(f"load: {os.getloadavg()[0]:.2f} (uptime)")
        stages()
        return
    calls = 1000 if args.quick else args.calls
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (uptime)")
    rows: list[tuple[str, dict[str, Any]]] = []
    rows.append(("embedded SQLite, 1 process", embedded(1, calls)))
    rows.append(("embedded SQLite, 4 processes", embedded(4, calls // 2)))
    rows.append(("burst 2,000 calls/s x 5 s, 1 process", embedded(1, 10_000, rate=2000)))
    if not args.quick:
        rows.append(("burst 2,000 calls/s x 5 s, 4 processes", embedded(4, 10_000, rate=2000)))
    with tempfile.TemporaryDirectory() as d:
        rows.append(("collect -> SQLite, 4 processes", through_collect(f"sqlite:///{d}/c.db", 4, calls // 2)))
    with postgres() as pg:
        if pg is None:
            print("PostgreSQL not installed: the collect -> PostgreSQL row is left out")
        else:
            rows.append(("collect -> PostgreSQL, 4 processes", through_collect(pg, 4, calls // 2)))
    base = rows[0][1]["rate"]
    print(
        f"{'path':40} {'spans/s/proc':>12} {'x 1-proc':>8} {'agent us':>8} {'ingest us':>9} {'calls/s':>8} "
        f"{'dropped':>8} {'reported':>8} {'traces':>7} {'of':>7}"
    )
    for name, r in rows:
        reported = "-" if r["reported"] is None else str(r["reported"])
        agent = "-" if r["agent_us"] is None else f"{r['agent_us']:.1f}"
        print(
            f"{name:40} {r['rate']:12.0f} {r['rate'] / base:8.2f} {agent:>8} {r['export_us']:9.1f} "
            f"{r['calls_per_s']:8.0f} {r['dropped']:8d} {reported:>8} {r['traces']:7d} {r['expected']:7d}"
        )
    print(
        "agent us = CPU us/span of the agent thread (decorator + SDK); ingest us = CPU us/span of the "
        "store export thread (redaction, record, trace row, SQLite), or of the whole collect process"
    )
    for line in verdicts(rows):
        print(line)
    from replaygate.instrumentation import resolve_settings

    default_queue = resolve_settings(env={}).max_queue_size
    per_span = _queue_bytes_per_span()
    print(
        f"queue: the default holds {default_queue:,} spans per exporter; one queued span of this agent "
        f"holds {per_span:,.0f} bytes, so a full queue {per_span * default_queue / 2**20:,.0f} MiB"
    )
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (uptime)")


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "NOT MET"


def verdicts(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One line per target: what was measured, and PASS or NOT MET."""
    by_name = dict(rows)
    lines = []
    for name in ("embedded SQLite, 1 process", "embedded SQLite, 4 processes"):
        r = by_name[name]
        ceiling = 1e6 / r["export_us"]
        lines.append(
            f"[{_verdict(ceiling >= TARGET_SPANS_PER_S)}] >= {TARGET_SPANS_PER_S:,} spans/s per process into "
            f"SQLite, {name}: the store's export thread takes {r['export_us']:.1f} CPU us/span = "
            f"{ceiling:,.0f} spans per CPU-second"
        )
        both = 1e6 / (r["agent_us"] + r["export_us"])
        lines.append(
            f"[{_verdict(r['rate'] >= TARGET_SPANS_PER_S)}] the same end to end with the agent's own work in "
            f"the process: {r['rate']:,.0f} spans/s measured (wall clock; the GIL-bound ceiling "
            f"1e6 / (agent + ingest) = {both:,.0f})"
        )
    for name, r in rows:
        if name.startswith("burst"):
            lost = r["dropped"]
            lines.append(
                f"[{_verdict(lost == 0)}] no loss, {name} with the default queue: {lost} of "
                f"{r['spans']} spans dropped ({r['calls_per_s']:.0f} calls/s reached per "
                "process)"
            )
        elif name.startswith("collect"):
            ok = r["dropped"] == 0 and r["traces"] == r["expected"]
            lines.append(
                f"[{_verdict(ok)}] no loss, {name}: {r['traces']} of {r['expected']} traces stored, "
                f"{r['dropped']} spans dropped by the agents"
            )
    unreported = [n for n, r in rows if r["reported"] is not None and r["reported"] != r["all_dropped"]]
    drops = sum(r["dropped"] for _, r in rows)
    lines.append(
        f"[{_verdict(not unreported)}] every drop reported where a person looks (`replaygate traces`): "
        f"{drops} spans dropped in all rows; "
        + (
            f"the store's count differs from the agents' own in: {', '.join(unreported)}"
            if unreported
            else "the store's drop count equals the agents' own count in every embedded row"
        )
    )
    return lines


if __name__ == "__main__":
    main()
