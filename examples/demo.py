"""The replaygate demo (``make demo`` / ``python -m examples.demo``), offline, on the embedded store.

Stage 1, capture: the support agent serves a few hundred simulated production requests with the
production configuration, traced into the embedded store; unhappy users leave negative feedback a little
later. Stage 2, the failure inbox: what was captured and
which traces are failure candidates, with their reasons. Later stages (promotion, replay, gate, canary)
append themselves to ``STAGES``.

Where it writes: by default everything goes to the demo's own folder ``.replaygate/demo/`` (its store
``replaygate.db``, the golden-set copy, configurations, runs and reports), removed and made anew at every
start, so a rerun tells the same story. With ``--store PATH`` (or ``REPLAYGATE_STORE``) the demo reuses that
store, says so, and keeps its earlier traces, decisions and canary history (each stage reports on the
traces of this run); its folder is then ``demo/`` beside the store.

Options: ``--store PATH`` (default: the demo folder's own, made anew),
``--requests N`` (300), ``--seed N`` (2026; -1 for fresh randomness), ``--config NAME`` (``production``),
``--serve`` (serve the release page at the end, ``--port``). Stages 3 to 8 (``examples/demo_release.py``)
promote failures, replay, gate, fix, sign and run the canary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from replaygate.instrumentation import TraceRecord, TraceStore, configure, health, shutdown
from rich.console import Console
from rich.table import Table
from rich.text import Text

from examples.demo_release import RELEASE_STAGES, StageError
from examples.support_agent import ConfigError, load_config
from examples.support_agent.traffic import simulate

__all__ = ["STAGES", "Demo", "capture", "failure_inbox", "main", "prepare"]

DEMO_FOLDER = Path(".replaygate") / "demo"


@dataclass
class Demo:
    """What the stages share: options, the console, and each stage's results by name."""

    store: Path
    work: Path = DEMO_FOLDER
    reused: bool = False
    requests: int = 300
    seed: int | None = None
    config: str = "production"
    console: Console = field(default_factory=lambda: Console(width=None if sys.stdout.isatty() else 160))
    started_ns: int = field(default_factory=time.time_ns)
    results: dict[str, Any] = field(default_factory=dict)
    serve: bool = False
    port: int = 8080


class DemoError(RuntimeError):
    """A stage found the demo's own pipeline broken (nothing captured, nothing flagged)."""


def _store_path(value: str | None) -> tuple[Path, Path, bool]:
    """The store, the demo folder, and whether the store is one the user chose (reused, not removed)."""
    raw = value or os.environ.get("REPLAYGATE_STORE")
    if not raw:
        return DEMO_FOLDER / "replaygate.db", DEMO_FOLDER, False
    store = Path(raw.removeprefix("sqlite:///"))
    return store, store.parent / "demo", True


def prepare(demo: Demo) -> None:
    """Start from a clean demo folder, or say which store is reused and what it already holds."""
    if not demo.reused:
        if demo.work.exists():
            shutil.rmtree(demo.work)
        demo.console.print(
            f"Demo folder {demo.work}/ (store, golden-set copy, runs, reports): starting clean "
            "(a previous demo's folder is removed first)."
        )
        return
    before = 0
    if demo.store.exists():
        with TraceStore(demo.store) as store:
            before = store.count()
    demo.console.print(
        f"Reusing the store {demo.store} ({before} traces already in it): its earlier traces, decisions "
        f"and canary history stay, and each stage reports on this run's own traces. The folder "
        f"{demo.work}/ is made anew."
    )


