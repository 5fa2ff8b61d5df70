"""Live measures of the two canary arms and their differences (pure: no I/O).

What an arm's measures are computed from is an :class:`ArmData`: exact counts (requests, errors, empty
answers, escalations, negative feedback) and bounded samples for the continuous measures (latencies, known
costs and how many sampled costs are unknown, groundedness scores), with latency quantiles the database
may have computed exactly. The store aggregates it in SQL per arm and step (``CanaryStore.arm_data``), so
a look costs the same at 1k and 100k traces; :func:`arm_data` builds it from :class:`RequestSample`
objects (one per request) for sources that hand over traces. Each arm's data gives an
:class:`ArmMeasures`; each measure's candidate-minus-baseline difference is a :class:`MeasureDiff` with an
interval and a test fit for it: rates (error, empty answer, escalation, negative feedback) with the
two-proportion Newcombe interval and z-test; latency p50/p95, cost per request and sampled groundedness
with a percentile-bootstrap interval (fixed seed) and the Mann-Whitney U test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "MEASURES",
    "RATE_MEASURES",
    "ArmData",
    "ArmMeasures",
    "LiveMeasures",
    "MeasureDiff",
    "RequestSample",
    "SeriesPoint",
    "arm_data",
    "arm_from_data",
    "arm_measures",
    "compute_live_measures",
    "measures_from_arm_data",
    "series_from_bins",
    "failure_series",
]

MeasureKind = Literal["rate", "latency", "cost", "score"]

#: Every live measure: name → (kind, higher is worse, label).
MEASURES: dict[str, tuple[MeasureKind, bool, str]] = {
    "error_rate": ("rate", True, "error rate"),
    "empty_rate": ("rate", True, "empty-answer rate"),
    "escalation_rate": ("rate", True, "escalation rate"),
    "negative_feedback_rate": ("rate", True, "negative-feedback rate"),
    "latency_p50": ("latency", True, "latency p50 (s)"),
    "latency_p95": ("latency", True, "latency p95 (s)"),
    "cost_per_request": ("cost", True, "cost per request (USD)"),
    "groundedness": ("score", False, "groundedness (sampled, offline judge)"),
}
_RATE_FLAGS = {
    "error_rate": "error",
    "empty_rate": "empty",
    "escalation_rate": "escalated",
    "negative_feedback_rate": "negative_feedback",
}
#: Rate measure → the per-request flag it counts (``RequestSample`` field and ``trace_traces`` column).
RATE_MEASURES = dict(_RATE_FLAGS)


@dataclass(frozen=True)
class RequestSample:
    """One served request as the live measures see it."""

    start_ns: int
    error: bool
    empty: bool
    escalated: bool
    negative_feedback: bool
    latency_s: float
    cost_usd: float | None
    groundedness: float | None = None


@dataclass(frozen=True)
class ArmData:
    """What one arm's measures are computed from: exact counts, bounded samples.

    Attributes:
        n: requests in the arm's window.
        counts: rate measure name (see :data:`RATE_MEASURES`) → requests with that flag (exact).
        latencies: latencies in seconds of a uniform sample of the requests (all of them when few).
        costs: the known costs (USD) of the sampled requests.
        cost_unknown: sampled requests whose cost is unknown (one makes the mean cost unknown).
        groundedness: sampled groundedness scores (0..1).
        latency_p50: the exact median when the database computed it; None: taken from ``latencies``.
        latency_p95: the same for the 95th percentile.
    """

    n: int
    counts: dict[str, int]
    latencies: tuple[float, ...]
    costs: tuple[float, ...]
    cost_unknown: int
    groundedness: tuple[float, ...] = ()
    latency_p50: float | None = None
    latency_p95: float | None = None


@dataclass(frozen=True)
class ArmMeasures:
    """The measures of one arm; rates and quantiles are None when the arm has no request."""

    n: int
    counts: dict[str, int]
    rates: dict[str, float | None]
    latency_p50: float | None
    latency_p95: float | None
    cost_per_request: float | None
    cost_unknown: int
    groundedness: float | None
    groundedness_n: int

    def value(self, name: str) -> float | None:
        """Return one measure by name (see :data:`MEASURES`)."""
        if name in self.rates:
            return self.rates[name]
        value: float | None = getattr(self, name)
        return value


@dataclass(frozen=True)
class MeasureDiff:
    """Candidate minus baseline for one measure, with its interval and test."""

    name: str
    label: str
    kind: MeasureKind
    higher_is_worse: bool
    baseline: float | None
    candidate: float | None
    delta: float | None
    low: float | None
    high: float | None
    p_value: float | None
    test: str
    worst_case: float | None = None  # one-sided upper bound of the worsening at the widen confidence

    @property
    def worsening(self) -> float | None:
        """How much worse the candidate is (positive = worse), or None when unknown."""
        if self.delta is None:
            return None
        return self.delta if self.higher_is_worse else -self.delta


@dataclass(frozen=True)
class LiveMeasures:
    """Both arms' measures over a window, and each candidate-vs-baseline difference."""

    window_start_ns: int | None
    window_end_ns: int | None
    baseline: ArmMeasures
    candidate: ArmMeasures
    diffs: tuple[MeasureDiff, ...]

    def diff(self, name: str) -> MeasureDiff:
        """Return the difference of one measure by name."""
        for d in self.diffs:
            if d.name == name:
                return d
        raise KeyError(name)


