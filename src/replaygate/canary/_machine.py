"""The rollout state machine (pure: no I/O, no clock).

::

    idle ──start──▶ canary(step i of the plan) ──widen──▶ canary(step i+1) ... ──promote──▶ promoted
                       │                                                     │
                       └──────────────── rollback (any time) ──────────────▶ rolled_back

A new rollout can start from idle, promoted or rolled_back; never while a canary runs. Every function
returns a :class:`Transition` whose ``outcome`` is ``applied``, ``noop`` (idempotent repeat, e.g. a second
rollback) or ``refused`` (with the reason), so the caller can audit every attempt; :func:`hold_notice` is
the one that changes nothing and is audited as ``notified`` (a step held longer than ``max_hold``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from replaygate.canary._tolerances import CanaryPolicy

__all__ = [
    "DEFAULT_PLAN",
    "SIGNED_OUTCOMES",
    "Action",
    "Outcome",
    "RolloutState",
    "Status",
    "Transition",
    "hold_notice",
    "parse_plan",
    "promote",
    "rollback",
    "start",
    "state_json",
    "widen",
]

Status = Literal["idle", "canary", "promoted", "rolled_back"]
Action = Literal["start", "widen", "promote", "rollback", "hold"]
Outcome = Literal["applied", "noop", "refused", "notified"]

#: Candidate shares of the default plan: 1% → 5% → 25% → 50% → 100%.
DEFAULT_PLAN: tuple[float, ...] = (0.01, 0.05, 0.25, 0.5, 1.0)
#: Only these signed decisions can start a canary.
SIGNED_OUTCOMES = ("pass", "pass-with-sign-off")


@dataclass(frozen=True)
class RolloutState:
    """The current rollout; ``share`` is the candidate's fraction of traffic."""

    status: Status = "idle"
    rollout_id: str | None = None
    decision_id: str | None = None
    plan: tuple[float, ...] = DEFAULT_PLAN
    step_index: int = 0
    salt: str = ""
    baseline_config_id: str | None = None
    candidate_config_id: str | None = None
    started_ns: int | None = None
    step_started_ns: int | None = None
    updated_ns: int | None = None
    auto_rollback: bool = True
    reason: str | None = None
    version: int = 0
    #: The tolerances and ``max_hold`` recorded when the rollout started (None: started before they were).
    policy: CanaryPolicy | None = None
    #: Why a recorded policy could not be read back (then ``policy`` is None); widen and promote refuse.
    policy_error: str | None = None

    @property
    def share(self) -> float:
        """The candidate's share of traffic now (0 when idle or rolled back, 1 when promoted)."""
        if self.status == "canary":
            return self.plan[self.step_index]
        return 1.0 if self.status == "promoted" else 0.0

    @property
    def at_final_step(self) -> bool:
        """Whether the canary is on the plan's last step."""
        return self.status == "canary" and self.step_index >= len(self.plan) - 1

    @property
    def next_share(self) -> float | None:
        """The share the next widen would set, or None on the last step or outside a canary."""
        if self.status != "canary" or self.at_final_step:
            return None
        return self.plan[self.step_index + 1]

    def label(self) -> str:
        """A short human description, e.g. ``canary 5% (step 2 of 5)``."""
        if self.status == "canary":
            return f"canary {_pct(self.share)} (step {self.step_index + 1} of {len(self.plan)})"
        return self.status.replace("_", " ")


@dataclass(frozen=True)
class Transition:
    """One attempted action: the state before and after, the outcome, and the reason."""

    action: Action
    before: RolloutState
    after: RolloutState
    outcome: Outcome
    reason: str

    @property
    def changed(self) -> bool:
        """Whether the action changed the state."""
        return self.outcome == "applied"


def state_json(state: RolloutState) -> dict[str, Any]:
    """The routing fields (status, share, salt, config ids, version) plus the plan and step."""
    return {
        "status": state.status,
        "share": state.share,
        "salt": state.salt,
        "baseline_config_id": state.baseline_config_id,
        "candidate_config_id": state.candidate_config_id,
        "rollout_id": state.rollout_id,
        "decision_id": state.decision_id,
        "version": state.version,
        "step_index": state.step_index,
        "plan": list(state.plan),
        "updated_ns": state.updated_ns,
        "step_started_ns": state.step_started_ns,
        "label": state.label(),
    }


def _pct(share: float) -> str:
    return f"{share * 100:g}%"


