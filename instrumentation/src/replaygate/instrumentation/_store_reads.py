"""The one read path of the trace store: which traces a query names, and the records built from them.

Both stores read through :class:`TraceReader`: the agents' embedded SQLite store
(``replaygate.instrumentation.TraceStore``, plain ``sqlite3``) and the control plane's store on any
database (``replaygate.store.TraceStore``, SQLAlchemy: SQLite or PostgreSQL). The SQL is written once,
here, with named parameters (``:name``), which both ``sqlite3`` and SQLAlchemy's ``text()`` bind; a
store only says how to run a statement inside one read snapshot (:meth:`TraceReader._read`), and
which dialect it speaks (the one clause that differs: the failure-reason filter).

A subclass gets ``list_traces``, ``failures``, ``session_traces``, ``get_trace``, ``resolve_trace_id``
and ``count``, with the same filters, order, limits and error messages on every database::

    class MyStore(TraceReader):
        path = "my store"

        def _read(self, what, work):
            with connect() as conn:
                return work(lambda sql, params: conn.execute(sql, params))
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._records import TraceRecord
from replaygate.instrumentation._store_rows import (
    Execute,
    build_records,
    in_list,
    normalize_trace_id,
    read_feedback,
    read_spans,
    trace_id_range,
)
from replaygate.instrumentation._store_trace_row import int64

__all__ = ["Execute", "TraceQuery", "TraceReader", "read_feedback", "read_records", "read_spans"]

Dialect = Literal["sqlite", "postgresql"]
T = TypeVar("T")


@dataclass(frozen=True)
class TraceQuery:
    """Which stored traces to read, in which order, how many (every filter optional)."""

    since_ns: int | None = None
    until_ns: int | None = None
    session_id: str | None = None
    variant: str | None = None
    trace_id: str | None = None
    failures_only: bool = False
    reasons: tuple[str, ...] = ()  # with failures_only: traces with any of these reasons
    newest_first: bool = True
    limit: int | None = None


def _like_json_string(value: str) -> str:
    """A LIKE pattern matching the JSON string ``value`` anywhere in a JSON list (backslash escapes)."""
    escaped = json.dumps(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def query_sql(query: TraceQuery, dialect: Dialect) -> tuple[str, dict[str, Any]]:
    """The ``SELECT trace_id, start_ns, end_ns`` of a query, with its named parameters."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if query.failures_only:
        clauses.append("t.failure = 1")
    if query.since_ns is not None:
        clauses.append("t.start_ns >= :since_ns")
        params["since_ns"] = int64(query.since_ns)
    if query.until_ns is not None:
        clauses.append("t.start_ns < :until_ns")
        params["until_ns"] = int64(query.until_ns)
    if query.session_id is not None:
        clauses.append("t.session_id = :session_id")
        params["session_id"] = query.session_id
    if query.variant is not None:
        clauses.append("t.variant = :variant")
        params["variant"] = query.variant
    if query.trace_id is not None:
        clauses.append("t.trace_id = :trace_id")
        params["trace_id"] = query.trace_id
    wanted = sorted(set(query.reasons)) if query.failures_only else []
    if wanted and dialect == "sqlite":  # reasons are stored as a JSON list of identifiers
        clauses.append(
            "EXISTS (SELECT 1 FROM json_each(t.failure_reasons) r "
            f"WHERE r.value IN ({in_list('reason', wanted, params)}))"
        )
    elif wanted:
        likes = []
        for i, reason in enumerate(wanted):
            params[f"reason{i}"] = _like_json_string(reason)
            likes.append(f"t.failure_reasons LIKE :reason{i} ESCAPE '\\'")
        clauses.append("(" + " OR ".join(likes) + ")")
    order = "t.start_ns DESC, t.trace_id" if query.newest_first else "t.start_ns, t.trace_id"
    sql = "SELECT t.trace_id, t.start_ns, t.end_ns FROM trace_traces t"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += f" ORDER BY {order}"
    if query.limit is not None:
        sql += f" LIMIT {int(query.limit)}"
    return sql, params


def read_records(execute: Execute, query: TraceQuery, dialect: Dialect = "sqlite") -> list[TraceRecord]:
    """The trace records a query names, with their spans and feedback (run inside one snapshot)."""
    sql, params = query_sql(query, dialect)
    rows = [tuple(row) for row in execute(sql, params)]
    ids = [row[0] for row in rows]
    return build_records(rows, read_spans(execute, ids), read_feedback(execute, ids))


class TraceReader(abc.ABC):
    """The reading half of a trace store, the same on every database (see the module docstring).

    A subclass sets ``path`` (what messages call the store) and implements :meth:`_read`; it may
    override :meth:`_dialect` (``sqlite`` by default).
    """

    path: Any

    @abc.abstractmethod
    def _read(self, what: str, work: Callable[[Execute], T]) -> T:
        """Run ``work`` with a statement runner inside one read snapshot; errors are :class:`StoreError`."""

    def _dialect(self) -> Dialect:
        """The SQL dialect of the store's database (``sqlite`` unless a subclass says otherwise)."""
        return "sqlite"

    def read(self, query: TraceQuery, what: str = "list traces") -> list[TraceRecord]:
        """The records a :class:`TraceQuery` names (one snapshot).

        Raises:
            StoreError: a limit below 1, or a store that cannot be read.
        """
        if query.limit is not None and query.limit < 1:
            raise StoreError(f"limit must be at least 1, got {query.limit}")
        dialect = self._dialect()
        return self._read(what, lambda execute: read_records(execute, query, dialect))

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        """List stored traces newest first, optionally filtered by start time, session or variant."""
        query = TraceQuery(
            since_ns=since_ns, until_ns=until_ns, session_id=session_id, variant=variant, limit=limit
        )
        return self.read(query, "list traces")

    def failures(
        self, reasons: Iterable[str] | None = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]:
        """List failure candidates newest first; ``reasons`` keeps traces with any of those reasons."""
        query = TraceQuery(since_ns=since_ns, failures_only=True, reasons=tuple(reasons or ()), limit=limit)
        return self.read(query, "list failures")

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        """Every trace of one session (conversation), oldest first."""
        return self.read(TraceQuery(session_id=session_id, newest_first=False), "list a session")

    def get_trace(self, trace_id: str) -> TraceRecord:
        """One trace with its spans, summary and feedback.

        Raises:
            StoreError: no trace with that id in this store.
        """
        trace = normalize_trace_id(trace_id)
        found = self.read(TraceQuery(trace_id=trace, newest_first=False, limit=1), "read a trace")
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
        low, high = trace_id_range(prefix)
        if high is None:
            return low
        sql = "SELECT trace_id FROM trace_traces WHERE trace_id >= :low AND trace_id < :high LIMIT 2"
        found = self._read(
            "look up a trace id",
            lambda execute: [str(row[0]) for row in execute(sql, {"low": low, "high": high})],
        )
        if not found:
            raise StoreError(
                f"no trace id starting with {low} in trace store {self.path}: "
                "list the stored traces with `replaygate traces`"
            )
        if len(found) > 1:
            raise StoreError(f"several traces start with {low} in {self.path}: give more characters")
        return found[0]

    def count(self) -> int:
        """The number of stored (listed) traces."""
        sql = "SELECT COUNT(*) FROM trace_traces"
        return self._read("count traces", lambda execute: int(next(iter(execute(sql, {})))[0]))
