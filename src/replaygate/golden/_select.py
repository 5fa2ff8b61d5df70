"""The scenarios a run selects from a golden set, parsing only the files the selection may take.

:func:`select_golden` gives what ``select_scenarios(load_scenarios(dir), tier, tags)`` gives, read the
cheap way: each file is read once; a file whose bytes still match its ``golden.lock`` index entry, and
whose entry rules it out (tier, tags, status, holdout), is not parsed; every other file is parsed, so a
file that is invalid is an error whether or not it would be selected (its bytes changed since it was
indexed, so its entry says nothing). The content hashes of the selected scenarios whose files match
their entries come from the index (:attr:`Selection.content_hashes`: the run's suite hash without hashing
those scenarios again). With a :class:`~replaygate.replay.ScenarioCache` (``replaygate run`` passes one), a
file whose bytes were parsed before is read from the cache's JSON instead of its YAML. The objects alive
before the load stay out of the garbage collector's passes while it runs (``old_objects_frozen``): the
thousands of scenarios it makes would otherwise make the collector walk the whole heap, again and again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from replaygate.replay import (
    DEFAULT_STATUSES,
    HOLDOUT_TIERS,
    Scenario,
    ScenarioCache,
    ScenarioError,
    load_scenario,
    old_objects_frozen,
    parse_scenario_file,
    select_scenarios,
)

from replaygate.golden._errors import GoldenError
from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._index import IndexEntry, file_hash, index_prefix, relative_name

__all__ = ["Selection", "select_golden"]

#: The collector's first threshold while a set loads (as the runner's): fewer passes over new scenarios.
_FIRST_THRESHOLD = 50_000


@dataclass(frozen=True)
class Selection:
    """The selected scenarios (sorted by id), the holdout ones left out, the known content hashes."""

    scenarios: list[Scenario]
    held_out: int
    content_hashes: dict[str, str] = field(default_factory=dict)


def _ruled_out(entry: IndexEntry, tier: str | None, tags: Mapping[str, str]) -> bool:
    """Whether ``select_scenarios`` (default statuses, every origin) leaves the indexed scenario out."""
    return (
        (entry.holdout and tier not in HOLDOUT_TIERS)
        or (tier is not None and tier not in entry.tiers)
        or entry.state not in DEFAULT_STATUSES
        or any(entry.tags.get(k) != v for k, v in tags.items())
    )


def _read(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None  # load_scenario says what is wrong


def select_golden(
    golden: GoldenSet,
    tier: str | None = None,
    tags: Mapping[str, str] | None = None,
    cache: ScenarioCache | None = None,
) -> Selection:
    """The scenarios of ``golden`` a run of ``tier`` with ``tags`` selects (see the module docstring).

    ``cache``: parsed scenarios by file bytes, read and then saved (None: parse every file read).

    Raises:
        GoldenError: no golden-set directory.
        ScenarioError: invalid scenario files (all of them in one error, as ``load_scenarios``).
    """
    if not golden.path.is_dir():
        raise GoldenError(f"{golden.path}: no golden-set directory; create it or pass --golden DIR")
    wanted = dict(tags or {})
    files = golden.files()
    stems = [f.stem for f in files]
    index = golden.indexed() if len(set(stems)) == len(stems) else {}  # two files, one id: read them all
    by_file = {e.file: (scenario_id, e) for scenario_id, e in index.items()}
    every: list[Scenario] = []
    known: dict[str, str] = {}
    problems: list[str] = []
    where: dict[str, Path] = {}
    held_out = 0
    prefix = index_prefix(golden.path)
    with old_objects_frozen(first_threshold=_FIRST_THRESHOLD):
        for path in files:
            raw = _read(path)
            found = by_file.get(relative_name(path, golden.path, prefix)) if index else None
            entry = None
            if raw is not None and found is not None and found[0] == path.stem:
                entry = found[1] if file_hash(raw) == found[1].file_hash else None
            if entry is not None and _ruled_out(entry, tier, wanted):
                held_out += entry.holdout and tier not in HOLDOUT_TIERS
                continue
            try:
                if raw is None:
                    scenario = load_scenario(path)  # says why the file cannot be read
                elif cache is not None:
                    scenario = cache.parse(path, raw)
                else:
                    scenario = parse_scenario_file(path, raw)
            except ScenarioError as exc:
                problems.append(str(exc))
                continue
            if scenario.id in where:
                other = where[scenario.id]
                problems.append(f"{path}:1: id {scenario.id!r} is also used by {other}; ids are unique")
                continue
            where[scenario.id] = path
            every.append(scenario)
            if entry is not None and entry.content_hash is not None:
                known[scenario.id] = entry.content_hash
    if cache is not None:
        cache.save()
    if problems:
        raise ScenarioError("\n".join(problems))
    selected = select_scenarios(every, tier=tier, tags=wanted)
    held_out += sum(1 for s in every if s.holdout and tier not in HOLDOUT_TIERS)
    return Selection(selected, held_out, {s.id: known[s.id] for s in selected if s.id in known})
