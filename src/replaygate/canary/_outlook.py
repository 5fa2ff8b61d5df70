"""Whether the current step can finish: the traffic its rule needs, the time that takes, the share to try.

From the evidence's "needs ~N more candidate requests" and the rate at which the step has gathered
candidate requests so far, the outlook says how long the step should take; when that runs past the
policy's ``max_hold`` (rare events at a 1% share), it says so and suggests the first later share of the
plan whose fresh step would gather what it needs in time (:func:`requests_needed` at that share). A step
held undecided for longer than ``max_hold`` is *overdue*: the controller notifies once per step through
the audit log, and the page and ``canary status`` show it. Pure: the clock comes in as ``now_ns``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from replaygate.canary._evidence import ArmSummary, Evidence, EvidenceSettings, Limit, requests_needed
from replaygate.canary._machine import RolloutState

__all__ = ["StepOutlook", "format_duration", "step_outlook"]


@dataclass(frozen=True)
class StepOutlook:
    """The current step's outlook (durations in seconds; None when not known)."""

    share: float
    held_s: float
    max_hold_s: float | None
    needed: int | None
    candidate_per_hour: float | None
    eta_s: float | None
    fits: bool | None
    overdue: bool
    suggested_share: float | None
    suggested_needed: int | None
    suggested_eta_s: float | None
    text: str

    def to_json(self) -> dict[str, Any]:
        """Plain data for the status JSON and the page."""
        return dict(self.__dict__)


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _pct(share: float) -> str:
    return f"{share * 100:g}%"


def step_outlook(
    state: RolloutState,
    evidence: Evidence,
    baseline: ArmSummary,
    candidate: ArmSummary,
    tolerances: Mapping[str, Limit],
    settings: EvidenceSettings,
    *,
    now_ns: int,
    max_hold_s: float | None,
) -> StepOutlook | None:
    """The outlook of a running canary's current step (None outside a canary)."""
    if state.status != "canary" or state.step_started_ns is None:
        return None
    held = max(0.0, (now_ns - state.step_started_ns) / 1e9)
    holding = evidence.decision == "hold"
    overdue = holding and max_hold_s is not None and held > max_hold_s
    rate = candidate.n / held if held > 0 and candidate.n else None
    needed = evidence.needed if holding else None
    eta = needed / rate if needed is not None and rate else None
    fits = None if eta is None or max_hold_s is None else held + eta <= max_hold_s
    parts: list[str] = []
    if overdue and max_hold_s is not None:
        parts.append(
            f"held {format_duration(held)} at {_pct(state.share)}, longer than max_hold "
            f"({format_duration(max_hold_s)}): decide by hand (widen, roll back) or let it gather traffic"
        )
    if needed is not None:
        line = f"this step needs ~{needed} more candidate requests to decide"
        if eta is not None and rate is not None:
            line += f": about {format_duration(eta)} at the current {rate * 3600:.0f} an hour"
        parts.append(line)
    suggested: tuple[float, int, float] | None = None
    if fits is False and max_hold_s is not None and (baseline.n + candidate.n) and held > 0:
        total_rate = (baseline.n + candidate.n) / held
        for share in state.plan[state.step_index + 1 :]:
            if share >= 1:
                break
            n = requests_needed(baseline, candidate, tolerances, settings, share=share)
            if n is None:
                continue
            t = n / (total_rate * share)
            if t <= max_hold_s:
                suggested = (share, n, t)
                break
        where = f"at {_pct(state.share)} this step cannot gather them within max_hold"
        if suggested is None:
            parts.append(f"{where}, nor can any later share before 100%")
        else:
            parts.append(
                f"{where}; suggested next share {_pct(suggested[0])}: a fresh step there needs "
                f"~{suggested[1]} candidate requests, about {format_duration(suggested[2])}"
            )
    return StepOutlook(
        share=state.share,
        held_s=held,
        max_hold_s=max_hold_s,
        needed=needed,
        candidate_per_hour=None if rate is None else rate * 3600,
        eta_s=eta,
        fits=fits,
        overdue=overdue,
        suggested_share=None if suggested is None else suggested[0],
        suggested_needed=None if suggested is None else suggested[1],
        suggested_eta_s=None if suggested is None else suggested[2],
        text="; ".join(parts),
    )
