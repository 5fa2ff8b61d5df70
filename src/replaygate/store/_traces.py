"""The trace store on SQLAlchemy Core: the same reads and writes as the embedded SQLite store, any database.

``TraceStore(url)`` here is what the control plane (CLI, promotion, canary, page, ``replaygate collect``)
reads and writes traces through, on SQLite or PostgreSQL. Rows are built by the same functions as the
agents' embedded writer (``replaygate.instrumentation``), so both writers give the same rows.

On PostgreSQL, a batch takes a transaction-scoped advisory lock per trace (in id order) before it
re-reads a trace's spans, so two batches of one trace written at once still give the full trace row.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

from replaygate.instrumentation import (
    TRACE_COLUMNS,
    BatchRows,
    SpanRecord,
    StoreError,
    TraceRecord,
    build_records,
    feedback_value,
    id_chunks,
    normalize_trace_id,
    ordered_reasons,
    record_from_row,
    record_to_row,
    trace_id_range,
)
from sqlalchemy import ColumnElement, Connection, Table, and_, func, or_, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from replaygate.store._engine import Store
from replaygate.store._schema import trace_drops, trace_feedback, trace_spans, trace_traces

__all__ = ["DropReport", "TraceStore", "upsert"]

_SPAN_NAMES = [c.name for c in trace_spans.columns]
_S = trace_spans.c
_T = trace_traces.c


def upsert(conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    """Insert rows, replacing those whose ``keys`` already exist (SQLite and PostgreSQL)."""
    if not rows:
        return
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table)
    others = {c.name: statement.excluded[c.name] for c in table.columns if c.name not in keys}
    conn.execute(statement.on_conflict_do_update(index_elements=list(keys), set_=others), rows)


class DropReport:
    """Spans that agents dropped before they reached this store (their queue was full), per process."""

    def __init__(self, rows: Sequence[Any]) -> None:
        self.sources = [(r.source, int(r.dropped), int(r.first_ns), int(r.updated_ns)) for r in rows]

    @property
    def total(self) -> int:
        """All dropped spans reported to this store."""
        return sum(s[1] for s in self.sources)


class TraceStore:
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
        rows = {
            (r.trace_id, r.span_id): dict(zip(_SPAN_NAMES, record_to_row(r), strict=True)) for r in records
        }
        with self.store.write() as conn:
            if conn.dialect.name == "postgresql":
                for trace_id in trace_ids:
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:t))"), {"t": trace_id})
            prior = {
                row[0]
                for part in id_chunks(trace_ids)
                for row in conn.execute(select(_S.trace_id).distinct().where(_S.trace_id.in_(list(part))))
            }
            upsert(conn, trace_spans, list(rows.values()), ("trace_id", "span_id"))
            values = batch.rows(prior, lambda ids: _load_spans(conn, ids), _load_feedback(conn, trace_ids))
            upsert(conn, trace_traces, [{c: v[c] for c in TRACE_COLUMNS} for v in values], ("trace_id",))

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
        """Report that the process ``source`` has dropped ``dropped`` spans so far (a running total)."""
        now = time.time_ns()
        with self.store.write() as conn:
            first = conn.execute(select(trace_drops.c.first_ns).where(trace_drops.c.source == source)).first()
            row = {"source": source, "dropped": int(dropped), "first_ns": first[0] if first else now}
            upsert(conn, trace_drops, [{**row, "updated_ns": now}], ("source",))

    def drops(self) -> DropReport:
        """The drop counts agents reported to this store."""
        with self.store.read() as conn:
            rows = conn.execute(select(trace_drops).order_by(trace_drops.c.source)).all()
        return DropReport(rows)

    # -- reading -------------------------------------------------------------------------------------

    def _records(
        self, clauses: Iterable[ColumnElement[bool]], newest_first: bool, limit: int | None
    ) -> list[TraceRecord]:
        order = (_T.start_ns.desc(), _T.trace_id) if newest_first else (_T.start_ns, _T.trace_id)
        query = select(_T.trace_id, _T.start_ns, _T.end_ns).where(and_(True, *clauses)).order_by(*order)
        if limit is not None:
            if limit < 1:
                raise StoreError(f"limit must be at least 1, got {limit}")
            query = query.limit(int(limit))
        with self.store.read() as conn:
            rows = [tuple(r) for r in conn.execute(query)]
            ids = [r[0] for r in rows]
            return build_records(rows, _load_spans(conn, ids), _load_feedback(conn, ids))

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        """List stored traces newest first, optionally filtered by start time, session or variant."""
        clauses = _time(since_ns, until_ns)
        if session_id is not None:
            clauses.append(_T.session_id == session_id)
        if variant is not None:
            clauses.append(_T.variant == variant)
        return self._records(clauses, True, limit)

    def failures(
        self, reasons: Iterable[str] | None = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]:
        """List failure candidates newest first; ``reasons`` keeps traces with any of those reasons."""
        clauses = [_T.failure == 1, *_time(since_ns, None)]
        wanted = sorted(set(reasons or ()))
        if wanted:  # reasons are identifiers, stored as a JSON list of strings
            clauses.append(or_(*(_T.failure_reasons.contains(json.dumps(r)) for r in wanted)))
        return self._records(clauses, True, limit)

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        """Every trace of one session (conversation), oldest first."""
        return self._records([_T.session_id == session_id], False, None)

    def get_trace(self, trace_id: str) -> TraceRecord:
        """One trace with its spans, summary and feedback.

        Raises:
            StoreError: no trace with that id in this store.
        """
        trace = normalize_trace_id(trace_id)
        found = self._records([_T.trace_id == trace], False, 1)
        if not found:
            raise StoreError(
                f"trace {trace} not found in store {self.path}: list stored traces with "
                "`replaygate traces` (a trace is listed once its agent span has been exported)"
            )
        return found[0]

    def resolve_trace_id(self, prefix: str) -> str:
        """The full id of the one stored trace whose id starts with ``prefix`` (at least 6 hex characters).

        Raises:
            StoreError: no stored trace, or several, start with that prefix.
        """
        low, high = trace_id_range(prefix)
        if high is None:
            return low
        with self.store.read() as conn:
            found = [
                r[0]
                for r in conn.execute(
                    select(_T.trace_id).where(_T.trace_id >= low, _T.trace_id < high).limit(2)
                )
            ]
        if not found:
            raise StoreError(
                f"no trace id starting with {low} in store {self.path}: list the stored traces with "
                "`replaygate traces`"
            )
        if len(found) > 1:
            raise StoreError(f"several traces start with {low} in {self.path}: give more characters")
        return str(found[0])

    def count(self) -> int:
        """The number of stored (listed) traces."""
        with self.store.read() as conn:
            return int(conn.execute(select(func.count()).select_from(trace_traces)).scalar_one())


def _int64(value: int) -> int:
    return max(-(2**63), min(2**63 - 1, int(value)))


def _time(since_ns: int | None, until_ns: int | None) -> list[ColumnElement[bool]]:
    clauses: list[ColumnElement[bool]] = []
    if since_ns is not None:
        clauses.append(_T.start_ns >= _int64(since_ns))
    if until_ns is not None:
        clauses.append(_T.start_ns < _int64(until_ns))
    return clauses


def _load_spans(conn: Connection, trace_ids: Sequence[str]) -> dict[str, list[SpanRecord]]:
    spans: dict[str, list[SpanRecord]] = {}
    columns = [trace_spans.c[name] for name in _SPAN_NAMES]
    for part in id_chunks(list(trace_ids)):
        query = select(*columns).where(_S.trace_id.in_(list(part))).order_by(_S.start_ns, _S.end_ns)
        for row in conn.execute(query):
            record = record_from_row(row)
            spans.setdefault(record.trace_id, []).append(record)
    return spans


def _load_feedback(conn: Connection, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    feedback: dict[str, list[dict[str, Any]]] = {}
    f = trace_feedback.c
    for part in id_chunks(list(trace_ids)):
        query = (
            select(f.trace_id, f.score, f.comment, f.created_ns)
            .where(f.trace_id.in_(list(part)))
            .order_by(f.created_ns, f.id)
        )
        for trace_id, score, comment, created_ns in conn.execute(query):
            feedback.setdefault(trace_id, []).append(
                {"score": float(score), "comment": comment, "created_ns": int(created_ns)}
            )
    return feedback
