"""Run-file integrity: the gate compares only runs whose attempts are exactly the plan they record.

Before any statistics, every run given to the gate is checked (:func:`verify_run`); each broken rule
raises :class:`RunIntegrityError` naming the run and the attempt or scenario, never a pass:

- each scenario is listed once, and its ``counts`` flag is what its status says (active and
  known-failure count; quarantined counts only when must-pass; retired never);
- the scenario list is the suite the fingerprint's ``suite_hash`` records (a scenario removed, added or
  with its status or pass condition edited changes it);
- the attempts are exactly the plan: for each scenario ``0..repeats-1``, each once; an attempt of an
  unknown scenario, a duplicate, an index out of range or a missing index is refused;
- at least one scenario counts (an all-quarantined suite has nothing to compare);
- the attempts match the digest recorded when the run file was written (``attempts_digest``) and, when
  the run's journal is still beside the file, the journal's digest too (an edit names the attempts).

The digests are returned (:class:`RunDigest`) and recorded in the gate report.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from replaygate.replay import (
    RunFile,
    RunFileError,
    ScenarioEntry,
    compare_with_journal,
    suite_hash_of,
)

from replaygate.gate._errors import GateError
from replaygate.gate._run_data import RunData, as_run_data

__all__ = ["RunDigest", "RunIntegrityError", "expected_counts", "verify_run", "verify_runs"]

_SHOWN = 5


class RunIntegrityError(GateError):
    """A run file is not the plan it records (duplicate, missing or unknown attempt, edited, ...)."""


class RunDigest(BaseModel):
    """The digests of one run's attempts, as the gate checked them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    run_file: str  # the digest of the attempts (recorded and recomputed: equal)
    journal: str | None = None  # the journal's digest when the journal was beside the run file


def expected_counts(entry: ScenarioEntry) -> bool:
    """Whether a scenario of this status counts in the gate (what the replay engine records)."""
    if entry.status == "retired":
        return False
    if entry.status == "quarantined":
        return entry.must_pass
    return True


