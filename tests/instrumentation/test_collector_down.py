"""With the OTLP collector down, 10,000 agent calls succeed, memory stays bounded, the process exits fast.

Runs in a subprocess: a fresh process with the global provider, as a production agent would be.
"""

import json
import socket
import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent(
    """
    import json, sys, time, tracemalloc
    import replaygate.instrumentation as ri

    ri.configure(store=None, otlp_endpoint=sys.argv[1], otlp_capture_content=True, max_queue_size=512,
                 max_batch_size=256)

    @ri.trace_agent(name="support")
    def respond(message: str, session_id: str) -> str:
        return "answer to " + message

    for i in range(200):  # warm-up outside the measurement
        respond("warm", session_id="w")
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    started = time.monotonic()
    ok = 0
    for i in range(10_000):
        message = f"question {i} " + "x" * 200
        ok += respond(message, session_id=f"s{i % 50}") == "answer to " + message
    elapsed = time.monotonic() - started
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0 = time.monotonic()
    flushed = ri.shutdown(timeout=2.0)
    shutdown_s = time.monotonic() - t0
    h = ri.health()
    print(json.dumps({"ok": ok, "elapsed": elapsed, "peak": peak - base, "current": current - base,
                      "shutdown_s": shutdown_s, "flushed": flushed, "dropped": h["dropped_spans"],
                      "failed": h["failed_spans"], "exported": h["exported_spans"],
                      "faults": h["instrumentation_faults"]}))
    """
)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_collector_costs_only_dropped_spans() -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, endpoint], capture_output=True, text=True, timeout=90, check=False
    )
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"] == 10_000
    # 10,200 spans were produced: each is dropped (queue full, or left at shutdown) or failed in an export
    # the dead collector refused; only the batch in flight when shutdown gave up may be in neither count
    assert 10_200 - 256 <= result["dropped"] + result["failed"] <= 10_200
    assert result["dropped"] >= 10_200 - 512 - 4 * 256  # most never left the bounded queue
    assert result["exported"] == 0 and result["faults"] == 0
    assert result["flushed"] is False
    # bounded by the timeout given (2 s), with room for a loaded CI machine; a hung exporter retries for 64 s
    assert result["shutdown_s"] < 6.0
    # bounded: one full queue of spans (each holds ~6 KB here: ~3 MB), not 10,000 of them (~60 MB)
    assert result["peak"] < 10 * 1024 * 1024, result
    assert wall < 60
