"""The page's canary views (status, measures, charts), computed at most once per ``ttl_s`` per worker.

A look at the canary (live measures, intervals, evidence, the series) costs a tenth of a second or more
of server CPU; four releasers reloading the page on four gunicorn workers would otherwise spend the
machine on recomputing the same numbers and starve the routing clients' state reads. Each view is
cached per worker under a key that includes the rollout and its state ``version``: a page view reads the
state row (one primary-key ``SELECT``) and reuses the held view while it is younger than ``ttl_s`` and of
the same state, so an action (here or on another worker) is seen at once, and the measures are at most
``ttl_s`` old. One request at a time recomputes a view; the others serve the held one meanwhile (a
request whose state has no held view waits for it). A failed computation is raised, never cached.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["VIEW_TTL_S", "ViewCache"]

#: How old the measures shown on the page may be, in seconds.
VIEW_TTL_S = 5.0


class ViewCache:
    """Named views, each held for one key (the state it was computed for) and recomputed after ``ttl_s``."""

    def __init__(self, ttl_s: float = VIEW_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._guard = threading.Lock()
        self._held: dict[str, tuple[Hashable, Any, float]] = {}
        self._locks: dict[str, threading.Lock] = {}
        self.computed = 0

    def get(self, name: str, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The view ``name`` for ``key``: held while fresh, else computed (by one request at a time)."""
        with self._guard:
            held = self._held.get(name)
            lock = self._locks.setdefault(name, threading.Lock())
        same = held is not None and held[0] == key
        if held is not None and same and self._clock() - held[2] < self._ttl:
            return held[1]
        if not lock.acquire(blocking=not same):
            return held[1]  # type: ignore[index]  # another request recomputes this state's view
        try:
            with self._guard:
                held = self._held.get(name)
            if held is not None and held[0] == key and self._clock() - held[2] < self._ttl:
                return held[1]
            value = compute()
            self.computed += 1
            with self._guard:
                self._held[name] = (key, value, self._clock())
            return value
        finally:
            lock.release()
