"""Rows of the trace store: span rows, the per-trace row (the same for every writer), and SQLite reads.

:func:`trace_row_values` is the one definition of a trace's row (times, session, variant, previews, failure
reasons and the canary's per-request measures: error, empty answer, escalation, negative feedback, latency,
LLM calls), used by this SQLite writer and by the control plane's SQLAlchemy store alike. The other
functions are plain SQL over an open ``sqlite3.Connection``; transactions are the caller's (``_store.py``).
"""

from __future__ import annotations

import dataclasses
import json
import json.encoder
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._records import (
    SpanKind,
    SpanRecord,
    TraceRecord,
    TraceSummary,
    ordered_reasons,
)
from replaygate.instrumentation._store_trace_row import (
    TRACE_COLUMNS,
    json_list,
    trace_row_draft,
    with_scores,
)
from replaygate.instrumentation._summary import summarize_spans

__all__ = [
    "BatchRows",
    "SPAN_COLUMNS",
    "TRACE_COLUMNS",
    "batch_trace_rows",
    "build_records",
    "feedback_value",
    "normalize_trace_id",
    "trace_id_range",
    "id_chunks",
    "record_from_row",
    "record_to_row",
    "refresh_all_traces",
    "trace_row_values",
    "load_feedback",
    "load_spans",
    "Execute",
    "in_list",
    "read_feedback",
    "read_spans",
    "marks",
    "upsert_trace",
    "with_feedback",
]

#: Runs one SQL statement with named parameters (``:name``) and returns its rows, inside the caller's
#: transaction: ``sqlite3.Connection.execute``, or SQLAlchemy's ``conn.execute(text(sql), params)``.
Execute = Callable[[str, Mapping[str, Any]], Iterable[Sequence[Any]]]


