"""The canary row as ``GET /api/canary`` serves it: read from the store at most once per ``ttl_s`` per worker.

Fifty routing clients polling four gunicorn workers would otherwise read ``canary_state`` per request. The
cache holds the last row read; a request after ``ttl_s`` refreshes it, while requests that arrive during
that refresh get the row already held instead of waiting (only the very first request of a worker waits).
A read that fails is raised (the endpoint answers an error and routing clients serve the baseline), and
the next request tries again. A change this worker made (the page's or the API's actions: the
``stamp``, ``CanaryStore.writes``, moved) is read at once; changes by other workers or the CLI are served
within ``ttl_s``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from replaygate.canary import RolloutState

__all__ = ["STATE_TTL_S", "StateCache"]

#: How old a served row may be, in seconds (a rollback reaches routing clients within this plus their
#: own refresh interval).
STATE_TTL_S = 1.0


class StateCache:
    """The last ``canary_state`` row read, refreshed by one request at a time after ``ttl_s``."""

    def __init__(
        self,
        read: Callable[[], RolloutState],
        ttl_s: float = STATE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        stamp: Callable[[], int] = lambda: 0,
    ) -> None:
        self._read = read
        self._stamp = stamp
        self._seen = stamp()
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._value: RolloutState | None = None
        self._at = float("-inf")
        self.reads = 0

    def get(self) -> RolloutState:
        """The cached row while fresh; else a new read (or, while another thread reads, the held row)."""
        value = self._value
        if self._stamp() != self._seen:  # changed here: never serve the row from before
            value = None
        elif value is not None and self._clock() - self._at < self._ttl:
            return value
        if not self._lock.acquire(blocking=value is None):
            return value  # type: ignore[return-value]  # another request is reading: serve the held row
        try:
            stamp = self._stamp()
            if stamp == self._seen and self._value is not None and self._clock() - self._at < self._ttl:
                return self._value
            fresh = self._read()
            self.reads += 1
            self._value, self._at, self._seen = fresh, self._clock(), stamp
            return fresh
        finally:
            self._lock.release()

    def invalidate(self) -> None:
        """Forget the held row's age: the next request reads the store."""
        self._at = float("-inf")