@dataclass(frozen=True)
class SeriesPoint:
    """One time bin of the failure-rate series (error, empty answer or escalation) per arm."""

    start_ns: int
    baseline_n: int
    baseline_rate: float | None
    candidate_n: int
    candidate_rate: float | None


def _rate_p_value(xb: int, nb: int, xc: int, nc: int, z_p: float) -> tuple[float, str]:
    """The z-test's p, or Fisher's exact p when an expected cell count is below 5 (rare events)."""
    pooled = (xb + xc) / (nb + nc)
    expected = min(nb * pooled, nc * pooled, nb * (1 - pooled), nc * (1 - pooled))
    if expected >= 5:
        return z_p, "two proportions (Newcombe interval, z-test)"
    from scipy.stats import fisher_exact

    _, p = fisher_exact([[xc, nc - xc], [xb, nb - xb]], alternative="two-sided")
    return float(p), "two proportions (Newcombe interval, Fisher exact test)"


def _quantile(values: Sequence[float], q: float) -> float | None:
    return float(np.quantile(np.asarray(values, float), q)) if values else None


def arm_data(samples: Sequence[RequestSample]) -> ArmData:
    """The :class:`ArmData` of an arm given every one of its requests."""
    costs = [s.cost_usd for s in samples]
    known = tuple(c for c in costs if c is not None)
    return ArmData(
        n=len(samples),
        counts={name: sum(1 for s in samples if getattr(s, flag)) for name, flag in _RATE_FLAGS.items()},
        latencies=tuple(s.latency_s for s in samples),
        costs=known,
        cost_unknown=len(costs) - len(known),
        groundedness=tuple(s.groundedness for s in samples if s.groundedness is not None),
    )


def arm_from_data(data: ArmData) -> ArmMeasures:
    """The measures of one arm from its :class:`ArmData` (exact counts, sampled quantiles and costs)."""
    n = data.n
    rates: dict[str, float | None] = {
        name: (data.counts.get(name, 0) / n if n else None) for name in _RATE_FLAGS
    }
    p50 = data.latency_p50 if data.latency_p50 is not None else _quantile(data.latencies, 0.5)
    p95 = data.latency_p95 if data.latency_p95 is not None else _quantile(data.latencies, 0.95)
    scores = data.groundedness
    return ArmMeasures(
        n=n,
        counts={name: data.counts.get(name, 0) for name in _RATE_FLAGS},
        rates=rates,
        latency_p50=p50 if n else None,
        latency_p95=p95 if n else None,
        # an unknown price is never 0: one unknown makes the mean unknown
        cost_per_request=(sum(data.costs) / len(data.costs))
        if data.costs and not data.cost_unknown
        else None,
        cost_unknown=data.cost_unknown,
        groundedness=(sum(scores) / len(scores)) if scores else None,
        groundedness_n=len(scores),
    )


def arm_measures(samples: Sequence[RequestSample]) -> ArmMeasures:
    """Aggregate one arm's samples."""
    return arm_from_data(arm_data(samples))