def parse_plan(plan: str | Sequence[float]) -> tuple[float, ...]:
    """Parse a plan of percentages (``"1,5,25,50,100"`` or numbers) into increasing fractions ending at 1.

    Raises:
        ValueError: when a step is outside (0, 100], the steps do not increase, or the last is not 100.
    """
    raw = [p for p in plan.split(",") if p.strip()] if isinstance(plan, str) else list(plan)
    try:
        percents = [float(p) for p in raw]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a canary plan is a list of percentages like 1,5,25,50,100; got {plan!r}") from exc
    if not percents:
        raise ValueError("a canary plan needs at least one step (e.g. 1,5,25,50,100)")
    if any(not 0 < p <= 100 for p in percents):
        raise ValueError(f"every plan step must be within (0, 100] percent; got {percents}")
    if any(b <= a for a, b in zip(percents, percents[1:], strict=False)):
        raise ValueError(f"plan steps must increase; got {percents}")
    if percents[-1] != 100:
        raise ValueError(f"the plan must end at 100 percent; got {percents}")
    return tuple(p / 100 for p in percents)


def _refused(action: Action, state: RolloutState, why: str) -> Transition:
    return Transition(action, state, state, "refused", why)


def start(
    state: RolloutState,
    *,
    rollout_id: str,
    decision_id: str,
    decision_outcome: str,
    baseline_config_id: str | None,
    candidate_config_id: str | None,
    salt: str,
    now_ns: int,
    plan: Sequence[float] = DEFAULT_PLAN,
    auto_rollback: bool = True,
    reason: str = "",
    policy: CanaryPolicy | None = None,
) -> Transition:
    """Start a canary of a signed candidate at the plan's first step, under ``policy``'s tolerances."""
    if state.status == "canary":
        return _refused(
            "start", state, f"a canary is already running ({state.label()}); promote or roll it back first"
        )
    if decision_outcome not in SIGNED_OUTCOMES:
        return _refused(
            "start",
            state,
            f"decision {decision_id} is {decision_outcome!r}; only a signed pass or pass-with-sign-off "
            "can start a canary",
        )
    if not plan:
        return _refused("start", state, "the plan is empty")
    after = RolloutState(
        status="canary",
        rollout_id=rollout_id,
        decision_id=decision_id,
        plan=tuple(plan),
        step_index=0,
        salt=salt,
        baseline_config_id=baseline_config_id,
        candidate_config_id=candidate_config_id,
        started_ns=now_ns,
        step_started_ns=now_ns,
        updated_ns=now_ns,
        auto_rollback=auto_rollback,
        reason=reason or None,
        version=state.version,
        policy=policy,
    )
    return Transition("start", state, after, "applied", reason or f"canary started at {_pct(after.share)}")


def widen(
    state: RolloutState, *, now_ns: int, evidence_ok: bool, evidence_reason: str, reason: str = ""
) -> Transition:
    """Move the canary to the plan's next step, only when the evidence holds."""
    if state.status != "canary":
        return _refused("widen", state, f"no canary is running (state: {state.label()})")
    if state.at_final_step:
        return _refused("widen", state, "the canary is on the plan's last step; promote it instead")
    if not evidence_ok:
        return _refused("widen", state, evidence_reason)
    after = replace(
        state,
        step_index=state.step_index + 1,
        step_started_ns=now_ns,
        updated_ns=now_ns,
        reason=reason or None,
    )
    return Transition(
        "widen", state, after, "applied", reason or f"widened {_pct(state.share)} → {_pct(after.share)}"
    )


def promote(
    state: RolloutState, *, now_ns: int, evidence_ok: bool, evidence_reason: str, reason: str = ""
) -> Transition:
    """Send all traffic to the candidate and end the canary (idempotent).

    From the plan's last step the evidence of the step before was checked when widening; from an earlier
    step the evidence must hold now, as for a widen.
    """
    if state.status == "promoted":
        return Transition("promote", state, state, "noop", "already promoted")
    if state.status != "canary":
        return _refused("promote", state, f"no canary is running (state: {state.label()})")
    if not state.at_final_step and not evidence_ok:
        return _refused("promote", state, evidence_reason)
    after = replace(
        state, status="promoted", step_started_ns=now_ns, updated_ns=now_ns, reason=reason or None
    )
    return Transition("promote", state, after, "applied", reason or "promoted to 100%")


def rollback(state: RolloutState, *, now_ns: int, reason: str) -> Transition:
    """Send all traffic back to the baseline (idempotent; allowed from a canary or after a promotion)."""
    if state.status == "rolled_back":
        return Transition("rollback", state, state, "noop", reason or "already rolled back")
    if state.status == "idle":
        return Transition("rollback", state, state, "noop", reason or "nothing to roll back: no rollout")
    # the step's window is kept (ending at updated_ns) so the measures still show why it was rolled back
    after = replace(state, status="rolled_back", updated_ns=now_ns, reason=reason or None)
    return Transition("rollback", state, after, "applied", reason or "rolled back")


def hold_notice(state: RolloutState, *, reason: str) -> Transition:
    """A notification that the current step has held undecided too long (audited; the state is unchanged)."""
    if state.status != "canary":
        return Transition("hold", state, state, "noop", f"no canary is running (state: {state.label()})")
    return Transition("hold", state, state, "notified", reason)
