"""One attempt: call the target under a root span, capture its spans, score it, queue its artifact.

Every way an attempt can go wrong ends here as an ``error`` attempt with the message: the target raised
(including its own ``TimeoutError`` or ``sys.exit``), the deadline passed (``timed out after Xs``), the
output was garbage, the spans could not be read, or scoring failed. Nothing is a pass by default.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from replaygate.instrumentation import TraceSummary, summarize_spans
from replaygate.replay._artifacts import Artifact, ArtifactWriter
from replaygate.replay._attempt_summary import AttemptSummaries, RootKey
from replaygate.replay._capture import AttemptSpan, Capture
from replaygate.replay._deadlines import Deadlines
from replaygate.replay._errors import TargetError
from replaygate.replay._followups import converse, converse_blocking
from replaygate.replay._judge_registry import Judge
from replaygate.replay._measures import (
    LLM_CALLS_KEY,
    NO_LLM_CALLS,
    compute_measures,
    declares_no_llm_calls,
)
from replaygate.replay._model_copy import made, plain, replaced
from replaygate.replay._regex import check_deadline
from replaygate.replay._runfile import Attempt, Measures
from replaygate.replay._scenario import Scenario
from replaygate.replay._scenario_checks import Check
from replaygate.replay._scoring import ScoreOutcome, score_attempt
from replaygate.replay._simulator import Simulator, SimulatorError
from replaygate.replay._target import Target, TargetOutput
from replaygate.replay._turn_checks import run_turn_checks, split_turn_checks

__all__ = ["AttemptRunner", "BlockingCall", "Called", "Flight", "Returned", "Scorer"]


class Scorer(Protocol):
    """The scoring seam (``score_attempt``): scores one attempt into a :class:`ScoreOutcome`."""

    def __call__(
        self,
        scenario: Scenario,
        *,
        answer: str | None,
        label: str | None,
        summary: TraceSummary,
        latency_s: float,
        judges: Mapping[str, Judge],
    ) -> Awaitable[ScoreOutcome]: ...


def _error_measures(summary: TraceSummary, latency_s: float, declares_no_llm: bool = False) -> Measures:
    try:
        measures = compute_measures(
            summary, answer=None, latency_s=latency_s, declares_no_llm=declares_no_llm
        )
    except Exception:  # measuring must not hide the error being reported
        return Measures(latency_s=latency_s)
    return measures.model_copy(update={"empty": False})


@dataclass(eq=False)
class Flight:
    """An attempt whose target call is under way: its root span, when it started, what to cancel."""

    scenario: Scenario
    index: int
    root: AttemptSpan
    started: str
    t0: float
    pending: list[concurrent.futures.Future[Any]] = field(default_factory=list)
    """Work the call runs elsewhere (an awaitable a sync target returned): cancelled with the call."""


class BlockingCall(Protocol):
    """A sync target's call (``CallableTarget.call_blocking``)."""

    def __call__(
        self, turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any], *, session_id: str
    ) -> TargetOutput: ...


class _Clock:
    """``utc_now()`` (ISO 8601 UTC, seconds), formatted once per second instead of once per attempt."""

    __slots__ = ("second", "text")

    def __init__(self) -> None:
        self.second = -1
        self.text = ""

    def now(self) -> str:
        second = int(time.time())
        if second != self.second:
            self.text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
            self.second = second
        return self.text


def _raised(root: AttemptSpan, exc: BaseException) -> str:
    root.record_exception(exc)  # the traceback, in the attempt's artifact
    return f"target raised {type(exc).__name__}: {exc}"


#: How many scores of root-only attempts :class:`AttemptRunner` keeps per scenario (distinct answers).
SCORES_KEPT = 8


#: Whether each check class has a ``regex`` (looked up once per class, not once per scenario's check).
_HAS_REGEX: dict[type, bool] = {}


