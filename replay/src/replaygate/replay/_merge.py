"""Merge the run files of shards (``--shard i/n``) into one run file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from replaygate.replay._errors import RunFileError
from replaygate.replay._fingerprint import fingerprint_differences
from replaygate.replay._run_summary import summarize_attempts
from replaygate.replay._runfile import RunFile, content_hash, load_run
from replaygate.replay._shard import parse_shard

__all__ = ["merge_runs"]


def merge_runs(runs: Sequence[RunFile | str | os.PathLike[str]]) -> RunFile:
    """Combine shard run files into one run.

    Every file must be a shard of the same run (same fingerprint apart from the start date, same policy),
    each shard ``i/n`` exactly once, and no scenario or attempt twice.

    Raises:
        RunFileError: a file is unreadable or not a shard, fingerprints differ, a shard is missing or
            given twice, or an attempt appears twice.
    """
    if not runs:
        raise RunFileError("merge needs at least one shard run file")
    named: list[tuple[str, RunFile]] = []
    for r in runs:
        if isinstance(r, RunFile):
            named.append((r.run_id, r))
        else:
            named.append((str(Path(r)), load_run(r)))
    first_name, first = named[0]
    shards: dict[int, str] = {}
    total: int | None = None
    for name, run in named:
        if run.shard is None:
            raise RunFileError(f"{name}: not a shard run file (it was not run with --shard i/n)")
        try:
            i, n = parse_shard(run.shard)
        except ValueError as exc:
            raise RunFileError(f"{name}: {exc}") from None
        if total is None:
            total = n
        elif n != total:
            raise RunFileError(f"{name}: shard {run.shard} is not one of {total} shards like {first_name}")
        if i in shards:
            raise RunFileError(f"{name}: shard {run.shard} is given twice (also {shards[i]})")
        shards[i] = name
        diffs = fingerprint_differences(first.fingerprint, run.fingerprint)
        if diffs:
            raise RunFileError(
                f"{name}: its fingerprint differs from {first_name} (" + "; ".join(diffs) + "); "
                "only shards of one run can be merged"
            )
        if run.policy != first.policy:
            raise RunFileError(f"{name}: its gate policy differs from {first_name}")
    assert total is not None
    missing = sorted(set(range(1, total + 1)) - set(shards))
    if missing:
        raise RunFileError(
            "missing shard(s) "
            + ", ".join(f"{i}/{total}" for i in missing)
            + "; merge every shard of the run"
        )
    scenario_from: dict[str, str] = {}
    attempt_keys: set[tuple[str, int]] = set()
    scenarios = []
    attempts = []
    for name, run in named:
        for entry in run.scenarios:
            if entry.id in scenario_from:
                raise RunFileError(f"{name}: scenario {entry.id} is also in {scenario_from[entry.id]}")
            scenario_from[entry.id] = name
            scenarios.append(entry)
        for a in run.attempts:
            key = (a.scenario_id, a.index)
            if key in attempt_keys:
                raise RunFileError(f"{name}: attempt {a.scenario_id}#{a.index} appears twice")
            attempt_keys.add(key)
            attempts.append(a)
    scenarios.sort(key=lambda e: e.id)
    attempts.sort(key=lambda a: (a.scenario_id, a.index))
    run_id = "merged-" + content_hash(sorted(r.run_id for _, r in named)).removeprefix("sha256:")[:12]
    fingerprint = first.fingerprint.model_copy(update={"date": min(r.fingerprint.date for _, r in named)})
    return RunFile(
        run_id=run_id,
        fingerprint=fingerprint,
        scenarios=scenarios,
        attempts=attempts,
        shard=None,
        policy=first.policy,
        summary=summarize_attempts(attempts, scenarios, run_id=run_id),
    )
