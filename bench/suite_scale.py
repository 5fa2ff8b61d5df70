"""Big suites (issue 19): loading, promote, replay, gate and import time, side by side with the peers.

Rows, each with its target and the ratio to it:

- loading 200 / 2,000 / 10,000 scenarios (``load_scenarios``: libyaml, each file once), beside the
  pure-Python YAML loader on the same files (the loader before issue 19) for 200 and 2,000;
- ``promote`` of a new trace into each of those sets (duplicate detection through ``golden.lock``'s index),
  with the set's stat-keyed hash cache cold (the first promote since the set was written), then warm;
- 200 x 5 and 2,000 x 5 replays against a 5 ms target at concurrency 64, in-process (``run_suite``) and
  through the CLI (``replaygate run``, its bytecode cached as an installed package has it, after one
  warm-up run; the first run of a set with its scenario cache cold, then a second run reading the
  cache), against the ideal ``ceil(attempts / 64) x 5 ms``, with the CLI's time broken down side by side:
  its imports (a fresh interpreter importing what ``run`` imports), loading the set (``select_golden``,
  parsing every file and from a warm ``ScenarioCache``), the in-process run and writing the run file
  (``save_run`` of the finished run, alone); then one more warm CLI run timed phase by phase inside its
  own process (imports, the command, loading, the attempts, ``save_run``, the summary, exit handlers, the
  interpreter's teardown), each against its share of the 3x budget; the peers' figures for the same task
  are printed as fixed references (Inspect AI 13.5 s / promptfoo 9.8 s for 200 x 5; 147 s / 109 s for
  2,000 x 5, measured for the issue, not here);
- ``gate`` on 5,000 scenarios x k=10 with a second baseline (the noise floor): the whole ``replaygate gate``
  command (imports, reading the three run files, gating, writing the four reports) as the only child of
  a process of its own, its wall time, CPU time (its forked readers' included) and peak memory (the
  sum of its processes' proportional set sizes, sampled; and the largest one's ``RUSAGE_CHILDREN``
  peak), after one warm-up run that caches its bytecode (as the CLI rows do), then the same work
  in-process stage by stage (imports, reading, gating, reports: CPU seconds of each);
- ``import replaygate.instrumentation`` against ``import opentelemetry.sdk.trace``, each in fresh
  interpreters with their bytecode cached (as installed packages have it; one warm-up import first),
  interleaved, median of several (and the import plus the first ``@trace_agent``, which loads wrapt).

A shared machine shows up in the wall times: compare the rows of one run; the loading, promote and CLI
rows also print their CPU time and the load average.

    uv run --locked python bench/suite_scale.py [--quick] [--rows import,loading,promote,replay,gate]
    uv run --locked python bench/suite_scale.py [--quick] [--inproc-rounds N]

``--inproc-rounds N`` runs only the 2,000 x 5 in-process replay row, N times in one process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLEEP_S = 0.005
CONCURRENCY = 64
PEERS = {200: "Inspect AI 13.5 s, promptfoo 9.8 s", 2000: "Inspect AI 147 s, promptfoo 109 s"}


def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> str:
    """The 5 ms target: a refund answer after a sleep."""
    time.sleep(SLEEP_S)
    return "Refunds up to $200 are issued within 5 days. " + turns[0]


def _scenario(i: int, k: int) -> dict[str, Any]:
    return {
        "id": f"bench-{i:05d}",
        "title": f"bench scenario {i}",
        "owner": "bench",
        "origin": "production-incident",
        "source_trace": f"{i:032x}",
        "added": dt.date(2026, 11, 29),
        "turns": [f"question {i} about a refund"],
        "tags": {"dimension": "refunds", "risk": "high" if i % 3 else "low"},
        "tiers": ["smoke", "release"],
        "repeats": k,
        "expected_behavior": "explain the refund policy",
        "checks": [
            {"type": "contains", "values": ["refund"]},
            {"type": "max_chars", "limit": 500},
            {"type": "output_regex", "pattern": "Refund.*days"},
        ],
    }


def make_golden(path: Path, n: int, k: int = 5) -> None:
    """A golden set of ``n`` scenarios written as replaygate writes them (with its lock and index)."""
    from replaygate.replay import Scenario

    from replaygate.golden import GoldenSet

    GoldenSet(path).write([Scenario.model_validate(_scenario(i, k)) for i in range(n)])


def _row(name: str, seconds: float, target_s: float | None, note: str = "") -> None:
    ratio = f"{seconds / target_s:5.2f}x of target {target_s:g} s" if target_s else ""
    print(f"{name:52s} {seconds:8.3f} s  {ratio:28s} {note}")


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli_env(tmp: Path) -> dict[str, str]:
    """The CLI's environment: its bytecode cached (in ``tmp``), as an installed replaygate has it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env["REPLAYGATE_SCENARIO_CACHE"] = str(tmp / "scenario-cache.json")
    return env


