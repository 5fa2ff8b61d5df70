"""The SQLite side of the trace store: where the file is, the schema and its version, busy retries.

The trace store shares one SQLite file with the control plane's tables (which have their own prefixes);
its own tables are prefixed ``trace_``. The file runs in WAL mode so readers never block the agents that
write, and every write is one ``BEGIN IMMEDIATE`` transaction retried with backoff when another process
holds the lock. Durability is ``synchronous = NORMAL``: a commit is not fsynced (checkpoints are), so a
power loss or OS crash may lose the last committed batches but never corrupts the file; a crash of the
agent process alone loses nothing that was committed. (``FULL`` would fsync every batch.)
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

from replaygate.instrumentation._errors import StoreError
from replaygate.instrumentation._masked_url import masked_url
from replaygate.instrumentation._store_rows import record_from_row, record_to_row, refresh_all_traces

__all__ = [
    "DEFAULT_STORE",
    "TRACE_MIGRATIONS",
    "TRACE_SCHEMA_VERSION",
    "STORE_ENV",
    "connect_store_db",
    "record_from_row",
    "record_to_row",
    "resolve_store_path",
    "resolve_store_url",
    "write_transaction",
]

STORE_ENV = "REPLAYGATE_STORE"
DEFAULT_STORE = ".replaygate/replaygate.db"
TRACE_SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 5000
WRITE_DEADLINE_S = 60.0

T = TypeVar("T")

# sqlite3 binds None as NULL only after looking for a ``__adapt__``/``__conform__`` that NoneType lacks
# (two AttributeErrors raised and formatted per None: ~0.6 us, and store rows carry a few Nones each). An
# adapter for NoneType that returns the value itself binds exactly the same NULL without the search; it
# changes nothing for any other sqlite3 user in the process.
sqlite3.register_adapter(type(None), cast(Callable[[None], None], {}.get))  # {}.get(None) is None

_SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS trace_spans (
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_id TEXT, name TEXT NOT NULL,
        kind TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, status TEXT NOT NULL,
        status_message TEXT, attributes TEXT NOT NULL, events TEXT NOT NULL,
        PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS trace_traces (
        trace_id TEXT PRIMARY KEY, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
        session_id TEXT, user_id TEXT, agent_name TEXT, variant TEXT, config_id TEXT,
        input_preview TEXT, output_preview TEXT, failure INTEGER NOT NULL DEFAULT 0,
        failure_reasons TEXT NOT NULL DEFAULT '[]', updated_ns INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS trace_traces_by_start ON trace_traces (start_ns)",
    "CREATE INDEX IF NOT EXISTS trace_traces_by_session ON trace_traces (session_id, start_ns)",
    "CREATE INDEX IF NOT EXISTS trace_traces_by_failure ON trace_traces (failure, start_ns)",
    "CREATE INDEX IF NOT EXISTS trace_traces_by_variant ON trace_traces (variant, start_ns)",
    """CREATE TABLE IF NOT EXISTS trace_feedback (
        id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL, score REAL NOT NULL,
        comment TEXT, created_ns INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS trace_feedback_by_trace ON trace_feedback (trace_id)",
)

# v2: the canary's per-request measures on each trace row (aggregated in SQL), and agents' drop counts.
_SCHEMA_V2: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "ALTER TABLE trace_traces ADD COLUMN error INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE trace_traces ADD COLUMN empty INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE trace_traces ADD COLUMN escalated INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE trace_traces ADD COLUMN negative_feedback INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE trace_traces ADD COLUMN latency_s REAL",
    "ALTER TABLE trace_traces ADD COLUMN llm_calls TEXT NOT NULL DEFAULT '[]'",
    """CREATE TABLE IF NOT EXISTS trace_drops (
        source TEXT PRIMARY KEY, dropped INTEGER NOT NULL, first_ns INTEGER NOT NULL,
        updated_ns INTEGER NOT NULL)""",
    refresh_all_traces,
)

# v3: the canary's per-arm aggregate reads only this index (counts, flags, latency, the sampling key).
_SCHEMA_V3: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "DROP INDEX IF EXISTS trace_traces_by_variant",
    "CREATE INDEX IF NOT EXISTS trace_traces_by_arm ON trace_traces "
    "(variant, start_ns, error, empty, escalated, negative_feedback, latency_s, trace_id)",
)

# v4: spans in a rowid table (appended in arrival order) with the (trace_id, span_id) key as its index.
# Clustered on the random trace id (WITHOUT ROWID), every insert landed on a random leaf page of ~1 KB
# rows, so each batch rewrote about one page per span: insert cost grew with the store (3-4x at 32k spans).
_SCHEMA_V4: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    """CREATE TABLE trace_spans_v4 (
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_id TEXT, name TEXT NOT NULL,
        kind TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, status TEXT NOT NULL,
        status_message TEXT, attributes TEXT NOT NULL, events TEXT NOT NULL,
        PRIMARY KEY (trace_id, span_id))""",
    "INSERT INTO trace_spans_v4 SELECT * FROM trace_spans ORDER BY start_ns",
    "DROP TABLE trace_spans",
    "ALTER TABLE trace_spans_v4 RENAME TO trace_spans",
)

