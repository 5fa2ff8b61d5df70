"""The trace store on SQLAlchemy Core: the same reads and writes as the embedded SQLite store, any database.

``TraceStore(url)`` here is what the control plane (CLI, promotion, canary, page, ``replaygate collect``)
reads and writes traces through, on SQLite or PostgreSQL. Rows are built by the same functions as the
agents' embedded writer (``replaygate.instrumentation``), so both writers give the same rows, and every
read is ``replaygate.instrumentation.TraceReader``'s (one SQL text for both stores, run here through
SQLAlchemy's ``text()``), so both readers give the same records.

On PostgreSQL, a batch takes a transaction-scoped advisory lock per trace (in id order) before it
re-reads a trace's spans, so two batches of one trace written at once still give the full trace row.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from replaygate.instrumentation import (
    TRACE_COLUMNS,
    BatchRows,
    Execute,
    SpanRecord,
    TraceReader,
    feedback_value,
    id_chunks,
    ordered_reasons,
    read_feedback,
    read_spans,
    record_to_row,
)
from sqlalchemy import Connection, Table, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from replaygate.store._engine import Store
from replaygate.store._schema import trace_drops, trace_feedback, trace_spans, trace_traces

__all__ = ["DropReport", "TraceStore", "upsert"]

T = TypeVar("T")
_SPAN_NAMES = [c.name for c in trace_spans.columns]  # record_to_row's order
_S = trace_spans.c
_LOCK_TRACES = text("SELECT pg_advisory_xact_lock(hashtext(t)) FROM unnest(CAST(:ids AS text[])) AS t")
_T = trace_traces.c


def upsert(conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    """Insert rows, replacing those whose ``keys`` already exist (SQLite and PostgreSQL)."""
    if not rows:
        return
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table)
    others = {c.name: statement.excluded[c.name] for c in table.columns if c.name not in keys}
    conn.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=others), rows)


def upsert_rows(
    conn: Connection,
    table: Table,
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    keys: Sequence[str],
) -> None:
    """:func:`upsert` of positional rows (in ``columns`` order), as one driver-level ``executemany``.

    The same ``INSERT ... ON CONFLICT (keys) DO UPDATE`` on SQLite and PostgreSQL, without SQLAlchemy's
    per-row parameter processing (the trace tables' columns are plain text and numbers, which neither
    driver needs converted).
    """
    if not rows:
        return
    mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
    sql = (
        f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    )
    conn.exec_driver_sql(sql, list(rows))


class DropReport:
    """Spans that agents dropped before they reached this store (their queue was full), per process."""

    def __init__(self, rows: Sequence[Any]) -> None:
        self.sources = [(r.source, int(r.dropped), int(r.first_ns), int(r.updated_ns)) for r in rows]

    @property
    def total(self) -> int:
        """All dropped spans reported to this store."""
        return sum(s[1] for s in self.sources)


class TraceStore(TraceReader):
    """Traces, spans and feedback in the shared store (SQLite or PostgreSQL).

    Args:
        url: a sqlalchemy URL or a file path, or an open :class:`Store`; None reads ``REPLAYGATE_STORE``.
        create: when False, a missing SQLite file is a :class:`StoreError`.
    """

    def __init__(self, url: str | os.PathLike[str] | Store | None = None, *, create: bool = True) -> None:
        self._owned = not isinstance(url, Store)
        self.store = url if isinstance(url, Store) else Store(url, create=create)
        self.path = self.store.label

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TraceStore({self.store.label!r})"

    def close(self) -> None:
        """Release the store's connections when this object opened it."""
        if self._owned:
            self.store.close()

    # -- writing -------------------------------------------------------------------------------------

    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        """Store one batch in one transaction and refresh the rows of the traces it touches."""
        if not records:
            return
        # What needs no stored data (span rows, the rows of traces whole in this batch) is built before
        # the write transaction, so the database's lock is held for the SQL only.
        batch = BatchRows(records)
        trace_ids = batch.trace_ids
        # One row per (trace, span): a span sent twice in one batch is written once, the last one wins.
        rows = {(r.trace_id, r.span_id): record_to_row(r) for r in records}
        with self.store.write() as conn:
            if conn.dialect.name == "postgresql":
                # One statement takes every trace's lock, in id order (unnest keeps the array's order).
                conn.execute(_LOCK_TRACES, {"ids": list(trace_ids)})
            prior = {
                row[0]
                for part in id_chunks(trace_ids)
                for row in conn.execute(select(_S.trace_id).distinct().where(_S.trace_id.in_(list(part))))
            }
            upsert_rows(conn, trace_spans, _SPAN_NAMES, list(rows.values()), ("trace_id", "span_id"))
            values = batch.rows(prior, lambda ids: _load_spans(conn, ids), _load_feedback(conn, trace_ids))
            upsert_rows(conn, trace_traces, TRACE_COLUMNS, [tuple(v.values()) for v in values], ("trace_id",))

    def record_feedback(self, trace_id: str, score: float | bool, comment: str | None = None) -> None:
        """Record user feedback on a trace (before or after the trace arrives); negative marks a failure.

        Raises:
            StoreError: a malformed trace id, a score outside [-1, 1], or a store that cannot be written.
        """
        trace, value = feedback_value(trace_id, score)
        now = time.time_ns()
        with self.store.write() as conn:
            conn.execute(
                trace_feedback.insert().values(trace_id=trace, score=value, comment=comment, created_ns=now)
            )
            if value < 0:
                row = conn.execute(select(_T.failure_reasons).where(_T.trace_id == trace)).first()
                if row is not None:
                    reasons = ordered_reasons((*json.loads(row[0]), "negative_feedback"))
                    conn.execute(
                        update(trace_traces)
                        .where(_T.trace_id == trace)
                        .values(
                            failure=1,
                            negative_feedback=1,
                            failure_reasons=json.dumps(list(reasons)),
                            updated_ns=now,
                        )
                    )

    def record_drops(self, source: str, dropped: int) -> None:
        """Report that the process ``source`` has dropped ``dropped`` spans so far (a running total).

        The count never goes down: a total that arrives after a higher one (requests of one agent
        answered out of order) keeps the higher.
        """
        now = time.time_ns()
        with self.store.write() as conn:
            found = conn.execute(
                select(trace_drops.c.first_ns, trace_drops.c.dropped).where(trace_drops.c.source == source)
            ).first()
            total = max(int(dropped), int(found[1])) if found else int(dropped)
            row = {"source": source, "dropped": total, "first_ns": found[0] if found else now}
            upsert(conn, trace_drops, [{**row, "updated_ns": now}], ("source",))

    def drops(self) -> DropReport:
        """The drop counts agents reported to this store."""
        with self.store.read() as conn:
            rows = conn.execute(select(trace_drops).order_by(trace_drops.c.source)).all()
        return DropReport(rows)

    # -- reading: TraceReader's list_traces, failures, session_traces, get_trace, ... -----------------

    def _dialect(self) -> Literal["sqlite", "postgresql"]:
        return "postgresql" if self.store.engine.dialect.name == "postgresql" else "sqlite"

    def _read(self, what: str, work: Callable[[Execute], T]) -> T:
        with self.store.read() as conn:
            return work(_execute(conn))


def _execute(conn: Connection) -> Execute:
    """The statement runner of :class:`TraceReader` on a SQLAlchemy connection."""
    return lambda sql, params: conn.execute(text(sql), dict(params))


def _load_spans(conn: Connection, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
    return read_spans(_execute(conn), trace_ids)


def _load_feedback(conn: Connection, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    return read_feedback(_execute(conn), trace_ids)
