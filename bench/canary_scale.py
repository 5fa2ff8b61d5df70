"""Time of one canary look (``CanaryController.status``: counts, quantiles, cost, intervals, evidence)
with 1k, 10k and 100k traces in the step, on SQLite and PostgreSQL, side by side.

    uv run --locked python bench/canary_scale.py [--sizes 1000,10000,100000]

Target: < 0.5 s at 100k on both, flat in the number of traces. Wall time and this process's CPU time are
printed side by side (the wall time on a loaded machine is inflated; the CPU time much less so). Trace
rows are inserted directly (the columns the writers compute), half per arm; groundedness sampling is off
(it reads a fixed 4k traces).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pg import postgres  # noqa: E402


def _decision():  # type: ignore[no-untyped-def]
    from replaygate.gate import SignedDecision

    def fp(config_id: str):  # type: ignore[no-untyped-def]
        return {
            "agent_config_hash": f"h-{config_id}",
            "declared_versions": {"config_id": config_id},
            "target": "t",
            "replaygate_version": "0",
            "suite_hash": "sha256:bench",
            "k": 1,
            "seed": 0,
            "date": "2026-01-01T00:00:00Z",
        }

    return SignedDecision.model_validate(
        {
            "id": "dec-bench",
            "report_id": "r",
            "outcome": "pass",
            "signed_by": "bench",
            "reason": "bench",
            "signed_at": datetime.now(UTC),
            "baseline_fingerprint": fp("base"),
            "candidate_fingerprint": fp("cand"),
            "candidate_target": "t",
            "candidate_config_id": "cand",
        }
    )


class _Decisions:
    def get(self, decision_id: str):  # type: ignore[no-untyped-def]
        return _decision()

    def list_decisions(self, outcomes=None):  # type: ignore[no-untyped-def]
        return [_decision()]


def fill(url: str, n: int, start_ns: int) -> None:
    from replaygate.store import TraceStore, trace_traces, upsert

    rng = random.Random(n)
    calls = json.dumps([["gpt-4o-mini", "openai", 500, 60]])
    with TraceStore(url) as store:
        for lo in range(0, n, 20_000):
            rows = []
            for i in range(lo, min(n, lo + 20_000)):
                variant = "candidate" if i % 2 else "baseline"
                rows.append(
                    {
                        "trace_id": hashlib.md5(f"{url}{i}".encode()).hexdigest(),
                        "start_ns": start_ns + i,
                        "end_ns": start_ns + i + 10**9,
                        "session_id": f"s{i}",
                        "user_id": None,
                        "agent_name": "a",
                        "variant": variant,
                        "config_id": variant,
                        "input_preview": "q",
                        "output_preview": "a",
                        "failure": 0,
                        "failure_reasons": "[]",
                        "updated_ns": start_ns,
                        "error": int(rng.random() < 0.01),
                        "empty": 0,
                        "escalated": int(rng.random() < 0.05),
                        "negative_feedback": 0,
                        "latency_s": rng.lognormvariate(0, 0.3),
                        "llm_calls": calls,
                    }
                )
            with store.store.write() as conn:
                upsert(conn, trace_traces, rows, ("trace_id",))
        if store.store.dialect == "postgresql":  # the steady state: autovacuum has analyzed the table
            with store.store.engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                    "VACUUM ANALYZE trace_traces"
                )


def look_time(url: str, n: int) -> tuple[float, float]:
    from replaygate.canary import CanaryController, CanarySettings, CanaryStore
    from replaygate.store import TraceStore

    canary = CanaryStore(url)
    ctl = CanaryController(
        canary, TraceStore(canary.store), _Decisions(), settings=CanarySettings(groundedness_sample=0)
    )
    ctl.start("dec-bench", actor="bench")
    fill(url, n, ctl.state().step_started_ns or time.time_ns())
    ctl.status()  # warm: first connection, caches
    times, cpu = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        status = ctl.status()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert status.measures is not None and status.measures.baseline.n + status.measures.candidate.n == n
    canary.close()
    return min(times), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        results["SQLite"] = [look_time(f"sqlite:///{d}/s{n}.db", n) for n in sizes]
    with postgres() as pg:
        if pg is not None:
            import psycopg

            admin = pg.replace("postgresql+psycopg", "postgresql").rsplit("/", 1)[0] + "/postgres"
            urls = []
            for n in sizes:
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute(f'CREATE DATABASE "scale_{n}"')
                urls.append(pg.rsplit("/", 1)[0] + f"/scale_{n}")
            results["PostgreSQL"] = [look_time(u, n) for u, n in zip(urls, sizes, strict=True)]
        else:
            print("PostgreSQL not installed: its column is left out")
    print(f"one canary look (CanaryController.status), best of 3; load average {os.getloadavg()[0]:.1f}")
    print(
        f"{'traces in step':>15} "
        + " ".join(f"{k + ' wall (s)':>18} {k + ' CPU (s)':>17}" for k in results)
        + " "
        + " ".join(f"{k + ' vs 1st':>16}" for k in results)
    )
    for i, n in enumerate(sizes):
        cells = " ".join(f"{v[i][0]:18.3f} {v[i][1]:17.3f}" for v in results.values())
        ratios = " ".join(f"{v[i][0] / v[0][0]:16.2f}" for v in results.values())
        print(f"{n:15d} {cells} {ratios}")
    for k, v in results.items():
        at_max = v[-1][0]
        verdict = "PASS" if at_max < 0.5 else "FAIL"
        print(f"{verdict}  {k}: {at_max:.3f} s at {sizes[-1]} traces (target < 0.5 s)")


if __name__ == "__main__":
    main()
