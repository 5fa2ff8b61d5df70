"""The index in ``golden.lock``: what each scenario file held when replaygate last wrote or locked it.

Beside the accepted entries, ``golden.lock`` keeps an ``index`` section, one entry per scenario::

    "index": {"refund-over-limit-001": {"file": "refund-over-limit-001.yaml", "file_hash": "sha256:...",
              "source_trace": "4bf9...", "tiers": ["smoke", "release"], "tags": {"risk": "high"},
              "holdout": false, "state": "active", "origin": "production-incident",
              "content_hash": "sha256:..."}}

``file_hash`` is the hash of the file's bytes, ``content_hash`` the scenario's content hash computed from
those bytes (not the accepted one of the lock's ``scenarios`` section, which an unexplained edit leaves
behind). An entry is used only while the file still has exactly those bytes (:func:`verified_index`), so
``promote`` finds an already-promoted trace, a listing or a run selects by tier or tag, and a run takes its
suite hash, by reading bytes and hashing them instead of parsing every scenario; a file edited by hand,
added or renamed since simply has no verified entry and is parsed as before. A stale or damaged index
therefore costs time, never a wrong answer. The hashes themselves come from a local stat-keyed cache
(:mod:`._hash_cache`) for the files whose stat has not changed. Older locks without the section (or
entries without ``content_hash``) read as an empty index (or entries whose content hash is computed again).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from replaygate.replay import Scenario, load_scenario, parse_scenario, scenario_content_hash

from replaygate.golden._hash_cache import FileHashCache

__all__ = [
    "IndexEntry",
    "IndexedFile",
    "file_hash",
    "file_stem",
    "index_entries",
    "index_entry",
    "index_file",
    "index_prefix",
    "read_index",
    "relative_name",
    "verified_index",
    "verified_names",
]

_MAX_SCENARIO_BYTES = 1_000_000  # larger files are refused by load_scenario, which says so


@dataclass(frozen=True)
class IndexEntry:
    """What a scenario file held when it was indexed (see the module docstring)."""

    file: str
    file_hash: str
    source_trace: str | None
    tiers: tuple[str, ...]
    tags: dict[str, str] = field(default_factory=dict)
    holdout: bool = False
    state: str = "active"
    origin: str = ""
    content_hash: str | None = None  # None: an entry written before it was recorded

    def as_json(self) -> dict[str, Any]:
        """The entry as written in ``golden.lock``."""
        data = dict(self.__dict__)
        data["tiers"] = list(self.tiers)
        data["tags"] = dict(self.tags)
        if data["content_hash"] is None:
            del data["content_hash"]
        return data


class IndexedFile(BaseModel):
    """An index entry as ``golden.lock`` holds it, when it has exactly this shape (read in one pass)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    file: str
    file_hash: str
    source_trace: str | None
    tiers: list[str]
    tags: dict[str, str]
    holdout: bool
    state: str
    origin: str
    content_hash: str | None = None

    def entry(self) -> IndexEntry:
        """The :class:`IndexEntry`."""
        return IndexEntry(
            file=self.file,
            file_hash=self.file_hash,
            source_trace=self.source_trace,
            tiers=tuple(self.tiers),
            tags=self.tags,
            holdout=self.holdout,
            state=self.state,
            origin=self.origin,
            content_hash=self.content_hash or None,
        )


