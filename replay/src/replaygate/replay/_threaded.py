"""Sync targets: each slot of concurrency is a daemon thread that takes its next attempt itself.

The threads are workers of the replay's one thread pool (``_daemon_pool.DaemonThreadPool``, bounded to
``concurrency`` and grown by one for each call given up at its deadline), each handed a loop of its own
(``DaemonThreadPool.spawn``).

A sync agent call blocks a thread, and a thread needs the GIL to go from one call to the next: every
moment it waits for the GIL, its slot of concurrency is idle. So each of ``concurrency`` threads loops on
its own and holds the GIL as briefly as it can between two calls: leave the last call's result in a list,
take the next (scenario, index), open its root span, call the target. Everything else (the spans as
records, scoring, the journal) happens on the event loop, which collects the finished calls every
millisecond: a thread never wakes the loop itself (a wake-up writes to a socket, and giving up the GIL for
that write could cost the thread its turn for several milliseconds).

No lock is taken between two calls: the steps a thread takes there (pop its flight, append its result,
take the next pair, register the new flight) are each one operation on a dict, a list or a deque, atomic
under the GIL. Threads that took a shared lock there queued behind a thread the GIL had switched away
from while it held the lock, each queueing a context switch (half the switches of a run of a fast target
were threads waiting for that lock). Whether a call's result counts is decided by who pops its flight
first: the thread (it returned) or the watchdog (it timed out), each pop atomic.

Timeouts: a watchdog on the loop wakes at the earliest deadline of the calls under way. A call still
running at its deadline becomes an ``error`` attempt ("timed out after Xs") at once, and a new thread takes
its slot; the stuck thread is a daemon, drops its result when the call returns, and ends. A call that
returns after its deadline but before the watchdog saw it is an error too.

The pool's threads are daemons: one agent call that hangs forever never keeps ``replaygate run`` from
exiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from replaygate.replay._attempt import AttemptRunner, Called, Flight, Returned
from replaygate.replay._daemon_pool import DaemonThreadPool
from replaygate.replay._scenario import Scenario
from replaygate.replay._target import TargetOutput

__all__ = ["POLL_S", "ThreadedCalls"]

#: How often the event loop collects the calls the threads finished (seconds).
POLL_S = 0.001


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
        self._lock = threading.Lock()  # the thread count, and a future registered against a timeout
        self._ready: deque[Returned] = deque()  # finished calls not yet collected by the loop
        self._flights: dict[Flight, None] = {}  # calls under way (about in start order)
        self._live = 0  # threads whose results still count
        self._stopping = False
        self._pool = DaemonThreadPool(self.concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Future[None] | None = None
        self._base = contextvars.Context()
        self._timers: list[asyncio.TimerHandle] = []

    async def run(self) -> None:
        """Run every attempt of ``todo`` (or until :meth:`fail`); returns once each call was handed over."""
        loop = self._loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self._base = contextvars.copy_context()  # each attempt runs in a copy of it: no context leaks
        with self._lock:
            n = min(self.concurrency, len(self.todo))
            self._live = n
        if n == 0:
            return
        try:
            for _ in range(n):
                self._start_thread()
            self._timers = [
                loop.call_later(POLL_S, self._poll),
                loop.call_later(self.attempts.timeout_s, self._check_deadlines),
            ]
            await self._done
        finally:
            with self._lock:
                self._stopping = True
                running = list(self._flights)
            for timer in self._timers:
                timer.cancel()
            self._pool.shutdown()  # idle threads end now, a stuck one when its call returns
            for flight in running:  # what the unfinished calls started elsewhere ends with the run
                _cancel(flight)

    def fail(self, exc: BaseException) -> None:
        """Stop taking attempts and make :meth:`run` raise ``exc`` (call on the event loop)."""
        self._stopping = True
        if self._done is not None and not self._done.done():
            self._done.set_exception(exc)

    def _start_thread(self) -> None:
        self._pool.spawn(self._work, then_end=True)  # ends when no attempt is left

    def _work(self) -> None:
        try:
            counted = self._serve()
        except BaseException as exc:  # noqa: BLE001 - a bug in the runner: the run fails with it, never hangs
            self._stopping = True
            assert self._loop is not None
            try:
                self._loop.call_soon_threadsafe(self.fail, exc)
            except RuntimeError:
                pass  # the loop is closed: nobody waits any more
            return
        if counted:
            with self._lock:
                self._live -= 1

    def _serve(self) -> bool:
        """Take and call attempts until none is left; False when this thread's slot was given away."""
        todo, attempts, flights, ready, base = (
            self.todo,
            self.attempts,
            self._flights,
            self._ready,
            self._base,
        )
        returned: Returned | None = None
        while True:  # each step one atomic operation (see the module docstring): no lock
            if returned is not None:
                if flights.pop(returned[0], False) is False:
                    return False  # timed out: the watchdog reported it and gave this slot to a new thread
                if not self._stopping:  # once stopped, nobody collects it
                    ready.append(returned)
                returned = None
            if self._stopping:
                return True
            try:
                scenario, index = todo.popleft()
            except IndexError:
                return True
            flight = attempts.begin(scenario, index)
            flights[flight] = None
            returned = base.copy().run(attempts.call_blocking, flight, functools.partial(self._call, flight))

    def _call(
        self, flight: Flight, turns: Any, context: Any, config: Any, *, session_id: str
    ) -> TargetOutput:
        def track(future: concurrent.futures.Future[Any]) -> None:
            with self._lock:  # the watchdog gives flights up under this lock: this one is still ours, or not
                if flight in self._flights:
                    flight.pending.append(future)
                    return
            future.cancel()  # the call was given up (timed out, or the run ended) meanwhile

        return self.call(turns, context, config, session_id=session_id, loop=self._loop, on_awaitable=track)

    def _collect(self) -> None:
        """Hand the finished calls to ``on_called``; end :meth:`run` when every thread is done."""
        with self._lock:
            finished = self._live == 0  # read first: a thread appends its last result before it ends
        ready, called, on_called = self._ready, self.attempts.called, self.on_called
        while ready:  # the only consumer: popleft is atomic beside the threads' appends
            flight, output, error, latency_s = ready.popleft()
            on_called(called(flight, output, error, latency_s))
        if finished and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _poll(self) -> None:
        try:
            self._collect()
        except BaseException as exc:  # noqa: BLE001 - a bug: the run fails with it, it never hangs or drops
            self.fail(exc)
        finally:
            if self._done is not None and not self._done.done():
                assert self._loop is not None
                self._timers[0] = self._loop.call_later(POLL_S, self._poll)

    def _check_deadlines(self) -> None:
        """Report calls past their deadline as timed out and give their slots to new threads."""
        timeout = self.attempts.timeout_s
        now = time.perf_counter()
        oldest: Flight | None = None
        try:
            expired: list[Flight] = []
            with self._lock:
                # Every flight is looked at (they are registered about, not exactly, in start order); a
                # snapshot, as the threads add and remove flights meanwhile. A flight is expired only if
                # this pop takes it: its thread, returning now, may have popped it first.
                for flight in list(self._flights):
                    if flight.t0 + timeout > now:
                        if oldest is None or flight.t0 < oldest.t0:
                            oldest = flight
                    elif self._flights.pop(flight, False) is not False:
                        expired.append(flight)
                replace = min(len(expired), len(self.todo)) if not self._stopping else 0
                self._live -= len(expired) - replace
            for flight in expired:
                _cancel(flight)
                self.on_called(self.attempts.expire(flight))
            for _ in range(replace):
                self._pool.give_up()  # the stuck thread keeps its call: one more thread takes the slot
                self._start_thread()  # a thread that cannot start fails the run (below)
            self._collect()  # also ends the run when the expired calls were the last ones
        except BaseException as exc:  # noqa: BLE001 - a bug or no threads left: fail the run, never hang
            self.fail(exc)
        finally:
            if self._done is not None and not self._done.done():
                delay = timeout if oldest is None else max(0.0, oldest.t0 + timeout - now)
                assert self._loop is not None
                self._timers[1] = self._loop.call_later(delay, self._check_deadlines)


def _cancel(flight: Flight) -> None:
    for future in flight.pending:
        future.cancel()
