"""Lifecycle commands: retire, quarantine, mark known-failure, reactivate, and accepting edits into the lock.

Each command writes the new status and a changelog entry (date, author, reason) together with the lock,
and never deletes a file. A command refuses to run on a scenario whose pass condition was edited without
a changelog entry: recording a lifecycle change must not launder an unexplained edit.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
from dataclasses import dataclass, field
from typing import Any

from replaygate.replay import (
    ActiveStatus,
    ChangelogEntry,
    KnownFailureStatus,
    QuarantinedStatus,
    RetiredStatus,
    Scenario,
    ScenarioError,
)

from replaygate.golden._errors import GoldenError, describe_invalid
from replaygate.golden._goldenset import GoldenSet, in_transaction
from replaygate.golden._index import IndexEntry, index_file
from replaygate.golden._lock import LockEntry, changelog_hash, lock_entry

__all__ = [
    "AUTHOR_ENV",
    "AcceptResult",
    "accept_changes",
    "default_author",
    "lock_status",
    "mark_known_failure",
    "quarantine",
    "reactivate",
    "retire",
    "today_utc",
    "update_scenario",
]

AUTHOR_ENV = "REPLAYGATE_AUTHOR"


def today_utc() -> dt.date:
    """Today's date in UTC."""
    return dt.datetime.now(dt.UTC).date()


def default_author() -> str:
    """``$REPLAYGATE_AUTHOR``, else the login name."""
    name = os.environ.get(AUTHOR_ENV)
    if name:
        return name
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def lock_status(scenario: Scenario, entry: LockEntry | None) -> str:
    """Compare a scenario with its lock entry.

    Returns:
        ``locked`` (unchanged), ``new`` (no entry), ``explained`` (changed, with a new changelog entry),
        ``unexplained`` (pass condition or status changed without one) or ``history-edited`` (earlier
        changelog entries were changed or removed).
    """
    if entry is None:
        return "new"
    current = lock_entry(scenario)
    if current == entry:
        return "locked"
    log = scenario.changelog
    if len(log) < entry.changelog or changelog_hash(log[: entry.changelog]) != entry.changelog_hash:
        return "history-edited"
    if len(log) > entry.changelog:
        return "explained"
    return "unexplained"


def _require_reason(reason: str | None, command: str) -> str:
    if reason is None or not reason.strip():
        raise GoldenError(f"{command} needs a reason: pass --reason 'why' (it goes into the changelog)")
    return reason.strip()


@in_transaction
def update_scenario(
    golden: GoldenSet,
    scenario_id: str,
    changes: dict[str, Any],
    reason: str,
    author: str | None = None,
    today: dt.date | None = None,
) -> Scenario:
    """Apply ``changes`` to a scenario, append a changelog entry, and write it with the lock.

    Raises:
        GoldenError: the scenario has an unexplained edit, or the change is invalid.
    """
    scenario = golden.get(scenario_id)
    entries = golden.lock() or {}
    state = lock_status(scenario, entries.get(scenario_id))
    if state in ("unexplained", "history-edited"):
        raise GoldenError(
            f"{golden.file_for(scenario_id)}: {scenario_id} was edited since golden.lock without a new "
            "changelog entry; add one ({date, author, reason}) and run `replaygate scenarios lock` first"
        )
    entry = ChangelogEntry(date=today or today_utc(), author=author or default_author(), reason=reason)
    data = scenario.model_dump(mode="python", by_alias=True)
    data["checks"] = list(scenario.checks)  # the instances: each keeps the form its file wrote it in
    data.update(changes)
    data["changelog"] = [*scenario.changelog, entry]
    try:
        updated = Scenario.model_validate(data)
    except ValueError as exc:
        raise GoldenError(f"{scenario_id}: invalid change: {describe_invalid(exc)}") from None
    golden.write([updated])
    return updated


