"""The embedded trace store: finished traces, their spans, failure candidates and late feedback.

One SQLite file (WAL mode), by default ``.replaygate/replaygate.db``, else ``$REPLAYGATE_STORE`` (a path or a
``sqlite:///path`` URL). :class:`StoreSpanExporter` is the OpenTelemetry exporter that fills it;
:class:`TraceStore` reads it back::

    store = TraceStore()                      # or TraceStore("sqlite:///var/lib/agent/replaygate.db")
    for record in store.failures(reasons=["exception", "negative_feedback"], limit=20):
        print(record.summary.trace_id, record.summary.failure_reasons)
    store.record_feedback(trace_id, -1, "wrong refund amount")   # from any process, even before the trace

Several processes may write to one store at once: every batch is one transaction, retried while another
process holds the lock. Spans of one trace may arrive in several batches, children before parents; the
per-trace row (times, session, user, agent, variant, previews, failure reasons) is recomputed whenever a
batch touches a trace that has an agent span. Traces without any agent span keep their spans but are not
listed.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._health import HEALTH
from replaygate.instrumentation._normalize import span_to_record
from replaygate.instrumentation._records import SpanRecord, TraceRecord, ordered_reasons
from replaygate.instrumentation._store_db import connect_store_db, resolve_store_path, write_transaction
from replaygate.instrumentation._store_rows import (
    SPAN_COLUMNS,
    TRACE_COLUMNS,
    BatchRows,
    build_records,
    feedback_value,
    id_chunks,
    load_feedback,
    load_spans,
    marks,
    normalize_trace_id,
    record_to_row,
    time_filter,
    trace_id_range,
    where,
)

__all__ = ["StoreSpanExporter", "TraceStore"]

_log = logging.getLogger("replaygate.instrumentation.store")
_TRACE_COLUMNS = "trace_id, start_ns, end_ns"
_INSERT_SPAN = f"INSERT OR REPLACE INTO trace_spans ({SPAN_COLUMNS}) VALUES ({marks(11)})"
_INSERT_TRACE = (
    f"INSERT OR REPLACE INTO trace_traces ({', '.join(TRACE_COLUMNS)}) VALUES ({marks(len(TRACE_COLUMNS))})"
)


class TraceStore:
    """Read and write the embedded trace store (SQLite, WAL mode, schema versioned).

    Args:
        url_or_path: a file path or ``sqlite:///path`` URL; None reads ``$REPLAYGATE_STORE`` and falls back
            to ``.replaygate/replaygate.db``. Parent directories are created.
        create: when False, a missing store file is a :class:`StoreError` instead of a new empty store.

    Raises:
        StoreError: the file cannot be opened, is not a store, or has a newer schema.
    """

    def __init__(self, url_or_path: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        self.path: Path = resolve_store_path(url_or_path)
        self._create = create
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = connect_store_db(self.path, create=create)
        self._pid = os.getpid()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TraceStore({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"trace store {self.path} is closed: open a new TraceStore")
        if self._pid != os.getpid():  # a forked child must not share the parent's SQLite handle
            self._conn = connect_store_db(self.path, create=self._create)
            self._pid = os.getpid()
        return self._conn

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def _write(self, what: str, work: Any) -> Any:
        with self._lock:
            conn = self._connection()
            try:
                return write_transaction(conn, work)
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {what} in trace store {self.path}: {exc}") from exc

    def _read(self, what: str, work: Any) -> Any:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")  # one snapshot for the whole read
                try:
                    return work(conn)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {what} from trace store {self.path}: {exc}") from exc

    # -- writing -------------------------------------------------------------------------------------

    def write_spans(self, records: Sequence[SpanRecord]) -> None:
        """Store one batch of spans in one transaction and refresh the rows of the traces it touches."""
        if not records:
            return
        # Everything that needs no stored data is built before the write lock is taken.
        rows = [record_to_row(r) for r in records]
        batch = BatchRows(records)
        trace_ids = batch.trace_ids

        def work(conn: sqlite3.Connection) -> None:
            prior = {
                row[0]
                for part in id_chunks(trace_ids)
                for row in conn.execute(
                    f"SELECT DISTINCT trace_id FROM trace_spans WHERE trace_id IN ({marks(len(part))})",
                    list(part),
                )
            }
            conn.executemany(_INSERT_SPAN, rows)
            values = batch.rows(prior, lambda ids: load_spans(conn, ids), load_feedback(conn, trace_ids))
            conn.executemany(_INSERT_TRACE, [tuple(v.values()) for v in values])

        self._write("write spans", work)

    def record_feedback(self, trace_id: str, score: float | bool, comment: str | None = None) -> None:
        """Record user feedback on a trace; a negative score makes it a failure candidate.

        Feedback may arrive long after the trace, from another process, or even before the trace is
        written: it is kept and applied when the trace arrives.

        Args:
            trace_id: the 32-character hex trace id (``current_trace_id()`` in the agent).
            score: a float in [-1, 1], or a bool (True = 1.0, False = -1.0).
            comment: optional free text from the user.

        Raises:
            StoreError: a malformed trace id, a score outside [-1, 1], or a store that cannot be written.
        """
        trace, value = feedback_value(trace_id, score)

        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO trace_feedback (trace_id, score, comment, created_ns) VALUES (?, ?, ?, ?)",
                (trace, value, comment, time.time_ns()),
            )
            if value < 0:
                row = conn.execute(
                    "SELECT failure_reasons FROM trace_traces WHERE trace_id = ?", (trace,)
                ).fetchone()
                if row is not None:
                    reasons = ordered_reasons((*json.loads(row[0]), "negative_feedback"))
                    conn.execute(
                        "UPDATE trace_traces SET failure = 1, negative_feedback = 1, failure_reasons = ?, "
                        "updated_ns = ? WHERE trace_id = ?",
                        (json.dumps(list(reasons)), time.time_ns(), trace),
                    )

        self._write("record feedback", work)

    def record_drops(self, source: str, dropped: int) -> None:
        """Report that the process ``source`` has dropped ``dropped`` spans so far (a running total)."""
        now = time.time_ns()

        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO trace_drops (source, dropped, first_ns, updated_ns) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (source) DO UPDATE SET dropped = excluded.dropped, "
                "updated_ns = excluded.updated_ns",
                (source, int(dropped), now, now),
            )

        self._write("record dropped spans", work)

    # -- reading -------------------------------------------------------------------------------------

    def _records(
        self, what: str, where: str, params: Sequence[Any], order: str, limit: int | None
    ) -> list[TraceRecord]:
        sql = f"SELECT {_TRACE_COLUMNS} FROM trace_traces t {where} ORDER BY {order}"
        if limit is not None:
            if limit < 1:
                raise StoreError(f"limit must be at least 1, got {limit}")
            sql += f" LIMIT {int(limit)}"

        def work(conn: sqlite3.Connection) -> list[TraceRecord]:
            rows = conn.execute(sql, params).fetchall()
            ids = [row[0] for row in rows]
            return build_records(rows, load_spans(conn, ids), load_feedback(conn, ids))

        result: list[TraceRecord] = self._read(what, work)
        return result

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        """List stored traces newest first, optionally filtered by start time, session or variant."""
        clauses, params = time_filter(since_ns, until_ns)
        if session_id is not None:
            clauses.append("t.session_id = ?")
            params.append(session_id)
        if variant is not None:
            clauses.append("t.variant = ?")
            params.append(variant)
        return self._records("list traces", where(clauses), params, "t.start_ns DESC, t.trace_id", limit)

    def failures(
        self, reasons: Iterable[str] | None = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]:
        """List failure candidates newest first; ``reasons`` keeps traces with any of those reasons."""
        clauses, params = time_filter(since_ns, None)
        clauses.insert(0, "t.failure = 1")
        wanted = sorted(set(reasons or ()))
        if wanted:
            clauses.append(
                "EXISTS (SELECT 1 FROM json_each(t.failure_reasons) r "
                f"WHERE r.value IN ({marks(len(wanted))}))"
            )
            params.extend(wanted)
        return self._records("list failures", where(clauses), params, "t.start_ns DESC, t.trace_id", limit)

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        """Every trace of one session (conversation), oldest first."""
        return self._records(
            "list a session", "WHERE t.session_id = ?", [session_id], "t.start_ns, t.trace_id", None
        )

    def get_trace(self, trace_id: str) -> TraceRecord:
        """One trace with its spans, summary and feedback.

        Raises:
            StoreError: no trace with that id in this store.
        """
        trace = normalize_trace_id(trace_id)
        found = self._records("read a trace", "WHERE t.trace_id = ?", [trace], "t.start_ns", 1)
        if not found:
            raise StoreError(
                f"trace {trace} not found in trace store {self.path}: list stored traces with "
                "`replaygate traces` (a trace is listed once its agent span has been exported)"
            )
        return found[0]

    def resolve_trace_id(self, prefix: str) -> str:
        """The full id of the one stored trace whose id starts with ``prefix`` (at least 6 hex characters).

        Raises:
            StoreError: no stored trace, or several, start with that prefix.
        """
        value, upper = trace_id_range(prefix)
        if upper is None:
            return value

        def work(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT trace_id FROM trace_traces WHERE trace_id >= ? AND trace_id < ? LIMIT 2",
                (value, upper),
            )
            return [row[0] for row in rows]

        found: list[str] = self._read("look up a trace id", work)
        if not found:
            raise StoreError(
                f"no trace id starting with {value} in trace store {self.path}: "
                "list the stored traces with `replaygate traces`"
            )
        if len(found) > 1:
            raise StoreError(f"several traces start with {value} in {self.path}: give more characters")
        return found[0]

    def count(self) -> int:
        """The number of stored (listed) traces."""

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT COUNT(*) FROM trace_traces").fetchone()[0])

        result: int = self._read("count traces", work)
        return result


class StoreSpanExporter(SpanExporter):
    """An OpenTelemetry span exporter that writes each batch to the trace store in one transaction.

    It never raises into the SDK: a store that cannot be opened or written makes ``export`` return
    ``FAILURE``, counts the batch and its spans, and logs the first error once. The store is opened at
    the first export (and reopened on the next export after a failure to open).

    Args:
        url_or_path: as for :class:`TraceStore` (None: ``$REPLAYGATE_STORE``, then the default path).
    """

    def __init__(self, url_or_path: str | os.PathLike[str] | None = None) -> None:
        self._target = url_or_path
        self._store: TraceStore | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._logged = False
        self.exported_spans = 0
        self.failed_spans = 0
        self.failed_batches = 0
        self.last_error: str | None = None
        self._source = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"
        self._reported_drops = 0

    def _report_drops(self) -> None:
        """Write this process's drop count (queue full) to the store, where ``replaygate traces`` shows it."""
        dropped = int(HEALTH.snapshot()["exporters"].get("store", {}).get("dropped_spans", 0))
        if dropped > self._reported_drops and self._store is not None:
            self._store.record_drops(self._source, dropped)
            self._reported_drops = dropped

    def stats(self) -> dict[str, Any]:
        """Counters: exported spans, failed spans and batches, and the last error message."""
        return {
            "exported_spans": self.exported_spans,
            "failed_spans": self.failed_spans,
            "failed_batches": self.failed_batches,
            "last_error": self.last_error,
        }

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write one batch; returns FAILURE (never raises) when the store cannot take it."""
        with self._lock:
            if self._closed:
                return self._fail(len(spans), "exporter is shut down")
            try:
                records = [span_to_record(span) for span in spans]
                if self._store is None:
                    self._store = TraceStore(self._target)
                self._store.write_spans(records)
                self._report_drops()
            except Exception as exc:  # noqa: BLE001 - nothing may reach the agent through the SDK
                return self._fail(len(spans), f"{type(exc).__name__}: {exc}")
            self.exported_spans += len(records)
            return SpanExportResult.SUCCESS

    def _fail(self, n_spans: int, message: str) -> SpanExportResult:
        self.failed_batches += 1
        self.failed_spans += n_spans
        self.last_error = message
        if not self._logged:
            self._logged = True
            _log.warning("replaygate: dropping spans, the trace store cannot be written: %s", message)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Report the last drop count, close the store; later exports fail (and are counted)."""
        with self._lock:
            self._closed = True
            if self._store is not None:
                try:
                    self._report_drops()
                except Exception:  # noqa: BLE001 - shutting down: nothing may reach the agent
                    pass
                self._store.close()
                self._store = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here: every export is written before it returns."""
        return True
