"""Keep the cyclic garbage collector off the objects that exist before a long batch of work.

``old_objects_frozen()`` (exported: the gate uses it too) moves every object alive now out of the
collector's passes (``gc.freeze``) until the block ends; frozen objects are still freed by reference
counting. ``first_threshold`` also collects the first generation less often for the block: each
collection visits every young object alive then, which in a run are the attempts in flight. Both are
restored on the way out. A process whose collector is off, or that froze objects itself, is left alone.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["old_objects_frozen"]


@contextmanager
def old_objects_frozen(first_threshold: int | None = None) -> Iterator[None]:
    """Freeze what is alive now for the block (and raise the first threshold to ``first_threshold``)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    if first_threshold is not None:
        gc.set_threshold(max(thresholds[0], first_threshold), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
