"""Routing under load: 50 routing clients poll ``GET /api/canary`` while 4 releasers view the page,
behind ``gunicorn -w 4 --threads 8`` (started here on 127.0.0.1, set up from the environment as the README's
"For teams" says). Prints the state reads and how many failed, the share the clients served against the
share the canary set (with its sampling error), ``choose_variant`` latency (p50, p99, max) and the page's
response times, side by side.

    uv run --locked python bench/routing_load.py [--seconds 20] [--clients 50] [--releasers 4]

Target: no state read fails, the served share within 3 standard errors of the set share, choose_variant
p99 < 5 ms. The canary is started at 10% on a SQLite store with 20k traces in the step (so each page
view measures real data); routing clients run in 5 processes of 10 (one process per agent replica).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from canary_scale import _Decisions, fill  # noqa: E402

READ_TOKEN = "bench-read-token"
PASSWORD = "bench password 123"
SHARE = 0.10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clients(url: str, n: int, seconds: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """``n`` routing clients in one process, each choosing for a new key every ~5 ms."""
    from replaygate.instrumentation import RoutingClient

    results: list[tuple[list[float], int, int, int, int]] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        client = RoutingClient(url, refresh_s=0.5, token=READ_TOKEN)
        client.wait_ready(10)
        times: list[float] = []
        chosen = candidate = 0
        stop = time.monotonic() + seconds
        i = 0
        while time.monotonic() < stop:
            key = f"user-{os.getpid()}-{index}-{i}"
            t0 = time.perf_counter()
            variant = client.choose(key)
            times.append(time.perf_counter() - t0)
            chosen += 1
            candidate += variant.name == "candidate"
            i += 1
            time.sleep(0.005)
        stats = client.stats()
        with lock:
            results.append((times, chosen, candidate, int(stats["refreshes"]), int(stats["failures"])))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(results)


def _releaser(base: str, seconds: float, times: list[float], errors: list[str]) -> None:
    with httpx.Client(base_url=base, timeout=30) as http:
        form = http.get("/login").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token, "no CSRF token on the login page"
        http.post("/login", data={"username": "rita", "password": PASSWORD, "csrf_token": token.group(1)})
        stop = time.monotonic() + seconds
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                r = http.get("/")
            except httpx.HTTPError as exc:  # a page view that times out is counted, not fatal
                errors.append(f"GET / -> {type(exc).__name__}")
                continue
            times.append(time.perf_counter() - t0)
            if r.status_code != 200 or "rita" not in r.text:
                errors.append(f"GET / -> {r.status_code}")
            time.sleep(0.2)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--releasers", type=int, default=4)
    parser.add_argument("--traces", type=int, default=20_000, help="traces in the canary's step")
    args = parser.parse_args()
    gunicorn = shutil.which("gunicorn") or str(Path(sys.executable).parent / "gunicorn")

    from werkzeug.security import generate_password_hash

    from replaygate.canary import CanaryController, CanarySettings, CanaryStore
    from replaygate.store import TraceStore

    folder = Path(tempfile.mkdtemp(prefix="rg-routing-"))
    url = f"sqlite:///{folder / 'store.db'}"
    canary = CanaryStore(url)
    ctl = CanaryController(canary, TraceStore(canary.store), _Decisions(), settings=CanarySettings())
    ctl.start("dec-bench", actor="bench", plan=(SHARE, 0.5, 1.0))
    fill(url, args.traces, ctl.state().step_started_ns or time.time_ns())
    ctl.close()
    users = folder / "users.yaml"
    users.write_text(
        f"users:\n  rita: {{password_hash: '{generate_password_hash(PASSWORD)}', role: releaser}}\n"
    )
    port = _free_port()
    env = {
        **os.environ,
        "REPLAYGATE_STORE": url,
        "REPLAYGATE_SECRET_KEY": "b" * 64,
        "REPLAYGATE_USERS_FILE": str(users),
        "REPLAYGATE_READ_TOKEN": READ_TOKEN,
        "REPLAYGATE_SECURE_COOKIES": "false",
    }
    server = subprocess.Popen(
        [
            gunicorn,
            "-w",
            "4",
            "--threads",
            "8",
            "--preload",
            "-b",
            f"127.0.0.1:{port}",
            "replaygate.web:create_app()",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "gunicorn.log").open("wb"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{base}/api/canary", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    log = (folder / "gunicorn.log").read_text()
                    raise SystemExit("gunicorn did not start: " + log) from None
                time.sleep(0.3)
        ctx = mp.get_context("spawn")
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        per = 10
        procs = [
            ctx.Process(
                target=_clients, args=(f"{base}/api/canary", min(per, args.clients - i), args.seconds, out)
            )
            for i in range(0, args.clients, per)
        ]
        for p in procs:
            p.start()
        time.sleep(1.0)  # the clients' first reads
        page_times: list[float] = []
        page_errors: list[str] = []
        releasers = [
            threading.Thread(target=_releaser, args=(base, args.seconds, page_times, page_errors))
            for _ in range(args.releasers)
        ]
        for t in releasers:
            t.start()
        results = [r for _ in procs for r in out.get(timeout=args.seconds + 120)]
        for t in releasers:
            t.join()
        for p in procs:
            p.join()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(30)
        shutil.rmtree(folder, ignore_errors=True)

    times = [t for r in results for t in r[0]]
    chosen = sum(r[1] for r in results)
    candidate = sum(r[2] for r in results)
    reads = sum(r[3] for r in results)
    failures = sum(r[4] for r in results)
    served = candidate / chosen if chosen else float("nan")
    se = math.sqrt(SHARE * (1 - SHARE) / chosen) if chosen else float("nan")
    print(
        f"routing clients {len(results)}, releasers {args.releasers}, {args.seconds:.0f} s, -w 4 --threads 8"
    )
    print(f"{'measure':34} {'value':>12} {'target':>16}")
    print(f"{'state reads (all clients)':34} {reads:12d}")
    print(f"{'state reads failed':34} {failures:12d} {'0':>16}")
    print(f"{'variants chosen':34} {chosen:12d}")
    print(f"{'served candidate share':34} {served:12.4f} {f'{SHARE:.2f} +- {3 * se:.4f}':>16}")
    print(f"{'  off by (standard errors)':34} {(served - SHARE) / se:12.2f} {'|z| < 3':>16}")
    print(f"{'choose_variant p50 (ms)':34} {_quantile(times, 0.5) * 1e3:12.3f}")
    print(f"{'choose_variant p99 (ms)':34} {_quantile(times, 0.99) * 1e3:12.3f} {'< 5':>16}")
    print(f"{'choose_variant max (ms)':34} {max(times) * 1e3 if times else float('nan'):12.3f}")
    print(f"{'page views':34} {len(page_times):12d}")
    print(f"{'page p50 / p95 (s)':34} {_quantile(page_times, 0.5):6.3f} / {_quantile(page_times, 0.95):.3f}")
    print(f"{'page view errors':34} {len(page_errors):12d} {'0':>16}")
    from collections import Counter

    for what, count in Counter(page_errors).most_common(5):
        print(f"  {count:6d} x {what}")


if __name__ == "__main__":
    main()
