"""Freezing a simulated conversation into a fixed multi-turn scenario (``promote --from-run``).

``replaygate promote --from-run RUN SCENARIO#INDEX --owner NAME --origin ORIGIN`` takes the conversation
that attempt INDEX of SCENARIO had in the run (its scenario turns and the simulated user's turns), and
writes a new scenario ``<scenario>-frozen-<index>`` whose ``turns`` are exactly those user turns, without
``followups``: the same conversation is then replayed every time, as a fixture. It keeps the original
scenario's checks, judges, context, tags and retrieval labels; its ``source_trace`` is the attempt's trace
id, so freezing the same attempt twice finds the first. A check on a turn the conversation never reached
is refused with a clear error.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from replaygate.replay import ChangelogEntry, RunFileError, Scenario, ScenarioError, load_run, load_scenario

from replaygate.golden._errors import GoldenError, describe_invalid
from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._lifecycle import default_author, today_utc
from replaygate.golden._promote import Promotion, find_promoted

__all__ = ["freeze_conversation", "parse_attempt_ref"]

_REF = re.compile(r"^(?P<id>[a-z0-9][a-z0-9._-]*)#(?P<index>\d+)$")


def parse_attempt_ref(ref: str) -> tuple[str, int]:
    """``SCENARIO#INDEX`` as (scenario id, attempt index)."""
    match = _REF.match(ref.strip())
    if match is None:
        raise GoldenError(f"{ref!r} is not SCENARIO#INDEX (for example order-memory-followup-001#2)")
    return match.group("id"), int(match.group("index"))


def _original(golden: GoldenSet, scenario_id: str) -> Scenario:
    path = golden.file_for(scenario_id)
    if not path.exists():
        raise GoldenError(f"scenario {scenario_id} is not in {golden.path}; pass the --golden the run used")
    try:
        return load_scenario(path)
    except ScenarioError as exc:
        raise GoldenError(str(exc)) from None


def freeze_conversation(
    run_path: str | Path,
    ref: str,
    golden: GoldenSet | str | Path | None = None,
    *,
    owner: str,
    origin: str | None = None,
    scenario_id: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
) -> Promotion:
    """Write the fixed multi-turn scenario of one attempt's simulated conversation (idempotent)."""
    gs = golden if isinstance(golden, GoldenSet) else GoldenSet(golden)
    if not owner.strip():
        raise GoldenError("promote needs --owner: the person responsible for the new scenario")
    sid, index = parse_attempt_ref(ref)
    try:
        run = load_run(run_path)
    except RunFileError as exc:
        raise GoldenError(str(exc)) from None
    attempt = next((a for a in run.attempts if a.scenario_id == sid and a.index == index), None)
    if attempt is None:
        raise GoldenError(f"{run_path}: no attempt {sid}#{index} (the run has attempts 0..k-1 per scenario)")
    if not attempt.conversation:
        raise GoldenError(
            f"{run_path}: attempt {sid}#{index} has no simulated conversation (only scenarios with "
            "followups record one); promote its trace instead"
        )
    if attempt.trace_id:
        existing = find_promoted(gs, attempt.trace_id)
        if existing is not None:
            return Promotion(existing[0], existing[1], created=False)
    original = _original(gs, sid)
    day = today or today_utc()
    data = original.model_dump(by_alias=True, exclude={"followups", "changelog", "status"})
    data.update(
        id=scenario_id or f"{sid}-frozen-{index}",
        title=f"{original.title} (conversation frozen from {run.run_id} #{index})"[:200],
        owner=owner.strip(),
        origin=origin or original.origin,
        source_trace=attempt.trace_id,
        added=day,
        turns=[turn.user for turn in attempt.conversation],
        changelog=[
            ChangelogEntry(
                date=day,
                author=author or default_author(),
                reason=(
                    f"Frozen from the simulated conversation of run {run.run_id}, attempt {sid}#{index} "
                    f"({attempt.status}, {len(attempt.conversation)} turns)"
                ),
            )
        ],
    )
    try:
        scenario = Scenario.model_validate(data)
    except ValueError as exc:
        raise GoldenError(f"cannot freeze {sid}#{index}: {describe_invalid(exc)}") from None
    if gs.file_for(scenario.id).exists():
        raise GoldenError(f"a scenario {scenario.id!r} already exists in {gs.path}; pass another --id")
    path = gs.write([scenario])[0]
    return Promotion(scenario, path, created=True)
