"""The canary's tables in the shared store (sqlalchemy): the current state and an append-only audit log.

``canary_state`` holds one row (id 1), the current rollout, with a ``version`` column for optimistic
concurrency: an action reads the state, decides (pure), and writes ``WHERE version = <read>``; when another
action won the race, it reads again and decides again. Every attempted action, refused or not, appends a
row to ``canary_audit`` in the same transaction (on SQLite, triggers refuse UPDATE and DELETE on it).

Routing clients read ``canary_state`` directly with stdlib ``sqlite3`` (``status``, ``share``, ``salt``,
``baseline_config_id``, ``candidate_config_id``, ``rollout_id``, ``version``): keep those columns.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from replaygate.instrumentation._store_db import resolve_store_url
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from replaygate.canary._errors import CanaryError, ConflictError
from replaygate.canary._machine import RolloutState, Transition

__all__ = ["AuditEntry", "CanaryStore", "resolve_store_url"]

_metadata = MetaData()

canary_state = Table(
    "canary_state",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("rollout_id", String(64)),
    Column("status", String(16), nullable=False),
    Column("step_index", Integer, nullable=False, default=0),
    Column("plan", Text, nullable=False),
    Column("share", Float, nullable=False),
    Column("salt", String(64), nullable=False, default=""),
    Column("decision_id", String(128)),
    Column("baseline_config_id", String(256)),
    Column("candidate_config_id", String(256)),
    Column("started_ns", BigInteger),
    Column("step_started_ns", BigInteger),
    Column("updated_ns", BigInteger),
    Column("auto_rollback", Boolean, nullable=False, default=True),
    Column("reason", Text),
    Column("version", Integer, nullable=False),
)

canary_audit = Table(
    "canary_audit",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ns", BigInteger, nullable=False, index=True),
    Column("rollout_id", String(64)),
    Column("actor", String(256), nullable=False),
    Column("action", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("from_state", String(64), nullable=False),
    Column("to_state", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("details", Text),
)

_APPEND_ONLY = (
    "CREATE TRIGGER IF NOT EXISTS canary_audit_no_update BEFORE UPDATE ON canary_audit "
    "BEGIN SELECT RAISE(ABORT, 'canary_audit is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS canary_audit_no_delete BEFORE DELETE ON canary_audit "
    "BEGIN SELECT RAISE(ABORT, 'canary_audit is append-only'); END",
)


@dataclass(frozen=True)
class AuditEntry:
    """One audited action (applied, noop or refused)."""

    id: int
    at_ns: int
    rollout_id: str | None
    actor: str
    action: str
    outcome: str
    from_state: str
    to_state: str
    reason: str
    details: dict[str, Any]


def _row_to_state(row: Any) -> RolloutState:
    return RolloutState(
        status=row.status,
        rollout_id=row.rollout_id,
        decision_id=row.decision_id,
        plan=tuple(float(p) for p in json.loads(row.plan)),
        step_index=int(row.step_index),
        salt=row.salt or "",
        baseline_config_id=row.baseline_config_id,
        candidate_config_id=row.candidate_config_id,
        started_ns=row.started_ns,
        step_started_ns=row.step_started_ns,
        updated_ns=row.updated_ns,
        auto_rollback=bool(row.auto_rollback),
        reason=row.reason,
        version=int(row.version),
    )


def _state_values(state: RolloutState, version: int) -> dict[str, Any]:
    return {
        "rollout_id": state.rollout_id,
        "status": state.status,
        "step_index": state.step_index,
        "plan": json.dumps(list(state.plan)),
        "share": state.share,
        "salt": state.salt,
        "decision_id": state.decision_id,
        "baseline_config_id": state.baseline_config_id,
        "candidate_config_id": state.candidate_config_id,
        "started_ns": state.started_ns,
        "step_started_ns": state.step_started_ns,
        "updated_ns": state.updated_ns,
        "auto_rollback": state.auto_rollback,
        "reason": state.reason,
        "version": version,
    }


class CanaryStore:
    """The canary state and audit log in the shared store (SQLite file or any sqlalchemy URL)."""

    def __init__(self, store: str | os.PathLike[str] | None = None, *, max_retries: int = 50) -> None:
        self.url = resolve_store_url(store)
        self.max_retries = max_retries
        kwargs: dict[str, Any] = {"future": True}
        if self.url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30}
        try:
            self.engine: Engine = create_engine(self.url, **kwargs)
            if self.url.startswith("sqlite"):
                event.listen(self.engine, "connect", _sqlite_pragmas)
            _metadata.create_all(self.engine)
            if self.engine.dialect.name == "sqlite":
                with self.engine.begin() as conn:
                    for ddl in _APPEND_ONLY:
                        conn.execute(text(ddl))
        except SQLAlchemyError as exc:  # not a database, unreachable, refused
            raise CanaryError(
                f"cannot open the canary tables in {self.url}: {getattr(exc, 'orig', None) or exc}; "
                "check the --store path or URL"
            ) from exc
        except ImportError as exc:  # the URL's driver is not installed
            raise CanaryError(
                f"cannot open the canary tables in {self.url}: its database driver {exc.name or exc} is not "
                "installed (for PostgreSQL: pip install 'psycopg[binary]')"
            ) from exc

    def close(self) -> None:
        """Release the connection pool."""
        self.engine.dispose()

    def load(self) -> RolloutState:
        """Return the current rollout (idle when none was ever started)."""
        with self.engine.connect() as conn:
            row = conn.execute(select(canary_state).where(canary_state.c.id == 1)).first()
        return RolloutState() if row is None else _row_to_state(row)

    def apply(
        self,
        decide: Callable[[RolloutState], Transition],
        *,
        actor: str,
        details: dict[str, Any] | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> Transition:
        """Read the state, decide the transition, and write it with the audit row in one transaction.

        Retries when another action changed the state in between (optimistic concurrency on ``version``).
        """
        delay = 0.005
        for _ in range(self.max_retries):
            before = self.load()
            transition = decide(before)
            try:
                with self.engine.begin() as conn:
                    if transition.changed:
                        values = _state_values(transition.after, before.version + 1)
                        if before.version == 0:  # no row yet: a concurrent insert fails on the key
                            conn.execute(insert(canary_state).values(id=1, **values))
                        else:
                            result = conn.execute(
                                update(canary_state)
                                .where(canary_state.c.id == 1, canary_state.c.version == before.version)
                                .values(**values)
                            )
                            if result.rowcount != 1:
                                raise _Retry
                    else:
                        current = conn.execute(
                            select(canary_state.c.version).where(canary_state.c.id == 1)
                        ).first()
                        if (current[0] if current is not None else 0) != before.version:
                            raise _Retry
                    after = transition.after
                    conn.execute(
                        insert(canary_audit).values(
                            at_ns=clock(),
                            rollout_id=after.rollout_id or before.rollout_id,
                            actor=actor,
                            action=transition.action,
                            outcome=transition.outcome,
                            from_state=before.label(),
                            to_state=after.label(),
                            reason=transition.reason,
                            details=json.dumps(details or {}, sort_keys=True, default=str),
                        )
                    )
            except (_Retry, IntegrityError):
                pass
            except OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise CanaryError(f"cannot write the canary state in {self.url}: {exc.orig}") from exc
            else:
                if transition.changed:
                    return Transition(
                        transition.action,
                        before,
                        replace(transition.after, version=before.version + 1),
                        transition.outcome,
                        transition.reason,
                    )
                return transition
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        raise ConflictError(
            f"the canary state kept changing during {actor}'s action ({self.max_retries} tries); try again"
        )

    def audit(self, limit: int = 200, rollout_id: str | None = None) -> list[AuditEntry]:
        """Return audited actions, newest first."""
        query = select(canary_audit).order_by(canary_audit.c.id.desc()).limit(limit)
        if rollout_id is not None:
            query = query.where(canary_audit.c.rollout_id == rollout_id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            AuditEntry(
                id=r.id,
                at_ns=r.at_ns,
                rollout_id=r.rollout_id,
                actor=r.actor,
                action=r.action,
                outcome=r.outcome,
                from_state=r.from_state,
                to_state=r.to_state,
                reason=r.reason,
                details=json.loads(r.details) if r.details else {},
            )
            for r in rows
        ]


class _Retry(Exception):
    pass


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute("PRAGMA busy_timeout = 30000")
    finally:
        cursor.close()
