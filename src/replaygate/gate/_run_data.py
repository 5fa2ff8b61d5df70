"""What the gate reads of a run: per scenario its counts, messages, scores and measures, not its attempts.

A 5,000-scenario x k=10 run is 50,000 attempt objects; the gate needs of them, per scenario, the pass,
fail and error counts, the first error messages and failure details, one sample answer, the judge and
retrieval scores, and per attempt only its status and guardrail measures. :func:`load_run_data` reads a
run file attempt by attempt (``scan_run``: each attempt validated, reduced and dropped), so memory is
proportional to scenarios x k numbers, not to attempt objects; :meth:`RunData.of` reduces a
:class:`RunFile` already in memory the same way, so both give the same comparison.

Integrity needs no attempt either: the attempts' (scenario id, index) in file order and their digests
are kept (:mod:`._integrity` checks the plan and the journal on them).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from replaygate.replay import (
    Attempt,
    Measures,
    RunFile,
    ScenarioEntry,
    attempt_digest,
    attempts_digest,
    load_run,
    scan_run,
)

__all__ = ["AttemptMeasures", "MeasuredAttempt", "RunData", "ScenarioData", "as_run_data", "load_run_data"]

_RETRIEVAL = ("hit_rate", "mrr", "recall", "ndcg")
_ANSWER_CAP = 2000
_NO_MEASURES = Measures(latency_s=0.0)


class AttemptMeasures(NamedTuple):
    """The guardrail measures of one attempt (the fields of :class:`Measures` the guardrails read)."""

    latency_s: float
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    escalated: bool
    empty: bool
    llm_calls: int | None


class MeasuredAttempt(NamedTuple):
    """One attempt as the guardrails read it: its status and measures."""

    status: str
    measures: AttemptMeasures


@dataclass
class ScenarioData:
    """One scenario of one run, its attempts in index order reduced to what the comparison reads."""

    attempts: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)  # distinct, first 3
    failure_details: list[str] = field(default_factory=list)  # distinct, first 5
    sample_answer: str | None = None
    metrics: dict[str, list[float]] = field(default_factory=dict)  # judge and retrieval scores
    rows: list[MeasuredAttempt] = field(default_factory=list)  # every attempt's status and measures


def _details(a: Attempt) -> list[str]:
    out = [f"check {c.name}: {c.detail}".rstrip(": ") for c in a.checks if not c.passed]
    out.extend(f"judge {j.name} ({j.score:.2f}): {j.detail}".rstrip(": ") for j in a.judges if not j.passed)
    return out


def _scores(a: Attempt) -> list[tuple[str, float]]:
    out = [(f"judge:{j.name}", j.score) for j in a.judges]
    if a.retrieval is not None:
        r = a.retrieval
        out.extend((f"retrieval:{m}", float(getattr(r, m))) for m in _RETRIEVAL)
    return out


class _Gather:
    """One scenario's attempts as they arrive (any order), reduced to :class:`ScenarioData` at the end."""

    __slots__ = ("errors", "failing", "fail_answer", "answer", "scored", "rows")

    def __init__(self) -> None:
        self.errors: list[tuple[int, str]] = []
        self.failing: list[tuple[int, list[str]]] = []
        self.fail_answer: tuple[int, str] | None = None
        self.answer: tuple[int, str] | None = None
        self.scored: list[tuple[int, list[tuple[str, float]]]] = []
        self.rows: list[tuple[int, MeasuredAttempt]] = []

    def add(self, a: Attempt) -> None:
        i, m = a.index, a.measures
        measures = AttemptMeasures(
            m.latency_s, m.input_tokens, m.output_tokens, m.cost_usd, m.escalated, m.empty, m.llm_calls
        )
        self.rows.append((i, MeasuredAttempt(a.status, measures)))
        if a.answer is not None:  # the first in index order (file order among equal indexes)
            answer = (i, a.answer[:_ANSWER_CAP])
            if self.answer is None or i < self.answer[0]:
                self.answer = answer
            if a.status == "fail" and (self.fail_answer is None or i < self.fail_answer[0]):
                self.fail_answer = answer
        if a.status == "error":
            self.errors.append((i, a.error or "error (no message)"))
            return
        self.scored.append((i, _scores(a)))
        if a.status == "fail":
            self.failing.append((i, _details(a)))

    def done(self) -> ScenarioData:
        def key(row: tuple[int, object]) -> int:
            return row[0]

        rows = [r for _, r in sorted(self.rows, key=key)]
        passed = sum(r.status == "pass" for r in rows)
        failed = sum(r.status == "fail" for r in rows)
        errors = [m for _, m in sorted(self.errors, key=key)]
        details = [d for _, ds in sorted(self.failing, key=key) for d in ds]
        metrics: dict[str, list[float]] = {}
        for _, scores in sorted(self.scored, key=key):
            for name, value in scores:
                metrics.setdefault(name, []).append(value)
        sample = self.fail_answer or self.answer
        return ScenarioData(
            attempts=len(rows),
            passed=passed,
            failed=failed,
            errors=len(errors),
            error_messages=list(dict.fromkeys(errors))[:3],
            failure_details=list(dict.fromkeys(details))[:5],
            sample_answer=sample[1] if sample is not None else None,
            metrics=metrics,
            rows=rows,
        )


