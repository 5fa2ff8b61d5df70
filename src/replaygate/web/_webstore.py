"""The release page's own tables in the shared store: sessions, login failures, passwords, audit.

Everything the page must agree on across gunicorn workers lives here, not in process memory: a session
is a row (logout revokes it, so a copied cookie stops working), wrong passwords are rows counted per user
and per client address over a sliding window (the lock-out holds whichever worker answers), a one-time
password's use and its replacement are rows, and every review, signature, promotion and lock-out is an
append-only audit row (``web_audit``; SQLite triggers refuse updates and deletes).

The tables sit on a :class:`replaygate.store.Store` like every other part of the store, so they get its
engine: PostgreSQL connections checked before use (a restarted server costs a reconnect, not a failed
request) and SQLite write transactions that start with ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from replaygate.instrumentation import StoreError
from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    delete,
    func,
    insert,
    select,
    text,
    update,
)

from replaygate.canary import CanaryError
from replaygate.store import Store

__all__ = ["WebAuditEntry", "WebStore"]

_metadata = MetaData()

web_sessions = Table(
    "web_sessions",
    _metadata,
    Column("sid", String(64), primary_key=True),
    Column("user", String(256), nullable=False),
    Column("created_ns", BigInteger, nullable=False),
    Column("revoked_ns", BigInteger),
)
web_login_failures = Table(
    "web_login_failures",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(8), nullable=False),  # "user" or "addr"
    Column("key", String(256), nullable=False, index=True),
    Column("at_ns", BigInteger, nullable=False, index=True),
)
web_passwords = Table(
    "web_passwords",
    _metadata,
    Column("user", String(256), primary_key=True),
    Column("issued_hash", Text, nullable=False),  # the users file's one-time hash this row is about
    Column("used_ns", BigInteger),
    Column("password_hash", Text),  # the password the person chose; None until then
)
web_audit = Table(
    "web_audit",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ns", BigInteger, nullable=False, index=True),
    Column("actor", String(256), nullable=False),
    Column("action", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("subject", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("details", Text),
)
_APPEND_ONLY = (
    "CREATE TRIGGER IF NOT EXISTS web_audit_no_update BEFORE UPDATE ON web_audit "
    "BEGIN SELECT RAISE(ABORT, 'web_audit is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS web_audit_no_delete BEFORE DELETE ON web_audit "
    "BEGIN SELECT RAISE(ABORT, 'web_audit is append-only'); END",
)


@dataclass(frozen=True)
class WebAuditEntry:
    """One audited page action: a review, a signature, a promotion, a lock-out, a password change."""

    id: int
    at_ns: int
    actor: str
    action: str
    outcome: str
    subject: str
    reason: str
    details: dict[str, Any]


class WebStore:
    """The page's tables in the store given by a path or URL (the same store as the canary's)."""

    def __init__(self, store: str | None = None, *, clock: Any = time.time_ns) -> None:
        self.clock = clock
        try:
            self.store = Store(store)
        except StoreError as exc:
            raise CanaryError(f"cannot open the release page's tables: {exc}") from None
        self.url = self.store.url
        self.engine: Engine = self.store.engine
        try:
            with self.store.write() as conn:
                _metadata.create_all(conn)
                if self.store.dialect == "sqlite":
                    for ddl in _APPEND_ONLY:
                        conn.execute(text(ddl))
        except StoreError as exc:
            self.store.close()
            raise CanaryError(f"cannot open the release page's tables: {exc}") from None

    def close(self) -> None:
        """Release the connection pool."""
        self.store.close()

    # sessions ----------------------------------------------------------------------------------------

    def new_session(self, user: str) -> str:
        """Start a server-side session for ``user``; return its id (kept in the signed cookie)."""
        sid = secrets.token_urlsafe(32)
        with self.store.write() as conn:
            conn.execute(insert(web_sessions).values(sid=sid, user=user, created_ns=self.clock()))
        return sid

    def session_user(self, sid: str, max_age_s: float) -> str | None:
        """The user of a live session (None when unknown, revoked or older than ``max_age_s``)."""
        with self.store.read() as conn:
            row = conn.execute(select(web_sessions).where(web_sessions.c.sid == sid)).first()
        if row is None or row.revoked_ns is not None:
            return None
        if self.clock() - row.created_ns > max_age_s * 1e9:
            return None
        return str(row.user)

    def revoke_session(self, sid: str) -> None:
        """End a session for good: its cookie is refused from now on, whoever holds a copy."""
        with self.store.write() as conn:
            conn.execute(
                update(web_sessions)
                .where(web_sessions.c.sid == sid, web_sessions.c.revoked_ns.is_(None))
                .values(revoked_ns=self.clock())
            )

    def revoke_user_sessions(self, user: str) -> None:
        """End every session of one user (after a password change)."""
        with self.store.write() as conn:
            conn.execute(
                update(web_sessions)
                .where(web_sessions.c.user == user, web_sessions.c.revoked_ns.is_(None))
                .values(revoked_ns=self.clock())
            )

    # login throttling --------------------------------------------------------------------------------

    def failures(self, kind: str, key: str, window_s: float) -> int:
        """Wrong passwords for this user or client address within the window."""
        since = self.clock() - int(window_s * 1e9)
        with self.store.read() as conn:
            return int(
                conn.execute(
                    select(func.count())
                    .select_from(web_login_failures)
                    .where(
                        web_login_failures.c.kind == kind,
                        web_login_failures.c.key == key,
                        web_login_failures.c.at_ns >= since,
                    )
                ).scalar_one()
            )

    def add_failure(self, user: str, addr: str, window_s: float) -> tuple[int, int]:
        """Record one wrong password; return the user's and the address's counts within the window."""
        now = self.clock()
        old = now - int(window_s * 1e9)
        with self.store.write() as conn:
            conn.execute(delete(web_login_failures).where(web_login_failures.c.at_ns < old))
            conn.execute(
                insert(web_login_failures),
                [{"kind": "user", "key": user, "at_ns": now}, {"kind": "addr", "key": addr, "at_ns": now}],
            )
        return self.failures("user", user, window_s), self.failures("addr", addr, window_s)

    def clear_failures(self, user: str) -> None:
        """Forget a user's wrong passwords (after a successful login)."""
        with self.store.write() as conn:
            conn.execute(
                delete(web_login_failures).where(
                    and_(web_login_failures.c.kind == "user", web_login_failures.c.key == user)
                )
            )

    # one-time passwords ------------------------------------------------------------------------------

    def password_row(self, user: str, issued_hash: str) -> Any:
        """The password row of a one-time user for the hash the users file issues (None: fresh)."""
        with self.store.read() as conn:
            row = conn.execute(select(web_passwords).where(web_passwords.c.user == user)).first()
        return row if row is not None and row.issued_hash == issued_hash else None

    def use_one_time(self, user: str, issued_hash: str) -> bool:
        """Mark the one-time password used; False when it was used already (another login won)."""
        now = self.clock()
        with self.store.write() as conn:
            row = conn.execute(select(web_passwords).where(web_passwords.c.user == user)).first()
            if row is not None and row.issued_hash == issued_hash:
                return False
            if row is not None:
                conn.execute(delete(web_passwords).where(web_passwords.c.user == user))
            conn.execute(insert(web_passwords).values(user=user, issued_hash=issued_hash, used_ns=now))
        return True

    def set_password(self, user: str, issued_hash: str, password_hash: str) -> None:
        """Store the password a one-time user chose (it replaces the issued one)."""
        with self.store.write() as conn:
            conn.execute(
                update(web_passwords)
                .where(web_passwords.c.user == user, web_passwords.c.issued_hash == issued_hash)
                .values(password_hash=password_hash)
            )

    # audit -------------------------------------------------------------------------------------------

    def audit(
        self,
        *,
        actor: str,
        action: str,
        outcome: str,
        subject: str,
        reason: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        """Append one audit row."""
        with self.store.write() as conn:
            conn.execute(
                insert(web_audit).values(
                    at_ns=self.clock(),
                    actor=actor[:256],
                    action=action[:32],
                    outcome=outcome[:16],
                    subject=subject,
                    reason=reason,
                    details=json.dumps(details or {}, default=str),
                )
            )

    def audit_entries(self, limit: int = 200, subject: str | None = None) -> list[WebAuditEntry]:
        """Audit rows, newest first (optionally of one subject, e.g. a report id)."""
        query = select(web_audit).order_by(web_audit.c.at_ns.desc(), web_audit.c.id.desc()).limit(limit)
        if subject is not None:
            query = query.where(web_audit.c.subject.startswith(subject, autoescape=True))
        with self.store.read() as conn:
            rows = conn.execute(query).all()
        return [
            WebAuditEntry(
                r.id,
                r.at_ns,
                r.actor,
                r.action,
                r.outcome,
                r.subject,
                r.reason,
                json.loads(r.details or "{}"),
            )
            for r in rows
        ]
