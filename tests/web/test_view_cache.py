"""The page's canary views: recomputed at most once per TTL per state, never shown for another state."""

from __future__ import annotations

import threading
import time

import pytest

from replaygate.web._view_cache import ViewCache


def test_one_computation_per_ttl_and_state() -> None:
    now = [0.0]
    cache = ViewCache(ttl_s=5.0, clock=lambda: now[0])
    calls = iter(range(1, 100))
    assert [cache.get("page", ("r1", 1), lambda: next(calls)) for _ in range(20)] == [1] * 20
    now[0] = 4.9
    assert cache.get("page", ("r1", 1), lambda: next(calls)) == 1
    assert cache.get("page", ("r1", 2), lambda: next(calls)) == 2  # the state moved: computed at once
    now[0] = 10.0
    assert cache.get("page", ("r1", 2), lambda: next(calls)) == 3  # too old: computed again
    assert cache.get("other", ("r1", 2), lambda: next(calls)) == 4  # views are held apart
    assert cache.computed == 4


def test_viewers_during_a_slow_recompute_get_the_held_view_of_the_same_state() -> None:
    now = [0.0]
    cache = ViewCache(ttl_s=1.0, clock=lambda: now[0])
    assert cache.get("page", "s1", lambda: "first") == "first"
    now[0] = 2.0
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "second"

    worker = threading.Thread(target=cache.get, args=("page", "s1", slow))
    worker.start()
    assert started.wait(10)
    t0 = time.perf_counter()
    assert cache.get("page", "s1", lambda: "never") == "first"  # not waiting on the recompute
    assert time.perf_counter() - t0 < 0.5
    release.set()
    worker.join(10)
    assert cache.get("page", "s1", lambda: "never") == "second"


def test_a_failed_computation_is_raised_and_not_held() -> None:
    cache = ViewCache()

    def broken() -> str:
        raise OSError("database is down")

    with pytest.raises(OSError, match="down"):
        cache.get("page", "s1", broken)
    assert cache.get("page", "s1", lambda: "ok") == "ok"
