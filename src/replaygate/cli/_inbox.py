"""``replaygate inbox``: the failure inbox grouped into classes, each with its count, trend and coverage.

``replaygate inbox [--since 1d] [--golden DIR] [--store PATH|URL | --source phoenix|langfuse[:URL]]
[--examples 2] [--json]`` reads the traces of the window from the store (a SQLite file or a PostgreSQL
URL, opened as ``replaygate traces`` opens it; a URL is shown without its password), or the newest 10,000
at most from Phoenix or Langfuse, and prints one row per class: known kinds found by the
rule layer first (refusal without tools, empty answer, ungrounded claim, missed escalation, ...), then
clusters of the other failure candidates. ``covered by`` names the scenarios that already cover a class
(promoted from one of its traces, or tagged ``failure_class``); ``replaygate promote TRACE
--class-checks`` drafts a class's checks.
``--json`` prints ``{"format_version": 1, "store", "traces", "classes": [CLASS, ...]}`` with
``CLASS = {key, title, kind, count, trend {earlier, later}, covered_by, pattern, examples, trace_ids}``.
"""

from __future__ import annotations

import json
import sys

import click
from replaygate.replay import Scenario, ScenarioError, load_scenarios
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replaygate.cli._options import json_option, store_option
from replaygate.cli._traces import is_store_source, open_traces, parse_since, source_label, source_option
from replaygate.golden import resolve_golden_dir
from replaygate.inbox import FailureClass, classify_failures

__all__ = ["REMOTE_LIMIT", "print_classes", "register"]

#: The most traces ``inbox --source phoenix|langfuse`` reads (newest first).
REMOTE_LIMIT = 10_000


def _one_line(text: str, limit: int) -> str:
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _golden(path: str | None) -> list[Scenario]:
    """The golden set ``--golden`` names, else ``$REPLAYGATE_GOLDEN`` or ``golden/`` when that exists."""
    directory = resolve_golden_dir(path)
    if path is None and not directory.is_dir():
        return []  # no golden set here: nothing covers a class yet
    try:
        return list(load_scenarios(directory))
    except ScenarioError as exc:
        raise click.ClickException(f"cannot read the golden set to check coverage: {exc}") from None


def register(group: click.Group) -> None:
    """Add ``inbox`` to the root group."""

    @group.command("inbox")
    @store_option
    @source_option
    @click.option(
        "--since", metavar="WHEN", default=None, help="Only traces since 30m, 2h, 1d or an ISO time."
    )
    @click.option(
        "--golden",
        default=None,
        help="Golden set, to say which classes a scenario covers (default: $REPLAYGATE_GOLDEN or golden/).",
    )
    @click.option("--examples", type=click.IntRange(0, 3), default=1, show_default=True)
    @json_option
    def inbox(
        store: str | None, source: str | None, since: str | None, golden: str | None, examples: int,
        as_json: bool,
    ) -> None:  # fmt: skip
        """The failure inbox grouped into classes (rules for known kinds, clusters for the rest)."""
        since_ns = parse_since(since) if since else None
        # a store is read whole (in SQL, locally); Phoenix and Langfuse page over the network: bounded
        limit = None if is_store_source(source) else REMOTE_LIMIT
        with open_traces(store, source) as trace_store:
            records = trace_store.list_traces(since_ns=since_ns, limit=limit)
            where = source_label(trace_store)
        if limit is not None and len(records) >= limit:
            click.echo(
                f"note: read the newest {limit:,} traces of {where}; narrow the window with --since",
                err=True,
            )
        classes = classify_failures(records, scenarios=_golden(golden))
        if as_json:
            doc = {
                "format_version": 1,
                "store": where,
                "traces": len(records),
                "classes": [c.to_json() for c in classes],
            }
            click.echo(json.dumps(doc, ensure_ascii=False, indent=2))
            return
        width = None if sys.stdout.isatty() else 150  # CI logs and the demo: room for the examples
        console = Console(file=sys.stdout, highlight=False, emoji=False, soft_wrap=False, width=width)
        print_classes(console, classes, len(records), where, examples)


def print_classes(
    console: Console, classes: list[FailureClass], traces: int, where: str, examples: int
) -> None:
    """The classes as a table, then each class's suggested checks (also used by the demo)."""
    failing = sum(c.count for c in classes)
    table = Table(title=f"{failing} failures of {traces} traces in {where}, by class", title_justify="left")
    table.add_column("class", overflow="fold")
    table.add_column("count", width=5)
    table.add_column("trend", width=10)  # fixed: the other columns' widths do not move with its digits
    table.add_column("covered by", overflow="fold")
    table.add_column("example (trace, question -> answer)", overflow="fold")
    for c in classes:
        lines = [
            f"{m.trace_id[:12]} {_one_line(m.question, 36)!r} -> {_one_line(m.answer, 44)!r}"
            for m in c.examples[:examples]
        ]
        name = f"{c.key} ({_one_line(c.title, 30)})" if c.kind == "cluster" else c.key
        table.add_row(
            Text(name),
            str(c.count),
            f"{c.trend[0]} -> {c.trend[1]}",
            Text(", ".join(c.covered_by) or "-"),
            Text("\n".join(lines)),
        )
    console.print(table)
    for c in classes:
        if c.kind == "rule":
            console.print(Text(f"  {c.key}: suggested checks {c.pattern}"))
    if classes:
        console.print(
            Text("promote a member with its class's checks: replaygate promote TRACE --class-checks")
        )
