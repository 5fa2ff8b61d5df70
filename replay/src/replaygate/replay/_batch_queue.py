"""``next_batch``: what a background writer thread (journal, artifacts) takes from its queue at once."""

from __future__ import annotations

import queue
import time
from typing import Any, TypeVar

__all__ = ["STOP", "next_batch"]

#: Put on a writer's queue to tell its thread to finish after what was queued before.
STOP: Any = object()

_T = TypeVar("_T")


def next_batch(q: queue.SimpleQueue[Any], *, until: float | None = None) -> tuple[list[_T], bool]:
    """Wait for the next list of items, then take every list already waiting as well.

    With ``until`` (a ``time.monotonic()`` value), lists arriving before then are taken too (a larger
    group for one write), unless :data:`STOP` comes first. Returns the items of all those lists, in order,
    and whether :data:`STOP` was among them.
    """
    lists = [q.get()]
    stopped = lists[0] is STOP
    while not stopped:
        try:
            wait = 0.0 if until is None else until - time.monotonic()
            held = q.get(timeout=wait) if wait > 0 else q.get_nowait()
        except queue.Empty:
            break
        lists.append(held)
        stopped = held is STOP
    if stopped:  # whatever came before STOP still goes in this batch
        while True:
            try:
                lists.append(q.get_nowait())
            except queue.Empty:
                break
    return [item for held in lists if held is not STOP for item in held], any(held is STOP for held in lists)