class _Reducer:
    """Gathers a run's attempts (keys, digests, per-scenario data, the judges' verdicts)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.ids = {i: i for i in ids}  # one string per scenario id, shared by every key
        self.keys: list[tuple[str, int]] = []
        self.digests: list[str] = []
        self.gathered: dict[str, _Gather] = {}
        self.judged: list[Attempt] = []

    def __call__(self, a: Attempt, digest: str) -> None:
        sid = self.ids.setdefault(a.scenario_id, a.scenario_id)
        self.keys.append((sid, a.index))
        self.digests.append(digest)
        g = self.gathered.get(sid)
        if g is None:
            g = self.gathered[sid] = _Gather()
        g.add(a)
        if a.judges:
            self.judged.append(
                Attempt.model_construct(
                    scenario_id=sid,
                    index=a.index,
                    status=a.status,
                    judges=list(a.judges),
                    measures=_NO_MEASURES,
                )
            )

    def data(self, head: RunFile, digest: str) -> RunData:
        per = {sid: g.done() for sid, g in self.gathered.items()}
        return RunData(head, self.keys, self.digests, digest, per, self.judged)


@dataclass(frozen=True)
class RunData:
    """A run as the gate reads it: the run without its attempts (``head``) and their reduction.

    ``keys`` and ``digests`` are each attempt's (scenario id, index) and :func:`attempt_digest`, in
    file order; ``digest`` is the attempts' digest (recomputed; for a run file, checked against the
    recorded one when read); ``scenarios`` the per-scenario data of every scenario with attempts;
    ``judged`` the attempts with judge verdicts, reduced to those (what judge agreement reads).
    """

    head: RunFile
    keys: list[tuple[str, int]]
    digests: list[str]
    digest: str
    scenarios: dict[str, ScenarioData]
    judged: list[Attempt]

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.head.run_id

    @property
    def entries(self) -> list[ScenarioEntry]:
        """The scenarios as they were when the run started."""
        return self.head.scenarios

    @classmethod
    def of(cls, run: RunFile) -> RunData:
        """Reduce a run in memory (its digests computed, as ``digest_of`` does)."""
        reducer = _Reducer(e.id for e in run.scenarios)
        for a in run.attempts:
            reducer(a, attempt_digest(a))
        head = run.model_copy(update={"attempts": []})
        return reducer.data(head, attempts_digest(reducer.digests))

    def judged_run(self) -> RunFile:
        """The run with only its judged attempts, each with only its status and verdicts."""
        return self.head.model_copy(update={"attempts": list(self.judged)})


def load_run_data(path: str | os.PathLike[str]) -> RunData:
    """Read a run file into :class:`RunData` without keeping its attempts (errors as :func:`load_run`).

    Raises:
        RunFileError: the file is missing, unreadable, invalid or edited (the message :func:`load_run`
            gives).
    """
    reducer = _Reducer(())  # the header is read first, but handed back last: ids are shared as seen
    head = scan_run(path, reducer)
    if head is None:
        return RunData.of(load_run(path))
    assert head.attempts_digest is not None  # scan_run checked the attempts against it
    return reducer.data(head, head.attempts_digest)


def as_run_data(run: RunFile | RunData) -> RunData:
    """``run`` reduced (a :class:`RunData` as it is)."""
    return run if isinstance(run, RunData) else RunData.of(run)
