"""The one pool of daemon threads that runs sync targets: awaited calls, and the runner's serving threads.

``concurrent.futures.ThreadPoolExecutor`` joins its workers at interpreter exit, so one agent call that
hangs past its timeout would keep ``replaygate run`` from exiting. These workers are daemons: a timed-out
call keeps its thread until it returns, and never blocks the exit. The pool is bounded (``size``
threads, started on demand); a call given up while it runs (:meth:`DaemonThreadPool.give_up`) allows one
more thread in its place, so a target that hangs never starves the calls after it.

Two ways to give it work:

- :meth:`DaemonThreadPool.run` awaits one call from the event loop (``CallableTarget.call``). Finished
  calls are handed back in batches: a worker appends its result to a list and wakes the loop only when no
  wake-up is already pending, so calls that finish close together cost one wake-up of the loop (instead of
  one ``concurrent.futures.Future`` plus one ``call_soon_threadsafe`` each).
- :meth:`DaemonThreadPool.spawn` hands a worker a loop of its own (the runner's sync-target threads,
  ``replaygate.replay._threaded``: each takes its next attempt itself, so no job crosses a queue per call).

:meth:`DaemonThreadPool.shutdown` stops idle workers; a worker stuck in a hung call ends when it returns.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DaemonThreadPool"]

log = logging.getLogger("replaygate.replay")

_QUEUED, _RUNNING, _FINISHED, _CANCELLED = 0, 1, 2, 3


class _Job:
    __slots__ = ("args", "fn", "future", "last", "loop", "state")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None,
        future: asyncio.Future[Any] | None,
        fn: Callable[..., Any],
        args: Any,
        last: bool = False,
    ) -> None:
        self.loop = loop
        self.future = future  # None: spawned (nobody awaits it)
        self.fn = fn
        self.args = args
        self.last = last  # the worker ends after this job
        self.state = _QUEUED


class DaemonThreadPool:
    """Run callables on up to ``size`` daemon threads named ``replaygate-target-N``, started on demand."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._waiting = 0  # workers blocked waiting for a job
        self._queued = 0  # jobs put and not yet taken
        self._starting = 0  # workers being started (outside the lock)
        self._lock = threading.Lock()
        self._closed = False
        self._done: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Any, BaseException | None]]] = {}

    @property
    def threads(self) -> int:
        """How many worker threads were started (each a daemon)."""
        return len(self._threads)

    def _put(self, job: _Job) -> None:
        """Queue a job, starting a worker when none is free and the bound allows one.

        Raises:
            RuntimeError: the pool is shut down, or a worker thread cannot start.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("thread pool is shut down")
            start = self._queued + 1 > self._waiting and len(self._threads) + self._starting < self.size
            if start:
                self._starting += 1
                name = f"replaygate-target-{len(self._threads) + self._starting - 1}"
            self._queued += 1
        self._jobs.put(job)
        if not start:
            return
        # Started outside the lock: the workers started before take their jobs (they need the lock)
        # while this one starts, instead of waiting for every thread of a burst to be started.
        t = threading.Thread(target=self._work, name=name, daemon=True)
        try:
            t.start()
        except BaseException:  # "can't start new thread": the job is withdrawn (a worker skips it)
            with self._lock:
                self._starting -= 1
                if job.state == _QUEUED:
                    job.state = _CANCELLED
            raise
        with self._lock:
            self._starting -= 1
            self._threads.append(t)

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` on a worker thread and return its result (or raise its exception).

        Cancelled (a timeout) before the call starts, the call is dropped; once it runs, its thread is
        given up and a replacement may start (see :meth:`give_up`).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job = _Job(loop, future, fn, args)
        self._put(job)
        try:
            return await future
        except asyncio.CancelledError:
            with self._lock:
                if job.state == _QUEUED:
                    job.state = _CANCELLED  # not started: the worker that takes it skips it
                    raise
                running = job.state == _RUNNING
            if running:
                self.give_up()
            raise

    def spawn(self, fn: Callable[[], object], *, then_end: bool = False) -> None:
        """Run ``fn()`` on a worker thread, awaited by nobody (``fn`` reports its own outcome).

        A free worker takes it, or a new one starts; at the bound it waits for a worker to be free.
        An exception ``fn`` lets out is logged. With ``then_end`` the worker thread ends once ``fn``
        returns (a loop that serves until no work is left: its thread ends when it finds none, not all
        of them together at :meth:`shutdown`).

        Raises:
            RuntimeError: the pool is shut down, or a worker thread cannot start.
        """
        self._put(_Job(None, None, fn, (), then_end))

    def give_up(self) -> None:
        """A call running on a worker was given up (it timed out): allow one more thread in its place.

        The stuck thread keeps running until its call returns; without a replacement, a target that
        hangs would starve every later call into a timeout of its own.
        """
        with self._lock:
            self.size += 1

    def _work(self) -> None:
        while True:
            with self._lock:
                self._waiting += 1
            job = self._jobs.get()
            with self._lock:
                self._waiting -= 1
                if job is None:
                    return
                self._queued -= 1
                start = job.state == _QUEUED
                job.state = _RUNNING
            if start:
                result: Any = None
                error: BaseException | None = None
                try:
                    result = job.fn(*job.args)
                except BaseException as exc:  # noqa: BLE001 - handed to its caller (or logged) below
                    error = exc
                if job.future is None:
                    job.state = _FINISHED
                    if error is not None:
                        log.error("a replaygate thread failed: %r", error, exc_info=error)
                else:
                    self._hand_back(job, result, error)
            if job.last:
                return
            del job

    def _hand_back(self, job: _Job, result: Any, error: BaseException | None) -> None:
        loop = job.loop
        assert loop is not None
        with self._lock:
            job.state = _FINISHED
            done = self._done.setdefault(loop, [])
            done.append((job, result, error))
            wake = len(done) == 1  # the first result since the last drain schedules the drain
        if wake:
            try:
                loop.call_soon_threadsafe(self._drain, loop)
            except RuntimeError:  # the loop is closed: nobody waits for this result any more
                with self._lock:
                    self._done.pop(loop, None)

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            done = self._done.pop(loop, [])
        for job, result, error in done:
            future = job.future
            assert future is not None
            if future.done():  # cancelled (timed out) meanwhile
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)

    def shutdown(self) -> None:
        """Stop idle workers; a worker stuck in a hung call ends when the call returns."""
        with self._lock:
            self._closed = True
            n = len(self._threads) + self._starting
        for _ in range(n):
            self._jobs.put(None)
