"""``record_feedback``: user feedback arriving later (from another process or machine), by trace id.

It is stored in the store (a SQLite file this process can open) or, from any machine, sent to the
receiver's HTTP endpoint: ``store="http://collector:4318"`` (or ``REPLAYGATE_FEEDBACK_URL``) posts it to
``/v1/feedback`` of ``replaygate collect`` with the bearer token ``REPLAYGATE_COLLECT_TOKEN``. When traces
also go there, it is written to Langfuse (a ``user-feedback`` score) and Phoenix (a ``user-feedback``
trace annotation), so a thumbs-down shows where the team looks and
``replaygate failures --source langfuse|phoenix`` finds it.
"""

from __future__ import annotations

import json
import os

from replaygate.instrumentation._errors import StoreError

__all__ = ["FEEDBACK_URL_ENV", "record_feedback"]

FEEDBACK_URL_ENV = "REPLAYGATE_FEEDBACK_URL"


def _post(url: str, trace_id: str, score: float | bool, comment: str | None, timeout_s: float) -> None:
    endpoint = url if url.rstrip("/").endswith("/v1/feedback") else url.rstrip("/") + "/v1/feedback"
    token = os.environ.get("REPLAYGATE_COLLECT_TOKEN", "")
    body = json.dumps({"trace_id": trace_id, "score": score, "comment": comment}).encode()
    import urllib.error  # noqa: PLC0415 - lazy: a process that never sends feedback never loads http/ssl/email
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(
        endpoint,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read(4096)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2048).decode("utf-8", "replace")
        hint = ""
        if exc.code in (401, 403):
            hint = (
                "; REPLAYGATE_COLLECT_TOKEN is not set in this process: set it to the receiver's token"
                if not token
                else "; REPLAYGATE_COLLECT_TOKEN here differs from the receiver's"
            )
        raise StoreError(
            f"feedback for trace {trace_id} refused by {endpoint}: {exc.code} {detail.strip()}{hint}"
        ) from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot send feedback for trace {trace_id} to {endpoint}: {exc}") from exc


def record_feedback(
    trace_id: str,
    score: float | bool,
    comment: str | None = None,
    store: str | os.PathLike[str] | None = None,
    *,
    timeout_s: float = 5.0,
    langfuse: bool | None = None,
    phoenix: bool | None = None,
) -> None:
    """Store feedback on a trace; a negative score makes it a failure candidate (``negative_feedback``).

    Works from any process that can open the store, before or after the trace itself is written.

    Args:
        trace_id: the trace id (32 hex digits, e.g. from ``current_trace_id()``).
        score: a float in [-1, 1] or a bool (thumbs up / down).
        comment: the user's comment, if any.
        store: the store path, or the ``http(s)://`` URL of ``replaygate collect`` (default:
            ``REPLAYGATE_FEEDBACK_URL``, else ``REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``);
            ``off`` keeps it out of the store.
        timeout_s: the HTTP request's timeout (to ``replaygate collect``).
        langfuse: also write a Langfuse score (default: when ``LANGFUSE_PUBLIC_KEY``/``_SECRET_KEY`` are set).
        phoenix: also write a Phoenix annotation (default: when ``PHOENIX_COLLECTOR_ENDPOINT`` is set).

    Raises:
        StoreError: the store cannot be opened or written (or the receiver refused it), or the score is
            out of range.
        InstrumentationError: Langfuse or Phoenix could not be reached or refused it (the store has it).
    """
    from replaygate.instrumentation import _feedback_sinks as sinks
    from replaygate.instrumentation._store import TraceStore

    value = (1.0 if score else -1.0) if isinstance(score, bool) else score
    target = os.fspath(store) if store is not None else os.environ.get(FEEDBACK_URL_ENV)
    if target is not None and target.startswith(("http://", "https://")):
        _post(target, trace_id, score, comment, timeout_s)
    elif target is None or str(target).strip().lower() != "off":
        with TraceStore(target) as trace_store:
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
