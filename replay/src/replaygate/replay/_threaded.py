"""Sync targets: each slot of concurrency is a daemon thread that takes its next attempt itself.

A sync agent call blocks a thread. Handing every call from the event loop to a pool thread and its result
back costs each attempt two waits for the GIL while the loop is busy scoring (one to start the call, one to
return), and those waits, not the work, were most of a fast sync target's overhead. Here each of
``concurrency`` threads loops on its own: take the next (scenario, index), call the target under the
attempt's root span, hand the finished call to the event loop, take the next. The loop only scores: the
finished calls of one turn of the loop arrive together (one wake-up for all of them).

Timeouts: a watchdog on the loop wakes at the earliest deadline of the calls under way. A call still
running at its deadline becomes an ``error`` attempt ("timed out after Xs") at once, and a new thread takes
its slot; the stuck thread is a daemon, drops its result when the call returns, and ends. A call that
returns after its deadline but before the watchdog saw it is an error too.

Threads are daemons: one agent call that hangs forever never keeps ``replaygate run`` from exiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from replaygate.replay._attempt import AttemptRunner, Called, Flight
from replaygate.replay._scenario import Scenario
from replaygate.replay._target import TargetOutput

__all__ = ["ThreadedCalls"]


class ThreadedCalls:
    """Run the target calls of one run on ``concurrency`` self-serving daemon threads.

    Args:
        attempts: the run's attempt runner (root spans, capture, timeout).
        call: the target's blocking call (``CallableTarget.call_blocking``).
        todo: the (scenario, index) pairs still to run; the threads take from its left end.
        concurrency: threads calling the target at once.
        on_called: called on the event loop with each finished call (timed out ones included).
    """

    def __init__(
        self,
        attempts: AttemptRunner,
        call: Callable[..., TargetOutput],
        todo: deque[tuple[Scenario, int]],
        *,
        concurrency: int,
        on_called: Callable[[Called], object],
    ) -> None:
        self.attempts = attempts
        self.call = call
        self.todo = todo
        self.concurrency = max(1, concurrency)
        self.on_called = on_called
        self._lock = threading.Lock()
        self._ready: list[Called] = []  # finished calls not yet handed to the loop
        self._flights: dict[Flight, None] = {}  # calls under way, oldest (earliest deadline) first
        self._live = 0  # threads whose results still count
        self._stopping = False
        self._threads_started = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Future[None] | None = None
        self._base = contextvars.Context()
        self._watchdog: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        """Run every attempt of ``todo`` (or until :meth:`fail`); returns once each call was handed over."""
        loop = self._loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        base = contextvars.copy_context()  # each attempt runs in a copy: the agent's context never leaks
        with self._lock:
            n = min(self.concurrency, len(self.todo))
            self._live = n
        if n == 0:
            return
        self._base = base
        for _ in range(n):
            self._start_thread(base)
        self._watchdog = loop.call_later(self.attempts.timeout_s, self._check_deadlines)
        try:
            await self._done
        finally:
            self._stopping = True
            if self._watchdog is not None:
                self._watchdog.cancel()

    def fail(self, exc: BaseException) -> None:
        """Stop taking attempts and make :meth:`run` raise ``exc`` (call on the event loop)."""
        self._stopping = True
        if self._done is not None and not self._done.done():
            self._done.set_exception(exc)

    def _start_thread(self, base: contextvars.Context) -> None:
        name = f"replaygate-target-{self._threads_started}"
        self._threads_started += 1
        threading.Thread(target=self._work, args=(base,), name=name, daemon=True).start()

    def _work(self, base: contextvars.Context) -> None:
        loop = self._loop
        assert loop is not None
        try:
            counted = self._serve(loop, base)
        except BaseException as exc:  # noqa: BLE001 - a bug in the runner: the run fails with it, never hangs
            self._stopping = True
            try:
                loop.call_soon_threadsafe(self.fail, exc)
            except RuntimeError:
                pass  # the loop is closed: nobody waits any more
            return
        if counted:
            with self._lock:
                self._live -= 1
                last = self._live == 0
            if last:
                self._hand_over(loop)

    def _serve(self, loop: asyncio.AbstractEventLoop, base: contextvars.Context) -> bool:
        """Take and call attempts until none is left; False when this thread's slot was given away."""
        todo, attempts, lock = self.todo, self.attempts, self._lock
        while not self._stopping:
            with lock:
                if not todo:
                    break
                scenario, index = todo.popleft()
                flight = attempts.begin(scenario, index)
                self._flights[flight] = None
            called = base.copy().run(attempts.call_blocking, flight, self._call)
            with lock:
                if self._flights.pop(flight, False) is False:
                    return False  # timed out: the watchdog reported it and gave this slot to a new thread
                self._ready.append(called)
                wake = len(self._ready) == 1
            if wake and not self._hand_over(loop):
                return False
        return True

    def _call(self, turns: Any, context: Any, config: Any, *, session_id: str) -> TargetOutput:
        return self.call(turns, context, config, session_id=session_id, loop=self._loop)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> bool:
        try:
            loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: the run ended (interrupted) and nobody waits any more
            self._stopping = True
            return False
        return True

    def _drain(self) -> None:
        with self._lock:
            ready, self._ready = self._ready, []
            finished = self._live == 0
        for called in ready:
            self.on_called(called)
        if finished and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _check_deadlines(self) -> None:
        """Report calls past their deadline as timed out and give their slots to new threads."""
        timeout = self.attempts.timeout_s
        now = time.perf_counter()
        expired: list[Flight] = []
        with self._lock:
            for flight in self._flights:
                if flight.t0 + timeout > now:
                    break
                expired.append(flight)
            for flight in expired:
                del self._flights[flight]
            replace = min(len(expired), len(self.todo)) if not self._stopping else 0
            self._live -= len(expired) - replace
            oldest = next(iter(self._flights), None)
        for _ in range(replace):
            self._start_thread(self._base)
        for flight in expired:
            self.on_called(self.attempts.expire(flight))
        self._drain()  # also ends the run when the expired calls were the last ones
        if self._done is None or self._done.done():
            return
        delay = timeout if oldest is None else max(0.0, oldest.t0 + timeout - now)
        assert self._loop is not None
        self._watchdog = self._loop.call_later(delay, self._check_deadlines)