def capture(demo: Demo) -> None:
    """Stage 1: simulated production traffic through the traced agent, into the embedded store."""
    # Traffic runs without the simulated model latency the replays use, to keep the demo quick.
    config = load_config(demo.config).model_copy(update={"latency_ms": 0.0})
    demo.store.parent.mkdir(parents=True, exist_ok=True)
    configure(service_name="support-agent", store=str(demo.store))
    t0 = time.perf_counter()
    try:
        counts = simulate(demo.requests, config, demo.seed, feedback_rate=0.5, store=demo.store)
    finally:
        flushed = shutdown(timeout=15.0)
    elapsed = time.perf_counter() - t0
    demo.results["traffic"] = counts
    stats = health()
    table = Table(
        title=f"Simulated traffic: {config.config_id} (agent {config.agent_version})", show_header=False
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("requests / sessions", f"{counts['requests']} / {counts['sessions']}")
    for label in ("answer", "escalate", "clarify", "refuse"):
        table.add_row(f"label {label}", str(counts[label]))
    rates = config.rates.model_dump()
    for key in sorted(k for k in counts if k.startswith("injected_")):
        name = key.removeprefix("injected_")
        if rates.get(name, 0) > 0 or counts[key]:
            table.add_row(f"planted {name}", str(counts[key]))
    table.add_row("negative feedback sent later", str(counts["negative_feedback"]))
    table.add_row("seconds", f"{elapsed:.1f}")
    demo.console.print(table)
    absent = sorted(n for n, rate in rates.items() if not rate)
    if absent:
        demo.console.print(
            f"Not planted in {config.config_id}: {', '.join(absent)} (the candidate's regression, Stage 4)."
        )
    dropped = stats.get("dropped_spans", 0)
    if not flushed or dropped:
        demo.console.print(f"[yellow]warning:[/] export not fully flushed (dropped spans: {dropped})")


def _cell(text: str | None, width: int) -> Text:
    if text is None or not text.strip():
        return Text("(empty)", style="dim")
    flat = " ".join(text.split())
    return Text(flat if len(flat) <= width else flat[: width - 1] + "…")


def failure_inbox(demo: Demo) -> None:
    """Stage 2: what was captured in this run, and the failure candidates with their reasons."""
    with TraceStore(demo.store) as store:
        traces = store.list_traces(since_ns=demo.started_ns, limit=None)
        failures: list[TraceRecord] = store.failures(since_ns=demo.started_ns, limit=None)
        total = store.count()
    reasons = Counter(r for f in failures for r in f.summary.failure_reasons)
    demo.results["inbox"] = {"traces": len(traces), "failures": len(failures), "reasons": dict(reasons)}
    demo.console.print(
        f"Captured [bold]{len(traces)}[/] traces in this run ({total} in {demo.store}); "
        f"[bold]{len(failures)}[/] are failure candidates."
    )
    by_reason = Table(title="Failure candidates by reason")
    by_reason.add_column("reason")
    by_reason.add_column("traces", justify="right")
    for reason, n in reasons.most_common():
        by_reason.add_row(reason, str(n))
    demo.console.print(by_reason)
    latest = Table(title="Failure candidates: the latest of each reason")
    latest.add_column("reasons", min_width=24)
    latest.add_column("time", min_width=8, no_wrap=True)
    latest.add_column("trace", min_width=12, no_wrap=True)
    latest.add_column("session", min_width=18, no_wrap=True)
    latest.add_column("input", no_wrap=True)
    latest.add_column("output", no_wrap=True)
    shown: set[str] = set()
    for reason, _ in reasons.most_common():
        picked = [
            f for f in failures if reason in f.summary.failure_reasons and f.summary.trace_id not in shown
        ]
        for record in picked[:4]:
            s = record.summary
            shown.add(s.trace_id)
            latest.add_row(
                Text(", ".join(s.failure_reasons)),
                datetime.fromtimestamp(record.start_ns / 1e9).strftime("%H:%M:%S"),
                Text(s.trace_id[:12]),
                Text(s.session_id or "-"),
                _cell(s.turns[-1] if s.turns else None, 36),
                _cell(s.output, 40),
            )
    demo.console.print(latest)
    demo.console.print(f"Browse them: replaygate failures --store {demo.store}   (one: replaygate trace ID)")
    if not traces:
        raise DemoError(f"no trace reached the store {demo.store}: the instrumentation pipeline is broken")
    if not failures:
        raise DemoError("no failure candidate in this run: the failure signals are not being recorded")


Stage = tuple[str, Callable[[Demo], None]]

#: The demo's stages, in order; later issues append promotion, replay, gate and canary.
STAGES: list[Stage] = [
    ("capture production traffic", capture),
    ("failure inbox", failure_inbox),
    *RELEASE_STAGES,
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run every stage in order; 0 when all completed, 1 when a stage found the pipeline broken."""
    parser = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--store", help=f"reuse this trace store (default REPLAYGATE_STORE, else a new one in {DEMO_FOLDER}/)"
    )
    parser.add_argument("--requests", type=int, default=300, help="simulated requests (default 300)")
    parser.add_argument("--seed", type=int, default=2026, help="traffic seed (default 2026; -1: random)")
    parser.add_argument("--serve", action="store_true", help="serve the release page at the end")
    parser.add_argument("--port", type=int, default=8080, help="port of the release page (with --serve)")
    parser.add_argument("--config", default="production", help="agent configuration (default production)")
    args = parser.parse_args(argv)
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    try:
        load_config(args.config)
    except ConfigError as exc:
        parser.error(str(exc))
    seed = None if args.seed == -1 else args.seed
    store, work, reused = _store_path(args.store)
    demo = Demo(
        store=store,
        work=work,
        reused=reused,
        requests=args.requests,
        seed=seed,
        config=args.config,
        serve=args.serve,
        port=args.port,
    )
    prepare(demo)
    for number, (title, stage) in enumerate(STAGES, start=1):
        demo.console.rule(f"Stage {number}: {title}")
        try:
            stage(demo)
        except (DemoError, StageError) as exc:
            demo.console.print(f"[red]demo failed at stage {number} ({title}):[/] {exc}")
            return 1
    demo.console.rule("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
