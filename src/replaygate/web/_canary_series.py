"""Live canary measures over time, one series per measure and arm, with the rollout's markers.

The rollout (from its start to now, or to the rollback) is cut into time bins; each bin aggregates the
requests each arm served in it with the same code as the live measures
(``CanaryController.measure_bins``: counts in SQL, latency and cost from a bounded sample), so a point
on the chart is what the measures table would have shown for that slice, at a cost flat in the traces.
Markers are the applied start / widen / promote / rollback actions of this rollout from the audit log.
"""

from __future__ import annotations

from dataclasses import dataclass

from replaygate.canary import MEASURES, CanaryController, Limit, RolloutState

__all__ = ["Marker", "MeasurePoint", "MeasureSeries", "measure_series", "rollout_markers"]

_MARKED = ("start", "widen", "promote", "rollback")


@dataclass(frozen=True)
class MeasurePoint:
    """One time bin: each arm's request count and value (None when the arm served nothing)."""

    start_ns: int
    end_ns: int
    baseline_n: int
    baseline: float | None
    candidate_n: int
    candidate: float | None


@dataclass(frozen=True)
class MeasureSeries:
    """One measure over the rollout, with the tolerance in force for it (None: not checked)."""

    name: str
    label: str
    kind: str
    higher_is_worse: bool
    points: tuple[MeasurePoint, ...]
    limit: Limit | None


@dataclass(frozen=True)
class Marker:
    """An applied action on the time axis."""

    at_ns: int
    action: str
    actor: str
    reason: str


def _window(state: RolloutState, now_ns: int) -> tuple[int, int] | None:
    start = state.started_ns or state.step_started_ns
    if start is None:
        return None
    end = state.updated_ns if state.status == "rolled_back" and state.updated_ns else now_ns
    return start, max(end, start) + 1


def measure_series(
    ctl: CanaryController, state: RolloutState, bins: int = 12, now_ns: int | None = None
) -> list[MeasureSeries]:
    """Every measure with data over the rollout, in ``bins`` time bins (empty when idle)."""
    window = _window(state, ctl.clock() if now_ns is None else now_ns)
    if window is None or ctl.traces is None or state.status == "idle":
        return []
    start, end = window
    bins = max(1, bins)
    width = max(1, (end - start) // bins + 1)
    arms = ctl.measure_bins(start, end, bins)  # aggregated in SQL on a store: flat in the traces
    out = []
    limits = ctl.policy_for(state).limits  # the rollout's own tolerances, recorded when it started
    for name, (kind, higher_is_worse, label) in MEASURES.items():
        points = tuple(
            MeasurePoint(
                start + i * width,
                start + (i + 1) * width,
                arms["baseline"][i].n,
                arms["baseline"][i].value(name),
                arms["candidate"][i].n,
                arms["candidate"][i].value(name),
            )
            for i in range(bins)
        )
        if all(p.baseline is None and p.candidate is None for p in points):
            continue
        out.append(MeasureSeries(name, label, kind, higher_is_worse, points, limits.get(name)))
    return out


def rollout_markers(ctl: CanaryController, state: RolloutState, limit: int = 500) -> list[Marker]:
    """Applied start, widen, promote and rollback actions of this rollout, oldest first."""
    if state.rollout_id is None:
        return []
    entries = [
        e
        for e in ctl.store.audit(limit, rollout_id=state.rollout_id)
        if e.outcome == "applied" and e.action in _MARKED
    ]
    return [Marker(e.at_ns, e.action, e.actor, e.reason) for e in reversed(entries)]
