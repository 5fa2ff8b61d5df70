"""Ingest speed: spans/s into the embedded SQLite store from 1 and 4 agent processes (the decorator, the
bounded queue, the batched writer), and through `replaygate collect` (the real SDK OTLP/HTTP exporter)
into SQLite and PostgreSQL, side by side. Also the drops at a 2,000 calls/s burst for 5 s.

    uv run --locked python bench/store_ingest.py [--calls 4000]

Target: >= 10k spans/s per process into SQLite; no loss at a 2,000 calls/s burst with the default queue.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pg import postgres  # noqa: E402

SPANS_PER_CALL = 4  # agent + retrieval + tool + llm


def _agent_calls(n: int, rate: float | None = None) -> None:
    from replaygate.instrumentation import llm_call, retrieval, tool_call, trace_agent

    @trace_agent(name="bench-agent")
    def respond(i: int) -> str:
        with retrieval("where is my order", data_source="kb") as r:
            r.record([{"id": f"doc-{i % 50}", "score": 0.9, "text": "Orders ship in 2 days."}])
        with tool_call("lookup_order", {"order_id": i}) as t:
            t.set_result({"status": "shipped"})
        with llm_call("gpt-4o-mini", provider="openai") as llm:
            llm.set_usage(input_tokens=500, output_tokens=60)
            llm.set_output("It ships tomorrow.")
        return "It ships tomorrow."

    start = time.perf_counter()
    for i in range(n):
        respond(i)
        if rate:
            ahead = (i + 1) / rate - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)


def _embedded_worker(db: str, n: int, rate: float | None, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from replaygate.instrumentation import configure, health, shutdown

    configure(store=db)
    t0 = time.perf_counter()
    _agent_calls(n, rate)
    shutdown(120)
    h = health()["exporters"].get("store", {})
    out.put((time.perf_counter() - t0, h.get("exported_spans", 0), h.get("dropped_spans", 0)))


def embedded(processes: int, calls: int, rate: float | None = None) -> tuple[float, int, int]:
    from replaygate.store import TraceStore

    with tempfile.TemporaryDirectory() as d:
        db = str(Path(d) / "s.db")
        TraceStore(db).close()
        out: mp.Queue = mp.get_context("spawn").Queue()  # type: ignore[type-arg]
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=_embedded_worker, args=(db, calls, rate, out)) for _ in range(processes)]
        for p in procs:
            p.start()
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
        with TraceStore(db) as store:
            stored = store.count()
        wall = max(r[0] for r in results)
        spans = sum(r[1] for r in results)
        dropped = sum(r[2] for r in results)
        assert stored * SPANS_PER_CALL <= spans + SPANS_PER_CALL * processes
        return spans / wall, dropped, stored


def _otlp_worker(url: str, token: str, n: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from replaygate.instrumentation import configure, health, shutdown

    configure(
        store=None,
        otlp_endpoint=url,
        otlp_headers={"Authorization": f"Bearer {token}"},
        otlp_capture_content=True,
    )
    t0 = time.perf_counter()
    _agent_calls(n)
    shutdown(300)
    h = health()["exporters"].get("otlp", {})
    out.put((time.perf_counter() - t0, h.get("exported_spans", 0), h.get("dropped_spans", 0)))


def through_collect(store_url: str, processes: int, calls: int) -> tuple[float, int, int]:
    from werkzeug.serving import make_server

    from replaygate.collect import Receiver, create_collect_app
    from replaygate.store import TraceStore

    store = TraceStore(store_url)
    receiver = Receiver(store, token="bench")
    server = make_server("127.0.0.1", 0, create_collect_app(receiver), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        ctx = mp.get_context("spawn")
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        url = f"http://127.0.0.1:{server.server_port}/v1/traces"
        procs = [ctx.Process(target=_otlp_worker, args=(url, "bench", calls, out)) for _ in range(processes)]
        for p in procs:
            p.start()
        results = [out.get(timeout=900) for _ in procs]
        for p in procs:
            p.join()
        wall = max(r[0] for r in results)
        return receiver.stats.spans / wall, sum(r[2] for r in results), store.count()
    finally:
        server.shutdown()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=4000, help="agent calls per process")
    args = parser.parse_args()
    rows = []
    one = embedded(1, args.calls)
    rows.append(("embedded SQLite, 1 process", *one, args.calls))
    four = embedded(4, args.calls // 2)
    rows.append(("embedded SQLite, 4 processes", *four, 4 * (args.calls // 2)))
    burst = embedded(1, 10_000, rate=2000)
    rows.append(("burst 2,000 calls/s x 5 s, 1 process", *burst, 10_000))
    burst4 = embedded(4, 10_000, rate=2000)
    rows.append(("burst 2,000 calls/s x 5 s, 4 processes", *burst4, 40_000))
    with tempfile.TemporaryDirectory() as d:
        rows.append(
            (
                "collect -> SQLite, 4 processes",
                *through_collect(f"sqlite:///{d}/c.db", 4, args.calls // 2),
                4 * (args.calls // 2),
            )
        )
    with postgres() as pg:
        if pg is None:
            print("PostgreSQL not installed: the collect -> PostgreSQL row is left out")
        else:
            rows.append(
                (
                    "collect -> PostgreSQL, 4 processes",
                    *through_collect(pg, 4, args.calls // 2),
                    4 * (args.calls // 2),
                )
            )
    base = rows[0][1]
    print(f"{'path':42} {'spans/s':>10} {'x 1-proc':>9} {'dropped':>8} {'traces':>8} {'calls':>7}")
    for name, rate, dropped, stored, calls in rows:
        print(f"{name:42} {rate:10.0f} {rate / base:9.2f} {dropped:8d} {stored:8d} {calls:7d}")


if __name__ == "__main__":
    main()
