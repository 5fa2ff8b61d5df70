"""``golden.lock``: the content hash, status and changelog length of every scenario, beside the set.

The lock makes silent edits visible: a scenario whose pass condition, status or holdout flag differs from
its locked entry must carry a changelog entry newer than the lock, or ``lint`` fails. The file is stable
JSON::

    {"format_version": 1,
     "scenarios": {"refund-over-limit-001": {"content_hash": "sha256:...", "state": "active",
                                              "changelog": 2, "changelog_hash": "sha256:...",
                                              "holdout": false}},
     "index": {...}}

The ``index`` section (:mod:`replaygate.golden._index`) records what each file held (its bytes' hash,
source trace, tiers, tags, state), so commands can select scenarios and find promoted traces without
parsing every file; it is trusted only for files whose bytes still match.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaygate.replay import (
    ChangelogEntry,
    Scenario,
    check_format_version,
    content_hash,
    load_json_bounded,
    scenario_content_hash,
)

from replaygate.golden._errors import GoldenError
from replaygate.golden._index import IndexEntry

__all__ = [
    "LOCK_FORMAT_VERSION",
    "LOCK_NAME",
    "LockEntry",
    "changelog_hash",
    "dump_lock",
    "lock_entry",
    "read_lock",
]

LOCK_NAME = "golden.lock"
LOCK_FORMAT_VERSION = 1


@dataclass(frozen=True)
class LockEntry:
    """What was accepted for one scenario."""

    content_hash: str
    state: str
    changelog: int
    changelog_hash: str
    holdout: bool = False  # a holdout flag flipped silently would leak the holdout into tuning


def changelog_hash(entries: list[ChangelogEntry]) -> str:
    """Hash of a list of changelog entries (to tell history rewritten from history extended)."""
    return content_hash([e.model_dump(mode="json") for e in entries])


def lock_entry(scenario: Scenario) -> LockEntry:
    """The lock entry that accepts ``scenario`` as it is now."""
    return LockEntry(
        content_hash=scenario_content_hash(scenario),
        state=scenario.status.state,
        changelog=len(scenario.changelog),
        changelog_hash=changelog_hash(scenario.changelog),
        holdout=scenario.holdout,
    )


def read_lock(path: Path) -> dict[str, LockEntry] | None:
    """Read a lock file; None when it does not exist. A damaged file raises :class:`GoldenError`."""
    if not path.exists():
        return None
    try:
        raw: Any = load_json_bounded(path, what="lock file", error=GoldenError, max_bytes=100_000_000)
    except GoldenError as exc:
        raise GoldenError(
            f"{exc}; restore it from git or rebuild it with `replaygate scenarios lock` after checking "
            "every scenario's changelog"
        ) from None
    if not isinstance(raw, dict):
        raise GoldenError(f"{path}: not a golden.lock (a JSON object)")
    check_format_version(raw, LOCK_FORMAT_VERSION, path, "golden.lock", GoldenError)
    entries: dict[str, LockEntry] = {}
    scenarios = raw.get("scenarios")
    if not isinstance(scenarios, dict):
        raise GoldenError(f"{path}: 'scenarios' must be a mapping of scenario id to entry")
    for scenario_id, value in scenarios.items():
        try:
            if not isinstance(value, dict):
                raise TypeError("an entry is a mapping")
            entries[str(scenario_id)] = LockEntry(**value)
        except TypeError as exc:
            raise GoldenError(f"{path}: bad entry for {scenario_id!r} ({exc})") from None
    return entries


def dump_lock(entries: dict[str, LockEntry], index: dict[str, IndexEntry] | None = None) -> str:
    """Stable JSON text of a lock (sorted ids), with the index entries of locked scenarios."""
    body: dict[str, Any] = {
        "format_version": LOCK_FORMAT_VERSION,
        "scenarios": {k: dict(entries[k].__dict__) for k in sorted(entries)},
    }
    text = json.dumps(body, indent=2, sort_keys=True)
    kept = [k for k in sorted(index or {}) if k in entries]
    if not kept or index is None:
        return text + "\n"
    # the index: one line per scenario (small diffs, and the C encoder: no indent inside an entry)
    lines = [f"    {json.dumps(k)}: {json.dumps(index[k].as_json(), sort_keys=True)}" for k in kept]
    return text[: text.rindex("}")].rstrip() + ',\n  "index": {\n' + ",\n".join(lines) + "\n  }\n}\n"