#: What ``replaygate run`` imports before its first attempt (genai-prices loads with the first LLM call).
RUN_IMPORTS = "import replaygate.cli._main\nimport replaygate.cli._run"


#: ``replaygate run`` in a process of its own with a clock at each phase (the command's own functions
#: wrapped): its imports, loading the set, the attempts, writing the run file, the summary, the exit
#: handlers; the interpreter's teardown is the time from the last handler to the process's end.
PHASES = r"""
import atexit, json, sys, time
t0 = (time.perf_counter(), time.process_time())
marks = []
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))
def dump():
    mark("exit handlers")
    out, prev = {}, t0
    for name, w, c in marks:
        got = out.setdefault(name, [0.0, 0.0])
        got[0] += w - prev[0]
        got[1] += c - prev[1]
        prev = (w, c)
    out["at"] = time.time()
    print("PHASES " + json.dumps(out), file=sys.stderr, flush=True)
atexit.register(dump)
import replaygate.cli
import replaygate.cli._run as run_cli
import replaygate.replay._runner as runner
mark("imports")
def wrap(owner, name, before, after):
    inner = getattr(owner, name)
    def timed(*args, **kwargs):
        if before:
            mark(before)
        value = inner(*args, **kwargs)
        mark(after)
        return value
    setattr(owner, name, timed)
wrap(run_cli, "select_golden", "the command (options, judges)", "load the set (select_golden)")
wrap(run_cli, "run_suite", "the command (options, judges)", "run: finish (journal removed)")
wrap(runner, "save_run", "run: the attempts", "run: save_run")
wrap(run_cli, "_report", None, "summary")
sys.argv = ["replaygate", *sys.argv[1:]]
replaygate.cli.main()
"""