def _bootstrap(
    base: Sequence[float],
    head: Sequence[float],
    stat: Callable[[np.ndarray], np.ndarray],
    probs: Sequence[float],
    seed: int,
    n_resamples: int = 1000,
) -> list[float]:
    rng = np.random.default_rng(seed)
    b = np.asarray(base, float)
    h = np.asarray(head, float)
    # bound memory on large arms: fewer resamples, never fewer than 200
    n_resamples = min(n_resamples, max(200, 2_000_000 // max(len(b), len(h))))
    bi = rng.integers(0, len(b), size=(n_resamples, len(b)), dtype=np.int32)
    hi = rng.integers(0, len(h), size=(n_resamples, len(h)), dtype=np.int32)
    deltas = stat(h[hi]) - stat(b[bi])
    return [float(x) for x in np.quantile(deltas, list(probs))]


def _bootstrap_quantile(
    base: Sequence[float],
    head: Sequence[float],
    q: float,
    probs: Sequence[float],
    seed: int,
    n_resamples: int = 2000,
) -> list[float]:
    """Percentile bootstrap of ``quantile(head, q) - quantile(base, q)`` in O(resamples), not O(n·resamples).

    A resample of ``n`` values has the same order statistics as ``x_sorted[ceil(n·U_(k)) - 1]`` for the
    order statistics ``U_(k)`` of ``n`` uniforms, and ``U_(k) ~ Beta(k, n - k + 1)``; the next one is
    ``U_(k) + (1 - U_(k))·Beta(1, n - k)``. Drawing the two order statistics numpy's linear quantile
    interpolates between gives exactly the resampled quantile's distribution without building resamples.
    """
    rng = np.random.default_rng(seed)

    def resampled(values: Sequence[float]) -> np.ndarray:
        x = np.sort(np.asarray(values, float))
        n = len(x)
        h = (n - 1) * q
        k = int(np.floor(h))  # 0-based order statistic below the quantile
        frac = h - k
        u = rng.beta(k + 1, n - k, size=n_resamples)
        low = x[np.minimum(n - 1, np.ceil(n * u).astype(np.int64) - 1).clip(0)]
        if frac == 0 or k + 1 >= n:
            return np.asarray(low, dtype=float)
        u2 = u + (1 - u) * rng.beta(1, n - k - 1, size=n_resamples)
        high = x[np.minimum(n - 1, np.ceil(n * u2).astype(np.int64) - 1).clip(0)]
        return np.asarray(low + frac * (high - low), dtype=float)

    b = resampled(base)
    deltas = resampled(head) - b
    return [float(x) for x in np.quantile(deltas, list(probs))]


def _continuous_diff(
    name: str,
    base: Sequence[float],
    head: Sequence[float],
    base_value: float | None,
    head_value: float | None,
    stat: Callable[[np.ndarray], np.ndarray] | float,
    confidence: float,
    widen_confidence: float,
    seed: int,
) -> MeasureDiff:
    kind, worse, label = MEASURES[name]
    if not base or not head or base_value is None or head_value is None:
        return MeasureDiff(
            name, label, kind, worse, base_value, head_value, None, None, None, None, "no data"
        )

    from replaygate.stats import mann_whitney

    alpha = 1 - confidence
    probs = [alpha / 2, 1 - alpha / 2, widen_confidence, 1 - widen_confidence]
    if isinstance(stat, float):  # a quantile: drawn from its order statistics
        low, high, q_hi, q_lo = _bootstrap_quantile(base, head, stat, probs, seed)
    else:
        low, high, q_hi, q_lo = _bootstrap(base, head, stat, probs, seed)
    test = mann_whitney(base, head)
    return MeasureDiff(
        name,
        label,
        kind,
        worse,
        base_value,
        head_value,
        head_value - base_value,
        low,
        high,
        test.p_value,
        "Mann-Whitney U; bootstrap interval",
        q_hi if worse else -q_lo,
    )


def compute_live_measures(
    baseline: Sequence[RequestSample],
    candidate: Sequence[RequestSample],
    *,
    confidence: float = 0.95,
    widen_confidence: float = 0.8,
    seed: int = 0,
    window_start_ns: int | None = None,
    window_end_ns: int | None = None,
) -> LiveMeasures:
    """Measure both arms from every request of each (see :func:`measures_from_arm_data`)."""
    return measures_from_arm_data(
        arm_data(baseline),
        arm_data(candidate),
        confidence=confidence,
        widen_confidence=widen_confidence,
        seed=seed,
        window_start_ns=window_start_ns,
        window_end_ns=window_end_ns,
    )


def measures_from_arm_data(
    baseline: ArmData,
    candidate: ArmData,
    *,
    confidence: float = 0.95,
    widen_confidence: float = 0.8,
    seed: int = 0,
    window_start_ns: int | None = None,
    window_end_ns: int | None = None,
) -> LiveMeasures:
    """Measure both arms and each candidate-minus-baseline difference with an interval and a test.

    Rates use the exact counts; latency, cost and groundedness intervals are bootstrapped from the
    arms' samples. Each difference also carries ``worst_case``: the one-sided ``widen_confidence`` upper
    bound of how much worse the candidate may be (what a widen is judged on).
    """
    from replaygate.stats import two_proportion_diff

    b, c = arm_from_data(baseline), arm_from_data(candidate)
    diffs: list[MeasureDiff] = []
    for name in _RATE_FLAGS:
        kind, worse, label = MEASURES[name]
        if b.n == 0 or c.n == 0:
            diffs.append(
                MeasureDiff(
                    name, label, kind, worse, b.rates[name], c.rates[name], None, None, None, None, "no data"
                )
            )
            continue
        pd = two_proportion_diff(b.counts[name], b.n, c.counts[name], c.n, confidence)
        p_value, test = _rate_p_value(b.counts[name], b.n, c.counts[name], c.n, pd.p_value)
        one_sided = two_proportion_diff(b.counts[name], b.n, c.counts[name], c.n, 2 * widen_confidence - 1)
        diffs.append(
            MeasureDiff(
                name,
                label,
                kind,
                worse,
                b.rates[name],
                c.rates[name],
                pd.delta,
                pd.low,
                pd.high,
                p_value,
                test,
                one_sided.high,
            )
        )

    def mean(m: np.ndarray) -> np.ndarray:
        return np.asarray(m.mean(axis=1))

    bl = list(baseline.latencies)
    cl = list(candidate.latencies)
    diffs.append(
        _continuous_diff(
            "latency_p50", bl, cl, b.latency_p50, c.latency_p50, 0.5, confidence, widen_confidence, seed
        )
    )
    diffs.append(
        _continuous_diff(
            "latency_p95",
            bl,
            cl,
            b.latency_p95,
            c.latency_p95,
            0.95,
            confidence,
            widen_confidence,
            seed + 1,
        )
    )
    bc = list(baseline.costs)
    cc = list(candidate.costs)
    diffs.append(
        _continuous_diff(
            "cost_per_request",
            bc,
            cc,
            b.cost_per_request,
            c.cost_per_request,
            mean,
            confidence,
            widen_confidence,
            seed + 2,
        )
    )
    bg = list(baseline.groundedness)
    cg = list(candidate.groundedness)
    diffs.append(
        _continuous_diff(
            "groundedness",
            bg,
            cg,
            b.groundedness,
            c.groundedness,
            mean,
            confidence,
            widen_confidence,
            seed + 3,
        )
    )
    return LiveMeasures(window_start_ns, window_end_ns, b, c, tuple(diffs))


def failure_series(
    baseline: Sequence[RequestSample],
    candidate: Sequence[RequestSample],
    start_ns: int,
    end_ns: int,
    bins: int = 12,
) -> list[SeriesPoint]:
    """Bin both arms over ``[start_ns, end_ns)``: the share of failed requests (error, empty, escalated)."""
    bins = max(1, bins)
    width = max(1, (end_ns - start_ns) // bins + 1)

    def tally(samples: Sequence[RequestSample]) -> tuple[list[int], list[int]]:
        n = [0] * bins
        bad = [0] * bins
        for s in samples:
            if not start_ns <= s.start_ns < start_ns + width * bins:
                continue
            i = min(bins - 1, (s.start_ns - start_ns) // width)
            n[i] += 1
            bad[i] += int(s.error or s.empty or s.escalated)
        return n, bad

    return series_from_bins(
        {"baseline": tally(baseline), "candidate": tally(candidate)}, start_ns, end_ns, bins
    )


def series_from_bins(
    bins: dict[str, tuple[list[int], list[int]]], start_ns: int, end_ns: int, n_bins: int
) -> list[SeriesPoint]:
    """The series from per-arm (requests, failed) counts per bin (what the store aggregates in SQL)."""
    n_bins = max(1, n_bins)
    width = max(1, (end_ns - start_ns) // n_bins + 1)
    bn, bb = bins.get("baseline", ([0] * n_bins, [0] * n_bins))
    cn, cb = bins.get("candidate", ([0] * n_bins, [0] * n_bins))
    return [
        SeriesPoint(
            start_ns + i * width,
            bn[i],
            bb[i] / bn[i] if bn[i] else None,
            cn[i],
            cb[i] / cn[i] if cn[i] else None,
        )
        for i in range(n_bins)
    ]
