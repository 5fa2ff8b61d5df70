"""``record_feedback``: user feedback arriving later (maybe from another process), by trace id.

It is stored in the embedded store and, when traces also go there, written to Langfuse (a
``user-feedback`` score) and Phoenix (a ``user-feedback`` trace annotation), so a thumbs-down shows
where the team looks and ``replaygate failures --source langfuse|phoenix`` finds it.
"""

from __future__ import annotations

import os

from replaygate.instrumentation._errors import StoreError

__all__ = ["record_feedback"]


def record_feedback(
    trace_id: str,
    score: float | bool,
    comment: str | None = None,
    store: str | os.PathLike[str] | None = None,
    *,
    langfuse: bool | None = None,
    phoenix: bool | None = None,
) -> None:
    """Store feedback on a trace; a negative score makes it a failure candidate (``negative_feedback``).

    Works from any process that can open the store, before or after the trace itself is written.

    Args:
        trace_id: the trace id (32 hex digits, e.g. from ``current_trace_id()``).
        score: a float in [-1, 1] or a bool (thumbs up / down).
        comment: the user's comment, if any.
        store: the store path or URL (default: ``REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``);
            ``off`` keeps it out of the store.
        langfuse: also write a Langfuse score (default: when ``LANGFUSE_PUBLIC_KEY``/``_SECRET_KEY`` are set).
        phoenix: also write a Phoenix annotation (default: when ``PHOENIX_COLLECTOR_ENDPOINT`` is set).

    Raises:
        StoreError: the store cannot be opened or written, or the score is out of range.
        InstrumentationError: Langfuse or Phoenix could not be reached or refused it (the store has it).
    """
    from replaygate.instrumentation import _feedback_sinks as sinks
    from replaygate.instrumentation._store import TraceStore

    value = (1.0 if score else -1.0) if isinstance(score, bool) else score
    if store is None or str(store).strip().lower() != "off":
        with TraceStore(store) as trace_store:
            trace_store.record_feedback(trace_id, score, comment)
    elif not isinstance(value, int | float) or not -1.0 <= float(value) <= 1.0:
        raise StoreError(
            f"feedback score {score!r} for trace {trace_id} must be a number in [-1, 1] or a bool"
        )
    trace = str(trace_id).strip().lower().removeprefix("0x")
    if sinks.langfuse_configured() if langfuse is None else langfuse:
        sinks.send_langfuse(trace, float(value), comment)
    if sinks.phoenix_configured() if phoenix is None else phoenix:
        sinks.send_phoenix(trace, float(value), comment)
