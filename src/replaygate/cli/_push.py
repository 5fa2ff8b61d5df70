"""``replaygate push RUN|REPORT --to langfuse|phoenix``: results back where the team looks every day.

A run file's attempts (their spans first, from the run's artifacts, content hashed unless
``--capture-content``) become Langfuse scores / Phoenix trace annotations on each attempt's trace
(``replaygate.status``, ``replaygate.judge.<name>``, ``replaygate.retrieval.<metric>``); a gate report
folder (or its ``report.json``) becomes one gate trace with ``replaygate.gate.outcome`` and
``replaygate.gate.newly_failing``; ``--failures`` marks the store's failure candidates
(``replaygate.failure``, the reasons as the label). Pushing again updates the same items. ``--url``
names the server (default: the tool's own environment variables), ``--link`` the report's address.

Exit codes: 0 pushed; 3 a missing or invalid file, or a tool that cannot be reached or refused us.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from replaygate.replay import RunFile, load_run, read_artifacts

from replaygate.cli._options import data_errors, json_option, store_option
from replaygate.cli._traces import open_traces, parse_since
from replaygate.report import load_report
from replaygate.sources import LangfuseSource, PhoenixSource, PushResult, push_failures, push_report, push_run

__all__ = ["register"]


def _attempt_spans(run: RunFile, path: Path) -> dict[str, list[dict[str, Any]]]:
    """The attempts' spans by trace id, from the run's artifacts (nothing when there are none)."""
    files = {Path(a.artifact_path) for a in run.attempts if a.artifact_path}
    files.add(path.parent / run.run_id / "artifacts.jsonl")
    spans: dict[str, list[dict[str, Any]]] = {}
    for file in sorted(files):
        if not file.is_file():
            continue
        for artifact in read_artifacts(file).values():
            trace_id = artifact.get("trace_id")
            records = artifact.get("spans")
            if isinstance(trace_id, str) and isinstance(records, list):
                spans[trace_id] = [r for r in records if isinstance(r, dict)]
    return spans


def _is_report(path: Path) -> bool:
    return path.is_dir() or path.name == "report.json"


@click.command("push")
@click.argument("path", type=click.Path(path_type=Path), required=False)
@click.option("--failures", is_flag=True, help="Mark the store's failure candidates instead (see --since).")
@click.option(
    "--since", metavar="WHEN", default=None, help="With --failures: since 30m, 2h, 1d or an ISO time."
)
@store_option
@click.option("--to", "sink_name", required=True, type=click.Choice(["langfuse", "phoenix"]))
@click.option("--url", default=None, help="The server [default: LANGFUSE_HOST / PHOENIX_COLLECTOR_ENDPOINT].")
@click.option("--project", default=None, help="Phoenix project [default: $PHOENIX_PROJECT_NAME or default].")
@click.option("--link", default=None, help="Where people open the report (gate reports) [default: its path].")
@click.option(
    "--capture-content",
    is_flag=True,
    help="Send the attempts' text as it is (default: content hashed, as OTLP export does).",
)
@json_option
@data_errors
def push_cmd(
    path: Path | None,
    failures: bool,
    since: str | None,
    store: str | None,
    sink_name: str,
    url: str | None,
    project: str | None,
    link: str | None,
    capture_content: bool,
    as_json: bool,
) -> None:
    """Push a run's attempt results, a gate report's outcome or the failures to Langfuse or Phoenix."""
    if (path is None) == (not failures):
        raise click.UsageError("give a run file or report folder, or --failures (one of them)")
    sink = LangfuseSource(url) if sink_name == "langfuse" else PhoenixSource(url, project=project)
    with sink:
        result: PushResult
        if path is None:
            with open_traces(store) as traces:
                records = traces.failures(since_ns=parse_since(since) if since else None, limit=None)
            result = push_failures(records, sink)
        elif _is_report(path):
            report = load_report(path)
            result = push_report(report, sink, link or str(path.resolve()))
        else:
            run = load_run(path)
            result = push_run(run, sink, spans=_attempt_spans(run, path), hash_content=not capture_content)
    if as_json:
        doc = {
            "format_version": 1,
            "sink": result.sink,
            "exported": result.exported,
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