def _phases(cmd: list[str], env: dict[str, str]) -> dict[str, tuple[float, float | None]] | None:
    """Each phase of one ``replaygate run`` (``cmd`` without its console script): (wall, CPU) seconds."""
    start = time.time()
    c0 = _children_cpu()
    done = subprocess.run(
        [sys.executable, "-c", PHASES, *cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    end, cpu = time.time(), _children_cpu() - c0
    line = next((x for x in done.stderr.splitlines() if x.startswith("PHASES ")), None)
    if done.returncode != 0 or line is None:
        print(f"   CLI phases run failed ({done.returncode}): {done.stderr.strip()[-400:]}")
        return None
    got = json.loads(line.removeprefix("PHASES "))
    parts: dict[str, tuple[float, float | None]] = {k: (v[0], v[1]) for k, v in got.items() if k != "at"}
    parts["teardown (after the exit handlers)"] = (end - got["at"], None)
    inside = sum(w for w, _ in parts.values())
    parts["interpreter start"] = (end - start - inside, None)
    parts["the whole process"] = (end - start, cpu)
    return parts


def _fresh(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``code`` in a fresh interpreter (CPU: this child's, from RUSAGE_CHILDREN)."""
    probe = f"import time\nt0 = time.perf_counter()\n{code}\nprint(time.perf_counter() - t0)"
    c0 = _children_cpu()
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True, env=env
    )
    return float(out.stdout.strip().splitlines()[-1]), _children_cpu() - c0


def bench_loading(sets: dict[int, Path]) -> None:
    import yaml
    from replaygate.replay import ScenarioCache, load_scenarios, scenario_files

    print("\n== loading a golden set (target: 2,000 scenarios < 1 s)")
    for n, path in sets.items():
        c0, t0 = time.process_time(), time.perf_counter()
        loaded = load_scenarios(path)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert len(loaded) == n
        note = f"(CPU {cpu:.3f} s, {_load()}) "
        cache = ScenarioCache(sets[n].parent / f"cache-{n}.json")
        load_scenarios(path, cache=cache)  # fills it
        c0, t0 = time.process_time(), time.perf_counter()
        assert len(load_scenarios(path, cache=ScenarioCache(cache.path))) == n
        warm_wall, warm_cpu = time.perf_counter() - t0, time.process_time() - c0
        note += f"(from a warm ScenarioCache: {warm_wall:.3f} s, CPU {warm_cpu:.3f}) "
        if n <= 2000:
            texts = [f.read_text(encoding="utf-8") for f in scenario_files(path)]
            t0 = time.perf_counter()
            for text in texts:
                yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - the pure-Python safe loader
            slow = time.perf_counter() - t0
            note += f"(YAML alone with PyYAML's pure-Python SafeLoader, as before: {slow:.3f} s)"
        _row(f"load {n:,} scenarios", wall, 1.0 * n / 2000, note)


def bench_promote(sets: dict[int, Path], tmp: Path) -> None:
    import dataclasses

    from replaygate.instrumentation import SpanRecord, TraceRecord, TraceSummary

    from replaygate.golden import GoldenSet, promote_trace

    summary = TraceSummary(
        trace_id="f" * 32,
        session_id="s",
        user_id="u",
        agent_name="support",
        agent_version="1",
        turns=("I want a refund of $450",),
        output="Sure, refunded.",
        outputs=("Sure, refunded.",),
        error=None,
        chunks=(),
        tool_calls=(),
        llm_calls=(),
        escalated=False,
        escalation_reason=None,
        clarification=False,
        failure_reasons=("negative_feedback",),
        latency_s=0.1,
        input_tokens=None,
        output_tokens=None,
    )

    class Source:
        """A trace store of one trace per id (each promoted trace a new one)."""

        def get_trace(self, trace_id: str) -> TraceRecord:
            span = SpanRecord(trace_id, "0" * 16, None, "agent", "agent", 1, 2, "ok", None, {})
            traced = dataclasses.replace(summary, trace_id=trace_id, session_id=None)
            return TraceRecord(summary=traced, spans=(span,), start_ns=1, end_ns=2)

        def session_traces(self, session_id: str) -> list[TraceRecord]:
            return []

    source = Source()
    os.environ["REPLAYGATE_HASH_CACHE"] = str(tmp / "hash-cache")  # the sets' stat-keyed hash caches
    print("\n== promote a new trace into the set (target: into 2,000 < 0.3 s)")
    print("   (the first promote finds the set's hash cache cold; the second, of another trace, warm)")
    for n, path in sets.items():
        gs = GoldenSet(path)
        made = []
        for trace_id, label in (("f" * 32, "hash cache cold"), ("e" * 32, "hash cache warm")):
            c0, t0 = time.process_time(), time.perf_counter()
            made.append(promote_trace(source, trace_id, gs, owner="bench", origin="production-incident"))
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            t0 = time.perf_counter()
            again = promote_trace(source, trace_id, gs, owner="bench", origin="production-incident")
            repeat = time.perf_counter() - t0
            assert made[-1].created and not again.created
            _row(
                f"promote into {n:,} ({label})",
                wall,
                0.3 * n / 2000,
                f"(CPU {cpu:.3f} s, {_load()}; promoting it again: {repeat:.3f} s)",
            )
        entries = json.loads(gs.lock_path.read_text(encoding="utf-8"))
        for m in made:  # leave the set as it was for the other rows
            m.path.unlink()
            entries["scenarios"].pop(m.scenario.id, None)
            entries.get("index", {}).pop(m.scenario.id, None)
        gs.lock_path.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _cli_run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str | None]:
    """Wall and CPU seconds of one ``replaygate run``, and its error (None when it succeeded)."""
    c0, t0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    error = None if done.returncode == 0 else f"({done.returncode}): {done.stderr.strip()[-400:]}"
    return wall, cpu, error


def _load_times(path: Path, tmp: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """(wall, CPU) seconds of ``select_golden`` parsing every file, and reading a warm scenario cache."""
    from replaygate.replay import ScenarioCache

    from replaygate.golden import GoldenSet, select_golden

    cache_path = tmp / f"load-cache-{path.name}.json"
    select_golden(GoldenSet(path), cache=ScenarioCache(cache_path))  # fills the cache
    parse: list[tuple[float, float]] = []
    cached: list[tuple[float, float]] = []
    for _ in range(3):
        for cache, into in ((None, parse), (cache_path, cached)):
            c0, t0 = time.process_time(), time.perf_counter()
            select_golden(GoldenSet(path), cache=ScenarioCache(cache) if cache else None)
            into.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(parse), min(cached)  # the least disturbed of three, by wall time


def bench_inproc(golden: Path, n: int, tmp: Path) -> tuple[Any, tuple[float, float]]:
    """The in-process row: ``run_suite`` of the set x k=5 against the 5 ms target; (run, (wall, CPU))."""
    from replaygate.replay import load_scenarios, run_suite

    attempts = n * 5
    ideal = -(-attempts // CONCURRENCY) * SLEEP_S  # ceil(attempts / concurrency) waves of one call
    suite = load_scenarios(golden)
    t0, c0 = time.perf_counter(), time.process_time()
    run = run_suite(
        suite,
        target,
        {"model": "bench"},
        concurrency=CONCURRENCY,
        timeout_s=30,
        out_path=tmp / f"inproc-{n}.json",
        progress=False,
        code_commit=None,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert run.summary.passes == attempts, run.summary.error_attempts[:3]
    note = f"= {wall / ideal:.1f}x ideal; CPU {cpu:.2f} s = {cpu / attempts * 1000:.3f} ms/attempt; {_load()}"
    _row(f"{n:,} x 5 in-process (ideal {ideal:.2f} s)", wall, ideal * 1.5, note)
    return run, (wall, cpu)


def bench_replay(sets: dict[int, Path], sizes: list[int], tmp: Path) -> None:
    from replaygate.instrumentation import load_prices
    from replaygate.replay import save_run

    load_prices()
    print(f"\n== replay x k=5 against a {SLEEP_S * 1000:.0f} ms target, concurrency {CONCURRENCY}")
    print("   (targets: through the CLI within 3x the ideal, in-process within 1.5x)")
    env = _cli_env(tmp)
    console = str(Path(sys.executable).parent / "replaygate")
    warm = [console, "run", "--golden", str(sets[sizes[0]]), "--target", "bench.suite_scale:target"]
    warm += ["--repeats", "1", "--out", str(tmp / "warm-up.json"), "--quiet", "--force", "--no-artifacts"]
    no_cache = {**env, "REPLAYGATE_SCENARIO_CACHE": "off"}  # the first measured run finds the cache cold
    subprocess.run(warm, cwd=ROOT, env=no_cache, capture_output=True, text=True, timeout=1800)  # bytecode
    _fresh(RUN_IMPORTS, env)  # and the bytecode of what run imports
    imports = sorted(_fresh(RUN_IMPORTS, env) for _ in range(3))[1]  # the median by wall time
    for n in sizes:
        ideal = -(-n * 5 // CONCURRENCY) * SLEEP_S  # ceil(attempts / concurrency) waves of one call
        run, inproc = bench_inproc(sets[n], n, tmp)
        c0, t0 = time.process_time(), time.perf_counter()
        save_run(run, tmp / f"again-{n}.json")
        write_wall, write_cpu = time.perf_counter() - t0, time.process_time() - c0
        size_mb = (tmp / f"again-{n}.json").stat().st_size / 1e6
        parsed, cached = _load_times(sets[n], tmp)
        cmd = [
            str(Path(sys.executable).parent / "replaygate"), "run", "--golden", str(sets[n]),
            "--target", "bench.suite_scale:target", "--concurrency", str(CONCURRENCY),
            "--out", str(tmp / f"cli-{n}.json"), "--quiet", "--force",
        ]  # fmt: skip
        for label in ("scenario cache cold", "second run, cache warm"):
            wall, cpu, error = _cli_run(cmd, env)
            if error is not None:
                print(f"   CLI run failed {error}")
                break
            _row(
                f"{n:,} x 5 through the CLI ({label})",
                wall,
                ideal * 3,
                f"= {wall / ideal:.1f}x ideal (CPU {cpu:.2f} s, {_load()}); peers: {PEERS.get(n, '-')}",
            )
        else:
            _breakdown(wall, cpu, ideal, imports, parsed, cached, inproc, (write_wall, write_cpu), size_mb)
            phases = _phases(cmd[1:], env)
            if phases is not None:
                _phase_rows(phases, ideal)


def _breakdown(
    wall: float,
    cpu: float,
    ideal: float,
    imports: tuple[float, float],
    parsed: tuple[float, float],
    cached: tuple[float, float],
    inproc: tuple[float, float],
    write: tuple[float, float],
    size_mb: float,
) -> None:
    """The warm CLI run beside its parts, measured apart in this run: wall and CPU seconds."""
    parts = [
        ("imports", imports),
        ("load (cache)", cached),
        ("run (in-process)", inproc),
    ]
    print("   the warm CLI run, part by part (wall | CPU):")
    for name, (w, c) in parts:
        print(f"     {name:38s} {w:8.3f} s | {c:6.3f} s  = {w / ideal:4.1f}x ideal")
    print(f"     {'  (load parsing every file instead)':38s} {parsed[0]:8.3f} s | {parsed[1]:6.3f} s")
    print(
        f"     {'  (of the run: save_run alone)':38s} {write[0]:8.3f} s | {write[1]:6.3f} s"
        f"  ({size_mb:.1f} MB run file)"
    )
    total = (sum(p[1][0] for p in parts), sum(p[1][1] for p in parts))
    print(
        f"     {'imports + load + run':38s} {total[0]:8.3f} s | {total[1]:6.3f} s"
        f"  = {total[0] / ideal:4.1f}x ideal"
    )
    print(
        f"     {'the CLI run':38s} {wall:8.3f} s | {cpu:6.3f} s  = {wall / ideal:4.1f}x ideal "
        f"(the rest {wall - total[0]:+.3f} s: interpreter start, the command, its summary)"
    )


#: What each phase of the CLI run may take for the run to be within 3x the ideal with the runner at
#: 1.2 s (2,000 x 5): imports 0.3 s, loading 0.3 s, the rest (run file, summary, teardown) 0.4 s.
PHASE_BUDGETS = {
    "imports": 0.3,
    "load the set (select_golden)": 0.3,
    "run: save_run": 0.3,
    "teardown (after the exit handlers)": 0.1,
}


def _phase_rows(phases: dict[str, tuple[float, float | None]], ideal: float) -> None:
    """One more warm CLI run, timed inside its own process phase by phase (wall | CPU)."""
    print(f"   one more warm CLI run, phase by phase inside its process (wall | CPU; {_load()}):")
    for name, (w, c) in phases.items():
        cpu = f"{c:6.3f} s" if c is not None else "     - "
        budget = PHASE_BUDGETS.get(name)
        note = f"  {w / budget:4.2f}x of its budget {budget:g} s" if budget else ""
        print(f"     {name:38s} {w:8.3f} s | {cpu}  = {w / ideal:4.1f}x ideal{note}")


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from ``/proc``; gone ones left out)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for children in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in children.read_text().split())
            except OSError:
                pass
    return out


def _tree_pss_mib(pid: int) -> float:
    """The proportional set size of ``pid`` and its descendants together (shared pages counted once)."""
    total = 0
    for p in _tree(pid):
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)
    return total / 1024


def _gate_child(folder: str) -> None:
    """Run ``replaygate gate`` as this process's only child: its wall time, CPU time and peak memory.

    Peak memory two ways: the largest process's peak resident set (``RUSAGE_CHILDREN``; the command may
    fork readers), and the peak of the whole process tree's proportional set size, sampled (at most 5 % of
    a core: reading a process's ``smaps_rollup`` takes milliseconds).
    """
    d = Path(folder)
    cmd = [
        str(Path(sys.executable).parent / "replaygate"), "gate", "--policy", str(d / "policy.yaml"),
        "--baseline", str(d / "base.json"), "--candidate", str(d / "head.json"),
        "--baseline-2", str(d / "base2.json"), "--out", str(d / "report"), "--json",
    ]  # fmt: skip
    tree_peak = 0.0
    t0 = time.perf_counter()
    # its output to files, not pipes: a pipe nobody reads while sampling would stall a talkative command
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        with subprocess.Popen(cmd, stdout=out, stderr=err, text=True) as proc:
            while proc.poll() is None:
                if time.perf_counter() - t0 > 1800:
                    proc.kill()
                    raise SystemExit("replaygate gate took more than 1800 s")
                t = time.perf_counter()
                tree_peak = max(tree_peak, _tree_pss_mib(proc.pid))
                time.sleep(max(0.05, 20 * (time.perf_counter() - t)))  # sampling: at most 5 % of a core
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"replaygate gate failed ({proc.returncode}): {stderr.strip()[-600:]}")
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": usage.ru_utime + usage.ru_stime,
                "peak_mib": usage.ru_maxrss / 1024,
                "tree_pss_mib": tree_peak,
                "outcome": json.loads(stdout)["outcome"],
            }
        )
    )


