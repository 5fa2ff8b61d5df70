"""Opening the store: one SQLAlchemy engine per URL, SQLite tuned for many processes, errors made clear.

SQLite runs in WAL mode with a 30 s busy timeout; a write transaction (``Store.write()``) starts with
``BEGIN IMMEDIATE`` so two writers never deadlock on a lock upgrade, while reads start a plain ``BEGIN``.
PostgreSQL connections are checked before use (``pool_pre_ping``) so a restarted server costs nothing
but a reconnect.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replaygate.instrumentation import StoreError, resolve_store_url
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from replaygate.store._migrate import migrate

__all__ = ["BUSY_TIMEOUT_S", "Store", "display_url", "open_engine"]

BUSY_TIMEOUT_S = 30
_WRITE = "replaygate_write"


def display_url(url: str) -> str:
    """The URL without its password (for messages and listings)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # SQLAlchemy's begin event below emits BEGIN itself
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
        mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")


def open_engine(url: str) -> Engine:
    """Create the engine of a store URL (``sqlite:///path`` or ``postgresql+psycopg://...``).

    Raises:
        StoreError: the URL is malformed or names a database driver that is not installed.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(
            f"store URL {url!r} is not a database URL: use sqlite:///path/to/replaygate.db or "
            "postgresql+psycopg://user:password@host/dbname"
        ) from exc
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False})
            event.listen(engine, "connect", _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        if parsed.get_backend_name() != "postgresql":
            raise StoreError(
                f"store URL {display_url(url)}: only SQLite (sqlite:///path) and PostgreSQL "
                "(postgresql+psycopg://...) stores are supported"
            )
        return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
    except (ImportError, SQLAlchemyError) as exc:
        raise StoreError(
            f"cannot use store {display_url(url)}: {exc} (for PostgreSQL use postgresql+psycopg://, "
            "installed with replaygate)"
        ) from exc


class Store:
    """A store URL, its engine and its migrated schema; the other stores of the control plane sit on it.

    Args:
        url: a sqlalchemy URL or a file path; None reads ``REPLAYGATE_STORE`` (default
            ``.replaygate/replaygate.db``).
        create: when False, a SQLite file that does not exist is a :class:`StoreError` (nothing is created).

    Raises:
        StoreError: the store cannot be opened, reached or migrated, or has a newer schema.
    """

    def __init__(self, url: str | os.PathLike[str] | None = None, *, create: bool = True) -> None:
        self.url = resolve_store_url(url)
        self.display = display_url(self.url)
        self.engine = open_engine(self.url)
        self.dialect = self.engine.dialect.name
        self.path: Path | None = None
        if self.dialect == "sqlite":
            database = make_url(self.url).database
            if not database or database == ":memory:":
                raise StoreError(f"store URL {self.url!r} names no file: use sqlite:///path/to/replaygate.db")
            self.path = Path(database)
            if not create and not self.path.is_file():
                raise StoreError(
                    f"no trace store at {self.path}: run an instrumented agent (or `replaygate collect`) "
                    "first, "
                    "or point --store / REPLAYGATE_STORE at an existing store"
                )
        self._writer = self.engine.execution_options(**{_WRITE: True})
        if hasattr(os, "register_at_fork"):  # a forked child (gunicorn --preload) opens its own connections
            ref = weakref.ref(self.engine)

            def after_fork_in_child() -> None:
                engine = ref()
                if engine is not None:
                    engine.dispose(close=False)

            os.register_at_fork(after_in_child=after_fork_in_child)
        try:
            migrate(self)
        except BaseException:
            self.engine.dispose()
            raise

    def __repr__(self) -> str:
        return f"Store({self.display!r})"

    @property
    def label(self) -> str:
        """What to call this store in messages: the file path, or the URL without its password."""
        return str(self.path) if self.path is not None else self.display

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reading (one transaction, rolled back at the end)."""
        with self._errors("read"), self.engine.connect() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` on SQLite), committed when the block ends."""
        with self._errors("write"), self._writer.begin() as conn:
            yield conn

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except StoreError:
            raise
        except SQLAlchemyError as exc:
            detail = getattr(exc, "orig", None) or exc
            raise StoreError(f"cannot {what} store {self.label}: {detail}") from exc

    def close(self) -> None:
        """Release the connection pool (idempotent)."""
        self.engine.dispose()