def file_hash(data: bytes) -> str:
    """The hash of a file's bytes, as the index records it."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def index_entry(
    scenario: Scenario, relative: str, data: bytes, content_hash: str | None = None
) -> IndexEntry:
    """The index entry of ``scenario``, whose file (``relative`` to the set) holds exactly ``data``.

    ``content_hash``: the scenario's content hash when the caller has it (else it is computed).
    """
    return IndexEntry(
        file=relative,
        file_hash=file_hash(data),
        source_trace=scenario.source_trace,
        tiers=tuple(scenario.tiers),
        tags=dict(scenario.tags),
        holdout=scenario.holdout,
        state=scenario.status.state,
        origin=scenario.origin,
        content_hash=content_hash or scenario_content_hash(scenario),
    )


def relative_name(path: Path | str, root: Path, prefix: str | None = None) -> str:
    """``path`` relative to ``root`` in ``/`` form, as the index names files (no pathlib on the way).

    ``prefix``: :func:`index_prefix` of ``root``, when the caller names many files below it.
    """
    name = str(path)
    if prefix is None:
        prefix = index_prefix(root)
    if name.startswith(prefix) and len(name) > len(prefix):
        return name[len(prefix) :].replace(os.sep, "/")
    return Path(path).relative_to(root).as_posix()


def index_prefix(root: Path) -> str:
    """What :func:`relative_name` cuts off the files below ``root``."""
    base = str(root)
    return "" if base == "." else base.rstrip(os.sep) + os.sep


def index_file(path: Path, root: Path) -> tuple[Scenario, IndexEntry | None]:
    """Parse one scenario file and index the very bytes parsed (errors as :func:`load_scenario`).

    The entry is None when the file could not be read in one piece as UTF-8 of a scenario's size (the
    scenario then comes from :func:`load_scenario`, which says what is wrong, or reads a file that changed
    meanwhile).
    """
    try:
        data = path.read_bytes()
        if len(data) > _MAX_SCENARIO_BYTES:
            raise ValueError("too large")
        text = data.decode("utf-8")
    except (OSError, ValueError):
        return load_scenario(path), None
    scenario = parse_scenario(text, source=str(path), expected_id=path.stem)
    return scenario, index_entry(scenario, relative_name(path, root), data)


def _entry(value: Any) -> IndexEntry | None:
    if not isinstance(value, dict):
        return None
    try:
        tiers = value["tiers"]
        tags = value["tags"]
        chash = value.get("content_hash")
        entry = IndexEntry(
            file=str(value["file"]),
            file_hash=str(value["file_hash"]),
            source_trace=None if value["source_trace"] is None else str(value["source_trace"]),
            tiers=tuple(str(t) for t in tiers),
            tags={str(k): str(v) for k, v in tags.items()},
            holdout=bool(value["holdout"]),
            state=str(value["state"]),
            origin=str(value["origin"]),
            content_hash=chash if isinstance(chash, str) and chash else None,
        )
    except (KeyError, TypeError, AttributeError):
        return None
    return entry


def index_entries(section: Any) -> dict[str, IndexEntry]:
    """The usable entries of a lock's ``index`` section (anything unusable is left out)."""
    if not isinstance(section, dict):
        return {}
    out: dict[str, IndexEntry] = {}
    for scenario_id, value in section.items():
        entry = value.entry() if isinstance(value, IndexedFile) else _entry(value)
        if entry is not None:
            out[str(scenario_id)] = entry
    return out


def read_index(lock_path: Path) -> dict[str, IndexEntry]:
    """The index section of a lock file; empty when the file, the section or an entry is unusable."""
    try:
        raw = json.loads(lock_path.read_bytes()) if lock_path.is_file() else None
    except (OSError, ValueError, RecursionError):
        return {}
    return index_entries(raw.get("index") if isinstance(raw, dict) else None)


def file_stem(name: str) -> str:
    """``Path(name).stem`` of a file name string (without making the ``Path``)."""
    base = name[name.rfind(os.sep) + 1 :]
    dot = base.rfind(".")
    return base[:dot] if 0 < dot < len(base) - 1 else base


def _digest(name: str, relative: str, hashes: FileHashCache | None) -> str | None:
    """The file's :func:`file_hash` (``hashes``' while its stat is the one remembered); None: unreadable."""
    try:
        if hashes is not None:
            known = hashes.get(relative, os.stat(name))
            if known is not None:
                return known
        with open(name, "rb") as fh:
            data = fh.read(_MAX_SCENARIO_BYTES + 1)
            after = os.fstat(fh.fileno()) if hashes is not None else None
    except OSError:
        return None
    digest = file_hash(data)
    if hashes is not None and after is not None:
        hashes.put(relative, after, digest)
    return digest


def verified_names(
    root: Path, names: Iterable[str], index: dict[str, IndexEntry], hashes: FileHashCache | None = None
) -> dict[str, IndexEntry]:
    """:func:`verified_index` of files named by strings (what ``scenario_file_names`` lists).

    ``hashes``: the set's :class:`FileHashCache` (a file whose stat is unchanged is not hashed again).
    """
    by_file = {e.file: (scenario_id, e) for scenario_id, e in index.items()}
    out: dict[str, IndexEntry] = {}
    prefix = index_prefix(root)
    for name in names:
        relative = relative_name(name, root, prefix)
        found = by_file.get(relative)
        if found is None or found[0] != file_stem(name):
            continue
        if _digest(name, relative, hashes) == found[1].file_hash:
            out[name] = found[1]
    return out


def verified_index(
    root: Path, files: Iterable[Path], index: dict[str, IndexEntry], hashes: FileHashCache | None = None
) -> dict[Path, IndexEntry]:
    """The files whose bytes are still the ones indexed, with their entries (a changed file is left out)."""
    paths = {str(path): path for path in files}
    return {paths[name]: e for name, e in verified_names(root, paths, index, hashes).items()}