def _gate_stages(folder: str) -> None:
    """The gate's stages in-process, in a fresh interpreter: CPU seconds of each (one JSON line)."""
    t0 = time.process_time()
    from replaygate.replay import old_objects_frozen

    import replaygate.cli  # noqa: F401 - the command's package, as ``replaygate gate`` imports it
    import replaygate.labels  # noqa: F401 - what the command reads the judges' labels with
    from replaygate.gate import gate_runs, load_policy, load_run_data
    from replaygate.report import write_reports

    d = Path(folder)
    out: dict[str, float] = {"imports": time.process_time() - t0}
    t = time.process_time()
    policy = load_policy(str(d / "policy.yaml"))
    runs = [load_run_data(str(d / f"{name}.json")) for name in ("base2", "head", "base")]
    out["reading the three run files"] = time.process_time() - t
    t = time.process_time()
    paths = (str(d / "base.json"), str(d / "head.json"), str(d / "base2.json"))
    with old_objects_frozen():
        report = gate_runs(policy, runs[2], runs[1], runs[0], paths=paths)
    out["gating (integrity, statistics, guardrails)"] = time.process_time() - t
    t = time.process_time()
    write_reports(report, d / "report-stages", ["md", "html", "json", "junit"])
    out["writing the four reports"] = time.process_time() - t
    print(json.dumps(out))


