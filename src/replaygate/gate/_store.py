"""The decision store: reviews and signed gate decisions in the shared store (sqlalchemy 2).

Tables ``gate_reviews`` and ``gate_decisions`` live in the store given by a URL or a path (env
``REPLAYGATE_STORE``, default ``.replaygate/replaygate.db``); PostgreSQL URLs work as well as SQLite.
The tables are declared in ``replaygate.store`` (mapped here with the ORM).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from replaygate.instrumentation import DEFAULT_STORE, StoreError, resolve_store_url
from replaygate.replay import Fingerprint, content_hash
from sqlalchemy import Engine, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session

from replaygate.gate._errors import DecisionError
from replaygate.gate._gate_model import GateReport
from replaygate.gate._signing import DecisionOutcome, check_review, check_signable
from replaygate.store import Store, gate_decisions, gate_reviews, gate_supersessions
from replaygate.store import metadata as store_metadata

__all__ = ["DEFAULT_STORE", "DecisionStore", "Review", "SignedDecision", "resolve_store_url"]


class _Base(DeclarativeBase):
    metadata = store_metadata


class _ReviewRow(_Base):
    __table__ = gate_reviews
    id: Mapped[int]
    report_id: Mapped[str]
    scenario_id: Mapped[str]
    reviewed_by: Mapped[str]
    note: Mapped[str]
    reviewed_at: Mapped[datetime]


class _DecisionRow(_Base):
    __table__ = gate_decisions
    id: Mapped[str]
    report_id: Mapped[str]
    outcome: Mapped[str]
    signed_by: Mapped[str]
    reason: Mapped[str]
    signed_at: Mapped[datetime]
    baseline_fingerprint: Mapped[dict[str, Any]]
    candidate_fingerprint: Mapped[dict[str, Any]]
    candidate_target: Mapped[str]
    candidate_config_id: Mapped[str]
    report_path: Mapped[str | None]


class _SupersessionRow(_Base):
    """A decision replaced by a later one (``sign --supersede``): audited, the old one stays listed."""

    __table__ = gate_supersessions
    superseded_id: Mapped[str]
    by_id: Mapped[str]
    report_id: Mapped[str]
    signed_by: Mapped[str]
    reason: Mapped[str]
    at: Mapped[datetime]


class Review(BaseModel):
    """A person marked a newly failing scenario read."""

    model_config = ConfigDict(frozen=True)

    report_id: str
    scenario_id: str
    reviewed_by: str
    note: str
    reviewed_at: datetime


class SignedDecision(BaseModel):
    """A signed gate decision with both fingerprints (what the canary starts from)."""

    model_config = ConfigDict(frozen=True)

    id: str
    report_id: str
    outcome: DecisionOutcome
    signed_by: str
    reason: str
    signed_at: datetime
    baseline_fingerprint: Fingerprint
    candidate_fingerprint: Fingerprint
    candidate_target: str
    candidate_config_id: str
    report_path: str | None = None
    superseded_by: str | None = None  # the decision that replaced this one (it can start nothing)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _decision(row: _DecisionRow, superseded_by: str | None = None) -> SignedDecision:
    return SignedDecision.model_validate(
        {
            "id": row.id,
            "report_id": row.report_id,
            "outcome": row.outcome,
            "signed_by": row.signed_by,
            "reason": row.reason,
            "signed_at": _aware(row.signed_at),
            "baseline_fingerprint": row.baseline_fingerprint,
            "candidate_fingerprint": row.candidate_fingerprint,
            "candidate_target": row.candidate_target,
            "candidate_config_id": row.candidate_config_id,
            "report_path": row.report_path,
            "superseded_by": superseded_by,
        }
    )


def _superseded(session: Session, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = session.scalars(select(_SupersessionRow).where(_SupersessionRow.superseded_id.in_(ids))).all()
    return {r.superseded_id: r.by_id for r in rows}


class DecisionStore:
    """Reviews and signed decisions, stored in the shared store.

    Args:
        url: a sqlalchemy URL or a file path; None reads ``REPLAYGATE_STORE`` (default
            ``.replaygate/replaygate.db``).
    """

    def __init__(self, url: str | os.PathLike[str] | Store | None = None) -> None:
        self._owned = not isinstance(url, Store)
        try:
            self.store = url if isinstance(url, Store) else Store(url)
        except StoreError as exc:
            raise DecisionError(f"decision store: cannot open it ({exc})") from None
        self.url = self.store.url
        self._engine: Engine = self.store.engine

    def close(self) -> None:
        """Release the store's connections (when this object opened the store)."""
        if self._owned:
            self.store.close()

    def add_review(self, report: GateReport, scenario_id: str, reviewed_by: str, note: str) -> Review:
        """Mark a newly failing scenario of a report read (idempotent: a second review updates the note)."""
        check_review(report, scenario_id)
        if not reviewed_by.strip():
            raise DecisionError("a review needs the reviewer's name (--by)")
        now = datetime.now(UTC)
        try:
            with Session(self._engine) as session, session.begin():
                row = session.scalars(
                    select(_ReviewRow).where(
                        _ReviewRow.report_id == report.report_id,
                        _ReviewRow.scenario_id == scenario_id,
                        _ReviewRow.reviewed_by == reviewed_by,
                    )
                ).one_or_none()
                if row is None:
                    row = _ReviewRow(
                        report_id=report.report_id, scenario_id=scenario_id, reviewed_by=reviewed_by
                    )
                    session.add(row)
                row.note = note
                row.reviewed_at = now
        except SQLAlchemyError as exc:
            raise DecisionError(f"decision store {self.url}: cannot store the review ({exc})") from None
        return Review(
            report_id=report.report_id,
            scenario_id=scenario_id,
            reviewed_by=reviewed_by,
            note=note,
            reviewed_at=now,
        )

    def reviews(self, report_id: str) -> list[Review]:
        """Every review of a report, oldest first."""
        with Session(self._engine) as session:
            rows = session.scalars(
                select(_ReviewRow).where(_ReviewRow.report_id == report_id).order_by(_ReviewRow.id)
            ).all()
            return [
                Review(
                    report_id=r.report_id,
                    scenario_id=r.scenario_id,
                    reviewed_by=r.reviewed_by,
                    note=r.note,
                    reviewed_at=_aware(r.reviewed_at),
                )
                for r in rows
            ]

    def sign(
        self,
        report: GateReport,
        *,
        signed_by: str,
        outcome: str,
        reason: str,
        report_path: str | None = None,
        supersede: bool = False,
    ) -> SignedDecision:
        """Store a signed decision after the rules allow it (see :func:`check_signable`).

        Idempotent: signing the same report with the same outcome, name and reason returns the stored one.
        A report already signed otherwise is refused unless ``supersede``: then the new decision replaces
        the current one (recorded with who, when and ``reason``; the old one stays listed, marked
        ``superseded_by``, and can start nothing).

        Raises:
            DecisionError: unread newly failing scenarios, a pass the gate does not allow, a report signed
                already (without ``supersede``), or a store failure.
        """
        if not signed_by.strip() or not reason.strip():
            raise DecisionError("a signed decision needs a name (--by) and a reason (--reason)")
        check_signable(report, outcome, {r.scenario_id for r in self.reviews(report.report_id)})
        c = report.comparison
        key = {"report": report.report_id, "outcome": outcome, "by": signed_by, "reason": reason}
        decision_id = "dec-" + content_hash(key).split(":", 1)[1][:16]
        now = datetime.now(UTC)
        try:
            with Session(self._engine) as session, session.begin():
                rows = session.scalars(
                    select(_DecisionRow).where(_DecisionRow.report_id == report.report_id)
                ).all()
                gone = _superseded(session, [r.id for r in rows])
                current = [r for r in rows if r.id not in gone]
                existing = session.get(_DecisionRow, decision_id)
                if existing is not None:
                    if existing.id in gone:
                        raise DecisionError(
                            f"report {report.report_id}: decision {decision_id} was superseded by "
                            f"{gone[existing.id]}; sign with a new reason to replace that one"
                        )
                    return _decision(existing)
                if current and not supersede:
                    old = current[-1]
                    raise DecisionError(
                        f"report {report.report_id} is already signed: {old.outcome} by {old.signed_by} "
                        f"(decision {old.id}); to replace that decision sign again with --supersede and "
                        "a --reason saying why (audited; the old decision stays listed)"
                    )
                row = _DecisionRow(
                    id=decision_id,
                    report_id=report.report_id,
                    outcome=outcome,
                    signed_by=signed_by,
                    reason=reason,
                    signed_at=now,
                    baseline_fingerprint=c.baseline.fingerprint.model_dump(mode="json"),
                    candidate_fingerprint=c.candidate.fingerprint.model_dump(mode="json"),
                    candidate_target=c.candidate.fingerprint.target,
                    candidate_config_id=c.candidate.fingerprint.config_id(),
                    report_path=report_path,
                )
                session.add(row)
                for old in current:
                    session.add(
                        _SupersessionRow(
                            superseded_id=old.id,
                            by_id=decision_id,
                            report_id=report.report_id,
                            signed_by=signed_by,
                            reason=reason,
                            at=now,
                        )
                    )
                session.flush()
                return _decision(row)
        except SQLAlchemyError as exc:
            raise DecisionError(f"decision store {self.url}: cannot store the decision ({exc})") from None

    def get(self, decision_id: str) -> SignedDecision | None:
        """One signed decision by id (None when unknown)."""
        with Session(self._engine) as session:
            row = session.get(_DecisionRow, decision_id)
            if row is None:
                return None
            return _decision(row, _superseded(session, [row.id]).get(row.id))

    def list_decisions(
        self, outcomes: list[str] | tuple[str, ...] | None = None, *, include_superseded: bool | None = None
    ) -> list[SignedDecision]:
        """Signed decisions, newest first, optionally only some outcomes.

        Superseded decisions are listed (marked ``superseded_by``) when no outcome is asked for, and left
        out when some are (what can start a canary); ``include_superseded`` decides explicitly.
        """
        keep_old = outcomes is None if include_superseded is None else include_superseded
        with Session(self._engine) as session:
            query = select(_DecisionRow).order_by(_DecisionRow.signed_at.desc(), _DecisionRow.id)
            if outcomes:
                query = query.where(_DecisionRow.outcome.in_(list(outcomes)))
            rows = session.scalars(query).all()
            gone = _superseded(session, [r.id for r in rows])
            return [_decision(r, gone.get(r.id)) for r in rows if keep_old or r.id not in gone]
