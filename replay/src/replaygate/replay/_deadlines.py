"""``Deadlines``: one timer for every async target call of a run, instead of one ``asyncio.timeout`` each.

Every call of a run has the same timeout, so the calls' deadlines come in the order the calls start: an
insertion-ordered mapping of the calls under way (a call that ends leaves it), and one timer handle armed
at the earliest deadline still pending. At a deadline the call's task
is cancelled, as ``asyncio.timeout`` would; :meth:`Deadline.stop` (when the call returns or raises)
says whether that cancellation was this deadline's own, so the caller turns it into the ``timed out``
error and lets any other cancellation (the run interrupted) go on. The same semantics as
``asyncio.timeout`` (``uncancel`` against the task's cancel count when the call started), without a timer
handle created and cancelled per call.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Deadline", "Deadlines"]


class Deadline:
    """The deadline of one call under way (see :meth:`Deadlines.start`)."""

    __slots__ = ("cancelling", "expired", "owner", "task", "when")

    def __init__(self, owner: Deadlines, task: asyncio.Task[object], when: float) -> None:
        self.owner = owner
        self.task = task
        self.when = when
        self.cancelling = task.cancelling()
        self.expired = False

    def stop(self) -> bool:
        """End this deadline; True when it expired and cancelled the call (the call timed out)."""
        if self.expired:
            return self.task.uncancel() <= self.cancelling
        self.owner.pending.pop(self, None)
        return False


class Deadlines:
    """The deadlines of a run's async calls, all ``timeout_s`` long, served by one timer."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.pending: dict[Deadline, None] = {}
        """The deadlines of the calls under way, earliest first."""
        self._timer: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Task[Any] | None = None) -> Deadline:
        """The deadline of a call the current task starts now (stop it when the call ends).

        ``task`` is the current task when the caller knows it already (a worker making many calls).
        """
        if task is None:
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("a deadline needs a running task")
        loop = task.get_loop()
        deadline = Deadline(self, task, loop.time() + self.timeout_s)
        self.pending[deadline] = None
        if self._timer is None:
            self._timer = loop.call_at(deadline.when, self._fire, loop)
        return deadline

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time()
        expired = []
        for deadline in self.pending:
            if deadline.when > now:
                break
            expired.append(deadline)
        for deadline in expired:
            del self.pending[deadline]
            deadline.expired = True
            deadline.task.cancel()
        first = next(iter(self.pending), None)
        if first is not None:
            self._timer = loop.call_at(first.when, self._fire, loop)

    def close(self) -> None:
        """Stop the timer (the run is over)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.pending.clear()