def _row_encoder() -> Callable[[Any], str]:
    """Compact JSON text of a row's attributes or events (unknown types as text), built once.

    ``JSONEncoder.encode`` builds a new C encoder at every call; this one is made once. There is no
    circular-reference check: the values are fresh plain data (``jsonable``), which cannot hold a cycle.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator (another Python): the pure-Python encoder
        return json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":")).encode
    encoder = make(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    join = "".join
    return lambda value: join(encoder(value, 0))


_encode = _row_encoder()
_dumps = json_list
SPAN_COLUMNS = (
    "trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status, status_message, attributes, events"
)
_KINDS = {"agent", "retrieval", "tool", "llm", "other"}
_STATUSES = {"ok", "error", "unset"}


def record_to_row(record: SpanRecord) -> tuple[Any, ...]:
    """The ``trace_spans`` row of one span (attributes and events as JSON)."""
    return (
        record.trace_id,
        record.span_id,
        record.parent_id,
        record.name,
        record.kind,
        record.start_ns,
        record.end_ns,
        record.status,
        record.status_message,
        _encode(record.attributes),
        _encode(list(record.events)) if record.events else "[]",
    )


def record_from_row(row: Iterable[Any]) -> SpanRecord:
    """Rebuild a :class:`SpanRecord` from a ``trace_spans`` row."""
    (trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status, message, attributes, events) = row
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        name=name,
        kind=cast(SpanKind, kind if kind in _KINDS else "other"),
        start_ns=int(start_ns),
        end_ns=int(end_ns),
        status=status if status in _STATUSES else "unset",
        status_message=message,
        attributes=json.loads(attributes),
        events=tuple(json.loads(events)),
    )


_HEX = frozenset("0123456789abcdef")


def normalize_trace_id(trace_id: str) -> str:
    """A trace id as stored: 32 lowercase hex characters (``0x`` and case accepted)."""
    value = str(trace_id).strip().lower().removeprefix("0x")
    if len(value) != 32 or not set(value) <= _HEX:
        raise StoreError(f"{trace_id!r} is not a trace id: expected 32 hexadecimal characters")
    return value


def trace_id_range(prefix: str) -> tuple[str, str | None]:
    """``(full id, None)`` for a full id, else ``(low, high)``: the ids that start with ``prefix``."""
    value = str(prefix).strip().lower().removeprefix("0x")
    if len(value) == 32:
        return normalize_trace_id(value), None
    if not 6 <= len(value) < 32 or not set(value) <= _HEX:
        raise StoreError(f"{prefix!r} is not a trace id or prefix: give 6 to 32 hexadecimal characters")
    return value, value + "g"  # "g" sorts after every hex continuation of the prefix


def feedback_value(trace_id: str, score: float | bool) -> tuple[str, float]:
    """Validate one feedback: the normalized trace id and the score as a float in [-1, 1]."""
    trace = normalize_trace_id(trace_id)
    value = (1.0 if score else -1.0) if isinstance(score, bool) else score
    if not isinstance(value, int | float) or not -1.0 <= float(value) <= 1.0:
        raise StoreError(f"feedback score {score!r} for trace {trace} must be a number in [-1, 1] or a bool")
    return trace, float(value)


def build_records(
    rows: Iterable[Sequence[Any]],
    spans: dict[str, list[SpanRecord]],
    feedback: dict[str, list[dict[str, Any]]],
) -> list[TraceRecord]:
    """Trace records from ``(trace_id, start_ns, end_ns)`` rows and their spans and feedback."""
    records = []
    for trace_id, start_ns, end_ns in rows:
        items = feedback.get(trace_id, [])
        summary = with_feedback(summarize_spans(spans.get(trace_id, [])), (f["score"] for f in items))
        records.append(
            TraceRecord(
                summary=summary,
                spans=tuple(spans.get(trace_id, [])),
                start_ns=int(start_ns),
                end_ns=int(end_ns),
                feedback=tuple(items),
            )
        )
    return records


def with_feedback(summary: TraceSummary, scores: Iterable[float]) -> TraceSummary:
    if any(score < 0 for score in scores) and "negative_feedback" not in summary.failure_reasons:
        reasons = ordered_reasons((*summary.failure_reasons, "negative_feedback"))
        return dataclasses.replace(summary, failure_reasons=reasons)
    return summary


def marks(n: int) -> str:
    return ", ".join("?" * n)


def id_chunks(ids: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    """``ids`` in slices of ``size``: each slice fits in one ``IN (...)`` of a query."""
    for index in range(0, len(ids), size):
        yield ids[index : index + size]


def in_list(name: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """``:name0, :name1, ...`` for an ``IN (...)``, filling ``params``."""
    marks = []
    for i, value in enumerate(values):
        params[f"{name}{i}"] = value
        marks.append(f":{name}{i}")
    return ", ".join(marks)


def read_spans(execute: Execute, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
    """Every stored span of these traces, by trace id, each trace's in start order."""
    spans: dict[str, list[SpanRecord]] = {}
    for part in id_chunks(list(trace_ids)):
        params: dict[str, Any] = {}
        sql = (
            f"SELECT {SPAN_COLUMNS} FROM trace_spans WHERE trace_id IN ({in_list('t', part, params)}) "
            "ORDER BY start_ns, end_ns"
        )
        for row in execute(sql, params):
            record = record_from_row(row)
            spans.setdefault(record.trace_id, []).append(record)
    return spans