def _linear(check: Check) -> bool:
    """Whether a check runs in bounded time whatever the deadline (no backtracking regex)."""
    kind = type(check)
    has = _HAS_REGEX.get(kind)
    if has is None:  # no getattr on the check: a miss raises slowly
        has = _HAS_REGEX[kind] = any("regex" in vars(k) for k in kind.__mro__)
    if not has:
        return True
    regex = check.regex  # type: ignore[union-attr]
    return regex is None or bool(regex.linear)


@dataclass(eq=False)
class _Split:
    """A scenario as the runner scores it: checks on the last turn, checks by turn, scores already made.

    ``scores`` (None: not kept for this scenario) maps (root key, answer, label) to an attempt scored
    with the built-in scorer from a root-only trace: what a check, the label and the measures read of
    such an attempt is the same for every attempt with that key, but for its latency.
    """

    scenario: Scenario
    last: Scenario
    by_turn: list[Check]
    scores: dict[tuple[RootKey, str, str | None], Attempt] | None


#: The fields of a kept score an attempt's copy sets (:func:`_copy_kept`).
_COPIED = ("index", "trace_id", "started", "artifact_path", "measures")


def _copy_kept(
    kept: Attempt, index: int, trace_id: str, started: str, artifact_path: str | None, latency_s: float
) -> Attempt:
    """A kept score (see :class:`_Split`) with this attempt's own index, trace, start, path and latency.

    What ``replaced`` makes of the attempt and of its measures (a test compares them), in one step: this
    runs for most attempts of a run.
    """
    measures = kept.measures
    if not (plain(kept) and plain(measures)):
        return replaced(  # not a plain run-file model: the general path
            kept,
            {
                "index": index,
                "trace_id": trace_id,
                "started": started,
                "artifact_path": artifact_path,
                "measures": replaced(measures, {"latency_s": latency_s}),
            },
        )
    values = measures.__dict__.copy()
    values["latency_s"] = latency_s
    fields = measures.__pydantic_fields_set__.copy()
    fields.add("latency_s")
    copied = made(type(measures), values, fields)
    values = kept.__dict__.copy()
    values["index"] = index
    values["trace_id"] = trace_id
    values["started"] = started
    values["artifact_path"] = artifact_path
    values["measures"] = copied
    fields = kept.__pydantic_fields_set__.copy()
    fields.update(_COPIED)
    return made(type(kept), values, fields)


#: What a blocking call returns from its thread: the flight, the output or error, the latency.
Returned = tuple[Flight, TargetOutput | None, str | None, float]


@dataclass
class Called:
    """What one target call left behind, before scoring: the output or error, the spans, the latency."""

    scenario: Scenario
    index: int
    output: TargetOutput | None
    error: str | None
    spans: list[Any]
    latency_s: float
    trace_id: str
    started: str


