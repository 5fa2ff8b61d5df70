"""Routing under load: 50 routing clients poll ``GET /api/canary`` while 4 releasers view the page,
behind ``gunicorn -w 4 --threads 8`` (started here on 127.0.0.1, set up from the environment as the README's
"For teams" says). Prints the state reads and how many failed, the share the clients served against the
share the canary set (with its sampling error), ``choose_variant`` latency (p50, p99, max) and the page's
response times, side by side, then PASS/FAIL against each target.

    uv run --locked python bench/routing_load.py [--seconds 20] [--clients 50] [--releasers 4]

Target: no state read fails, the served share within its binomial interval of the set share (Wilson,
z = 3), choose_variant p99 < 5 ms. The canary is started at 10% on a SQLite store with 20k traces in the
step (so each page view measures real data); routing clients run in 5 processes of 10 (one process per
agent replica), each client reading the state every 0.5 s (timeout 2 s). Before the run, the server's
CPU cost of one state read and one page view (measures computed, and served from the worker's view
cache) is measured in this process; during it, the CPU the gunicorn workers and the clients used, so
the demand (CPU per request × request rate) can be set against the machine's cores and its load.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _proc import cpu_of_tree, free_port  # noqa: E402
from canary_scale import _Decisions, fill  # noqa: E402

READ_TOKEN = "bench-read-token"
PASSWORD = "bench password 123"
SHARE = 0.10


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
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put((results, usage.ru_utime + usage.ru_stime))


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


def _server_costs(url: str, users: Path, n: int = 300) -> tuple[float, float, float]:
    """CPU ms of one state read, one page view computing its measures, one from the view cache."""
    from replaygate.web import WebConfig, create_app, load_users

    app = create_app(
        WebConfig(
            store=url,
            users=load_users(users),
            secret_key="c" * 64,
            read_token=READ_TOKEN,
            secure_cookies=False,
            auto_check=False,
        )
    )
    http = app.test_client()
    form = http.get("/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert token, "no CSRF token on the login page"
    http.post("/login", data={"username": "rita", "password": PASSWORD, "csrf_token": token.group(1)})
    headers = {"Authorization": f"Bearer {READ_TOKEN}"}
    assert http.get("/").status_code == 200  # the first look: the template compiled, the store warm
    t0 = time.process_time()
    for _ in range(n):
        http.get("/api/canary", headers=headers)
    read = (time.process_time() - t0) / n
    ctl = app.extensions["replaygate"].controller  # what a page view computes when its view is stale
    state = ctl.state()
    t0 = time.process_time()
    for _ in range(5):
        ctl.status(state)
        ctl.measure_bins(state.started_ns, time.time_ns(), 12)
    computed = (time.process_time() - t0) / 5
    t0 = time.process_time()
    for _ in range(20):
        http.get("/")
    cached = (time.process_time() - t0) / 20
    return read * 1e3, computed * 1e3, cached * 1e3


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


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
    read_ms, view_ms, cached_ms = _server_costs(url, users)
    port = free_port()
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
        cpu0, wall0, load0 = cpu_of_tree(server.pid), time.monotonic(), os.getloadavg()[0]
        for t in releasers:
            t.start()
        answers = [out.get(timeout=args.seconds + 120) for _ in procs]
        results = [r for a in answers for r in a[0]]
        client_cpu = sum(a[1] for a in answers)
        for t in releasers:
            t.join()
        for p in procs:
            p.join()
        server_cpu, wall = cpu_of_tree(server.pid) - cpu0, time.monotonic() - wall0
        load1 = os.getloadavg()[0]
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
    low, high = _wilson(candidate, chosen, 3.0) if chosen else (float("nan"), float("nan"))
    p99 = _quantile(times, 0.99) * 1e3
    read_rate, view_rate = reads / args.seconds, len(page_times) / args.seconds
    cores = os.cpu_count() or 1
    print(
        f"routing clients {len(results)}, releasers {args.releasers}, {args.seconds:.0f} s, "
        f"-w 4 --threads 8, {cores} cores, load average {load0:.1f} at the start, {load1:.1f} at the end"
    )
    print(f"{'measure':40} {'value':>14} {'target':>22}")
    print(f"{'state reads attempted (all clients)':40} {reads:14d}")
    print(f"{'state reads failed':40} {failures:14d} {'0':>22}")
    print(f"{'variants chosen':40} {chosen:14d}")
    print(f"{'served candidate share':40} {served:14.4f} {f'{SHARE:.2f} in interval':>22}")
    print(f"{'  binomial interval (Wilson, z = 3)':40} {f'{low:.4f} .. {high:.4f}':>14}")
    print(f"{'choose p50 (ms)':40} {_quantile(times, 0.5) * 1e3:14.3f}")
    print(f"{'choose p99 (ms)':40} {p99:14.3f} {'< 5':>22}")
    print(f"{'choose max (ms)':40} {max(times) * 1e3 if times else float('nan'):14.3f}")
    print(f"{'page views':40} {len(page_times):14d}")
    print(f"{'page p50 / p95 (s)':40} {_quantile(page_times, 0.5):6.3f} / {_quantile(page_times, 0.95):.3f}")
    print(f"{'page view errors':40} {len(page_errors):14d} {'0':>22}")
    for what, count in Counter(page_errors).most_common(5):
        print(f"  {count:6d} x {what}")
    print("server CPU per request (measured in-process before the run) x the rate during it:")
    for label, ms, rate in (("state read", read_ms, read_rate), ("page view, cached", cached_ms, view_rate)):
        print(f"  {label + ' (ms CPU) x per s':38} {ms:8.2f} x {rate:6.1f} = {ms * rate / 1e3:.2f} cores")
    print(f"  {'page view, measures computed (ms CPU)':38} {view_ms:8.2f} (once per 5 s per worker at most)")
    print(f"{'gunicorn CPU during the run (cores)':40} {server_cpu / wall:14.2f}")
    print(f"{'routing client processes CPU (cores)':40} {client_cpu / wall:14.2f}")
    checks = [
        ("no state read fails", failures == 0),
        ("served share within sampling error of the set share", chosen > 0 and low <= SHARE <= high),
        ("choose_variant p99 < 5 ms", p99 < 5.0),
        ("no page view fails", not page_errors),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")


if __name__ == "__main__":
    main()
