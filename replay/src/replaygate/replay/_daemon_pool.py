"""A small pool of daemon threads that runs sync targets for the event loop.

``concurrent.futures.ThreadPoolExecutor`` joins its workers at interpreter exit, so one agent call that
hangs past its timeout would keep ``replaygate run`` from exiting. These workers are daemons: a timed-out
call keeps its thread until it returns, and never blocks the exit.

:meth:`DaemonThreadPool.run` awaits the call from the event loop. Finished calls are
handed back in batches: a worker appends its result to a list and wakes the loop only when no wake-up is
already pending, so calls that finish close together cost one wake-up of the loop (instead of one
``concurrent.futures.Future`` plus one ``call_soon_threadsafe`` each, which cost several times more
CPU per call than the rest of a fast attempt's hand-off).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DaemonThreadPool"]

_QUEUED, _RUNNING, _FINISHED, _CANCELLED = 0, 1, 2, 3


class _Job:
    __slots__ = ("args", "fn", "future", "loop", "state")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], fn: Callable[..., Any], args: Any
    ) -> None:
        self.loop = loop
        self.future = future
        self.fn = fn
        self.args = args
        self.state = _QUEUED


class DaemonThreadPool:
    """Run callables on up to ``size`` daemon threads, started on demand."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._waiting = 0  # workers blocked waiting for a job
        self._queued = 0  # jobs put and not yet taken
        self._lock = threading.Lock()
        self._closed = False
        self._done: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Any, BaseException | None]]] = {}

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` on a worker thread and return its result (or raise its exception).

        Cancelled (a timeout) before the call starts, the call is dropped; once it runs, its thread is
        given up and a replacement may start (see :meth:`_abandon`).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job = _Job(loop, future, fn, args)
        with self._lock:
            if self._closed:
                raise RuntimeError("thread pool is shut down")
            self._queued += 1
            if self._queued > self._waiting and len(self._threads) < self.size:
                t = threading.Thread(target=self._work, name=f"replaygate-target-{len(self._threads)}")
                t.daemon = True
                self._threads.append(t)
                t.start()
        self._jobs.put(job)
        try:
            return await future
        except asyncio.CancelledError:
            self._abandon(job)
            raise

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
                except BaseException as exc:
                    error = exc
                self._hand_back(job, result, error)
            del job

    def _hand_back(self, job: _Job, result: Any, error: BaseException | None) -> None:
        with self._lock:
            job.state = _FINISHED
            done = self._done.setdefault(job.loop, [])
            done.append((job, result, error))
            wake = len(done) == 1  # the first result since the last drain schedules the drain
        if wake:
            try:
                job.loop.call_soon_threadsafe(self._drain, job.loop)
            except RuntimeError:  # the loop is closed: nobody waits for this result any more
                with self._lock:
                    self._done.pop(job.loop, None)

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            done = self._done.pop(loop, [])
        for job, result, error in done:
            if job.future.done():  # cancelled (timed out) meanwhile
                continue
            if error is None:
                job.future.set_result(result)
            else:
                job.future.set_exception(error)

    def _abandon(self, job: _Job) -> None:
        """Give up on a call that timed out: if it still runs, allow one more thread in its place.

        The stuck thread keeps running until its call returns; without a replacement, a target that
        hangs would starve every later attempt into a timeout of its own.
        """
        with self._lock:
            if job.state == _QUEUED:
                job.state = _CANCELLED  # not started: the worker that takes it skips it
                return
            if job.state == _RUNNING:
                self.size += 1

    def shutdown(self) -> None:
        """Stop idle workers; a worker stuck in a hung call ends when the call returns."""
        with self._lock:
            self._closed = True
            n = len(self._threads)
        for _ in range(n):
            self._jobs.put(None)
