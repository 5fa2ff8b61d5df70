"""replaygate.store: one store for traces, feedback, decisions, reviews, canary state and audit.

One URL names it, for every command, the page and ``replaygate collect``: ``--store`` or
``REPLAYGATE_STORE``, a file path or ``sqlite:///path`` (the default, ``.replaygate/replaygate.db``:
nothing to start) or ``postgresql+psycopg://user:password@host:5432/dbname`` for a team::

    from replaygate.store import Store, TraceStore

    with TraceStore("postgresql+psycopg://rg:secret@db/replaygate") as traces:
        for record in traces.failures(limit=20):
            print(record.summary.trace_id, record.summary.failure_reasons)

The schema is versioned (``trace_schema`` and ``store_schema``) and migrated when a store is opened; a
store newer than this replaygate is refused. The canary audit log is append-only on both databases
(triggers refuse UPDATE and DELETE). Agents never need a database driver: on one machine they write the
SQLite file themselves (``replaygate.instrumentation``), elsewhere they export OTLP to
``replaygate collect``, which writes here.
"""

from replaygate.store._engine import Store, display_url, open_engine
from replaygate.store._migrate import STORE_SCHEMA_VERSION, TRACE_SCHEMA_VERSION, versions
from replaygate.store._schema import (
    canary_audit,
    canary_state,
    gate_decisions,
    gate_reviews,
    gate_supersessions,
    metadata,
    trace_traces,
)
from replaygate.store._traces import DropReport, TraceStore, upsert

__all__ = [
    "DropReport",
    "STORE_SCHEMA_VERSION",
    "Store",
    "TRACE_SCHEMA_VERSION",
    "TraceStore",
    "canary_audit",
    "canary_state",
    "display_url",
    "gate_decisions",
    "gate_reviews",
    "gate_supersessions",
    "metadata",
    "open_engine",
    "trace_traces",
    "upsert",
    "versions",
]