def _few(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def verify_run(run: RunFile | RunData, label: str, path: str | os.PathLike[str] | None = None) -> RunDigest:
    """Check one run against the plan it records (see the module docstring); return its digests.

    ``run`` is a :class:`RunFile` or what ``load_run_data`` read of one (the same checks, on the
    attempts' keys and digests).

    Raises:
        RunIntegrityError: the first broken rule, naming the run (and file), the scenario or attempt.
    """
    data = as_run_data(run)
    run = data.head
    where = f"the {label} run {run.run_id}" + (f" ({path})" if path is not None else "")

    def refuse(what: str) -> RunIntegrityError:
        return RunIntegrityError(f"{where} is refused: {what}")

    if run.shard is not None:
        raise refuse(
            f"it is shard {run.shard} of a sharded run, not a whole run: merge every shard first "
            "(replaygate merge runs/all.json runs/shard-*.json) and give the merged file"
        )

    ids = Counter(e.id for e in run.scenarios)
    twice = sorted(i for i, n in ids.items() if n > 1)
    if twice:
        raise refuse(f"scenario {_few(twice)} is listed more than once")
    for e in run.scenarios:
        if e.counts != expected_counts(e):
            raise refuse(
                f"scenario {e.id} has counts: {str(e.counts).lower()} but its status {e.status!r}"
                f"{' (must-pass)' if e.must_pass else ''} means {str(expected_counts(e)).lower()}"
            )
        if e.repeats < 1 or e.repeats > run.fingerprint.k:
            raise refuse(f"scenario {e.id} records {e.repeats} repeats, outside 1..k={run.fingerprint.k}")
    if run.shard is None:
        recorded = run.fingerprint.suite_hash
        actual = suite_hash_of((e.id, e.status, e.content_hash) for e in run.scenarios)
        if actual != recorded:
            raise refuse(
                f"its scenario list hashes to {actual}, not the suite hash {recorded} its fingerprint "
                "records (a scenario was removed, added, or its status or pass condition edited)"
            )
    if not any(e.counts for e in run.scenarios):
        raise refuse(
            f"none of its {len(run.scenarios)} scenarios counts (all quarantined or retired): nothing is "
            "left to compare, so the gate cannot pass it; un-quarantine scenarios or add some"
        )
    entries = {e.id: e for e in run.scenarios}
    planned = _planned_once(data, entries)
    seen: set[tuple[str, int]] = set()
    if planned is None:  # something is off: the keys again, in file order, for the first broken rule
        twice_seen: set[tuple[str, int]] = set()
        for key in data.keys:
            sid, index = key
            entry = entries.get(sid)
            if entry is None:
                raise refuse(f"attempt {sid}#{index} is of a scenario the run does not list")
            if not 0 <= index < entry.repeats:
                raise refuse(f"attempt {sid}#{index} is outside 0..{entry.repeats - 1}")
            if key in seen:
                twice_seen.add(key)
            else:
                seen.add(key)
        dup = [f"{s}#{i}" for s, i in sorted(twice_seen)]
        if dup:
            raise refuse(f"attempt {_few(dup)} appears more than once")
    # every key seen is a planned one (checked above): as many as planned means none is missing
    if (len(seen) if planned is None else planned) != sum(e.repeats for e in run.scenarios):
        seen = seen if planned is None else set(data.keys)
        missing = [f"{e.id}#{i}" for e in run.scenarios for i in range(e.repeats) if (e.id, i) not in seen]
        raise refuse(f"attempt {_few(missing)} is missing (resume the run: replaygate run --resume)")
    journal = _journal_digest(data, path, refuse)  # first: a journal beside names the attempts edited
    digest = data.digest
    if run.attempts_digest is not None and run.attempts_digest != digest:
        raise refuse(f"its attempts hash to {digest}, not the digest {run.attempts_digest} it recorded")
    return RunDigest(run_id=run.run_id, run_file=digest, journal=journal)


def _planned_once(data: RunData, entries: dict[str, ScenarioEntry]) -> int | None:
    """How many attempts there are when each is of a listed scenario, inside its repeats and seen once.

    None when any is not. Whole columns at once: the common case, a run as it was written, costs no
    loop over its attempts beyond one lookup of each one's scenario.
    """
    sids = data.sids
    if not set(sids) <= entries.keys():
        return None
    place = {sid: n for n, sid in enumerate(entries)}
    index = np.frombuffer(data.indexes, dtype=np.int64) if len(data.indexes) else np.empty(0, np.int64)
    at = np.fromiter((place[s] for s in sids), dtype=np.int64, count=len(sids))
    repeats = np.array([e.repeats for e in entries.values()], dtype=np.int64)
    if ((index < 0) | (index >= repeats[at])).any():
        return None
    width = int(repeats.max()) if repeats.size else 1
    keys = at * width + index  # one integer per (scenario, index): distinct keys, distinct integers
    return len(sids) if np.unique(keys).size == len(sids) else None


def _journal_digest(
    run: RunData, path: str | os.PathLike[str] | None, refuse: Callable[[str], RunIntegrityError]
) -> str | None:
    """The digest of the journal beside the run file when it holds this run; a difference names attempts.

    A journal that holds only some of the attempts, each as the file has it (left by an interrupted try of
    the same run), names no edit: it is not this file's journal digest either (None).
    """
    if path is None:
        return None
    try:
        triples = ((sid, index, digest) for (sid, index), digest in zip(run.keys, run.digests, strict=True))
        found = compare_with_journal(path, run.run_id, triples)
    except RunFileError as exc:
        raise RunIntegrityError(f"{exc} (the journal of the run file {path})") from None
    if found is None or found.partial:
        return None
    if not found.agrees:
        raise refuse(f"{found.describe()}: the run file was edited after the run")
    return found.digest


def verify_runs(
    runs: Sequence[tuple[str, RunFile | RunData]], paths: Sequence[str | os.PathLike[str] | None] = ()
) -> dict[str, RunDigest]:
    """:func:`verify_run` for each ``(label, run)``, with its path when known; digests by label."""
    out: dict[str, RunDigest] = {}
    seen: dict[str, str] = {}  # run id -> the label it was first given as
    for i, (label, run) in enumerate(runs):
        path = paths[i] if i < len(paths) else None
        out[label] = verify_run(run, label, path)
        run_id = as_run_data(run).head.run_id
        if run_id in seen:
            raise RunIntegrityError(_same_run(seen[run_id], label, run_id, path))
        seen[run_id] = label
    return out


def _same_run(first: str, second: str, run_id: str, path: str | os.PathLike[str] | None) -> str:
    where = f" ({path})" if path is not None else ""
    why = (
        "the noise floor needs a second, independent run of the baseline (run it again with another --out)"
        if "second baseline" in (first, second)
        else "a run compared with itself shows no change whatever the agent does: give each its own run"
    )
    return f"the {second} run{where} is the {first} run {run_id} again: {why}"
