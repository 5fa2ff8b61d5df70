"""A small thread pool of daemon threads for sync targets.

``concurrent.futures.ThreadPoolExecutor`` joins its workers at interpreter exit, so one agent call that
hangs past its timeout would keep ``replaygate run`` from exiting. These workers are daemons: a timed-out
call keeps its thread until it returns, and never blocks the exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["DaemonThreadPool"]

_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class DaemonThreadPool:
    """Run callables on up to ``size`` daemon threads, started on demand."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("thread pool is shut down")
            if self._idle == 0 and len(self._threads) < self.size:
                t = threading.Thread(target=self._work, name=f"replaygate-target-{len(self._threads)}")
                t.daemon = True
                self._threads.append(t)
                t.start()
            else:
                self._idle -= 1 if self._idle > 0 else 0
        self._jobs.put((fut, fn, args))
        return fut

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fut, fn, args = job
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args))
                except BaseException as exc:
                    fut.set_exception(exc)
            del job, fut, fn, args
            with self._lock:
                self._idle += 1

    def abandon(self, fut: Future[Any]) -> None:
        """Give up on a call that timed out: if it still runs, allow one more thread in its place.

        The stuck thread keeps running until its call returns; without a replacement, a target that
        hangs would starve every later attempt into a timeout of its own.
        """
        if fut.cancel():
            return  # it had not started: nothing is stuck
        with self._lock:
            self.size += 1

    def shutdown(self) -> None:
        """Stop idle workers; a worker stuck in a hung call ends when the call returns."""
        with self._lock:
            self._closed = True
            n = len(self._threads)
        for _ in range(n):
            self._jobs.put(None)
