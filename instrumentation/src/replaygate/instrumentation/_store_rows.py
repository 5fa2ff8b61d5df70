"""Row-level SQL of the trace store: load spans and feedback, refresh a trace's row, build filters.

Plain functions over an open ``sqlite3.Connection``; transactions are the caller's (``_store.py``).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from replaygate.instrumentation._records import SpanRecord, TraceSummary, ordered_reasons
from replaygate.instrumentation._store_db import record_from_row
from replaygate.instrumentation._summary import summarize_spans

__all__ = [
    "SPAN_COLUMNS",
    "load_feedback",
    "load_spans",
    "marks",
    "time_filter",
    "upsert_trace",
    "where",
    "with_feedback",
]

PREVIEW_CHARS = 200
SPAN_COLUMNS = (
    "trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status, status_message, attributes, events"
)


def _preview(text: str | None) -> str | None:
    if text is None:
        return None
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def with_feedback(summary: TraceSummary, scores: Iterable[float]) -> TraceSummary:
    if any(score < 0 for score in scores) and "negative_feedback" not in summary.failure_reasons:
        reasons = ordered_reasons((*summary.failure_reasons, "negative_feedback"))
        return dataclasses.replace(summary, failure_reasons=reasons)
    return summary


def marks(n: int) -> str:
    return ", ".join("?" * n)


def where(clauses: list[str]) -> str:
    return ("WHERE " + " AND ".join(clauses)) if clauses else ""


def _int64(value: int) -> int:
    """Clamp a time to SQLite's INTEGER range (times after 2262 do not fit in int64 nanoseconds)."""
    return max(-(2**63), min(2**63 - 1, int(value)))


def time_filter(since_ns: int | None, until_ns: int | None) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if since_ns is not None:
        clauses.append("t.start_ns >= ?")
        params.append(_int64(since_ns))
    if until_ns is not None:
        clauses.append("t.start_ns < ?")
        params.append(_int64(until_ns))
    return clauses, params


def _chunks(ids: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for index in range(0, len(ids), size):
        yield ids[index : index + size]


def load_spans(conn: sqlite3.Connection, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
    spans: dict[str, list[SpanRecord]] = {}
    for part in _chunks(trace_ids):
        rows = conn.execute(
            f"SELECT {SPAN_COLUMNS} FROM trace_spans WHERE trace_id IN ({marks(len(part))}) "
            "ORDER BY start_ns, end_ns",
            list(part),
        )
        for row in rows:
            record = record_from_row(row)
            spans.setdefault(record.trace_id, []).append(record)
    return spans


def load_feedback(conn: sqlite3.Connection, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    feedback: dict[str, list[dict[str, Any]]] = {}
    for part in _chunks(trace_ids):
        rows = conn.execute(
            f"SELECT trace_id, score, comment, created_ns FROM trace_feedback "
            f"WHERE trace_id IN ({marks(len(part))}) ORDER BY created_ns, id",
            list(part),
        )
        for trace_id, score, comment, created_ns in rows:
            feedback.setdefault(trace_id, []).append(
                {"score": float(score), "comment": comment, "created_ns": int(created_ns)}
            )
    return feedback


def upsert_trace(conn: sqlite3.Connection, spans: list[SpanRecord], scores: list[float]) -> None:
    summary = with_feedback(summarize_spans(spans), scores)
    conn.execute(
        "INSERT OR REPLACE INTO trace_traces (trace_id, start_ns, end_ns, session_id, user_id, agent_name, "
        "variant, config_id, input_preview, output_preview, failure, failure_reasons, updated_ns) "
        f"VALUES ({marks(13)})",
        (
            summary.trace_id,
            min(s.start_ns for s in spans),
            max(s.end_ns for s in spans),
            summary.session_id,
            summary.user_id,
            summary.agent_name,
            summary.variant,
            summary.config_id,
            _preview(summary.turns[-1] if summary.turns else None),
            _preview(summary.output),
            1 if summary.failure_reasons else 0,
            json.dumps(list(summary.failure_reasons)),
            time.time_ns(),
        ),
    )