def bench_gate(tmp: Path, n: int) -> None:
    import numpy as np
    from replaygate.replay import save_run

    sys.path.insert(0, str(ROOT))
    from tests.gate.conftest import make_run  # the run files the gate tests use, at scale

    print(f"\n== gate on {n:,} scenarios x k=10 with a second baseline (target < 5 s and < 300 MiB)")
    rng = np.random.default_rng(1)
    d = tmp / "gate"
    d.mkdir()
    for name, rate in (("base", 0.9), ("base2", 0.9), ("head", 0.89)):
        save_run(make_run(rng.binomial(10, rate, n).tolist(), run_id=name, k=10), d / f"{name}.json")
    (d / "policy.yaml").write_text("{}\n", encoding="utf-8")
    env = _cli_env(tmp)  # bytecode cached, as an installed replaygate has it: one warm-up run writes it
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, __file__, "--gate-child", str(d)],
            capture_output=True,
            text=True,
            timeout=1800,
            env=env,
        )
    if done.returncode != 0:
        print(f"   gate failed: {done.stderr.strip()[-600:]}")
        return
    got = json.loads(done.stdout.strip().splitlines()[-1])
    _row(
        f"gate {n:,} x 10 + noise floor (CLI)",
        got["wall"],
        5.0,
        f"CPU {got['cpu']:.2f} s ({got['cpu'] / 5:.2f}x of 5 s); peak {got['tree_pss_mib']:.0f} MiB "
        f"({got['tree_pss_mib'] / 300:.2f}x of 300 MiB: all its processes' PSS; the largest process "
        f"{got['peak_mib']:.0f} MiB RSS); outcome {got['outcome']}; {_load()}",
    )
    stages = [sys.executable, __file__, "--gate-stages", str(d)]
    staged = subprocess.run(stages, capture_output=True, text=True, timeout=1800, env=env)
    if staged.returncode == 0:
        print("   the same work in-process, stage by stage (CPU seconds):")
        for stage, cpu in json.loads(staged.stdout.strip().splitlines()[-1]).items():
            print(f"     {stage:44s} {cpu:6.3f} s")


