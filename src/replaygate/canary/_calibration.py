"""Calibration of the canary's rule: many simulated rollouts, looked at after every batch (pure, numpy).

Each rollout walks the real state machine (:mod:`replaygate.canary._machine`) through a plan, and after
every batch of requests asks the real rule (:func:`replaygate.canary._evidence.evaluate_evidence`)
whether to roll back, widen or hold, exactly as ``replaygate canary check`` and ``simulate`` do. The
requests go straight into the arms' summaries (:class:`ArmSummary`), not through spans and SQLite, so
thousands of rollouts take seconds; ``tests/canary/test_simulate.py`` drives the same rule end to end
through the trace store. The traffic follows :class:`replaygate.canary.TrafficProfile`'s synthetic agent:
an error has no answer, an escalation is never empty, latency is log-normal (sigma 0.3), cost constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from replaygate.canary import _machine
from replaygate.canary._evidence import (
    ArmSummary,
    EvidenceSettings,
    Limit,
    MeanSummary,
    evaluate_evidence,
)
from replaygate.canary._machine import RolloutState

__all__ = ["Arm", "RolloutOutcome", "Tally", "simulate_rollout", "simulate_rollouts"]


@dataclass(frozen=True)
class Arm:
    """A synthetic variant: failure rates, median latency (s) and a constant cost per request."""

    error_rate: float = 0.01
    empty_rate: float = 0.01
    escalation_rate: float = 0.10
    negative_feedback_rate: float = 0.02
    latency_s: float = 0.8
    latency_sigma: float = 0.3
    cost_usd: float = 0.00018


@dataclass(frozen=True)
class RolloutOutcome:
    """How one rollout ended: ``rolled_back``, ``widened`` (reached the plan's last step) or ``held``."""

    outcome: str
    looks: int
    candidate_requests: int
    final_share: float
    reason: str = ""


@dataclass(frozen=True)
class Tally:
    """Many rollouts of one cell."""

    outcomes: tuple[RolloutOutcome, ...] = field(default=())

    def share(self, outcome: str) -> float:
        """Fraction of rollouts that ended so."""
        return sum(o.outcome == outcome for o in self.outcomes) / max(1, len(self.outcomes))

    def median_requests(self, outcome: str) -> float | None:
        """Median candidate requests until the decision, over rollouts that ended so."""
        values = [o.candidate_requests for o in self.outcomes if o.outcome == outcome]
        return float(np.median(values)) if values else None


class _Accumulator:
    def __init__(self) -> None:
        self.n = 0
        self.events = {"error_rate": 0, "empty_rate": 0, "escalation_rate": 0, "negative_feedback_rate": 0}
        self.latencies: list[float] = []  # kept sorted (timsort merges the new batch's run)
        self.cost_total = 0.0
        self.cost_sq = 0.0

    def add(self, rng: np.random.Generator, arm: Arm, k: int) -> None:
        if k == 0:
            return
        draw = rng.random((k, 4))
        error = draw[:, 0] < arm.error_rate
        escalated = ~error & (draw[:, 2] < arm.escalation_rate)
        empty = ~error & ~escalated & (draw[:, 1] < arm.empty_rate)
        negative = draw[:, 3] < arm.negative_feedback_rate
        self.n += k
        self.events["error_rate"] += int(error.sum())
        self.events["empty_rate"] += int(empty.sum())
        self.events["escalation_rate"] += int(escalated.sum())
        self.events["negative_feedback_rate"] += int(negative.sum())
        self.latencies.extend(rng.lognormal(np.log(arm.latency_s), arm.latency_sigma, k).tolist())
        self.latencies.sort()
        self.cost_total += arm.cost_usd * k
        self.cost_sq += arm.cost_usd * arm.cost_usd * k

    def summary(self) -> ArmSummary:
        return ArmSummary(
            n=self.n,
            events=dict(self.events),
            latencies=self.latencies,
            cost=MeanSummary(self.n, self.cost_total, self.cost_sq) if self.n else None,
        )


def simulate_rollout(
    baseline: Arm,
    candidate: Arm,
    tolerances: Mapping[str, Limit],
    *,
    plan: Sequence[float],
    seed: int,
    looks: int = 100,
    batch_size: int = 300,
    settings: EvidenceSettings | None = None,
) -> RolloutOutcome:
    """One rollout: a batch, a look (rollback / widen / hold), up to ``looks`` times."""
    rng = np.random.default_rng(seed)
    settings = settings or EvidenceSettings()
    state = _machine.start(
        RolloutState(),
        rollout_id="sim",
        decision_id="sim",
        decision_outcome="pass",
        baseline_config_id="b",
        candidate_config_id="c",
        salt="s",
        now_ns=0,
        plan=tuple(plan),
    ).after
    base, cand = _Accumulator(), _Accumulator()
    served = 0
    for look in range(1, looks + 1):
        k = int(rng.binomial(batch_size, state.share))
        cand.add(rng, candidate, k)
        base.add(rng, baseline, batch_size - k)
        served += k
        evidence = evaluate_evidence(base.summary(), cand.summary(), tolerances, settings, share=state.share)
        if evidence.breached:
            t = _machine.rollback(state, now_ns=look, reason="; ".join(evidence.breaches))
            return RolloutOutcome("rolled_back", look, served, state.share, t.reason)
        if evidence.can_widen:
            t = _machine.widen(state, now_ns=look, evidence_ok=True, evidence_reason="")
            state = t.after
            base, cand = _Accumulator(), _Accumulator()  # a new step: a new window
            if state.at_final_step:
                return RolloutOutcome("widened", look, served, state.share)
    return RolloutOutcome("held", looks, served, state.share, evidence.reason)


def simulate_rollouts(
    baseline: Arm,
    candidate: Arm,
    tolerances: Mapping[str, Limit],
    *,
    plan: Sequence[float],
    rollouts: int,
    seed: int = 0,
    looks: int = 100,
    batch_size: int = 300,
    settings: EvidenceSettings | None = None,
) -> Tally:
    """``rollouts`` rollouts of one cell, with seeds ``seed``, ``seed + 1``, ..."""
    return Tally(
        tuple(
            simulate_rollout(
                baseline,
                candidate,
                tolerances,
                plan=plan,
                seed=seed + i,
                looks=looks,
                batch_size=batch_size,
                settings=settings,
            )
            for i in range(rollouts)
        )
    )
