"""``replaygate push RUN|REPORT --to langfuse|phoenix``: results back where the team looks every day.

A run file's attempts become Langfuse scores / Phoenix trace annotations on each attempt's trace
(``replaygate.status``, ``replaygate.judge.<name>``, ``replaygate.retrieval.<metric>``); a gate report
folder (or its ``report.json``) becomes one gate trace with ``replaygate.gate.outcome`` and
``replaygate.gate.newly_failing``. Pushing again updates the same items. ``--url`` names the server
(default: the tool's own environment variables), ``--link`` the report's address people should open.

Exit codes: 0 pushed; 3 a missing or invalid file, or a tool that cannot be reached or refused us.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from replaygate.replay import load_run

from replaygate.report import load_report
from replaygate.sources import LangfuseSource, PhoenixSource, PushResult, push_report, push_run

__all__ = ["register"]


def _is_report(path: Path) -> bool:
    return path.is_dir() or path.name == "report.json"


@click.command("push")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--to", "sink_name", required=True, type=click.Choice(["langfuse", "phoenix"]))
@click.option("--url", default=None, help="The server [default: LANGFUSE_HOST / PHOENIX_COLLECTOR_ENDPOINT].")
@click.option("--project", default=None, help="Phoenix project [default: $PHOENIX_PROJECT_NAME or default].")
@click.option("--link", default=None, help="Where people open the report (gate reports) [default: its path].")
@click.option("--json", "as_json", is_flag=True, help="Print what was pushed as JSON.")
def push_cmd(
    path: Path, sink_name: str, url: str | None, project: str | None, link: str | None, as_json: bool
) -> None:
    """Push a run's attempt results, or a gate report's outcome, to Langfuse or Phoenix (idempotent)."""
    sink = LangfuseSource(url) if sink_name == "langfuse" else PhoenixSource(url, project=project)
    with sink:
        result: PushResult
        if _is_report(path):
            report = load_report(path)
            result = push_report(report, sink, link or str(path.resolve()))
        else:
            result = push_run(load_run(path), sink)
    if as_json:
        doc = {
            "format_version": 1,
            "sink": result.sink,
            "items": result.items,
            "traces": result.traces,
            "gate_trace": result.gate_trace,
            "skipped": result.skipped,
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(result.describe())


def register(group: click.Group) -> None:
    """Add ``push`` to the root group."""
    group.add_command(push_cmd)
