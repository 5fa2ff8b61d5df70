"""``next_batch``: what a background writer thread (journal, artifacts) takes from its queue at once."""

from __future__ import annotations

import queue
from typing import Any, TypeVar

__all__ = ["STOP", "next_batch"]

#: Put on a writer's queue to tell its thread to finish after what was queued before.
STOP: Any = object()

_T = TypeVar("_T")


def next_batch(q: queue.SimpleQueue[Any]) -> tuple[list[_T], bool]:
    """Wait for the next list of items, then take every list already waiting as well.

    Returns the items of all those lists, in order, and whether :data:`STOP` was among them.
    """
    lists = [q.get()]
    while True:
        try:
            lists.append(q.get_nowait())
        except queue.Empty:
            break
    return [item for held in lists if held is not STOP for item in held], any(held is STOP for held in lists)
