"""The plan of one run: what to run, in which order, what is done already, where it is journaled.

:func:`plan_run` checks the options, loads the target, selects the shard, and either opens a new journal
(its header is written while the first calls run: :meth:`RunPlan.describe` hashes every scenario) or reads
the journal of the run being resumed (refused when the run differs from the journaled one). The runner's
loop (``_runner``) then runs :attr:`RunPlan.todo`.
"""

from __future__ import annotations

import datetime as _dt
import secrets
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from replaygate.replay._attempt import Scorer
from replaygate.replay._candidate import declared_versions
from replaygate.replay._errors import ReplayError, RunFileError, TargetError
from replaygate.replay._fingerprint import build_fingerprint, fingerprint_differences, git_commit
from replaygate.replay._journal import (
    HEADER_LATER,
    JournalWriter,
    header_fingerprint,
    journal_path,
    read_journal,
    restore_journal,
)
from replaygate.replay._judges import Judge, create_judges
from replaygate.replay._measures import declares_no_llm_calls
from replaygate.replay._run_options import RunOptions
from replaygate.replay._runfile import Attempt, Fingerprint, ScenarioEntry
from replaygate.replay._scenario import Scenario, scenario_content_hash
from replaygate.replay._scenario_io import suite_hash_of
from replaygate.replay._scoring import score_attempt
from replaygate.replay._selection import counts_in_gate
from replaygate.replay._shard import format_shard, in_shard
from replaygate.replay._simulator import ScriptedSimulator, Simulator, simulator_identity
from replaygate.replay._target import Target, load_target

__all__ = ["RESUME_FIELDS", "RunPlan", "plan_run"]

_ENTRIES: TypeAdapter[list[ScenarioEntry]] = TypeAdapter(list[ScenarioEntry])

#: Fingerprint fields that must match for ``--resume`` to continue a journal.
RESUME_FIELDS = (
    "suite_hash",
    "agent_config_hash",
    "k",
    "seed",
    "target",
    "tier",
    "policy_hash",
    "judge_model",
    "judge_prompt_version",
    "simulator",
)


def _entry(s: Scenario, repeats: int, chash: str) -> ScenarioEntry:
    return ScenarioEntry(
        id=s.id,
        title=s.title,
        must_pass=s.must_pass,
        threshold=s.threshold,
        repeats=repeats,
        status=s.status.state,
        counts=counts_in_gate(s),
        tags={str(k): str(v) for k, v in s.tags.items()},
        content_hash=chash,
    )


def _new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"run-{stamp}-{secrets.token_hex(3)}"


def _check_resume(old: Fingerprint, new: Fingerprint, journal: Path) -> None:
    diffs = fingerprint_differences(old, new, fields=RESUME_FIELDS)
    if diffs:
        raise RunFileError(
            f"{journal}: cannot resume: this run differs from the journaled one ("
            + "; ".join(diffs)
            + "); run with the same suite, configuration, k and seed, or start again without --resume"
        )


@dataclass
class RunPlan:
    """One run, planned: its options, target, scenarios, journal, and the attempts still to run."""

    options: RunOptions
    config: dict[str, Any]
    judges: dict[str, Judge]
    scorer: Scorer
    target: Target
    simulator: Simulator | None
    out: Path
    journal: Path
    run_id: str
    writer: JournalWriter
    shard_text: str | None
    total: int
    done: list[Attempt]
    """The attempts journaled by the run being resumed (first of each wanted key)."""
    todo: deque[tuple[Scenario, int]]
    """(scenario, index) still to run, in order."""
    describe: Callable[[], tuple[Fingerprint, list[ScenarioEntry]]]
    fingerprint: Fingerprint | None = None
    entries: list[ScenarioEntry] = field(default_factory=list)

    @property
    def finished(self) -> set[tuple[str, int]]:
        """The (scenario id, index) of the attempts done before this run started."""
        return {(a.scenario_id, a.index) for a in self.done}

    def header(self) -> dict[str, Any]:
        """Make the fingerprint and the scenario entries (hashing every scenario): the journal header."""
        self.fingerprint, self.entries = self.describe()
        policy = self.options.policy
        return {
            "run_id": self.run_id,
            "fingerprint": self.fingerprint.model_dump(mode="json"),
            "scenarios": _ENTRIES.dump_python(self.entries, mode="json"),  # each entry's model_dump, at once
            "shard": self.shard_text,
            "policy": dict(policy) if policy is not None else None,
        }


