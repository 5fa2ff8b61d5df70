"""The canary controller: actions (start, widen, promote, rollback, check) over the store, with live measures.

The controller is the I/O edge: it reads the state and audit log (:class:`CanaryStore`), the traces of the
current step (the trace store), the signed decisions (the gate's decision store) and the gate policy's
guardrails, and applies the pure state machine's transitions.
"""

from __future__ import annotations

import os
import secrets
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from replaygate.instrumentation import TraceRecord

from replaygate.canary import _machine
from replaygate.canary._errors import CanaryError
from replaygate.canary._evidence import (
    ArmSummary,
    Evidence,
    EvidenceSettings,
    Limit,
    MeanSummary,
    evaluate_evidence,
    tolerances_from_policy,
)
from replaygate.canary._machine import DEFAULT_PLAN, RolloutState, Transition
from replaygate.canary._measures import (
    RATE_MEASURES,
    ArmData,
    ArmMeasures,
    LiveMeasures,
    RequestSample,
    SeriesPoint,
    arm_data,
    arm_from_data,
    failure_series,
    measures_from_arm_data,
    series_from_bins,
)
from replaygate.canary._outlook import StepOutlook, step_outlook
from replaygate.canary._samples import calls_cost, groundedness_of, groundedness_scores, sample_from_trace
from replaygate.canary._store import CanaryStore
from replaygate.canary._tolerances import BUILT_IN, CanaryPolicy
from replaygate.gate import DecisionStore, SignedDecision, load_policy, policy_hash
from replaygate.store import TraceStore

__all__ = [
    "CanaryController",
    "CanarySettings",
    "CanaryStatus",
    "CanaryCheck",
    "DecisionSource",
    "LiveTraces",
    "decision_config_ids",
]


class LiveTraces(Protocol):
    """What the controller needs of the trace store."""

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]: ...


class DecisionSource(Protocol):
    """What the controller needs of the gate's decision store."""

    def get(self, decision_id: str) -> SignedDecision | None:
        """The signed decision ``decision_id``, or None when there is none."""
        ...

    def list_decisions(self, outcomes: list[str] | tuple[str, ...] | None = None) -> list[SignedDecision]:
        """The signed decisions, newest first (only these outcomes when given)."""
        ...


@dataclass(frozen=True)
class CanarySettings:
    """How the canary runs: plan, evidence rules, automatic rollback, sampling, and ``max_hold``.

    ``max_hold_s``: how long a step may hold undecided before ``check`` notifies (audit log, page); also the
    time within which a step's share must gather the traffic its rule needs. The gate policy's
    ``max_hold`` sets it when the controller is opened with a policy.
    """

    plan: tuple[float, ...] = DEFAULT_PLAN
    evidence: EvidenceSettings = field(default_factory=EvidenceSettings)
    auto_rollback: bool = True
    confidence: float = 0.95
    groundedness_sample: int = 30
    max_traces: int = 50_000
    sample_size: int = 4000
    max_hold_s: float | None = 86_400.0


@dataclass(frozen=True)
class CanaryStatus:
    """The current rollout with its live measures, evidence and failure-rate series."""

    state: RolloutState
    measures: LiveMeasures | None
    evidence: Evidence | None
    series: tuple[SeriesPoint, ...] = ()
    notes: tuple[str, ...] = ()
    outlook: StepOutlook | None = None
    #: The tolerances and ``max_hold`` this status was judged by (None when idle).
    policy: CanaryPolicy | None = None


@dataclass(frozen=True)
class CanaryCheck:
    """What ``check`` found and did: the status, the rollback when a breach fired one, a hold notice."""

    status: CanaryStatus
    rollback: Transition | None
    notice: Transition | None = None

    @property
    def breached(self) -> bool:
        """Whether a measure breached its tolerance."""
        return self.status.evidence is not None and self.status.evidence.breached


def decision_config_ids(decision: SignedDecision) -> tuple[str | None, str | None]:
    """Return (baseline, candidate) configuration ids of a signed decision."""
    baseline = decision.baseline_fingerprint.config_id()
    candidate = decision.candidate_config_id or decision.candidate_fingerprint.config_id()
    return baseline, candidate


