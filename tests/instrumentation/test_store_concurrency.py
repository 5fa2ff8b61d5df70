"""Four processes (multiprocessing, spawn) writing to one store concurrently lose no trace."""

from __future__ import annotations

import multiprocessing
import runpy
from pathlib import Path

from replaygate.instrumentation._store import TraceStore

WORKERS = 4
TRACES_PER_WORKER = 200

WORKER = """
import json
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._store import StoreSpanExporter

exporter = StoreSpanExporter(DB)
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=32, schedule_delay_millis=20))
tracer = provider.get_tracer("worker")
ids = []
for index in range(COUNT):
    attrs = {
        sc.OPERATION_NAME: "invoke_agent",
        sc.OI_INPUT_VALUE: f"worker {WORKER_ID} question {index}",
        sc.CONVERSATION_ID: f"w{WORKER_ID}",
    }
    with tracer.start_as_current_span("invoke_agent support", attributes=attrs) as agent:
        with tracer.start_as_current_span("execute_tool t", attributes={sc.OPERATION_NAME: "execute_tool"}):
            pass
        agent.set_attribute(sc.OI_OUTPUT_VALUE, "answer" if index % 10 else "")
        ids.append(format(agent.get_span_context().trace_id, "032x"))
provider.shutdown()
stats = exporter.stats()
with open(OUT, "w") as fh:
    json.dump({"ids": ids, "stats": stats}, fh)
if stats["failed_batches"]:
    raise SystemExit(f"worker {WORKER_ID}: {stats}")
"""


def test_four_processes_lose_no_trace(tmp_path: Path) -> None:
    import json

    db = tmp_path / "shared.db"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    context = multiprocessing.get_context("spawn")
    processes = []
    for worker_id in range(WORKERS):
        init = {
            "DB": str(db),
            "COUNT": TRACES_PER_WORKER,
            "WORKER_ID": worker_id,
            "OUT": str(tmp_path / f"{worker_id}.json"),
        }
        process = context.Process(target=runpy.run_path, args=(str(script),), kwargs={"init_globals": init})
        process.start()
        processes.append(process)
    for process in processes:
        process.join(timeout=90)
        assert process.exitcode == 0
    expected: set[str] = set()
    for worker_id in range(WORKERS):
        result = json.loads((tmp_path / f"{worker_id}.json").read_text())
        assert result["stats"]["exported_spans"] == 2 * TRACES_PER_WORKER
        expected.update(result["ids"])
    assert len(expected) == WORKERS * TRACES_PER_WORKER
    with TraceStore(db) as store:
        assert store.count() == WORKERS * TRACES_PER_WORKER
        listed = store.list_traces(limit=None)
        assert {r.summary.trace_id for r in listed} == expected
        assert all(len(r.spans) == 2 for r in listed)
        assert len(store.failures(reasons=["empty_answer"], limit=None)) == WORKERS * TRACES_PER_WORKER // 10
        assert len(store.session_traces("w3")) == TRACES_PER_WORKER
