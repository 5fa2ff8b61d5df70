"""A cache of parsed scenarios keyed by their files' bytes, so an unchanged golden set is read as JSON.

Parsing a scenario file (YAML, the check shorthands, validation) costs about half a millisecond; a golden
set of thousands of files is read that way at the start of every run. ``ScenarioCache`` keeps each valid
scenario, as its JSON (``model_dump_json``), under the sha256 of its file's bytes in one JSON file
(``.replaygate/cache/scenarios-v1.json`` by default; env ``REPLAYGATE_SCENARIO_CACHE``: another path, or
``off``). A file whose bytes are in the cache is validated from that JSON (pydantic's JSON path, no YAML);
any other file is parsed as always, so an error and its file:line are exactly those of a parse: a file that
is wrong was never cached (only valid scenarios are), and a file that changed has another hash.

What the cache gives is what parsing gives: a scenario is cached only when validating its JSON rebuilds an
equal scenario (shorthand forms and the fields the file set included); the cache is keyed by the version of
the scenario code (the scenario modules' source, pydantic's and PyYAML's versions), so another replaygate
does not read an older one's entries; an entry whose id is not its file's stem is not used. The file is read
bounded (``MAX_CACHE_BYTES``) and checked: a corrupt, truncated, foreign or oversized cache, or one entry
that no longer validates, is ignored and the files are parsed afresh. The cache is rewritten (atomically)
only when a file was parsed; it keeps the entries just used, then older ones up to ``MAX_ENTRIES``. A cache
that cannot be written (a read-only folder, a full disk) is skipped silently: it is never needed. The cache
is trusted as the run files and the journal beside it in ``.replaygate/`` are: whoever can write there can
change what a run replays; delete the file (or set ``REPLAYGATE_SCENARIO_CACHE=off``) to parse every file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pydantic
import pydantic_core
import yaml
from replaygate.replay._runfile import save_atomic
from replaygate.replay._scenario_forms import mark_forms
from replaygate.replay._scenario_io import parse_scenario_file
from replaygate.replay._scenario_model import Scenario
from replaygate.replay.version import __version__

__all__ = ["CACHE_ENV", "DEFAULT_CACHE", "MAX_CACHE_BYTES", "MAX_ENTRIES", "ScenarioCache"]

CACHE_ENV = "REPLAYGATE_SCENARIO_CACHE"
DEFAULT_CACHE = Path(".replaygate") / "cache" / "scenarios-v1.json"
MAX_CACHE_BYTES = 256 * 1024 * 1024
MAX_ENTRIES = 20_000
_FORMAT = "replaygate-scenario-cache"
_FORMAT_VERSION = 1
#: The modules whose code decides what a scenario file parses to.
_CODE = (
    "replaygate.replay._bounded",
    "replaygate.replay._yaml_fast",
    "replaygate.replay._regex",
    "replaygate.replay._scenario_checks",
    "replaygate.replay._scenario_model",
    "replaygate.replay._scenario_forms",
    "replaygate.replay._scenario_io",
    "replaygate.replay._scenario_cache",
)


def _code_version() -> str | None:
    """A hash of the scenario code and the libraries it parses with; None when a source is unreadable."""
    digest = hashlib.sha256()
    digest.update(f"{__version__}|{pydantic.VERSION}|{pydantic_core.__version__}|{yaml.__version__}".encode())
    for name in _CODE:
        module = sys.modules.get(name)
        source = getattr(module, "__file__", None)
        if source is None:
            return None
        try:
            digest.update(Path(source).read_bytes())
        except OSError:
            return None
    return digest.hexdigest()


class ScenarioCache:
    """Parsed scenarios by their files' sha256 (see the module docstring); ``parse`` then ``save``.

    Use one cache per load: ``cache.parse(path, raw)`` for each file read, then ``cache.save()``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._code = _code_version()
        self._old: dict[str, Any] | None = None
        self._used: dict[str, Any] = {}
        self._stale = False  # the file on disk is unusable (corrupt, another version): rewrite it
        self._added = 0
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls) -> ScenarioCache | None:
        """The cache at ``REPLAYGATE_SCENARIO_CACHE`` (``off``: None) or ``.replaygate/cache/``."""
        value = os.environ.get(CACHE_ENV, "").strip()
        if value.lower() in ("off", "0", "false", "no", "none"):
            return None
        return cls(value or DEFAULT_CACHE)

    def _entries(self) -> dict[str, Any]:
        if self._old is None:
            self._old = self._read()
        return self._old

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(MAX_CACHE_BYTES + 1)
        except OSError:
            return {}
        try:
            doc = json.loads(raw) if len(raw) <= MAX_CACHE_BYTES else None
        except (ValueError, RecursionError):
            doc = None
        entries = doc.get("entries") if isinstance(doc, dict) else None
        if (
            self._code is None
            or not isinstance(doc, dict)
            or doc.get("format") != _FORMAT
            or doc.get("format_version") != _FORMAT_VERSION
            or doc.get("code") != self._code
            or not isinstance(entries, dict)
        ):
            self._stale = True
            return {}
        return entries

    def _from_entry(self, entry: Any, stem: str) -> Scenario | None:
        if not isinstance(entry, dict) or entry.get("id") != stem:
            return None
        forms = entry.get("forms")
        if not isinstance(forms, list) or not all(type(f) is bool for f in forms):
            return None
        text = entry.get("json")
        if not isinstance(text, str):
            return None
        try:
            scenario = Scenario.model_validate_json(text)
        except Exception:  # noqa: BLE001 - an entry that does not validate is parsed afresh
            return None
        if scenario.id != stem or len(forms) != len(scenario.checks):
            return None
        return mark_forms(scenario, forms)

    def _entry(self, scenario: Scenario) -> dict[str, Any] | None:
        """The cache entry of a parsed scenario, or None when its JSON does not rebuild it exactly."""
        forms = [bool(getattr(check, "_shorthand", False)) for check in scenario.checks]
        try:
            text = scenario.model_dump_json(exclude_unset=True)  # about what the file gave: fields_set kept
            again = mark_forms(Scenario.model_validate_json(text), forms)
        except Exception:  # noqa: BLE001 - a scenario whose dump does not rebuild it is not cached
            return None
        if again != scenario:
            return None
        return {"id": scenario.id, "forms": forms, "json": text}

    def parse(self, path: str | os.PathLike[str], raw: bytes) -> Scenario:
        """The scenario in file ``path`` whose bytes are ``raw``: from the cache, else parsed.

        Raises:
            ScenarioError: the file is not a valid scenario (as ``parse_scenario_file``).
        """
        p = Path(path)
        key = hashlib.sha256(raw).hexdigest()
        if self._code is not None:
            scenario = self._from_entry(self._entries().get(key), p.stem)
            if scenario is not None:
                self.hits += 1
                self._used[key] = self._entries()[key]
                return scenario
        self.misses += 1
        scenario = parse_scenario_file(p, raw)
        if self._code is not None:
            entry = self._entry(scenario)
            if entry is not None:
                self._used[key] = entry
                self._added += 1
        return scenario

    def save(self) -> bool:
        """Write the cache when a file was parsed into it (or it was unusable); False when not written."""
        if self._code is None or not (self._added or self._stale):
            return False
        entries = dict(self._used)
        for key, entry in self._entries().items():
            if len(entries) >= MAX_ENTRIES:
                break
            entries.setdefault(key, entry)
        doc = {"format": _FORMAT, "format_version": _FORMAT_VERSION, "code": self._code, "entries": entries}
        try:
            save_atomic(self.path, json.dumps(doc, separators=(",", ":")))
        except (OSError, ValueError):
            return False
        self._old, self._added, self._stale = entries, 0, False
        return True
