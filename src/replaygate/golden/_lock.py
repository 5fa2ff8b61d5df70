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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from replaygate.replay import (
    ChangelogEntry,
    Scenario,
    content_hash,
    load_versioned,
    scenario_content_hash,
)

from replaygate.golden._errors import GoldenError
from replaygate.golden._index import IndexedFile, IndexEntry, index_entries

__all__ = [
    "LOCK_FORMAT_VERSION",
    "LOCK_NAME",
    "LockEntry",
    "changelog_hash",
    "dump_lock",
    "lock_entry",
    "read_lock",
    "read_lock_file",
]

LOCK_NAME = "golden.lock"
LOCK_FORMAT_VERSION = 1
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii  # what json.dumps does to a str


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


def lock_entry(scenario: Scenario, content_hash: str | None = None) -> LockEntry:
    """The lock entry that accepts ``scenario`` as it is now (``content_hash``: its hash, if known)."""
    return LockEntry(
        content_hash=content_hash or scenario_content_hash(scenario),
        state=scenario.status.state,
        changelog=len(scenario.changelog),
        changelog_hash=changelog_hash(scenario.changelog),
        holdout=scenario.holdout,
    )


class _LockedScenario(BaseModel):
    """One entry of ``scenarios`` (unknown keys refused, as the lock is written by replaygate only)."""

    model_config = ConfigDict(extra="forbid")

    content_hash: str
    state: str
    changelog: int
    changelog_hash: str
    holdout: bool = False


_IndexValue = Annotated[IndexedFile | Any, Field(union_mode="left_to_right")]


class _LockFile(BaseModel):
    """``golden.lock`` as read; an index entry of another shape stays free-form (skipped, not an error)."""

    model_config = ConfigDict(extra="ignore")

    format_version: Literal[1]
    scenarios: dict[str, _LockedScenario]
    index: Annotated[dict[str, _IndexValue] | Any, Field(union_mode="left_to_right")] = None


def _free_form(doc: _LockFile) -> Iterable[tuple[Any, int]]:
    """The parts of the lock of no fixed shape, for the nesting limit (a typed entry is shallow)."""
    if not isinstance(doc.index, dict):
        return [(doc.index, 1)]
    return [(value, 2) for value in doc.index.values() if not isinstance(value, IndexedFile)]


def read_lock_file(path: Path) -> tuple[dict[str, LockEntry], dict[str, IndexEntry]] | None:
    """The lock entries and the usable index entries, from one read; None when there is no lock.

    Raises:
        GoldenError: the file is damaged (not JSON, another version, a bad entry).
    """
    if not path.exists():
        return None
    try:
        doc = load_versioned(
            path,
            _LockFile,
            version=LOCK_FORMAT_VERSION,
            what="lock file",
            kind="golden.lock",
            error=GoldenError,
            free_form=_free_form,
            max_bytes=100_000_000,
        )
    except GoldenError as exc:
        raise GoldenError(
            f"{exc}; restore it from git or rebuild it with `replaygate scenarios lock` after checking "
            "every scenario's changelog"
        ) from None
    entries = {
        k: LockEntry(v.content_hash, v.state, v.changelog, v.changelog_hash, v.holdout)
        for k, v in doc.scenarios.items()
    }
    return entries, index_entries(doc.index)


def read_lock(path: Path) -> dict[str, LockEntry] | None:
    """Read a lock file; None when it does not exist. A damaged file raises :class:`GoldenError`."""
    found = read_lock_file(path)
    return None if found is None else found[0]


def _json(value: Any) -> str:
    """``json.dumps(value)`` of a lock value, without its per-call cost for strings, booleans and ints."""
    if type(value) is str:
        return _quote(value)
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    return json.dumps(value)


def _entry_lines(scenario_id: str, entry: LockEntry) -> str:
    """One ``scenarios`` entry as ``json.dumps(body, indent=2, sort_keys=True)`` writes it (C encoder)."""
    fields = ",\n".join(f"      {_quote(k)}: {_json(v)}" for k, v in sorted(entry.__dict__.items()))
    return f"    {_quote(scenario_id)}: {{\n{fields}\n    }}"


def dump_lock(entries: dict[str, LockEntry], index: dict[str, IndexEntry] | None = None) -> str:
    """Stable JSON text of a lock (sorted ids), with the index entries of locked scenarios.

    The text is ``json.dumps(body, indent=2, sort_keys=True)``'s, written entry by entry (the indenting
    encoder is pure Python: slow for thousands of entries), and the index one line per scenario.
    """
    if entries:
        body = ",\n".join(_entry_lines(k, entries[k]) for k in sorted(entries))
        text = f'{{\n  "format_version": {LOCK_FORMAT_VERSION},\n  "scenarios": {{\n{body}\n  }}\n}}'
    else:
        text = f'{{\n  "format_version": {LOCK_FORMAT_VERSION},\n  "scenarios": {{}}\n}}'
    kept = [k for k in sorted(index or {}) if k in entries]
    if not kept or index is None:
        return text + "\n"
    # the index: one line per scenario (small diffs, and the C encoder: no indent inside an entry)
    lines = [f"    {json.dumps(k)}: {json.dumps(index[k].as_json(), sort_keys=True)}" for k in kept]
    return text[: text.rindex("}")].rstrip() + ',\n  "index": {\n' + ",\n".join(lines) + "\n  }\n}\n"