@in_transaction
def retire(
    golden: GoldenSet,
    scenario_id: str,
    reason: str | None,
    author: str | None = None,
    today: dt.date | None = None,
) -> Scenario:
    """Retire a scenario (never selected by default again); the file stays. A reason is required."""
    why = _require_reason(reason, "retire")
    day = today or today_utc()
    current = golden.get(scenario_id)
    if current.status.state == "retired":
        return current
    status = RetiredStatus(reason=why, date=day)
    return update_scenario(golden, scenario_id, {"status": status}, f"Retired: {why}", author, day)


@in_transaction
def quarantine(
    golden: GoldenSet,
    scenario_id: str,
    owner: str,
    until: dt.date,
    reason: str | None,
    author: str | None = None,
    today: dt.date | None = None,
) -> Scenario:
    """Quarantine a scenario until a date, with an owner and a reason."""
    why = _require_reason(reason, "quarantine")
    day = today or today_utc()
    if not owner.strip():
        raise GoldenError("quarantine needs --owner: the person who will fix or reactivate it")
    if until < day:
        raise GoldenError(f"quarantine --until {until} is in the past; give a future date")
    status = QuarantinedStatus(owner=owner.strip(), until=until, reason=why)
    note = f"Quarantined until {until} (owner {owner.strip()}): {why}"
    return update_scenario(golden, scenario_id, {"status": status}, note, author, day)


@in_transaction
def mark_known_failure(
    golden: GoldenSet,
    scenario_id: str,
    reason: str | None,
    author: str | None = None,
    today: dt.date | None = None,
) -> Scenario:
    """Mark a scenario as a known failure: it keeps running and stays visible in every report."""
    why = _require_reason(reason, "mark-known-failure")
    status = KnownFailureStatus(reason=why)
    return update_scenario(golden, scenario_id, {"status": status}, f"Known failure: {why}", author, today)


@in_transaction
def reactivate(
    golden: GoldenSet,
    scenario_id: str,
    reason: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
) -> Scenario:
    """Make a scenario active again (from quarantined, known-failure or retired)."""
    current = golden.get(scenario_id)
    if current.status.state == "active":
        return current
    why = (reason or "").strip() or f"Reactivated (was {current.status.state})"
    return update_scenario(golden, scenario_id, {"status": ActiveStatus()}, why, author, today)


@dataclass
class AcceptResult:
    """What ``scenarios lock`` accepted and what it refused (with the reason and what to do)."""

    accepted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


@in_transaction
def accept_changes(golden: GoldenSet, allow_removed: bool = False) -> AcceptResult:
    """Update ``golden.lock`` for new scenarios and for edits that carry a new changelog entry.

    Unexplained edits, edited changelog history, invalid files and (unless ``allow_removed``) deleted
    scenarios are refused and left out of the lock, so ``lint`` keeps reporting them.
    """
    result = AcceptResult()
    old = golden.lock() or {}
    entries = dict(old)
    index: dict[str, IndexEntry] = {}
    seen: set[str] = set()
    for path in golden.files():
        try:
            scenario, indexed = index_file(path, golden.path)
        except ScenarioError as exc:
            result.refused.append(f"{exc}")
            seen.add(path.stem)
            continue
        seen.add(scenario.id)
        if indexed is not None:
            index[scenario.id] = indexed
        state = lock_status(scenario, old.get(scenario.id))
        if state in ("new", "explained"):
            entries[scenario.id] = lock_entry(scenario)
            result.accepted.append(scenario.id)
        elif state == "unexplained":
            result.refused.append(
                f"{path}: {scenario.id} changed without a new changelog entry; add "
                "{date, author, reason} to its changelog, then run `replaygate scenarios lock` again"
            )
        elif state == "history-edited":
            result.refused.append(
                f"{path}: earlier changelog entries of {scenario.id} were edited; restore them"
            )
    for scenario_id in sorted(set(old) - seen):
        if allow_removed:
            entries.pop(scenario_id)
            result.accepted.append(scenario_id)
        else:
            result.refused.append(
                f"{golden.lock_path}: scenario {scenario_id} is locked but its file is gone; restore it and "
                "retire it instead (`replaygate scenarios retire`), or pass --allow-removed"
            )
    if entries != old or not golden.lock_path.exists() or index != golden.indexed():
        golden.write_lock(entries, index)
    return result