def read_feedback(execute: Execute, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Every feedback of these traces (``score``, ``comment``, ``created_ns``), oldest first."""
    feedback: dict[str, list[dict[str, Any]]] = {}
    for part in id_chunks(list(trace_ids)):
        params: dict[str, Any] = {}
        sql = (
            "SELECT trace_id, score, comment, created_ns FROM trace_feedback "
            f"WHERE trace_id IN ({in_list('t', part, params)}) ORDER BY created_ns, id"
        )
        for trace_id, score, comment, created_ns in execute(sql, params):
            feedback.setdefault(trace_id, []).append(
                {"score": float(score), "comment": comment, "created_ns": int(created_ns)}
            )
    return feedback


def load_spans(conn: sqlite3.Connection, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
    """:func:`read_spans` on an open ``sqlite3`` connection."""
    return read_spans(conn.execute, trace_ids)


def load_feedback(conn: sqlite3.Connection, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """:func:`read_feedback` on an open ``sqlite3`` connection."""
    return read_feedback(conn.execute, trace_ids)


def trace_row_values(spans: Sequence[SpanRecord], scores: Iterable[float]) -> dict[str, Any]:
    """The ``trace_traces`` row of a trace from all its spans and its feedback scores.

    The per-request measures follow the canary's definitions: an error (exception) is not also an empty
    answer; negative feedback is any score below 0.
    """
    row, reasons = trace_row_draft(spans)
    return with_scores(row, reasons, scores)


class BatchRows:
    """The trace rows one batch of spans gives, built mostly before the batch's write transaction.

    A trace whose spans all arrive in one batch (the usual case) gets its row from the batch alone, so
    that work is done here, outside the transaction, and the store's write lock is held only for the SQL.
    :meth:`rows` (inside the transaction) re-reads only the traces that had spans stored before, and
    applies stored feedback. ``BatchRows(records).rows(prior, load, feedback)`` is exactly
    :func:`batch_trace_rows`.

    Args:
        records: the batch, as it will be written to ``trace_spans``.
    """

    def __init__(self, records: Sequence[SpanRecord]) -> None:
        by_trace: dict[str, dict[str, SpanRecord]] = {}
        for record in records:
            by_trace.setdefault(record.trace_id, {})[record.span_id] = record
        self.trace_ids = sorted(by_trace)
        self._drafts: dict[str, tuple[dict[str, Any], tuple[str, ...]] | None] = {}
        for trace_id in self.trace_ids:
            # In batch order: the row's reader orders the spans itself (a stable sort, so the same order).
            spans = list(by_trace[trace_id].values())
            self._drafts[trace_id] = trace_row_draft(spans) if any(s.kind == "agent" for s in spans) else None

    def rows(
        self,
        prior: set[str],
        load: Callable[[list[str]], dict[str, list[SpanRecord]]],
        feedback: dict[str, list[dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """The rows to upsert, in trace id order.

        Args:
            prior: ids of the batch's traces that had spans stored before it: only those are re-read.
            load: reads every stored span of the given traces (after the batch was written).
            feedback: stored feedback of the batch's traces.
        """
        again = [t for t in self.trace_ids if t in prior]
        loaded = load(again) if again else {}
        rows = []
        for trace_id in self.trace_ids:
            if trace_id in prior:
                spans = loaded.get(trace_id, [])
                draft = trace_row_draft(spans) if any(s.kind == "agent" for s in spans) else None
            else:
                draft = self._drafts[trace_id]
            if draft is not None:
                scores = [f["score"] for f in feedback.get(trace_id, [])]
                rows.append(with_scores(draft[0], draft[1], scores))
        return rows


def batch_trace_rows(
    records: Sequence[SpanRecord],
    prior: set[str],
    load: Callable[[list[str]], dict[str, list[SpanRecord]]],
    feedback: dict[str, list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The rows of the traces one written batch touches (those with an agent span), for any writer.

    Args:
        records: the batch (already written to ``trace_spans``).
        prior: ids of the batch's traces that had spans stored before it: only those are re-read.
        load: reads every stored span of the given traces (after the batch was written).
        feedback: stored feedback of the batch's traces.
    """
    return BatchRows(records).rows(prior, load, feedback)


def upsert_trace(conn: sqlite3.Connection, spans: list[SpanRecord], scores: list[float]) -> None:
    values = trace_row_values(spans, scores)
    conn.execute(
        f"INSERT OR REPLACE INTO trace_traces ({', '.join(TRACE_COLUMNS)}) "
        f"VALUES ({marks(len(TRACE_COLUMNS))})",
        tuple(values[c] for c in TRACE_COLUMNS),
    )


def refresh_all_traces(conn: sqlite3.Connection) -> None:
    """Recompute every trace row from its spans and feedback (a migration that adds row columns)."""
    ids = [row[0] for row in conn.execute("SELECT trace_id FROM trace_traces")]
    for part in id_chunks(ids):
        spans = load_spans(conn, part)
        feedback = load_feedback(conn, part)
        for trace_id in part:
            if spans.get(trace_id):
                upsert_trace(conn, spans[trace_id], [f["score"] for f in feedback.get(trace_id, [])])
