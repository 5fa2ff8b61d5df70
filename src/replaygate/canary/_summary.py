"""Plain per-arm summaries of a canary step, what the rule reads (aggregated in Python or in SQL).

An :class:`ArmSummary` holds one arm's request count, its events per rate measure, the sorted latencies
(all of the step, or a uniform sample), and a count / sum / sum of squares (:class:`MeanSummary`) for cost
and the sampled groundedness scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from replaygate.canary._measures import RequestSample

__all__ = ["RATE_MEASURES", "ArmSummary", "MeanSummary"]

RATE_MEASURES = ("error_rate", "empty_rate", "escalation_rate", "negative_feedback_rate")
_RATE_FLAGS = {
    "error_rate": "error",
    "empty_rate": "empty",
    "escalation_rate": "escalated",
    "negative_feedback_rate": "negative_feedback",
}


@dataclass(frozen=True)
class MeanSummary:
    """Count, sum and sum of squares of one measure's values in one arm."""

    n: int
    total: float
    total_sq: float

    @classmethod
    def of(cls, values: Sequence[float]) -> MeanSummary:
        """Summarise a list of values."""
        arr = np.asarray(values, float)
        return cls(len(arr), float(arr.sum()), float((arr * arr).sum()))

    @property
    def mean(self) -> float:
        """The mean (nan when empty)."""
        return self.total / self.n if self.n else math.nan

    @property
    def variance(self) -> float:
        """The sample variance (0 for fewer than two values; never negative)."""
        if self.n < 2:
            return 0.0
        return max(0.0, (self.total_sq - self.total * self.total / self.n) / (self.n - 1))


@dataclass(frozen=True)
class ArmSummary:
    """One arm of the current step as the rule needs it.

    ``events``: per rate measure (:data:`RATE_MEASURES`), how many of the ``n`` requests had it;
    ``latencies``: sorted, every latency of the step or a uniform sample of them; ``cost``: None when no
    request's price is known, and ``cost_unknown`` requests had an unknown price (an unknown price is
    never 0); ``groundedness``: the sampled judge scores.
    """

    n: int
    events: dict[str, int] = field(default_factory=dict)
    latencies: Sequence[float] = ()
    cost: MeanSummary | None = None
    cost_unknown: int = 0
    groundedness: MeanSummary | None = None

    @classmethod
    def from_samples(cls, samples: Sequence[RequestSample]) -> ArmSummary:
        """Summarise one arm's request samples."""
        events = {name: sum(1 for s in samples if getattr(s, flag)) for name, flag in _RATE_FLAGS.items()}
        known = [s.cost_usd for s in samples if s.cost_usd is not None]
        scores = [s.groundedness for s in samples if s.groundedness is not None]
        return cls(
            n=len(samples),
            events=events,
            latencies=tuple(sorted(s.latency_s for s in samples)),
            cost=MeanSummary.of(known) if known else None,
            cost_unknown=len(samples) - len(known),
            groundedness=MeanSummary.of(scores) if scores else None,
        )
