"""The store's schema versions and migrations, on SQLite and PostgreSQL.

Two version rows: ``trace_schema`` (the trace tables, shared with the agents' embedded SQLite writer, which
migrates them itself on SQLite) and ``store_schema`` (the control plane's tables). Opening a store brings
both to the current version in one transaction; on PostgreSQL an advisory lock serializes processes that
open a new store at once. A store newer than this replaygate is refused, never downgraded.

The canary audit log is append-only on both databases: triggers refuse UPDATE and DELETE (and TRUNCATE on
PostgreSQL).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from replaygate.instrumentation import TRACE_SCHEMA_VERSION, StoreError, connect_store_db
from sqlalchemy import Connection, inspect, text

from replaygate.store._schema import (
    APPEND_ONLY_TABLES,
    CONTROL_TABLES,
    TRACE_TABLES,
    metadata,
    trace_traces,
)


class Store(Protocol):
    """What migration needs of a store (``_engine.Store`` is one): where it is and its connections."""

    path: Path | None
    dialect: str

    @property
    def label(self) -> str: ...

    def read(self) -> AbstractContextManager[Connection]: ...

    def write(self) -> AbstractContextManager[Connection]: ...


__all__ = ["STORE_SCHEMA_VERSION", "TRACE_SCHEMA_VERSION", "append_only_ddl", "migrate", "versions"]

STORE_SCHEMA_VERSION = 3
_LOCK_KEY = 0x7265706C  # "repl": the advisory lock of migrations on PostgreSQL


def append_only_ddl(dialect: str, table: str) -> list[str]:
    """The statements that make ``table`` refuse UPDATE and DELETE on this database."""
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            for op in ("UPDATE", "DELETE")
        ]
    return [
        "CREATE OR REPLACE FUNCTION replaygate_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$",
        f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}",
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION replaygate_append_only()",
        f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}",
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION replaygate_append_only()",
    ]


def _version(conn: Connection, table: str) -> int:
    if not inspect(conn).has_table(table):
        return 0
    row = conn.execute(text(f"SELECT version FROM {table} WHERE id = 1")).first()
    return int(row[0]) if row is not None and row[0] is not None else 0


def versions(conn: Connection) -> tuple[int, int]:
    """(trace schema, control-plane schema) versions of the store behind ``conn`` (0 = none)."""
    return _version(conn, "trace_schema"), _version(conn, "store_schema")


def _set_version(conn: Connection, table: str, version: int) -> None:
    conn.execute(text(f"DELETE FROM {table}"))
    conn.execute(text(f"INSERT INTO {table} (id, version) VALUES (1, :v)"), {"v": version})


def _check_not_newer(store: Store, trace: int, control: int) -> None:
    if trace > TRACE_SCHEMA_VERSION or control > STORE_SCHEMA_VERSION:
        raise StoreError(
            f"store {store.label} has schema version traces={trace}, control={control}, newer than this "
            f"replaygate understands ({TRACE_SCHEMA_VERSION}, {STORE_SCHEMA_VERSION}): upgrade replaygate"
        )


def _migrate_traces_postgres(conn: Connection, version: int) -> None:
    if version == 0:  # a new PostgreSQL store starts at the current trace schema
        metadata.create_all(conn, tables=list(TRACE_TABLES))
    elif version == 2:  # v3: the canary's covering index replaces trace_traces_by_variant
        conn.execute(text("DROP INDEX IF EXISTS trace_traces_by_variant"))
        for index in trace_traces.indexes:
            index.create(conn, checkfirst=True)
    # v4 changed how SQLite lays out trace_spans (a rowid table); nothing changes on PostgreSQL.
    if version < TRACE_SCHEMA_VERSION:
        _set_version(conn, "trace_schema", TRACE_SCHEMA_VERSION)


def _migrate_control(conn: Connection, dialect: str, version: int) -> None:
    if version < STORE_SCHEMA_VERSION:
        # v1: the canary and gate tables (stores made before versioning already have them: kept as they
        # are); v2: gate_supersessions; v3: canary_state.policy. Creating what is missing brings any older
        # store up to date.
        metadata.create_all(conn, tables=list(CONTROL_TABLES))
        if "policy" not in {c["name"] for c in inspect(conn).get_columns("canary_state")}:
            conn.execute(text("ALTER TABLE canary_state ADD COLUMN policy TEXT"))
        for table in APPEND_ONLY_TABLES:
            for statement in append_only_ddl(dialect, table):
                conn.execute(text(statement))
    _set_version(conn, "store_schema", STORE_SCHEMA_VERSION)


def migrate(store: Store) -> None:
    """Bring the store to the current schema (idempotent; cheap when it is current)."""
    if store.path is not None:  # SQLite: the trace tables are migrated by the embedded writer's own code
        connect_store_db(store.path).close()
    with store.read() as conn:
        trace, control = versions(conn)
    _check_not_newer(store, trace, control)
    if trace == TRACE_SCHEMA_VERSION and control == STORE_SCHEMA_VERSION:
        return
    with store.write() as conn:
        if store.dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        trace, control = versions(conn)
        _check_not_newer(store, trace, control)
        if store.dialect == "postgresql":
            _migrate_traces_postgres(conn, trace)
        if control < STORE_SCHEMA_VERSION:
            _migrate_control(conn, store.dialect, control)
