"""The replay runner: every selected scenario, k attempts each, concurrently, journaled, scored.

``run_suite`` (sync) and ``run_suite_async`` run a suite against one candidate (target + configuration)
and write the run file. Each attempt runs under a root span ``replay attempt`` of an isolated tracer
provider, so the agent's own spans (retrieval, tools, LLM calls) are captured and scored. An attempt is
``pass``, ``fail`` or ``error``; a target that raises, hangs past the timeout or returns garbage, and a
judge that fails, make an ``error`` with the message, never a pass and never a skip.

The options are one :class:`RunOptions` (given whole with ``options=`` or as keywords). A run is three
steps: the plan (:func:`~replaygate.replay._run_plan.plan_run`: options checked, target loaded, journal
opened or resumed), the loop (:class:`_Loop`: target calls in flight up to ``concurrency``; an attempt
without judges is scored on the event loop once the calls ready to start have started, one with judges in
a task of its own; finished attempts handed to the journal and artifact threads together, at most every
:data:`HAND_OVER_S`) and the finish (:func:`_finish_run`: the run file written, the journal removed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from replaygate.replay._artifacts import ArtifactWriter, artifacts_path
from replaygate.replay._attempt import AttemptRunner, Called, Scorer
from replaygate.replay._capture import FOREIGN_PROVIDER_HINT, Capture, open_capture
from replaygate.replay._errors import ReplayError, RunFileError
from replaygate.replay._filelock import exclusive_lock
from replaygate.replay._gc import old_objects_frozen
from replaygate.replay._progress import Progress, make_progress
from replaygate.replay._run_options import RunOptions, resolve_options
from replaygate.replay._run_plan import RESUME_FIELDS, RunPlan, plan_run
from replaygate.replay._run_summary import summarize_attempts
from replaygate.replay._runfile import Attempt, RunFile, digest_of, save_run
from replaygate.replay._scenario import Scenario
from replaygate.replay._target import CallableTarget, Target
from replaygate.replay._threaded import ThreadedCalls

__all__ = ["HAND_OVER_S", "RESUME_FIELDS", "RunOptions", "Scorer", "run_suite", "run_suite_async"]

log = logging.getLogger("replaygate.replay")

#: How long finished attempts gather before they go to the journal and artifact threads together
#: (seconds): one wake-up of each thread for all of them. The journal's group commit waits longer.
HAND_OVER_S = 0.01


def _without_artifact(attempt: Attempt) -> Attempt:
    return attempt.model_copy(update={"artifact_path": None})


def _resumed_artifact(attempt: Attempt, writer: ArtifactWriter | None) -> Attempt:
    """A journaled attempt keeps its ``artifact_path`` only while its artifact is still there."""
    path = attempt.artifact_path
    if path is None:
        return attempt
    if writer is not None and path == str(writer.path):
        present = (attempt.scenario_id, attempt.index) in writer.kept
    else:  # written without this run's writer (resumed with --no-artifacts, or by an older version)
        present = Path(path).is_file()
    return attempt if present else _without_artifact(attempt)


class _Loop:
    """The loop of one run: target calls in flight, scoring, and the hand-over to journal and artifacts."""

    def __init__(self, plan: RunPlan) -> None:
        opts = plan.options
        self.plan = plan
        self.report: Progress = make_progress(opts.progress, total=plan.total, already=plan.done)
        use_threads = getattr(plan.target, "use_threads", None)
        if callable(use_threads):  # an HTTP target sizes its connection pool
            use_threads(opts.concurrency)
        self.artifacts = (
            ArtifactWriter(
                artifacts_path(plan.out.parent, plan.run_id), keep=plan.finished if opts.resume else None
            )
            if opts.artifacts
            else None
        )
        self.capture: Capture = open_capture()
        self.attempts = AttemptRunner(
            target=plan.target,
            config=plan.config,
            capture=self.capture,
            scorer=plan.scorer,
            judges=plan.judges,
            timeout_s=opts.timeout_s,
            run_id=plan.run_id,
            artifacts=self.artifacts,
            simulator=plan.simulator,
        )
        self.results: list[Attempt] = list(plan.done)
        self.finished_now: list[Attempt] = []
        self.to_score: list[Called] = []  # calls returned, scored once the ready calls have started
        self.failed: list[BaseException] = []  # what scoring outside a task raised (a bug): the run fails
        self._hand_over: asyncio.TimerHandle | None = None
        self.journal_failed: list[RunFileError] = []
        self.threaded: ThreadedCalls | None = None
        self.failed_artifacts: set[tuple[str, int]] = set()
        # LLM judges are I/O too: bound them like target calls
        self.scoring = asyncio.Semaphore(opts.concurrency)
        self.loop = asyncio.get_running_loop()

    def hand_over(self) -> None:
        """Hand the attempts finished since the last hand-over to the journal and artifact threads."""
        self._hand_over = None
        batch = self.finished_now[:]
        self.finished_now.clear()
        if self.artifacts is not None:
            self.artifacts.flush()
        try:
            self.plan.writer.extend(batch)
        except RunFileError as exc:  # raised by the workers: a run that cannot journal stops
            self.journal_failed.append(exc)
            if self.threaded is not None:
                self.threaded.fail(exc)

    def finished(self, attempt: Attempt) -> None:
        if not self.finished_now and self._hand_over is None:
            self._hand_over = self.loop.call_later(HAND_OVER_S, self.hand_over)
        self.finished_now.append(attempt)
        self.results.append(attempt)
        self.report(attempt)

    async def finish(self, called: Called) -> None:
        async with self.scoring:
            attempt = await self.attempts.finish(called)
        self.finished(attempt)

    def score_later(self, called: Called) -> None:
        """Score a call without judges on the event loop's next turn (:meth:`score_waiting`).

        Its worker meanwhile starts its next call, and so does every worker woken in the same turn:
        the calls start first, the scoring is done while they wait.
        """
        if not self.to_score:
            self.loop.call_soon(self.score_waiting)
        self.to_score.append(called)
        if len(self.to_score) > self.plan.options.concurrency:  # a worker whose calls never wait
            self.score_waiting()

    def score_waiting(self) -> None:
        """Score the calls :meth:`score_later` kept (a failure fails the run: the workers raise it)."""
        batch, self.to_score = self.to_score, []
        try:
            for called in batch:
                self.finished(self.attempts.finish_now(called))
        except BaseException as exc:  # noqa: BLE001 - a bug: the run fails with it, never drops or hangs
            self.failed.append(exc)

    def score(self, group: asyncio.TaskGroup, called: Called) -> None:
        """Score a finished call: at once when nothing is awaited (no judges), else in a task."""
        if self.attempts.scores_at_once(called.scenario):
            self.finished(self.attempts.finish_now(called))
            return
        coro = self.finish(called)
        try:
            group.create_task(coro)
        except RuntimeError:  # the group is shutting down (interrupted or failed): --resume runs it again
            coro.close()

    async def worker(self, group: asyncio.TaskGroup) -> None:
        # A worker holds one slot of target concurrency: it starts its next call before a call with judges
        # is scored, so the event loop scores while targets wait instead of between their calls.
        todo, attempts = self.plan.todo, self.attempts
        task = asyncio.current_task()
        while todo:
            if self.journal_failed or self.failed:
                raise (self.journal_failed or self.failed)[0]
            scenario, index = todo.popleft()
            called = await attempts.call(scenario, index, task)
            if attempts.scores_at_once(called.scenario):
                self.score_later(called)
            else:
                self.score(group, called)

    def write_header(self) -> None:
        self.plan.writer.write_header(self.plan.header())

    async def run(self) -> None:
        """Run every attempt still to do; the journal and artifacts are closed when this returns."""
        plan = self.plan
        target = plan.target
        try:
            async with asyncio.TaskGroup() as group:
                if isinstance(target, CallableTarget) and not target.is_async:
                    self.threaded = ThreadedCalls(
                        self.attempts,
                        target.call_blocking,
                        plan.todo,
                        concurrency=plan.options.concurrency,
                        on_called=lambda called: self.score(group, called),
                    )
                    group.create_task(self.threaded.run())
                else:
                    for _ in range(min(plan.options.concurrency, len(plan.todo))):
                        group.create_task(self.worker(group))
                if not plan.options.resume:
                    # Let the first calls start, then make the fingerprint and the journal header while
                    # they run. No attempt is journaled before: finished attempts reach the journal on a
                    # later turn of the event loop than this one.
                    await asyncio.sleep(0)
                    self.write_header()
        except BaseExceptionGroup as failed:  # a worker failed (journal unwritable, or a bug): say what
            raise failed.exceptions[0] from None
        finally:
            self.threaded = None  # its on_called holds this loop: no cycle outlives the run
            await self._close()
        if self.journal_failed or self.failed:
            raise (self.journal_failed or self.failed)[0]

    async def _close(self) -> None:
        writer = self.plan.writer
        self.score_waiting()  # the calls that returned last
        if self._hand_over is not None:
            self._hand_over.cancel()
        try:
            if writer.needs_header:  # stopped before the header was written: write it, --resume needs it
                try:
                    self.write_header()
                except Exception:  # the fingerprint itself failed: that error is the one to report
                    self.finished_now.clear()
            self.hand_over()
            if self.artifacts is not None:
                self.artifacts.stop()  # finishes in the background while the journal syncs
            writer.close()
        finally:
            self.report.close()
            self.attempts.close()
            self.capture.close()
            await self.plan.target.aclose()
            if self.artifacts is not None:
                self.failed_artifacts = self.artifacts.close()


def _finish_run(plan: RunPlan, loop: _Loop) -> RunFile:
    """Write the run file from the attempts (resumed and new) and remove the journal."""
    done = len(plan.done)
    results = [_resumed_artifact(a, loop.artifacts) for a in loop.results[:done]] + [
        _without_artifact(a) if (a.scenario_id, a.index) in loop.failed_artifacts else a
        for a in loop.results[done:]
    ]
    results.sort(key=lambda a: (a.scenario_id, a.index))
    capture_warnings = []
    # once per run; only an in-process target's spans can be captured (a remote agent's are its own)
    if loop.capture.foreign_attempts and isinstance(plan.target, CallableTarget):
        capture_warnings.append(FOREIGN_PROVIDER_HINT.format(n=loop.capture.foreign_attempts))
        log.warning("replaygate run: %s", capture_warnings[-1])
    assert plan.fingerprint is not None  # made with the journal header, or read from the resumed journal
    policy = plan.options.policy
    run = RunFile(
        run_id=plan.run_id,
        fingerprint=plan.fingerprint,
        scenarios=plan.entries,
        attempts=results,
        shard=plan.shard_text,
        policy=dict(policy) if policy is not None else None,
        summary=summarize_attempts(
            results, plan.entries, run_id=plan.run_id, capture_warnings=capture_warnings
        ),
    )
    writer = plan.writer
    run = run.model_copy(update={"attempts_digest": digest_of(run, writer.digests)})
    save_run(run, plan.out, serialized=writer.serialized, trust_digest=True)
    plan.journal.unlink(missing_ok=True)  # the run file holds everything now; --resume restores it from there
    return run


async def run_suite_async(
    scenarios: Sequence[Scenario],
    target: str | Callable[..., Any] | Target,
    config: Mapping[str, Any] | None = None,
    *,
    options: RunOptions | None = None,
    **overrides: Any,
) -> RunFile:
    """Run a suite against a candidate and write its run file (async core of :func:`run_suite`).

    Args:
        scenarios: the selected scenarios (see ``select_scenarios``); the suite hash covers all of them.
        target: ``module:function``, an ``http(s)://`` URL, a callable or a :class:`Target`.
        config: the candidate's parsed configuration, passed to the target and hashed; None (no
            configuration file) passes ``{}`` and records ``agent_config_hash: no config``.
        options: how to run (:class:`RunOptions`: ``out_path``, ``repeats``, ``concurrency``,
            ``timeout_s``, ``seed``, ``judges``, ``policy``, ``resume``, ``shard``, ``progress``, ``tier``,
            ``artifacts``, ``scorer``, ``code_commit``, ``simulator``).
        **overrides: any field of :class:`RunOptions` as a keyword (overrides ``options``).

    Returns:
        The run file as written.

    Raises:
        ReplayError: bad arguments, or a journal that cannot be resumed (:class:`RunFileError`).
        TypeError: a keyword that is not an option, or no ``out_path``.
    """
    opts = resolve_options(options, overrides, caller=run_suite_async)
    plan = plan_run(scenarios, target, config, opts)
    loop = _Loop(plan)
    await loop.run()
    return _finish_run(plan, loop)


def run_suite(
    scenarios: Sequence[Scenario],
    target: str | Callable[..., Any] | Target,
    config: Mapping[str, Any] | None = None,
    *,
    options: RunOptions | None = None,
    **overrides: Any,
) -> RunFile:
    """Run a suite against a candidate and write its run file (see :func:`run_suite_async` for the options).

    Raises:
        ReplayError: bad arguments or a journal that cannot be resumed; also when called from a running
            event loop (await :func:`run_suite_async` there instead).
        LockBusyError: another run is writing the same ``out_path`` (``<out>.lock`` is held).
        TypeError: a keyword that is not an option, or no ``out_path``.
    """
    opts = resolve_options(options, overrides, caller=run_suite)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ReplayError("run_suite was called inside a running event loop; await run_suite_async instead")
    box: list[RunFile] = []

    async def main() -> None:
        # The main task returns None: asyncio.run's SIGINT bookkeeping may repr() the task and its result,
        # and the repr of a large RunFile costs a noticeable fraction of a second.
        box.append(await run_suite_async(scenarios, target, config, options=opts))

    out = Path(opts.out_path)  # the run file and its journal are ours while we write them
    with exclusive_lock(out.with_name(out.name + ".lock"), wait_s=0, what=f"the run file {out}"):
        with old_objects_frozen(first_threshold=50_000):  # see _gc.py
            asyncio.run(main())
    return box[0]
