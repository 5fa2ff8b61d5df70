"""``record_feedback``: user feedback arriving later (maybe from another process), by trace id."""

from __future__ import annotations

import os

__all__ = ["record_feedback"]


def record_feedback(
    trace_id: str,
    score: float | bool,
    comment: str | None = None,
    store: str | os.PathLike[str] | None = None,
) -> None:
    """Store feedback on a trace; a negative score makes it a failure candidate (``negative_feedback``).

    Works from any process that can open the store, before or after the trace itself is written.

    Args:
        trace_id: the trace id (32 hex digits, e.g. from ``current_trace_id()``).
        score: a float in [-1, 1] or a bool (thumbs up / down).
        comment: the user's comment, if any.
        store: the store path or URL (default: ``REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``).

    Raises:
        StoreError: the store cannot be opened or written, or the score is out of range.
    """
    from replaygate.instrumentation._store import TraceStore

    with TraceStore(store) as trace_store:
        trace_store.record_feedback(trace_id, score, comment)
