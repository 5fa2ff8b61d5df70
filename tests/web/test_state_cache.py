"""``GET /api/canary``'s cached row: one store read per TTL, and nobody waits on a refresh but the first."""

from __future__ import annotations

import threading
import time

import pytest

from replaygate.canary import RolloutState
from replaygate.web._state_cache import StateCache


def _state(version: int) -> RolloutState:
    return RolloutState(status="canary", version=version)


def test_one_read_per_ttl_then_a_fresh_row() -> None:
    now = [0.0]
    versions = iter(range(1, 100))
    cache = StateCache(lambda: _state(next(versions)), ttl_s=1.0, clock=lambda: now[0])
    assert [cache.get().version for _ in range(50)] == [1] * 50 and cache.reads == 1
    now[0] = 1.01
    assert cache.get().version == 2 and cache.reads == 2
    cache.invalidate()
    assert cache.get().version == 3


def test_requests_during_a_slow_refresh_get_the_held_row() -> None:
    now = [0.0]
    gate = threading.Event()
    calls = [0]

    def read() -> RolloutState:
        calls[0] += 1
        if calls[0] == 2:
            gate.wait(10)  # the second read hangs until released
        return _state(calls[0])

    cache = StateCache(read, ttl_s=1.0, clock=lambda: now[0])
    assert cache.get().version == 1
    now[0] = 2.0
    slow = threading.Thread(target=cache.get)
    slow.start()
    while calls[0] < 2:
        time.sleep(0.001)
    t0 = time.perf_counter()
    assert cache.get().version == 1  # served at once, not after the hanging read
    assert time.perf_counter() - t0 < 0.05
    gate.set()
    slow.join(10)
    assert cache.get().version == 2


def test_a_failed_read_is_an_error_not_a_stale_row_forever() -> None:
    def broken() -> RolloutState:
        raise OSError("database is down")

    with pytest.raises(OSError, match="down"):
        StateCache(broken).get()


def test_a_change_made_in_this_process_is_read_at_once() -> None:
    writes = [0]
    versions = iter(range(1, 100))
    cache = StateCache(lambda: _state(next(versions)), ttl_s=60.0, stamp=lambda: writes[0])
    assert cache.get().version == 1 and cache.get().version == 1
    writes[0] += 1  # e.g. the page's rollback in this worker
    assert cache.get().version == 2 and cache.reads == 2