class AttemptRunner:
    """Runs one attempt; shared state of a run (target, capture, scoring, artifacts)."""

    def __init__(
        self,
        *,
        target: Target,
        config: Mapping[str, Any],
        capture: Capture,
        scorer: Scorer,
        judges: Mapping[str, Judge],
        timeout_s: float,
        run_id: str,
        artifacts: ArtifactWriter | None,
        simulator: Simulator | None = None,
    ) -> None:
        self.target = target
        self.config = dict(config)
        #: The target declares that the agent makes no LLM call (``llm_calls: none`` in its configuration;
        #: plan_run refused any other value).
        self.declares_no_llm = declares_no_llm_calls(self.config)
        self.capture = capture
        self.scorer = scorer
        self.judges = judges
        self.timeout_s = timeout_s
        self.run_id = run_id
        self.artifacts = artifacts
        self.simulator = simulator
        self._clock = _Clock()
        self._deadlines = Deadlines(timeout_s)
        self._summaries = AttemptSummaries()
        self._split: dict[int, _Split] = {}
        self._artifact_path = str(artifacts.path) if artifacts is not None and artifacts.usable else None
        # The built-in scorer awaits nothing for a scenario without judges: such attempts are scored at once
        # (:meth:`finish_now`) instead of in a task of their own.
        self._inline = scorer is score_attempt

    def close(self) -> None:
        """Stop the run's deadline timer."""
        self._deadlines.close()

    def scores_at_once(self, scenario: Scenario) -> bool:
        """Whether :meth:`finish_now` can score this scenario's attempts (nothing to await: no judges)."""
        return self._inline and not scenario.judges

    def finish_now(self, called: Called) -> Attempt:
        """:meth:`finish`, for an attempt of a scenario :meth:`scores_at_once` accepts, without a task.

        An attempt scored before (the same root-only trace, answer and label: see :class:`_Split`) is
        copied without a coroutine; any other is scored by driving :meth:`finish` to its end.

        Raises:
            RuntimeError: scoring tried to wait for something (the scenario was not one to score at once).
        """
        output = called.output
        if output is not None and called.error is None and not output.conversation:
            split = self._split_checks(called.scenario)
            if split.scores is not None:
                key = self._summaries.key(called.spans)
                if key is not None:
                    kept = split.scores.get((key, output.answer, output.label))
                    if kept is not None:
                        attempt = _copy_kept(
                            kept,
                            called.index,
                            called.trace_id,
                            called.started,
                            self._path(),
                            called.latency_s,
                        )
                        self._submit(called, output, attempt)
                        return attempt
        coro = self.finish(called)
        try:
            coro.send(None)
        except StopIteration as stop:
            done: Attempt = stop.value
            return done
        coro.close()
        raise RuntimeError(f"scoring {called.scenario.id}#{called.index} waited; score it in a task")

    def _path(self) -> str | None:
        """The ``artifact_path`` of an attempt finished now (None when the artifacts file is unusable)."""
        writer = self.artifacts
        return self._artifact_path if writer is not None and writer.usable else None

    def _split_checks(self, scenario: Scenario) -> _Split:
        held = self._split.get(id(scenario))
        if held is None or held.scenario is not scenario:
            last, by_turn = split_turn_checks(scenario)
            if self.declares_no_llm and not declares_no_llm_calls(last.tags):
                # The scorer reads the declaration where a scenario makes it: the target's applies to all.
                last = last.model_copy(update={"tags": {**last.tags, LLM_CALLS_KEY: NO_LLM_CALLS}})
            # Scores are kept only where nothing but the answer, the label and the trace decides them: the
            # built-in scorer, no judge, no follow-ups, no check by turn, and no check bounded by the
            # attempt's deadline (a backtracking regex could time out on one attempt and not another).
            keep = (
                self._inline
                and not scenario.judges
                and scenario.followups is None
                and not by_turn
                and all(_linear(c) for c in last.checks)
            )
            held = self._split[id(scenario)] = _Split(scenario, last, by_turn, {} if keep else None)
        return held

    def begin(self, scenario: Scenario, index: int) -> Flight:
        """Open one attempt: its root span (not yet current) and its start."""
        attributes = {"replaygate.scenario.id": scenario.id, "replaygate.attempt.index": index}
        root = AttemptSpan(attributes)
        self.capture.track(root)
        return Flight(scenario, index, root, self._clock.now(), time.perf_counter())

    def _session(self, flight: Flight) -> str:
        return f"{self.run_id}/{flight.scenario.id}/{flight.index}"

    async def call(self, scenario: Scenario, index: int, task: asyncio.Task[Any] | None = None) -> Called:
        """Call the target once inside the attempt's root span; scoring is :meth:`finish`.

        The runner starts the next call before scoring this one, so a slot of concurrency is never held
        while the event loop scores. ``task`` is the current task, when the caller knows it.
        """
        flight = self.begin(scenario, index)
        output: TargetOutput | None = None
        error: str | None = None
        with flight.root:
            deadline = self._deadlines.start(task)  # like asyncio.timeout, one timer for the whole run
            timed_out = False
            try:
                try:
                    if scenario.followups is not None:
                        output = await converse(
                            self.target,
                            scenario,
                            self.config,
                            session_id=self._session(flight),
                            simulator=self.simulator,
                            attempt=index,
                        )
                    else:
                        output = await self.target.call(
                            scenario.turns, scenario.context, self.config, session_id=self._session(flight)
                        )
                finally:
                    timed_out = deadline.stop()
            except asyncio.CancelledError:
                if not timed_out:
                    raise  # the run itself is cancelled
                error = self._timed_out
            except SimulatorError as exc:
                error = f"simulated user failed: {exc}"
            except TargetError as exc:
                error = str(exc)
            except (Exception, SystemExit) as exc:  # an agent calling sys.exit() is an error, not the end
                if isinstance(exc, TimeoutError) and deadline.expired:
                    error = self._timed_out
                else:
                    error = _raised(flight.root, exc)
        return self.called(flight, output, error, time.perf_counter() - flight.t0)

    def call_blocking(self, flight: Flight, call: BlockingCall) -> Returned:
        """Call a sync target in this thread, inside the attempt's root span (see :mod:`._threaded`).

        Returns what :meth:`called` (on the event loop) turns into a :class:`Called`. A call that returns
        after the timeout is an error like one still running at the deadline (the runner gives that one
        up: :meth:`expire`).
        """
        output: TargetOutput | None = None
        error: str | None = None
        scenario = flight.scenario
        with flight.root:
            try:
                if scenario.followups is not None:
                    output = converse_blocking(
                        self.target,
                        call,
                        scenario,
                        self.config,
                        session_id=self._session(flight),
                        simulator=self.simulator,
                        attempt=flight.index,
                    )
                else:
                    output = call(
                        scenario.turns, scenario.context, self.config, session_id=self._session(flight)
                    )
            except SimulatorError as exc:
                error = f"simulated user failed: {exc}"
            except TargetError as exc:
                error = str(exc)
            except BaseException as exc:  # noqa: BLE001 - nothing a thread can raise may end the run silently
                error = _raised(flight.root, exc)
        latency_s = time.perf_counter() - flight.t0
        if latency_s > self.timeout_s:
            output, error = None, self._timed_out
        return flight, output, error, latency_s

    def expire(self, flight: Flight) -> Called:
        """The ``error`` of a call still running at its deadline (its thread is given up)."""
        return self.called(flight, None, self._timed_out, time.perf_counter() - flight.t0)

    @property
    def _timed_out(self) -> str:
        return f"timed out after {self.timeout_s:g}s"

    def called(
        self, flight: Flight, output: TargetOutput | None, error: str | None, latency_s: float
    ) -> Called:
        """What a finished call left: its root span as a record (in error when it failed), its spans."""
        root = flight.root
        record = root.to_record()  # values the agent set are made plain (never raises on them)
        if error is not None:
            # Set on the record, not the span: a timed-out call's thread may end its span meanwhile.
            record = dataclasses.replace(record, status="error", status_message=error)
        spans = [record, *self.capture.pop(root)]
        return Called(
            flight.scenario, flight.index, output, error, spans, latency_s, root.trace_id, flight.started
        )

    async def finish(self, called: Called) -> Attempt:
        """Summarize the call's spans, score it, and hand its artifact to the writer."""
        scenario, index, output, error = called.scenario, called.index, called.output, called.error
        spans, latency_s, trace_id, started = called.spans, called.latency_s, called.trace_id, called.started
        key: RootKey | None = None
        try:
            key = self._summaries.key(spans)
            summary = self._summaries.summarize(spans, key)
        except Exception as exc:  # spans that cannot be read make an error, never a silent pass
            summary = summarize_spans([])
            output, error, key = None, f"cannot read the attempt's spans: {type(exc).__name__}: {exc}", None
        attempt = await self._score(
            scenario, index, output, error, summary, latency_s, trace_id, started, self._path(), spans, key
        )
        self._submit(called, output, attempt)
        return attempt

    def _submit(self, called: Called, output: TargetOutput | None, attempt: Attempt) -> None:
        """Hand the attempt's artifact to the writer (when artifacts are kept)."""
        writer = self.artifacts
        if writer is not None:
            writer.submit(
                Artifact(
                    scenario_id=called.scenario.id,
                    index=called.index,
                    trace_id=called.trace_id,
                    answer=output.answer if output else None,
                    label=output.label if output else None,
                    error=attempt.error,
                    messages=output.messages if output else (),
                    spans=called.spans,
                    conversation=[t.model_dump() for t in output.conversation]
                    if output and output.conversation
                    else [],
                )
            )

    def _no_llm(self, scenario: Scenario) -> bool:
        return self.declares_no_llm or declares_no_llm_calls(scenario.tags)

    async def _score(
        self,
        scenario: Scenario,
        index: int,
        output: TargetOutput | None,
        error: str | None,
        summary: TraceSummary,
        latency_s: float,
        trace_id: str,
        started: str,
        artifact_path: str | None,
        spans: Sequence[Any] = (),
        key: RootKey | None = None,
    ) -> Attempt:
        split = self._split_checks(scenario)
        scores = split.scores
        memo: tuple[RootKey, str, str | None] | None = None
        if scores is not None and key is not None and output is not None and not output.conversation:
            memo = (key, output.answer, output.label)
            kept = scores.get(memo)
            if kept is not None:  # scored before: the same outcome, with this attempt's own values
                return _copy_kept(kept, index, trace_id, started, artifact_path, latency_s)
        common: dict[str, Any] = {
            "scenario_id": scenario.id,
            "index": index,
            "trace_id": trace_id,
            "started": started,
            "artifact_path": artifact_path,
        }
        if output is not None and output.conversation:
            common["conversation"] = list(output.conversation)
        if output is None:
            return Attempt(
                status="error",
                error=error or "the target returned nothing",
                measures=_error_measures(summary, latency_s, self._no_llm(scenario)),
                **common,
            )
        last_only, by_turn = split.last, split.by_turn
        try:
            # Checks stop at the attempt's deadline (a backtracking-only regex is killed there: error).
            with check_deadline(time.monotonic() + max(self.timeout_s - latency_s, 0.0)):
                outcome = await self.scorer(
                    last_only,
                    answer=output.answer,
                    label=output.label,
                    summary=summary,
                    latency_s=latency_s,
                    judges=self.judges,
                )
                if outcome.status not in ("pass", "fail", "error"):
                    raise ValueError(f"the scorer returned status {outcome.status!r}")
                checks, status = list(outcome.checks), outcome.status
                if by_turn:
                    extra = run_turn_checks(scenario, by_turn, output, summary, spans)
                    checks += extra
                    if status == "pass" and any(not c.passed for c in extra):
                        status = "fail"
            # Validated: a scorer's output that is not the run file's shape is a scoring error. (Models
            # already of the right class are not validated again, so this costs no more than
            # ``model_construct``.)
            attempt = Attempt(
                status=status,
                error=outcome.error,
                answer=output.answer,
                checks=checks,
                judges=list(outcome.judges),
                retrieval=outcome.retrieval,
                measures=outcome.measures,
                attribution=outcome.attribution,
                **common,
            )
        except Exception as exc:
            return Attempt(
                status="error",
                error=f"scoring failed: {type(exc).__name__}: {exc}",
                answer=output.answer,
                measures=_error_measures(summary, latency_s, self._no_llm(scenario)),
                **common,
            )
        if memo is not None and scores is not None and len(scores) < SCORES_KEPT:
            scores[memo] = attempt
        return attempt