def plan_run(
    scenarios: Sequence[Scenario],
    target: str | Callable[..., Any] | Target,
    config: Mapping[str, Any] | None,
    opts: RunOptions,
) -> RunPlan:
    """Check the options, load the target, and open the journal (new, or the one being resumed).

    Raises:
        ReplayError: bad options, or a journal that cannot be resumed (:class:`RunFileError`).
    """
    opts.check()
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids):
        raise ReplayError("the suite lists a scenario id twice; scenario ids are unique")
    shard_spec = opts.shard_spec()
    cfg = dict(config or {})
    try:  # before anything starts: a bad value is the configuration's error
        declares_no_llm_calls(cfg, where="the candidate configuration")
    except ValueError as exc:
        raise TargetError(str(exc)) from None
    judge_map = dict(opts.judges) if opts.judges is not None else dict(create_judges(kind="offline"))
    the_target = load_target(target, timeout_s=opts.timeout_s)
    conversational = any(s.followups is not None for s in scenarios)
    the_simulator = (opts.simulator or ScriptedSimulator(opts.seed)) if conversational else None
    # genai-prices (0.2 s of price data) loads when the first LLM call is priced: a run without one never
    # imports it (call_cost loads it)
    out = Path(opts.out_path)
    jpath = journal_path(out)
    repeats = opts.repeats
    k = repeats if repeats is not None else max((s.repeats for s in scenarios), default=0)
    selected = sorted(
        (s for s in scenarios if shard_spec is None or in_shard(s.id, *shard_spec)), key=lambda s: s.id
    )
    per_k = {s.id: repeats if repeats is not None else s.repeats for s in selected}
    shard_text = format_shard(*shard_spec) if shard_spec else None

    def describe() -> tuple[Fingerprint, list[ScenarioEntry]]:
        # Hashing every scenario takes a while: a new run does it while its first calls run.
        commit = git_commit() if opts.code_commit is True else (opts.code_commit or None)
        known = opts.content_hashes or {}
        hashes = {s.id: known.get(s.id) or scenario_content_hash(s) for s in scenarios}  # once, for both
        fingerprint = build_fingerprint(
            config=cfg if config is not None else None,
            versions=declared_versions(cfg),
            target=the_target.spec,
            judges=judge_map,
            suite_hash=suite_hash_of((s.id, s.status.state, hashes[s.id]) for s in scenarios),
            policy=opts.policy,
            tier=opts.tier,
            k=k,
            seed=opts.seed,
            code_commit=commit,
        ).model_copy(update={"simulator": simulator_identity(the_simulator)})
        return fingerprint, [_entry(s, per_k[s.id], hashes[s.id]) for s in selected]

    done: list[Attempt] = []
    fingerprint: Fingerprint | None = None
    entries: list[ScenarioEntry] = []
    if opts.resume and not jpath.exists() and out.exists():  # completed before: its journal was removed
        restore_journal(out)
    if opts.resume:
        fingerprint, entries = describe()
        state = read_journal(jpath)
        old = header_fingerprint(state.header, jpath)
        _check_resume(old, fingerprint, jpath)
        if state.header.get("shard") != shard_text:
            raise RunFileError(
                f"{jpath}: cannot resume: the journal is shard {state.header.get('shard')!r}, "
                f"this run is shard {shard_text!r}"
            )
        run_id = str(state.header["run_id"])
        fingerprint = old.model_copy(update={"code_commit": fingerprint.code_commit})
        wanted = {(s.id, i) for s in selected for i in range(per_k[s.id])}
        seen: set[tuple[str, int]] = set()
        for a in state.attempts:
            key = (a.scenario_id, a.index)
            if key in wanted and key not in seen:
                seen.add(key)
                done.append(a)
        writer = JournalWriter(jpath, header=None, truncate_at=state.valid_bytes)
    else:
        run_id = _new_run_id()
        writer = JournalWriter(jpath, header=HEADER_LATER)  # opened now: an unwritable journal stops us here
    finished = {(a.scenario_id, a.index) for a in done}
    todo = deque((s, i) for s in selected for i in range(per_k[s.id]) if (s.id, i) not in finished)
    return RunPlan(
        options=opts,
        config=cfg,
        judges=judge_map,
        scorer=opts.scorer or score_attempt,
        target=the_target,
        simulator=the_simulator,
        out=out,
        journal=jpath,
        run_id=run_id,
        writer=writer,
        shard_text=shard_text,
        total=sum(per_k.values()),
        done=done,
        todo=todo,
        describe=describe,
        fingerprint=fingerprint,
        entries=entries,
    )
