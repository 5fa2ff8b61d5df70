"""``scenarios lint``: every problem of a golden set, with file:line and what to do."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from replaygate.replay import Scenario, ScenarioError, load_scenario, needs_backtracking

from replaygate.golden._errors import GoldenError
from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._lifecycle import lock_status, today_utc
from replaygate.golden._lock import LockEntry
from replaygate.stats import threshold_note

__all__ = ["LintProblem", "lint", "top_level_line"]

_LOCATED = re.compile(r"^(?P<where>.+?:\d+): (?P<message>.*)$", re.S)


@dataclass(frozen=True)
class LintProblem:
    """One problem: where (``file:line``), severity (only errors fail lint), what and what to do."""

    where: str
    severity: Literal["error", "warning"]
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.severity}: {self.message}"


def top_level_line(path: Path, key: str) -> int:
    """The 1-based line of a top-level key in a scenario file (1 when absent)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    for number, line in enumerate(lines, start=1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def _scenario_problems(path: Path, s: Scenario, today: dt.date) -> list[LintProblem]:
    out: list[LintProblem] = []

    def add(key: str, severity: Literal["error", "warning"], message: str) -> None:
        out.append(LintProblem(f"{path}:{top_level_line(path, key)}", severity, message))

    if s.holdout and "smoke" in s.tiers:
        add("tiers", "error", f"{s.id} is holdout but lists tier smoke (a tuning tier); remove smoke")
    if s.status.state == "quarantined" and s.status.until < today:
        add(
            "status",
            "error",
            f"{s.id}'s quarantine expired on {s.status.until}; fix it and `scenarios reactivate`, or "
            "quarantine it again with a new --until and reason",
        )
    if not s.must_pass:
        note = threshold_note(s.threshold, s.repeats)
        if note:
            add(
                "threshold",
                "warning",
                f"{s.id}: {note} (lower the threshold, raise repeats or make it must_pass)",
            )
    if not s.checks and not s.judges:
        add("checks", "warning", f"{s.id} has no checks or judges: only errors and empty answers can fail it")
    if any(getattr(c, "suggested", False) for c in s.checks):
        add("checks", "warning", f"{s.id} has suggested expected_tools from promotion; confirm them")
    if s.retrieval is not None and not s.retrieval.confirmed:
        add("retrieval", "warning", f"{s.id}'s retrieval labels were suggested by promotion; confirm them")
    if s.retrieval is not None and not s.retrieval.relevant:
        add("retrieval", "warning", f"{s.id} declares retrieval without relevant document ids")
    for i, c in enumerate(s.checks):
        pattern = getattr(c, "pattern", None)
        if isinstance(pattern, str) and needs_backtracking(pattern):
            add(
                "checks",
                "warning",
                f"{s.id} checks[{i}] ({c.type}) pattern {pattern!r} needs the backtracking engine "
                "(RE2 cannot run back-references or look-around); it may backtrack catastrophically, so "
                "it runs in a child process stopped at the attempt's deadline (then the attempt is an "
                "error); rewrite it for RE2",
            )
    return out


def _lock_problem(path: Path, s: Scenario, entry: LockEntry | None, lock: Path) -> LintProblem | None:
    state = lock_status(s, entry)
    where = f"{path}:{top_level_line(path, 'changelog')}"
    if state == "new":
        return LintProblem(
            where, "error", f"{s.id} is not in {lock.name}; run `replaygate scenarios lock` to accept it"
        )
    if state == "explained":
        reason = s.changelog[-1].reason
        return LintProblem(
            where,
            "error",
            f"{s.id} changed since {lock.name} (changelog: {reason!r}); run `replaygate scenarios lock` "
            "(or `scenarios lint --update-lock`) to accept the change",
        )
    if state == "unexplained":
        return LintProblem(
            where,
            "error",
            f"{s.id}'s pass condition or status changed without a new changelog entry with a reason; add "
            "- {date: YYYY-MM-DD, author: NAME, reason: WHY} to its changelog, then run "
            "`replaygate scenarios lock`",
        )
    if state == "history-edited":
        return LintProblem(where, "error", f"earlier changelog entries of {s.id} were edited; restore them")
    return None


def lint(golden: GoldenSet, today: dt.date | None = None) -> list[LintProblem]:
    """Every problem of a golden set: invalid files, lock mismatches, holdout misuse, expired quarantines."""
    day = today or today_utc()
    if not golden.path.is_dir():
        return [
            LintProblem(
                f"{golden.path}:0", "error", "no such golden-set directory; create it or pass --golden"
            )
        ]
    problems: list[LintProblem] = []
    for tmp in golden.leftovers():
        problems.append(
            LintProblem(
                f"{tmp}:1", "error", "temporary file left by an interrupted write; check the set, remove it"
            )
        )
    try:
        lock = golden.lock()
    except GoldenError as exc:
        problems.append(LintProblem(f"{golden.lock_path}:1", "error", str(exc)))
        lock = {}
    files = golden.files()
    locked = lock is not None
    if lock is None:
        if files:
            problems.append(
                LintProblem(
                    f"{golden.lock_path}:0",
                    "warning",
                    "no golden.lock yet: the scenarios were checked, their integrity is not; once they "
                    f"lint clean, run `replaygate scenarios lock --golden {golden.path}` to create it "
                    "(and commit it with them)",
                )
            )
        lock = {}
    seen: dict[str, Path] = {}
    traces: dict[str, str] = {}
    for path in files:
        try:
            s = load_scenario(path)
        except ScenarioError as exc:
            for line in str(exc).splitlines():
                m = _LOCATED.match(line)
                where, message = (m["where"], m["message"]) if m else (f"{path}:1", line)
                problems.append(LintProblem(where, "error", message))
            seen.setdefault(path.stem, path)
            continue
        if s.id in seen:
            problems.append(LintProblem(f"{path}:1", "error", f"id {s.id} is also used by {seen[s.id]}"))
            continue
        seen[s.id] = path
        if s.source_trace:
            if s.source_trace in traces:
                problems.append(
                    LintProblem(
                        f"{path}:{top_level_line(path, 'source_trace')}",
                        "error",
                        f"trace {s.source_trace} is already promoted as {traces[s.source_trace]}; keep one",
                    )
                )
            traces[s.source_trace] = s.id
        problems.extend(_scenario_problems(path, s, day))
        found = _lock_problem(path, s, lock.get(s.id), golden.lock_path) if locked else None
        if found is not None:
            problems.append(found)
    for scenario_id in sorted(set(lock) - set(seen)):
        problems.append(
            LintProblem(
                f"{golden.lock_path}:1",
                "error",
                f"scenario {scenario_id} is in golden.lock but its file is gone; scenarios are retired, not "
                "deleted: restore the file and `scenarios retire` it (or `scenarios lock --allow-removed`)",
            )
        )
    return problems