class CanaryController:
    """Drives one store's canary: every action is audited; widen and promote need evidence.

    A rollout is judged by the tolerances and ``max_hold`` recorded when it started (:attr:`policy` is
    what ``start`` records: the policy given to this controller, else the built-in defaults). A different
    policy given while a canary runs is refused by ``widen`` and ``promote`` (:meth:`policy_conflict`);
    ``status`` and ``check`` judge by the recorded one and say so, so an automatic rollback never waits on
    a configuration mistake.
    """

    def __init__(
        self,
        store: CanaryStore,
        traces: LiveTraces | None = None,
        decisions: DecisionSource | None = None,
        *,
        tolerances: dict[str, Limit] | None = None,
        settings: CanarySettings | None = None,
        clock: Callable[[], int] = time.time_ns,
        policy: CanaryPolicy | None = None,
    ) -> None:
        self.store = store
        self.traces = traces
        # a trace store on a database: live measures are aggregated there, in SQL
        self._sql = CanaryStore(traces.store) if isinstance(traces, TraceStore) else None
        self.decisions = decisions
        self.tolerances = tolerances if tolerances is not None else tolerances_from_policy(None)
        self.settings = settings or CanarySettings()
        self.clock = clock
        #: What ``start`` records; ``explicit``: given (a policy file or tolerances), not the defaults.
        self.policy = policy or CanaryPolicy.of(
            self.tolerances,
            self.settings.max_hold_s,
            "the given tolerances" if tolerances is not None else BUILT_IN,
        )
        self.explicit_policy = policy is not None or tolerances is not None

    @classmethod
    def open(
        cls,
        store: str | os.PathLike[str] | None = None,
        *,
        policy: str | os.PathLike[str] | None = None,
        settings: CanarySettings | None = None,
    ) -> CanaryController:
        """Open the controller on a store path (None: ``REPLAYGATE_STORE``) with a gate policy file."""
        canary = CanaryStore(store)
        traces = TraceStore(canary.store)
        decisions: DecisionSource | None = DecisionStore(canary.store)
        tolerances, recorded = None, None
        if policy is not None:
            loaded = load_policy(policy)
            tolerances = tolerances_from_policy(loaded)
            settings = replace(settings or CanarySettings(), max_hold_s=loaded.max_hold)
            recorded = CanaryPolicy.of(tolerances, loaded.max_hold, os.fspath(policy), policy_hash(loaded))
        return cls(canary, traces, decisions, tolerances=tolerances, settings=settings, policy=recorded)

    def close(self) -> None:
        """Close the stores this controller holds (those that can be closed)."""
        for part in (self.traces, self.decisions, self.store):
            close = getattr(part, "close", None)
            if callable(close):
                close()

    # reading -----------------------------------------------------------------------------------------

    def state(self) -> RolloutState:
        """The current rollout."""
        return self.store.load()

    def policy_for(self, state: RolloutState) -> CanaryPolicy:
        """The tolerances and ``max_hold`` a rollout is judged by: those it recorded, else this controller's.

        A rollout started before replaygate recorded them (or whose record cannot be read) has none.
        """
        return state.policy if state.policy is not None else self.policy

    def policy_conflict(self, state: RolloutState) -> str | None:
        """Why the policy given to this controller cannot judge the running canary (None: it can)."""
        if state.status != "canary":
            return None
        if state.policy_error is not None:
            return (
                f"{state.policy_error}; its tolerances are unknown: roll the canary back and start it again"
            )
        if state.policy is None or not self.explicit_policy or state.policy.same_lines(self.policy):
            return None
        changes = "; ".join(state.policy.differences(self.policy))
        return (
            f"canary {state.rollout_id} runs under the tolerances it started with, from "
            f"{state.policy.describe()}; {self.policy.describe()} differs ({changes}). Leave out --policy to "
            "judge it by its own, or roll it back and start a new canary with the new policy"
        )

    def _policy_notes(self, state: RolloutState) -> list[str]:
        if state.status == "idle":
            return []
        if state.policy_error is not None:
            return [f"{state.policy_error}: judged by {self.policy.describe()} instead"]
        if state.policy is None:
            return [
                f"this rollout was started before replaygate recorded its tolerances: judged by "
                f"{self.policy.describe()}"
            ]
        conflict = self.policy_conflict(state)
        if conflict is None:
            return []
        return [f"judged by the policy recorded at the start, not the one given: {conflict}"]

    def _samples(self, since_ns: int | None, until_ns: int | None = None) -> tuple[list[TraceRecord], ...]:
        if self.traces is None or since_ns is None:
            return [], []
        limit = self.settings.max_traces
        base = self.traces.list_traces(limit=limit, since_ns=since_ns, until_ns=until_ns, variant="baseline")
        cand = self.traces.list_traces(limit=limit, since_ns=since_ns, until_ns=until_ns, variant="candidate")
        return base, cand

    def _arm_data(self, since_ns: int, until_ns: int | None) -> tuple[ArmData, ArmData, list[str]]:
        """Both arms' data for a window: in SQL on a store, else from the source's traces."""
        notes: list[str] = []
        k = self.settings.groundedness_sample
        if self._sql is not None and self.traces is not None:
            arms = self._sql.arm_data(
                since_ns, until_ns, cost=calls_cost, sample_size=self.settings.sample_size
            )
            out = []
            for arm in ("baseline", "candidate"):
                data = arms[arm]
                if k > 0 and data.n:
                    recent = self.traces.list_traces(
                        limit=4 * k, since_ns=since_ns, until_ns=until_ns, variant=arm
                    )
                    scores, note = groundedness_of(recent, k)
                    if note and note not in notes:
                        notes.append(note)
                    data = replace(data, groundedness=scores)
                out.append(data)
            return out[0], out[1], notes
        base_t, cand_t = self._samples(since_ns, until_ns)
        base = [sample_from_trace(r) for r in base_t]
        cand = [sample_from_trace(r) for r in cand_t]
        base, cand, note = groundedness_scores(base_t, base, cand_t, cand, k)
        if note:
            notes.append(note)
        return arm_data(base), arm_data(cand), notes

    def status(self, state: RolloutState | None = None, *, series_bins: int = 0) -> CanaryStatus:
        """The state, the current step's measures and evidence, and (``series_bins`` > 0) the series."""
        state = state or self.state()
        if state.status == "idle" or state.step_started_ns is None:
            return CanaryStatus(state, None, None, notes=tuple(self._policy_notes(state)))
        now = self.clock()
        # a rolled-back canary keeps its last step's window, up to the rollback
        until = state.updated_ns if state.status == "rolled_back" else None
        base, cand, notes = self._arm_data(state.step_started_ns, until)
        measures = measures_from_arm_data(
            base,
            cand,
            confidence=self.settings.confidence,
            window_start_ns=state.step_started_ns,
            window_end_ns=until or now,
        )
        b_sum, c_sum = _summary(base), _summary(cand)
        policy = self.policy_for(state)
        limits = policy.limits
        evidence = evaluate_evidence(b_sum, c_sum, limits, self.settings.evidence, share=state.share or None)
        outlook = step_outlook(
            state,
            evidence,
            b_sum,
            c_sum,
            limits,
            self.settings.evidence,
            now_ns=now,
            max_hold_s=policy.max_hold_s,
        )
        notes[:0] = self._policy_notes(state)
        if outlook is not None and outlook.text:
            notes.append(outlook.text)
        series = self.series(state, series_bins, now=now) if series_bins > 0 else []
        return CanaryStatus(
            state, measures, evidence, tuple(series), tuple(notes) + evidence.notes, outlook, policy
        )

    def series(self, state: RolloutState, bins: int = 12, *, now: int | None = None) -> list[SeriesPoint]:
        """The failure rate per arm over the whole rollout, in ``bins`` time bins."""
        now = self.clock() if now is None else now
        if state.status == "rolled_back" and state.updated_ns is not None:
            now = state.updated_ns
        start = state.started_ns or state.step_started_ns
        if start is None:
            return []
        if self._sql is not None:
            return series_from_bins(self._sql.failure_bins(start, now + 1, bins), start, now + 1, bins)
        base_t, cand_t = self._samples(start)
        base: list[RequestSample] = [sample_from_trace(r) for r in base_t]
        cand: list[RequestSample] = [sample_from_trace(r) for r in cand_t]
        return failure_series(base, cand, start, now + 1, bins)

    def measure_bins(self, start_ns: int, end_ns: int, bins: int) -> dict[str, list[ArmMeasures]]:
        """Each arm's measures in ``bins`` equal time bins of ``[start_ns, end_ns)`` (the page's series).

        On a store the counts are aggregated in SQL and latency and cost come from a bounded sample
        (:meth:`CanaryStore.binned_arm_data`); from another trace source, from its traces.
        """
        bins = max(1, bins)
        if self._sql is not None:
            data = self._sql.binned_arm_data(
                start_ns, end_ns, bins, cost=calls_cost, sample_size=self.settings.sample_size
            )
            return {arm: [arm_from_data(d) for d in data[arm]] for arm in ("baseline", "candidate")}
        width = max(1, (end_ns - start_ns) // bins + 1)
        out: dict[str, list[ArmMeasures]] = {}
        for arm, records in zip(("baseline", "candidate"), self._samples(start_ns, end_ns), strict=True):
            binned: list[list[RequestSample]] = [[] for _ in range(bins)]
            for sample in map(sample_from_trace, records):
                if start_ns <= sample.start_ns < start_ns + width * bins:
                    binned[min(bins - 1, (sample.start_ns - start_ns) // width)].append(sample)
            out[arm] = [arm_from_data(arm_data(b)) for b in binned]
        return out

    def audit(self, limit: int = 200) -> list[Any]:
        """The audit log, newest first."""
        return list(self.store.audit(limit))

    def signed_decisions(self) -> list[SignedDecision]:
        """Signed decisions that can start a canary (pass or pass-with-sign-off), newest first as stored."""
        if self.decisions is None:
            return []
        return list(self.decisions.list_decisions(outcomes=list(_machine.SIGNED_OUTCOMES)))

    # actions -----------------------------------------------------------------------------------------

    def start(
        self,
        decision_id: str,
        *,
        actor: str,
        reason: str = "",
        plan: Sequence[float] | None = None,
        auto_rollback: bool | None = None,
        salt: str | None = None,
    ) -> Transition:
        """Start a canary of the candidate of a signed decision (``salt``: random unless given, for tests)."""
        if self.decisions is None:
            raise CanaryError(
                "no decision store: sign a gate decision first (replaygate sign REPORT ...), then start"
            )
        decision = self.decisions.get(decision_id)
        if decision is None:
            raise CanaryError(
                f"signed decision {decision_id!r} not found in {self.store.url}; "
                "list the signed decisions with `replaygate canary decisions`"
            )
        if decision.superseded_by:
            raise CanaryError(
                f"signed decision {decision_id!r} was superseded by {decision.superseded_by}: "
                "start the canary from that one"
            )
        baseline_id, candidate_id = decision_config_ids(decision)
        rollout_id = uuid.uuid4().hex[:12]
        salt = salt or secrets.token_hex(8)
        chosen_plan = tuple(plan) if plan is not None else self.settings.plan
        auto = self.settings.auto_rollback if auto_rollback is None else auto_rollback
        outcome = str(decision.outcome)

        def decide(state: RolloutState) -> Transition:
            return _machine.start(
                state,
                rollout_id=rollout_id,
                decision_id=decision_id,
                decision_outcome=outcome,
                baseline_config_id=baseline_id,
                candidate_config_id=candidate_id,
                salt=salt,
                now_ns=self.clock(),
                plan=chosen_plan,
                auto_rollback=auto,
                reason=reason,
                policy=self.policy,
            )

        details = {"decision_id": decision_id, "plan": chosen_plan, "policy": self.policy.to_json()}
        return self.store.apply(decide, actor=actor, details=details)

    def widen(self, *, actor: str, reason: str = "", status: CanaryStatus | None = None) -> Transition:
        """Widen to the plan's next step when the current step's evidence holds (else refused, audited).

        ``status``: a status just computed (e.g. by ``check``), reused when the state has not moved since.
        """
        seen = status.state if status is not None else self.state()
        evidence = status.evidence if status is not None else self.status(seen).evidence

        def decide(state: RolloutState) -> Transition:
            conflict = self.policy_conflict(state)
            if conflict is not None:
                return Transition("widen", state, state, "refused", conflict)
            ok, why = self._evidence_for(state, seen, evidence)
            return _machine.widen(
                state, now_ns=self.clock(), evidence_ok=ok, evidence_reason=why, reason=reason
            )

        return self.store.apply(decide, actor=actor, details=_details(evidence))

    def promote(self, *, actor: str, reason: str = "") -> Transition:
        """Promote the candidate to all traffic (idempotent; from an early step only on evidence)."""
        seen = self.state()
        evidence = self.status(seen).evidence if seen.status == "canary" and not seen.at_final_step else None

        def decide(state: RolloutState) -> Transition:
            conflict = self.policy_conflict(state)
            if conflict is not None:
                return Transition("promote", state, state, "refused", conflict)
            ok, why = self._evidence_for(state, seen, evidence)
            return _machine.promote(
                state, now_ns=self.clock(), evidence_ok=ok, evidence_reason=why, reason=reason
            )

        return self.store.apply(decide, actor=actor, details=_details(evidence))

    def rollback(self, *, actor: str, reason: str) -> Transition:
        """Send all traffic back to the baseline (idempotent, always allowed, audited)."""
        return self.store.apply(
            lambda state: _machine.rollback(state, now_ns=self.clock(), reason=reason), actor=actor
        )

    def check(self, *, actor: str = "replaygate check", auto_rollback: bool | None = None) -> CanaryCheck:
        """Evaluate the current step; on a breach, roll back when automatic rollback is on.

        A step held undecided longer than ``max_hold`` is notified once (an audited ``hold`` notice).
        """
        status = self.status()
        state = status.state
        auto = state.auto_rollback if auto_rollback is None else auto_rollback
        if state.status != "canary" or status.evidence is None or not status.evidence.breached or not auto:
            return CanaryCheck(status, None, self._hold_notice(status, actor))
        why = "automatic rollback: " + "; ".join(status.evidence.breaches)
        version = state.version

        def decide(current: RolloutState) -> Transition:
            if current.version != version:  # someone acted meanwhile: do not roll back on stale evidence
                return Transition("rollback", current, current, "refused", "state changed during the check")
            return _machine.rollback(current, now_ns=self.clock(), reason=why)

        transition = self.store.apply(decide, actor=actor, details=_details(status.evidence))
        return CanaryCheck(status, transition)

    def _hold_notice(self, status: CanaryStatus, actor: str) -> Transition | None:
        """Audit one notice per step once it holds longer than ``max_hold`` (None when not due or sent)."""
        outlook = status.outlook
        state = status.state
        if outlook is None or not outlook.overdue or state.status != "canary":
            return None
        for entry in self.store.audit(limit=500, rollout_id=state.rollout_id):
            same_step = entry.details.get("step_started_ns") == state.step_started_ns
            if entry.action == "hold" and entry.outcome == "notified" and same_step:
                return None  # already notified for this step
        version = state.version
        details = {
            **_details(status.evidence),
            "step_started_ns": state.step_started_ns,
            "held_s": round(outlook.held_s),
            "max_hold_s": outlook.max_hold_s,
        }

        def decide(current: RolloutState) -> Transition:
            if current.version != version:
                return Transition("hold", current, current, "noop", "state changed during the check")
            return _machine.hold_notice(current, reason=f"max_hold exceeded: {outlook.text}")

        return self.store.apply(decide, actor=actor, details=details)

    def _evidence_for(
        self, state: RolloutState, seen: RolloutState, evidence: Evidence | None
    ) -> tuple[bool, str]:
        if state.version != seen.version:
            return (
                False,
                "the canary changed while the evidence was read (another action); look again and retry",
            )
        if evidence is None:
            return False, "no evidence yet"
        return evidence.can_widen, evidence.reason


def _summary(data: ArmData) -> ArmSummary:
    """The evidence rule's view of one arm, from what the store aggregated (counts exact, samples bounded)."""
    return ArmSummary(
        n=data.n,
        events={name: data.counts.get(name, 0) for name in RATE_MEASURES},
        latencies=tuple(sorted(data.latencies)),
        cost=MeanSummary.of(data.costs) if data.costs else None,
        cost_unknown=data.cost_unknown,
        groundedness=MeanSummary.of(data.groundedness) if data.groundedness else None,
    )


def _details(evidence: Evidence | None) -> dict[str, Any]:
    if evidence is None:
        return {}
    return {
        "decision": evidence.decision,
        "missing": list(evidence.missing),
        "breaches": list(evidence.breaches),
        "measures": {m.name: m.verdict for m in evidence.measures},
    }
