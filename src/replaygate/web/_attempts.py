"""What the agent did in one scenario, baseline and candidate side by side, from run files and artifacts.

A gate report names its run files (``comparison.baseline.path`` / ``candidate.path``); each attempt in a
run file names its artifacts file (``artifact_path``, one JSON line per attempt with the messages and the
spans). The spans are read through the instrumentation's normaliser (``summarize_spans``), so turns,
retrieved chunks and tool calls with their arguments read exactly as on a trace page. Everything here is
untrusted text for the templates to escape; files are read line by line and only the lines of the wanted
scenario are parsed, each capped in size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaygate.instrumentation import ReplaygateError, SpanRecord, TraceSummary, summarize_spans
from replaygate.replay import Attempt, RunFile, load_run

from replaygate.gate import GateReport

__all__ = ["AttemptView", "SideView", "scenario_sides"]

_MAX_LINE = 4 << 20  # an artifact line larger than this is not shown (4 MiB)


@dataclass(frozen=True)
class AttemptView:
    """One attempt with what its artifact holds (``summary`` None when the artifact is unreadable)."""

    attempt: Attempt
    messages: Sequence[Any] = ()
    summary: TraceSummary | None = None
    artifact_note: str = ""


@dataclass(frozen=True)
class SideView:
    """One side (baseline or candidate) of one scenario: the run, its attempts, or why they are missing."""

    name: str
    run_id: str
    path: str | None
    attempts: list[AttemptView] = field(default_factory=list)
    problem: str = ""


def _spans(raw: Any) -> list[SpanRecord]:
    spans = []
    for s in raw if isinstance(raw, list) else []:
        if not isinstance(s, dict):
            continue
        try:
            spans.append(SpanRecord(**{**s, "events": tuple(s.get("events") or ())}))
        except TypeError:
            continue
    return spans


def _artifact_lines(path: Path, scenario_id: str) -> dict[int, dict[str, Any]]:
    """The artifact lines of one scenario, by attempt index (last line wins; torn lines skipped)."""
    needle = json.dumps(scenario_id).encode()
    found: dict[int, dict[str, Any]] = {}
    with path.open("rb") as fh:
        for raw in fh:
            if len(raw) > _MAX_LINE or needle not in raw or not raw.endswith(b"\n"):
                continue
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            if isinstance(doc, dict) and doc.get("scenario_id") == scenario_id:
                index = doc.get("index")
                if isinstance(index, int):
                    found[index] = doc
    return found


def _view(attempt: Attempt, artifacts: dict[str, dict[int, dict[str, Any]]]) -> AttemptView:
    if not attempt.artifact_path:
        return AttemptView(attempt, artifact_note="no artifact was written for this attempt")
    lines = artifacts.get(attempt.artifact_path)
    if lines is None:
        try:
            lines = _artifact_lines(Path(attempt.artifact_path), attempt.scenario_id)
        except OSError as exc:
            lines = {}
            artifacts[attempt.artifact_path] = lines
            return AttemptView(attempt, artifact_note=f"artifact not readable here: {exc.strerror or exc}")
        artifacts[attempt.artifact_path] = lines
    doc = lines.get(attempt.index)
    if doc is None:
        return AttemptView(attempt, artifact_note=f"no line for this attempt in {attempt.artifact_path}")
    spans = _spans(doc.get("spans"))
    summary = summarize_spans(spans) if spans else None
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else []
    return AttemptView(attempt, tuple(messages or ()), summary)


def _side(name: str, run_id: str, path: str | None, scenario_id: str, cache: dict[str, RunFile]) -> SideView:
    if not path:
        return SideView(name, run_id, path, problem="the report does not name this run's file")
    run = cache.get(path)
    if run is None:
        try:
            run = load_run(path)
        except ReplaygateError as exc:
            return SideView(name, run_id, path, problem=f"run file not readable here: {exc}")
        cache[path] = run
    artifacts: dict[str, dict[int, dict[str, Any]]] = {}
    attempts = sorted((a for a in run.attempts if a.scenario_id == scenario_id), key=lambda a: a.index)
    views = [_view(a, artifacts) for a in attempts]
    problem = "" if views else f"run {run.run_id} has no attempt of {scenario_id}"
    return SideView(name, run.run_id, path, views, problem)


def scenario_sides(
    report: GateReport, scenario_id: str, cache: dict[str, RunFile] | None = None
) -> tuple[SideView, SideView]:
    """Baseline and candidate attempts of one scenario of a report, each with its artifacts."""
    c = report.comparison
    cache = {} if cache is None else cache
    return (
        _side("baseline", c.baseline.run_id, c.baseline.path, scenario_id, cache),
        _side("candidate", c.candidate.run_id, c.candidate.path, scenario_id, cache),
    )