def bench_import(rounds: int, tmp: Path) -> None:
    print("\n== import time, fresh interpreters, interleaved (target: <= 1.2x the SDK's)")
    decorate = (
        "import replaygate.instrumentation as ri\n"
        "@ri.trace_agent(name='a')\n"
        "def agent(message):\n    return message"
    )
    codes = {
        "opentelemetry.sdk.trace": "import opentelemetry.sdk.trace",
        "replaygate.instrumentation": "import replaygate.instrumentation",
        "... plus the first @trace_agent": decorate,
    }
    env = _cli_env(tmp)
    bare = {**env, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp / "no-pycache")}
    for code in codes.values():
        _fresh(code, env)  # writes the bytecode, as installing a package does
    times: dict[str, list[float]] = {k: [] for k in codes}
    compiled: dict[str, list[float]] = {k: [] for k in codes}
    for _ in range(rounds):
        for name, code in codes.items():
            times[name].append(_fresh(code, env)[0])
            compiled[name].append(_fresh(code, bare)[0])
    sdk = statistics.median(times["opentelemetry.sdk.trace"])
    sdk_compiled = statistics.median(compiled["opentelemetry.sdk.trace"])
    print(f"({_load()}; right of |: every module compiled from source, as under PYTHONDONTWRITEBYTECODE=1)")
    for name, values in times.items():
        median, slow = statistics.median(values), statistics.median(compiled[name])
        target = "(target 1.2x)" if name == "replaygate.instrumentation" else "(for information)"
        print(
            f"import {name:37s} {median:8.3f} s  {median / sdk:5.2f}x the SDK's {target:18s}"
            f"| {slow:6.3f} s {slow / sdk_compiled:5.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 and 2,000 only; gate on 2,000")
    parser.add_argument("--gate-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--gate-stages", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--inproc-rounds",
        type=int,
        default=0,
        help="only the in-process 2,000 x 5 row, N times",
    )
    parser.add_argument(
        "--rows",
        default="import,loading,promote,replay,gate",
        help="comma-separated: which rows to run (import, loading, promote, replay, gate) [all]",
    )
    args = parser.parse_args()
    rows = set(args.rows.split(","))
    unknown = rows - {"import", "loading", "promote", "replay", "gate"}
    if unknown:
        parser.error(f"--rows: unknown {sorted(unknown)}")
    if args.gate_child:
        _gate_child(args.gate_child)
        return 0
    if args.gate_stages:
        _gate_stages(args.gate_stages)
        return 0
    if args.inproc_rounds:
        from replaygate.instrumentation import load_prices

        load_prices()
        with tempfile.TemporaryDirectory() as name:
            make_golden(Path(name) / "golden-2000", 2000)
            for _ in range(args.inproc_rounds):
                bench_inproc(Path(name) / "golden-2000", 2000, Path(name))
        return 0
    sizes = [200, 2000] if args.quick else [200, 2000, 10000]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        sets = {}
        for n in sizes:
            sets[n] = tmp / f"golden-{n}"
            make_golden(sets[n], n)
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        if "import" in rows:
            bench_import(7, tmp)
        if "loading" in rows:
            bench_loading(sets)
        if "promote" in rows:
            bench_promote(sets, tmp)
        if "replay" in rows:
            bench_replay(sets, [200, 2000], tmp)
        if "gate" in rows:
            bench_gate(tmp, 2000 if args.quick else 5000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
