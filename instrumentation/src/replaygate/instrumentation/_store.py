"""The embedded trace store: finished traces, their spans, failure candidates and late feedback.

One SQLite file (WAL mode), by default ``.replaygate/replaygate.db``, else ``$REPLAYGATE_STORE`` (a path or a
``sqlite:///path`` URL). :class:`StoreSpanExporter` is the OpenTelemetry exporter that fills it;
:class:`TraceStore` reads it back (its reads are :class:`TraceReader`'s, the same on every store)::

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._normalize import span_to_record
from replaygate.instrumentation._records import SpanRecord, ordered_reasons
from replaygate.instrumentation._store_db import connect_store_db, resolve_store_path, write_transaction
from replaygate.instrumentation._store_reads import TraceReader
from replaygate.instrumentation._store_rows import (
    SPAN_COLUMNS,
    TRACE_COLUMNS,
    BatchRows,
    Execute,
    feedback_value,
    id_chunks,
    load_feedback,
    load_spans,
    marks,
    record_to_row,
)

__all__ = ["StoreSpanExporter", "TraceStore"]

_log = logging.getLogger("replaygate.instrumentation.store")
T = TypeVar("T")
_INSERT_SPAN = f"INSERT OR REPLACE INTO trace_spans ({SPAN_COLUMNS}) VALUES ({marks(11)})"
_INSERT_TRACE = (
    f"INSERT OR REPLACE INTO trace_traces ({', '.join(TRACE_COLUMNS)}) VALUES ({marks(len(TRACE_COLUMNS))})"
)


class TraceStore(TraceReader):
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

    # -- writing -------------------------------------------------------------------------------------

    def write_spans(
        self,
        records: Sequence[SpanRecord],
        *,
        dropped: tuple[str, int] | None = None,
        rows: Sequence[tuple[Any, ...]] | None = None,
    ) -> None:
        """Store one batch of spans in one transaction and refresh the rows of the traces it touches.

        ``dropped`` is ``(source, total)``: also record, in the same transaction, that the process
        ``source`` has dropped ``total`` spans so far (as :meth:`record_drops`). ``rows`` are the records'
        ``record_to_row`` rows when the caller has them already (the export worker builds both at once).
        """
        if not records:
            if dropped is not None:
                self.record_drops(*dropped)
            return
        # Everything that needs no stored data is built before the write lock is taken.
        if rows is None:
            rows = [record_to_row(r) for r in records]
        elif len(rows) != len(records):
            raise StoreError(f"write_spans got {len(records)} records but {len(rows)} rows")
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
            if dropped is not None:
                _upsert_drops(conn, *dropped)

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
        self._write("record dropped spans", lambda conn: _upsert_drops(conn, source, dropped))

    # -- reading: TraceReader's list_traces, failures, session_traces, get_trace, ... -----------------

    def _read(self, what: str, work: Callable[[Execute], T]) -> T:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN")  # one snapshot for the whole read
                try:
                    return work(conn.execute)
                finally:
                    conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {what} from trace store {self.path}: {exc}") from exc


def _upsert_drops(conn: sqlite3.Connection, source: str, dropped: int) -> None:
    now = time.time_ns()
    conn.execute(
        "INSERT INTO trace_drops (source, dropped, first_ns, updated_ns) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (source) DO UPDATE SET dropped = excluded.dropped, updated_ns = excluded.updated_ns",
        (source, int(dropped), now, now),
    )


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
        self._pid = -1
        self._source = ""
        self._reported_drops = 0
        self.dropped_spans = 0
        self._new_source()

    def _new_source(self) -> None:
        """This process's name in ``trace_drops`` (a forked child gets its own, and counts from zero)."""
        self._pid = os.getpid()
        self._source = f"{socket.gethostname()}:{self._pid}:{time.time_ns()}"
        self._reported_drops = 0
        self.dropped_spans = 0

    def _report_drops(self) -> None:
        """Write this exporter's drop count to the store, where ``replaygate traces`` shows it."""
        if self.dropped_spans > self._reported_drops and self._store is not None:
            dropped = self.dropped_spans
            self._store.record_drops(self._source, dropped)
            self._reported_drops = dropped

    def note_dropped(self, total: int) -> None:
        """Set how many spans meant for this exporter its queue has dropped so far (a running total).

        replaygate's export worker calls it; the count reaches the store with the next batch (in the
        same transaction) or at shutdown.
        """
        if self._pid != os.getpid():
            self._new_source()
        self.dropped_spans = max(self.dropped_spans, int(total))

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
        try:
            records = [span_to_record(span) for span in spans]
        except Exception as exc:  # noqa: BLE001 - nothing may reach the agent through the SDK
            with self._lock:
                return self._fail(len(spans), f"{type(exc).__name__}: {exc}")
        return self.export_records(records)

    def export_records(
        self, records: Sequence[SpanRecord], rows: Sequence[tuple[Any, ...]] | None = None
    ) -> SpanExportResult:
        """Write one batch of span records (replaygate's export worker hands them over already built).

        ``rows`` are the records' ``trace_spans`` rows when the worker built them with the records.
        """
        with self._lock:
            if self._closed:
                return self._fail(len(records), "exporter is shut down")
            try:
                if self._pid != os.getpid():
                    self._new_source()
                if self._store is None:
                    self._store = TraceStore(self._target)
                dropped = self.dropped_spans if self.dropped_spans > self._reported_drops else None
                self._store.write_spans(
                    records, dropped=None if dropped is None else (self._source, dropped), rows=rows
                )
                if dropped is not None:
                    self._reported_drops = dropped
            except Exception as exc:  # noqa: BLE001 - nothing may reach the agent through the SDK
                return self._fail(len(records), f"{type(exc).__name__}: {exc}")
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
            try:
                if self._store is None and self.dropped_spans > self._reported_drops:
                    self._store = TraceStore(self._target)  # every span dropped: the count still goes in
                self._report_drops()
            except Exception:  # noqa: BLE001 - shutting down: nothing may reach the agent
                pass
            if self._store is not None:
                self._store.close()
                self._store = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here: every export is written before it returns."""
        return True