#: Steps that bring a store from version ``v`` to ``v + 1``, keyed by ``v`` (0 = empty file): SQL
#: statements, or functions run on the connection inside the same transaction.
TRACE_MIGRATIONS: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    0: _SCHEMA_V1,
    1: _SCHEMA_V2,
    2: _SCHEMA_V3,
    3: _SCHEMA_V4,
}


def resolve_store_path(url_or_path: str | os.PathLike[str] | None) -> Path:
    """Resolve the store file: the argument, else ``$REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``.

    Accepts a file path or a ``sqlite:///relative/path`` / ``sqlite:////absolute/path`` URL.
    """
    raw = os.fspath(url_or_path) if url_or_path is not None else os.environ.get(STORE_ENV) or DEFAULT_STORE
    if "://" in raw:
        scheme, _, rest = raw.partition("://")
        if not scheme.startswith("sqlite"):
            raise StoreError(
                f"trace store URL {masked_url(raw)!r} is not SQLite: the embedded trace store needs a file "
                "path or a sqlite:///path URL (set REPLAYGATE_STORE or --store accordingly)"
            )
        path = rest.removeprefix("/").split("?", 1)[0]
        if not path or path == ":memory:":
            raise StoreError(f"trace store URL {raw!r} names no file: use sqlite:///path/to/replaygate.db")
        return Path(path)
    if not raw.strip():
        raise StoreError("empty trace store path: pass a file path or a sqlite:///path URL")
    return Path(raw)


def resolve_store_url(value: str | os.PathLike[str] | None = None) -> str:
    """The same store as a database URL for the control-plane tables (a path becomes ``sqlite:///``).

    Unlike the trace store, those tables also accept other databases (``postgresql://...``). The folder
    of a SQLite file is created.
    """
    raw = os.fspath(value) if value is not None else os.environ.get(STORE_ENV) or DEFAULT_STORE
    if "://" in raw:
        if raw.startswith("sqlite:///"):
            Path(raw.removeprefix("sqlite:///")).expanduser().resolve().parent.mkdir(
                parents=True, exist_ok=True
            )
        return raw
    path = Path(raw).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _retry_busy(action: Callable[[], T]) -> T:
    """Run ``action``, retrying with jittered exponential backoff while another process holds the lock."""
    deadline = time.monotonic() + WRITE_DEADLINE_S
    delay = 0.01
    while True:
        try:
            return action()
        except sqlite3.Error as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)


def write_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction, retrying with backoff while the file is busy."""

    def attempt() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = work(conn)
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    return _retry_busy(attempt)


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'trace_schema'"
    ).fetchone()
    if row is None:
        return 0
    found = conn.execute("SELECT version FROM trace_schema WHERE id = 1").fetchone()
    return int(found[0]) if found else 0


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    version = _version(conn)
    if version > TRACE_SCHEMA_VERSION:
        raise StoreError(
            f"trace store {path} has schema version {version}, newer than this replaygate-instrumentation "
            f"understands ({TRACE_SCHEMA_VERSION}): upgrade replaygate-instrumentation or use another store"
        )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS trace_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER)"
    )
    while version < TRACE_SCHEMA_VERSION:
        for step in TRACE_MIGRATIONS[version]:
            if callable(step):
                step(conn)
            else:
                conn.execute(step)
        version += 1
    conn.execute("INSERT OR REPLACE INTO trace_schema (id, version) VALUES (1, ?)", (version,))


def connect_store_db(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """Open (and create or migrate) the store at ``path``; every failure is a :class:`StoreError`."""
    if path.is_dir():
        raise StoreError(
            f"trace store {path} is a directory: give the store file, e.g. {path / 'replaygate.db'}"
        )
    if not create and not path.is_file():
        raise StoreError(
            f"no trace store at {path}: run an instrumented agent first, or point --store / "
            f"{STORE_ENV} at an existing store"
        )
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(
            f"cannot open trace store {path}: {exc} (check the path and its permissions)"
        ) from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = NORMAL")
        if _version(conn) != TRACE_SCHEMA_VERSION:
            write_transaction(conn, lambda c: _migrate(c, path))
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        if _read_only(path):
            raise StoreError(
                f"cannot use trace store {path}: {exc}: the store or its folder is read-only for this user "
                "(permissions, an immutable file or a read-only mount). SQLite keeps its write-ahead log "
                "beside the store, so even reading needs write access to both: fix the permissions, or copy "
                "the store to a writable folder and point --store at the copy"
            ) from exc
        raise StoreError(
            f"cannot use trace store {path}: {exc} (is it a replaygate SQLite store? move a damaged "
            "file away and a new store is created)"
        ) from exc
    return conn


def _read_only(path: Path) -> bool:
    """Whether this process may not write the store file or its folder (where the WAL files live)."""
    return any(p.exists() and not os.access(p, os.W_OK) for p in (path, path.parent))
