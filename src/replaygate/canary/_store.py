"""The canary's tables in the shared store (sqlalchemy): the current state and an append-only audit log.

``canary_state`` holds one row (id 1), the current rollout, with a ``version`` column for optimistic
concurrency: an action reads the state, decides (pure), and writes ``WHERE version = <read>``; when another
action won the race, it reads again and decides again. Every attempted action, refused or not, appends a
row to ``canary_audit`` in the same transaction (triggers refuse UPDATE and DELETE on it, on SQLite and
PostgreSQL). The tables are declared in ``replaygate.store`` with every other table of the store.

Live measures are aggregated here, in SQL, per arm and step (:meth:`CanaryStore.arm_data`): one query
gives every arm's request count and flag counts (read from the covering index ``trace_traces_by_arm``
alone); one more per arm reads a bounded uniform sample (by trace id, which is random) of latencies and
LLM calls for the quantiles, the intervals and the cost, on both databases (an exact ``percentile_cont``
sorts every request of the step: it cost more than the rest of a look at 100k traces). A look costs
O(arms × measures) queries whatever the number of traces; the failure-rate series is one ``GROUP BY``
over time bins, and the page's per-measure series (:meth:`CanaryStore.binned_arm_data`) one ``GROUP BY``
plus one bounded sample per arm.

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

from replaygate.instrumentation import StoreError, resolve_store_url
from sqlalchemy import ColumnElement, Engine, and_, case, func, insert, literal, or_, select, update
from sqlalchemy.exc import IntegrityError, OperationalError

from replaygate.canary._errors import CanaryError, ConflictError
from replaygate.canary._machine import RolloutState, Transition
from replaygate.canary._measures import RATE_MEASURES, ArmData
from replaygate.canary._tolerances import CanaryPolicy, RecordError
from replaygate.store import Store, canary_audit, canary_state, trace_traces

__all__ = ["ARMS", "DEFAULT_SAMPLE", "AuditEntry", "CanaryStore", "resolve_store_url"]

ARMS = ("baseline", "candidate")
#: Requests per arm whose latency and cost are read for the intervals (uniform by trace id).
DEFAULT_SAMPLE = 4000
_T = trace_traces.c


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


def _row_to_state(row: Any, where: str) -> RolloutState:
    policy, policy_error = None, None
    if row.policy is not None:
        try:
            policy = CanaryPolicy.loads(row.policy)
        except RecordError as exc:  # never raised here: a rollback must stay possible
            policy_error = f"the rollout's recorded policy in {where} cannot be read ({exc})"
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
        policy=policy,
        policy_error=policy_error,
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
        "policy": None if state.policy is None else state.policy.dumps(),
    }


class CanaryStore:
    """The canary state and audit log in the shared store (SQLite file or any sqlalchemy URL)."""

    def __init__(self, store: str | os.PathLike[str] | Store | None = None, *, max_retries: int = 50) -> None:
        self.max_retries = max_retries
        self._owned = not isinstance(store, Store)
        try:
            self.store = store if isinstance(store, Store) else Store(store)
        except StoreError as exc:
            raise CanaryError(f"cannot open the canary tables: {exc}") from exc
        self.url = self.store.url
        self.engine: Engine = self.store.engine
        #: State changes this object committed (a cache of the state in this process compares it).
        self.writes = 0

    def close(self) -> None:
        """Release the connection pool (when this object opened the store)."""
        if self._owned:
            self.store.close()

    def load(self) -> RolloutState:
        """Return the current rollout (idle when none was ever started)."""
        try:
            with self.store.read() as conn:
                row = conn.execute(select(canary_state).where(canary_state.c.id == 1)).first()
        except StoreError as exc:
            raise CanaryError(str(exc)) from exc
        return RolloutState() if row is None else _row_to_state(row, self.store.label)

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
                with self.store.write() as conn:
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
            except StoreError as exc:
                cause = exc.__cause__
                if isinstance(cause, IntegrityError):
                    pass
                elif not isinstance(cause, OperationalError) or (
                    "locked" not in str(cause) and "busy" not in str(cause)
                ):
                    raise CanaryError(f"cannot write the canary state in {self.store.label}: {exc}") from exc
            else:
                if transition.changed:
                    self.writes += 1
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
        try:
            with self.store.read() as conn:
                rows = conn.execute(query).all()
        except StoreError as exc:
            raise CanaryError(str(exc)) from exc
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

    # live measures, aggregated in SQL ---------------------------------------------------------------

    def _window(self, since_ns: int, until_ns: int | None) -> list[ColumnElement[bool]]:
        clauses = [_T.variant.in_(ARMS), _T.start_ns >= int(since_ns)]
        if until_ns is not None:
            clauses.append(_T.start_ns < int(until_ns))
        return clauses

    def arm_data(
        self,
        since_ns: int,
        until_ns: int | None = None,
        *,
        cost: Callable[[str], float | None],
        sample_size: int = DEFAULT_SAMPLE,
    ) -> dict[str, ArmData]:
        """Each arm's counts (exact) and a bounded sample of latencies and costs, for one window.

        Args:
            since_ns: the window's start (the step's start).
            until_ns: its end (None: now).
            cost: the cost (USD, None when unknown) of one trace's ``llm_calls`` JSON.
            sample_size: at most this many requests per arm are read for latency and cost.
        """
        window = self._window(since_ns, until_ns)
        columns: list[Any] = [
            _T.variant,
            func.count(),
            *(func.coalesce(func.sum(_T[flag]), 0) for flag in RATE_MEASURES.values()),
        ]
        with self.store.read() as conn:
            totals = {
                row[0]: row for row in conn.execute(select(*columns).where(*window).group_by(_T.variant))
            }
            out: dict[str, ArmData] = {}
            for arm in ARMS:
                row = totals.get(arm)
                n = int(row[1]) if row is not None else 0
                clauses = [_T.variant == arm, *window[1:]]
                if n > sample_size:  # trace ids are random: a prefix bound is a uniform sample
                    bound = format(min(16**8 - 1, int(16**8 * sample_size / n * 1.05)), "08x")
                    clauses.append(_T.trace_id < bound)
                sample = conn.execute(
                    select(_T.latency_s, _T.llm_calls).where(*clauses).limit(sample_size)
                ).all()
                costs = [cost(calls) for _, calls in sample]
                known = tuple(c for c in costs if c is not None)
                counts = {
                    name: int(row[2 + i]) if row is not None else 0 for i, name in enumerate(RATE_MEASURES)
                }
                out[arm] = ArmData(
                    n=n,
                    counts=counts,
                    latencies=tuple(float(lat) for lat, _ in sample if lat is not None),
                    costs=known,
                    cost_unknown=len(costs) - len(known),
                )
        return out

    def binned_arm_data(
        self,
        start_ns: int,
        end_ns: int,
        bins: int,
        *,
        cost: Callable[[str], float | None],
        sample_size: int = DEFAULT_SAMPLE,
    ) -> dict[str, list[ArmData]]:
        """Per arm, one :class:`ArmData` per equal time bin of ``[start_ns, end_ns)`` (the page's series).

        Counts are exact (one ``GROUP BY`` over arm and bin); latencies and costs come from one bounded
        uniform sample per arm over the whole window (by trace id, as in :meth:`arm_data`), each sampled
        request in its bin: a series costs the same at 1k and 100k traces.
        """
        bins = max(1, bins)
        width = max(1, (end_ns - start_ns) // bins + 1)
        window = self._window(start_ns, start_ns + width * bins)
        index = ((_T.start_ns - literal(int(start_ns))) // literal(int(width))).label("bin")
        flags = [func.coalesce(func.sum(_T[flag]), 0) for flag in RATE_MEASURES.values()]
        query = select(_T.variant, index, func.count(), *flags).where(*window).group_by(_T.variant, index)
        n = {arm: [0] * bins for arm in ARMS}
        counts = {arm: [dict.fromkeys(RATE_MEASURES, 0) for _ in range(bins)] for arm in ARMS}
        with self.store.read() as conn:
            for variant, i, total, *flagged in conn.execute(query):
                k = min(bins - 1, max(0, int(i)))
                n[variant][k] += int(total)
                for name, value in zip(RATE_MEASURES, flagged, strict=True):
                    counts[variant][k][name] += int(value or 0)
            samples: dict[str, list[Any]] = {}
            for arm in ARMS:
                clauses = [_T.variant == arm, *window[1:]]
                total = sum(n[arm])
                if total > sample_size:  # trace ids are random: a prefix bound is a uniform sample
                    bound = format(min(16**8 - 1, int(16**8 * sample_size / total * 1.05)), "08x")
                    clauses.append(_T.trace_id < bound)
                samples[arm] = list(
                    conn.execute(
                        select(_T.start_ns, _T.latency_s, _T.llm_calls).where(*clauses).limit(sample_size)
                    )
                )
        out: dict[str, list[ArmData]] = {}
        for arm in ARMS:
            latencies: list[list[float]] = [[] for _ in range(bins)]
            costs: list[list[float | None]] = [[] for _ in range(bins)]
            for started, latency, calls in samples[arm]:
                k = min(bins - 1, max(0, (int(started) - start_ns) // width))
                if latency is not None:
                    latencies[k].append(float(latency))
                costs[k].append(cost(calls))
            out[arm] = [
                ArmData(
                    n=n[arm][k],
                    counts=counts[arm][k],
                    latencies=tuple(latencies[k]),
                    costs=tuple(c for c in costs[k] if c is not None),
                    cost_unknown=sum(1 for c in costs[k] if c is None),
                )
                for k in range(bins)
            ]
        return out

    def failure_bins(self, start_ns: int, end_ns: int, bins: int) -> dict[str, tuple[list[int], list[int]]]:
        """Per arm: requests and failed requests (error, empty, escalated) in ``bins`` equal time bins."""
        bins = max(1, bins)
        width = max(1, (end_ns - start_ns) // bins + 1)
        index = ((_T.start_ns - literal(int(start_ns))) // literal(int(width))).label("bin")
        failed = case((or_(_T.error == 1, _T.empty == 1, _T.escalated == 1), 1), else_=0)
        query = (
            select(_T.variant, index, func.count(), func.sum(failed))
            .where(and_(*self._window(start_ns, start_ns + width * bins)))
            .group_by(_T.variant, index)
        )
        out = {arm: ([0] * bins, [0] * bins) for arm in ARMS}
        with self.store.read() as conn:
            for variant, i, n, bad in conn.execute(query):
                k = min(bins - 1, max(0, int(i)))
                out[variant][0][k] += int(n)
                out[variant][1][k] += int(bad or 0)
        return out


class _Retry(Exception):
    pass
