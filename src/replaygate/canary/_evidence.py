"""Evidence for widening and rolling back: tests against each tolerance, valid at every look (pure: no I/O).

Tolerances are the gate policy's guardrails (``cost``, ``latency_p50``, ``latency_p95``,
``escalation_rate``, ``empty_rate``, ``error_rate``; each relative or absolute); the measures the gate
policy does not cover (negative-feedback rate, sampled groundedness) use :data:`EXTRA_TOLERANCES`.

The inputs are plain per-arm summaries of the current step (:class:`ArmSummary`: request and event counts,
a count/sum/sum-of-squares per mean measure, the sorted latencies or a uniform sample of them), so the
live measures can be aggregated in Python or in SQL and feed the same rule.

**The rule.** For each measure, the candidate's *worsening* over the baseline is estimated on its decision
scale (a difference for an absolute tolerance; the log of the ratio for a relative one, so +35% latency is
``log 1.35`` and a ratio is bounded, not a difference divided by a noisy baseline), with its standard error.
Around it sits a **confidence sequence**: bounds that hold at every look at once, however often
``replaygate canary check`` runs (the one-sided normal-mixture boundary of Robbins 1970 as given by
Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence sequences",
Ann. Statist. 49(2), 2021, applied to the estimate with its plug-in variance as in Johari, Pekelis & Walsh's
"always valid" A/B tests, Oper. Res. 70(3), 2022; valid as the arms grow, by the time-uniform central limit
theorem of Waudby-Smith, Arnold, Wu & Ramdas 2024). The mixture is scaled to the tolerance, so the bounds
are tightest where the decision is made.

- **Roll back** when the lower bound of the worsening (``rollback_alpha``, 1%) is above the tolerance in
  any measure: it is *confidently worse than the tolerance*. A candidate exactly at its tolerance is rolled
  back by this with probability at most ``rollback_alpha`` per measure and step, over any number of looks.
- **Gross-harm guard**: Wald's sequential probability ratio test of "worse by the tolerance" against "worse
  by twice the tolerance" (``guard_alpha``, 5%) rolls back sooner on a gross breach. Its likelihood ratio is
  a supermartingale for any worsening up to 1.5 times the tolerance, so by Ville's inequality a candidate
  within the tolerance trips it with probability at most ``guard_alpha`` (at exactly the tolerance; about
  ``guard_alpha²`` at half of it) over every look.
- **Widen** when every checked measure's upper bound (``widen_alpha``, 10%) is within its tolerance
  (*confidently within*) and both arms hold ``min_count`` requests; neither verdict is given on fewer than
  ``min_count`` (widen) or ``min_breach_count`` (rollback) requests in either arm.
- Otherwise **hold**: the measure is *not yet decided*, and the rule says how many more candidate requests
  would decide it if the current estimate and spread held (:func:`requests_needed` gives the same for a
  fresh step at another share).

Rates use the Agresti-Caffo estimate (one event and one non-event added to each arm), so a rare event seen
zero times still has a spread; latency quantiles use a distribution-free standard error from the order
statistics around the quantile; cost and groundedness use the mean and its variance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from replaygate.canary._measures import MEASURES, RequestSample

__all__ = [
    "DEFAULT_TOLERANCES",
    "EXTRA_TOLERANCES",
    "METHOD",
    "RATE_MEASURES",
    "WORDS",
    "ArmSummary",
    "Evidence",
    "EvidenceSettings",
    "Limit",
    "MeanSummary",
    "MeasureEvidence",
    "evaluate_evidence",
    "mixture_bound",
    "requests_needed",
    "tolerances_from_policy",
]

#: How the canary decides, in one line (shown in the JSON and the README).
METHOD = (
    "per measure, a one-sided normal-mixture confidence sequence (Howard et al. 2021) for the worsening, "
    "valid at every look, tested against the tolerance; gross-harm guard: Wald's SPRT of the tolerance "
    "against twice the tolerance"
)

Verdict = Literal["worse", "within", "undecided", "unchecked"]

#: The words of each verdict (the page and ``canary status`` use these).
WORDS: dict[str, str] = {
    "worse": "confidently worse than the tolerance",
    "within": "confidently within the tolerance",
    "undecided": "not yet decided",
    "unchecked": "not checked",
}

RATE_MEASURES = ("error_rate", "empty_rate", "escalation_rate", "negative_feedback_rate")
_RATE_FLAGS = {
    "error_rate": "error",
    "empty_rate": "empty",
    "escalation_rate": "escalated",
    "negative_feedback_rate": "negative_feedback",
}
_QUANTILES = {"latency_p50": 0.5, "latency_p95": 0.95}
_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class Limit:
    """How much a measure may worsen: ``relative`` (0.2 = 20% of the baseline) or ``absolute``."""

    mode: Literal["relative", "absolute"]
    value: float

    def allowed(self, baseline: float) -> float:
        """The allowed worsening for this baseline value."""
        return self.value * abs(baseline) if self.mode == "relative" else self.value

    def describe(self) -> str:
        """``35% relative`` or ``0.05 absolute``."""
        return f"{self.value:.0%} relative" if self.mode == "relative" else f"{self.value:g} absolute"


#: Tolerances of measures the gate policy does not hold.
EXTRA_TOLERANCES: dict[str, Limit] = {
    "negative_feedback_rate": Limit("absolute", 0.05),
    "groundedness": Limit("absolute", 0.10),
}
#: Used when no gate policy is given (the gate policy's own defaults).
DEFAULT_TOLERANCES: dict[str, Limit] = {
    "cost_per_request": Limit("relative", 0.10),
    "latency_p50": Limit("relative", 0.20),
    "latency_p95": Limit("relative", 0.25),
    "escalation_rate": Limit("absolute", 0.05),
    "empty_rate": Limit("absolute", 0.02),
    "error_rate": Limit("absolute", 0.02),
    **EXTRA_TOLERANCES,
}
_POLICY_NAMES = {
    "cost": "cost_per_request",
    "latency_p50": "latency_p50",
    "latency_p95": "latency_p95",
    "escalation_rate": "escalation_rate",
    "empty_rate": "empty_rate",
    "error_rate": "error_rate",
}


def tolerances_from_policy(policy: Any) -> dict[str, Limit]:
    """Read the guardrail tolerances of a gate policy (``replaygate.gate.Policy`` or a mapping).

    A guardrail the policy switches off (``null``) is not checked live either. Sampled groundedness
    takes the policy's ``judge:groundedness`` tolerance (its graded-score tolerance) when it has one.
    """
    if policy is None:
        return dict(DEFAULT_TOLERANCES)
    guardrails = (
        policy.get("guardrails") if isinstance(policy, Mapping) else getattr(policy, "guardrails", None)
    )
    out: dict[str, Limit] = dict(EXTRA_TOLERANCES)
    for policy_name, name in _POLICY_NAMES.items():
        if guardrails is None:
            out[name] = DEFAULT_TOLERANCES[name]
            continue
        tol = (
            guardrails.get(policy_name)
            if isinstance(guardrails, Mapping)
            else getattr(guardrails, policy_name)
        )
        if tol is None:
            continue
        if isinstance(tol, Mapping):
            if tol.get("relative") is not None:
                out[name] = Limit("relative", float(tol["relative"]))
            elif tol.get("absolute") is not None:
                out[name] = Limit("absolute", float(tol["absolute"]))
            continue
        out[name] = Limit("relative" if tol.kind == "relative" else "absolute", float(tol.value))
    tolerance = policy.get("tolerance") if isinstance(policy, Mapping) else getattr(policy, "tolerance", None)
    metrics = (
        tolerance.get("metrics") if isinstance(tolerance, Mapping) else getattr(tolerance, "metrics", None)
    )
    if isinstance(metrics, Mapping) and metrics.get("judge:groundedness") is not None:
        out["groundedness"] = Limit("absolute", float(metrics["judge:groundedness"]))
    return out


# ---- per-arm summaries -------------------------------------------------------------------------------


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


# ---- settings and results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceSettings:
    """Knobs of the rule: minimum traffic and the error level of each verdict (per measure and step)."""

    min_count: int = 50
    min_breach_count: int = 50
    rollback_alpha: float = 0.01
    guard_alpha: float = 0.05
    widen_alpha: float = 0.10
    guard_factor: float = 2.0

    def __post_init__(self) -> None:
        for name in ("rollback_alpha", "guard_alpha", "widen_alpha"):
            value = getattr(self, name)
            if not 0 < value < 1:
                raise ValueError(f"EvidenceSettings.{name} must be in (0, 1), got {value!r}")
        if not self.guard_factor > 1:
            raise ValueError(f"EvidenceSettings.guard_factor must be above 1, got {self.guard_factor!r}")
        if self.min_count < 1 or self.min_breach_count < 1:
            raise ValueError("EvidenceSettings.min_count and min_breach_count must be at least 1")


@dataclass(frozen=True)
class MeasureEvidence:
    """One measure's verdict, with the bounds of its worsening against the tolerance.

    ``estimate``, ``lower``, ``upper`` and ``tolerance_value`` are worsenings in the same unit: a fraction of
    the baseline for a relative tolerance (0.35 = 35% worse), else the measure's own unit (0.05 = 5 points
    for a rate). ``lower`` is the rollback bound, ``upper`` the widen bound; ``needed`` is about how many
    more candidate requests would decide the measure at the current rates (None when decided or unknown).
    """

    name: str
    label: str
    verdict: Verdict
    relative: bool
    tolerance: str
    tolerance_value: float | None
    estimate: float | None
    lower: float | None
    upper: float | None
    gross: bool
    needed: int | None
    words: str

    def to_json(self) -> dict[str, Any]:
        """Plain data for the status JSON and the page."""
        return {
            "name": self.name,
            "label": self.label,
            "verdict": self.verdict,
            "verdict_words": WORDS[self.verdict],
            "relative": self.relative,
            "tolerance": self.tolerance,
            "tolerance_value": self.tolerance_value,
            "estimate": _finite(self.estimate),
            "lower": _finite(self.lower),
            "upper": _finite(self.upper),
            "gross_harm": self.gross,
            "needed_candidate_requests": self.needed,
            "words": self.words,
        }


@dataclass(frozen=True)
class Evidence:
    """Whether the current step may be widened (and why not), and what calls for a rollback."""

    can_widen: bool
    missing: tuple[str, ...]
    breaches: tuple[str, ...]
    notes: tuple[str, ...] = ()
    measures: tuple[MeasureEvidence, ...] = ()
    needed: int | None = None

    @property
    def reason(self) -> str:
        """One line: what is missing for a widen, or that the evidence holds."""
        if self.can_widen:
            return (
                "evidence holds: enough requests in both arms and every measure confidently within "
                "the tolerance"
            )
        return "; ".join(self.missing)

    @property
    def breached(self) -> bool:
        """Whether a measure is confidently worse than its tolerance (a rollback is due)."""
        return bool(self.breaches)

    @property
    def decision(self) -> Literal["rollback", "widen", "hold"]:
        """What the rule says now."""
        return "rollback" if self.breached else "widen" if self.can_widen else "hold"

    def measure(self, name: str) -> MeasureEvidence:
        """One measure's evidence by name."""
        for m in self.measures:
            if m.name == name:
                return m
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """Plain data for the status JSON and the page."""
        return {
            "decision": self.decision,
            "can_widen": self.can_widen,
            "reason": self.reason,
            "breaches": list(self.breaches),
            "missing": list(self.missing),
            "needed_candidate_requests": self.needed,
            "method": METHOD,
            "measures": [m.to_json() for m in self.measures],
        }


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


# ---- the boundary ------------------------------------------------------------------------------------


def mixture_bound(variance: float, tau: float, alpha: float) -> float:
    """Half-width of the one-sided normal-mixture confidence sequence at an estimate's ``variance``.

    The mixture martingale of a Gaussian estimate with variance ``V`` (information ``1/V``) over a
    half-normal prior of scale ``tau`` on the effect is
    ``2/sqrt(1+r) * exp(r x² / (2(1+r))) * Phi(x sqrt(r/(1+r)))`` with ``r = tau²/V`` and ``x`` the
    estimate's distance in standard errors (Howard et al. 2021, one-sided normal mixture); the bound is
    the distance at which it reaches ``1/alpha``, so by Ville's inequality the estimate crosses it at some
    look with probability at most ``alpha``. Returns 0 for a zero variance, ``inf`` for an infinite one.
    """
    if variance <= 0:
        return 0.0
    if not math.isfinite(variance):
        return math.inf
    r = tau * tau / variance
    target = math.log(1.0 / alpha)
    half_log = 0.5 * math.log1p(r)
    scale = math.sqrt(r / (1.0 + r))
    k = 2.0 * (1.0 + r) / r

    def excess(x: float) -> float:  # log M - log(1/alpha); Phi >= 1/2 here, so no underflow
        return math.log(math.erfc(-x * scale / _SQRT2)) - half_log + x * x / k - target

    def slope(x: float) -> float:
        y = x * scale
        return 2 * x / k + scale * math.exp(-y * y / 2) / (_SQRT_2PI * 0.5 * math.erfc(-y / _SQRT2))

    lo = math.sqrt(max(0.0, k * (target - math.log(2.0) + half_log)))
    hi = math.sqrt(k * (target + half_log)) + 1e-9
    x = hi
    for _ in range(60):  # Newton from the right, kept inside the bracket (excess is increasing)
        f = excess(x)
        if abs(f) < 1e-10:
            break
        if f > 0:
            hi = x
        else:
            lo = x
        step = x - f / slope(x)
        x = step if lo < step < hi else (lo + hi) / 2
    return x * math.sqrt(variance)


# ---- per-measure statistics --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Stat:
    """A worsening on its decision scale: estimate, variance split by arm, and the arms' sizes."""

    d: float
    var_c: float
    var_b: float
    n_c: int
    n_b: int
    relative: bool
    tol: float  # tolerance on the decision scale
    gross: float  # twice the tolerance on the decision scale
    show: float  # observed worsening in display units
    var_c_null: float | None = None  # the candidate's variance were it worse by exactly the tolerance
    d_raw: float | None = None  # the unshrunk estimate, projected when more traffic arrives (rates)

    def per_request(self) -> tuple[float, float]:
        """Variance per candidate and per baseline request (projected as variance / n)."""
        return self.var_c * max(1, self.n_c), self.var_b * max(1, self.n_b)


def _scale(limit: Limit, factor: float, higher_is_worse: bool) -> float:
    """The tolerance (times ``factor``) on the decision scale."""
    if limit.mode == "absolute":
        return limit.value * factor
    v = limit.value * factor
    if higher_is_worse:
        return math.log1p(v)
    return -math.log1p(-min(v, 0.999999))


def _display(value: float, relative: bool, higher_is_worse: bool) -> float:
    if not relative or not math.isfinite(value):
        return value
    return math.expm1(value) if higher_is_worse else -math.expm1(-value)


def _rate_stat(name: str, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> _Stat | None:
    if b.n == 0 or c.n == 0 or name not in b.events or name not in c.events:
        return None
    xb, xc = b.events[name], c.events[name]
    pb, pc = (xb + 1) / (b.n + 2), (xc + 1) / (c.n + 2)
    tol, gross = _scale(limit, 1, True), _scale(limit, factor, True)
    if limit.mode == "absolute":
        raw = xc / c.n - xb / b.n
        p0 = min(1 - 1e-6, pb + limit.value)  # the guard's null: worse by exactly the tolerance
        return _Stat(
            d=pc - pb,
            var_c=pc * (1 - pc) / (c.n + 2),
            var_b=pb * (1 - pb) / (b.n + 2),
            n_c=c.n,
            n_b=b.n,
            relative=False,
            tol=tol,
            gross=gross,
            show=raw,
            var_c_null=p0 * (1 - p0) / (c.n + 2),
            d_raw=raw,
        )
    d = math.log(pc / pb)
    return _Stat(
        d=d,
        var_c=(1 - pc) / (pc * (c.n + 2)),
        var_b=(1 - pb) / (pb * (b.n + 2)),
        n_c=c.n,
        n_b=b.n,
        relative=True,
        tol=tol,
        gross=gross,
        show=math.expm1(d),
    )


def _mean_stat(
    b: MeanSummary | None, c: MeanSummary | None, limit: Limit, factor: float, higher_is_worse: bool
) -> _Stat | None:
    if b is None or c is None or b.n < 2 or c.n < 2:
        return None
    sign = 1.0 if higher_is_worse else -1.0
    tol, gross = _scale(limit, 1, higher_is_worse), _scale(limit, factor, higher_is_worse)
    if limit.mode == "absolute":
        d = sign * (c.mean - b.mean)
        return _Stat(
            d=d,
            var_c=c.variance / c.n,
            var_b=b.variance / b.n,
            n_c=c.n,
            n_b=b.n,
            relative=False,
            tol=tol,
            gross=gross,
            show=d,
        )
    if b.mean <= 0 or c.mean <= 0:
        return None
    d = sign * math.log(c.mean / b.mean)
    var_c = c.variance / (c.n * c.mean * c.mean)
    var_b = b.variance / (b.n * b.mean * b.mean)
    return _Stat(
        d=d,
        var_c=var_c,
        var_b=var_b,
        n_c=c.n,
        n_b=b.n,
        relative=True,
        tol=tol,
        gross=gross,
        show=_display(d, True, higher_is_worse),
    )


def _quantile(values: Sequence[float], q: float) -> float:
    """The sample quantile of sorted values (linear interpolation, numpy's default)."""
    pos = (len(values) - 1) * q
    i = math.floor(pos)
    j = min(i + 1, len(values) - 1)
    return values[i] + (values[j] - values[i]) * (pos - i)


def _quantile_var(values: Sequence[float], q: float, log: bool) -> float:
    """Distribution-free variance of a sample quantile from the order statistics one s.e. around it."""
    n = len(values)
    spread = math.sqrt(n * q * (1 - q))
    lo, hi = math.floor(n * q - spread), math.ceil(n * q + spread)
    if lo < 1 or hi > n:
        return math.inf
    a, z = values[lo - 1], values[hi - 1]
    if log:
        a, z = math.log(max(a, 1e-9)), math.log(max(z, 1e-9))
    return ((z - a) / 2.0) ** 2


def quantile_min_n(q: float) -> int:
    """The fewest values whose quantile ``q`` has an order-statistic standard error."""
    n = 2
    while True:
        spread = math.sqrt(n * q * (1 - q))
        if math.floor(n * q - spread) >= 1 and math.ceil(n * q + spread) <= n:
            return n
        n += 1


def _quantile_stat(q: float, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> _Stat | None:
    if len(b.latencies) < 2 or len(c.latencies) < 2:
        return None
    lb, lc = b.latencies, c.latencies
    qb, qc = _quantile(lb, q), _quantile(lc, q)
    tol, gross = _scale(limit, 1, True), _scale(limit, factor, True)
    relative = limit.mode == "relative"
    d = math.log(max(qc, 1e-9) / max(qb, 1e-9)) if relative else qc - qb
    return _Stat(
        d=d,
        var_c=_quantile_var(lc, q, relative),
        var_b=_quantile_var(lb, q, relative),
        n_c=len(lc),
        n_b=len(lb),
        relative=relative,
        tol=tol,
        gross=gross,
        show=math.expm1(d) if relative else d,
    )


def _stat(name: str, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> _Stat | None:
    if name in RATE_MEASURES:
        return _rate_stat(name, b, c, limit, factor)
    if name in _QUANTILES:
        return _quantile_stat(_QUANTILES[name], b, c, limit, factor)
    if name == "cost_per_request":
        if b.cost_unknown or c.cost_unknown:
            return None
        return _mean_stat(b.cost, c.cost, limit, factor, True)
    if name == "groundedness":
        return _mean_stat(b.groundedness, c.groundedness, limit, factor, False)
    return None


# ---- the verdicts ------------------------------------------------------------------------------------


def _tau(s: _Stat) -> float:
    return s.tol if s.tol > 0 else 0.01  # the mixture's scale; a zero tolerance uses 1 point / 1%


def _guard(s: _Stat, variance: float, settings: EvidenceSettings, d: float | None = None) -> bool:
    """Wald's SPRT of worsening = tolerance against worsening = guard_factor x tolerance.

    A rate's candidate variance is taken at the null (baseline + tolerance), as a score test does.
    """
    d = s.d if d is None else d
    d0, d1 = s.tol, max(s.gross, s.tol + _tau(s))
    mid = (d0 + d1) / 2
    if variance <= 0:
        return d > mid
    if not math.isfinite(variance):
        return False
    return (d1 - d0) * (d - mid) / variance >= math.log(1 / settings.guard_alpha)


def _verdict(
    s: _Stat, var_c: float, var_b: float, n_c: float, n_b: float, settings: EvidenceSettings
) -> tuple[Verdict, float, float, bool]:
    """(verdict, lower, upper, gross) of a worsening with these variances and arm sizes."""
    variance = var_c + var_b
    lower = s.d - mixture_bound(variance, _tau(s), settings.rollback_alpha)
    upper = s.d + mixture_bound(variance, _tau(s), settings.widen_alpha)
    if min(n_c, n_b) >= settings.min_breach_count:
        null_c = var_c if s.var_c_null is None else s.var_c_null * s.n_c / max(1.0, n_c)
        gross = _guard(s, null_c + var_b, settings)
        if lower > s.tol + 1e-12 or gross:
            return "worse", lower, upper, gross
    if min(n_c, n_b) >= settings.min_count and upper <= s.tol + 1e-12:
        return "within", lower, upper, False
    return "undecided", lower, upper, False


def _split(share: float | None, n_c: int, n_b: int) -> float | None:
    if share is not None and 0 < share < 1:
        return share
    if n_c + n_b == 0:
        return None
    s = n_c / (n_c + n_b)
    return s if 0 < s < 1 else None


def _need(s: _Stat, settings: EvidenceSettings, share: float | None, fresh: bool) -> int | None:
    """About how many more (``fresh``: how many) candidate requests decide ``s`` at its current rates."""
    d = s.d if s.d_raw is None else s.d_raw  # the shrinkage fades as the arms grow
    if abs(d - s.tol) <= 1e-12:
        return None  # on the tolerance: no amount of traffic at these rates decides it
    split = _split(share, s.n_c, s.n_b)
    if split is None:
        return None
    per_c, per_b = s.per_request()
    if not (math.isfinite(per_c) and math.isfinite(per_b)):
        return None
    start_c, start_b = (0, 0) if fresh else (s.n_c, s.n_b)
    ratio = (1 - split) / split

    worse = d > s.tol

    def decided(k: int) -> bool:
        n_c = start_c + k
        n_b = start_b + k * ratio
        var_c, var_b = per_c / n_c, per_b / n_b
        if worse:
            if min(n_c, n_b) < settings.min_breach_count:
                return False
            lower = d - mixture_bound(var_c + var_b, _tau(s), settings.rollback_alpha)
            if lower > s.tol + 1e-12:
                return True
            null_c = var_c if s.var_c_null is None else s.var_c_null * s.n_c / n_c
            return _guard(s, null_c + var_b, settings, d)
        if min(n_c, n_b) < settings.min_count:
            return False
        return d + mixture_bound(var_c + var_b, _tau(s), settings.widen_alpha) <= s.tol + 1e-12

    lo, hi = 0, max(1, start_c)
    if decided(hi):  # halve down to an undecided count, then bisect
        while hi > 1 and decided(hi // 2):
            hi //= 2
        lo = hi // 2
    else:
        while not decided(hi):
            lo, hi = hi, hi * 2
            if hi > 10**9:
                return None
    while hi - lo > max(1, hi // 20):  # "about N": 5% is enough
        mid = (lo + hi) // 2
        if decided(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _fmt(name: str, value: float | None, relative: bool) -> str:
    if value is None or not math.isfinite(value):
        return "?"
    if relative:
        return f"{value * 100:+.0f}%"
    if name in RATE_MEASURES:
        return f"{value * 100:+.1f} points"
    if name.startswith("latency"):
        return f"{value:+.3f} s"
    if name == "cost_per_request":
        return f"{value:+.4g} USD"
    return f"{value:+.3g}"


def _describe(name: str, limit: Limit) -> str:
    if limit.mode == "relative":
        return f"{limit.value * 100:+g}%"
    if name in RATE_MEASURES:
        return f"{limit.value * 100:+g} points"
    return f"{limit.value:+g}"


def _words(name: str, label: str, verdict: Verdict, m: dict[str, Any]) -> str:
    rel = m["relative"]
    lo, hi, tol = _fmt(name, m["lower"], rel), _fmt(name, m["upper"], rel), m["tol"]
    if verdict == "worse":
        if m["gross"]:
            return (
                f"{label} is {WORDS['worse']} (observed {_fmt(name, m['est'], rel)}; tolerance {tol}; "
                f"gross-harm guard: the sequential test favours {m['gross_line']} over {tol})"
            )
        return f"{label} is {WORDS['worse']} (worse by at least {lo}; tolerance {tol})"
    if verdict == "within":
        return f"{label} is {WORDS['within']} (worse by at most {hi}; tolerance {tol})"
    needed = m["needed"]
    if m["on_line"]:
        what = "it sits on the tolerance: more traffic at these rates does not decide it"
    elif needed is None:
        what = "needs more candidate requests"
    else:
        what = f"needs ~{needed} more candidate requests"
    return (
        f"{label} is {WORDS['undecided']} ({what}): observed {_fmt(name, m['est'], rel)}, "
        f"bounds {lo} to {hi}; tolerance {tol}"
    )


def _unchecked(name: str, label: str, limit: Limit, why: str) -> MeasureEvidence:
    return MeasureEvidence(
        name,
        label,
        "unchecked",
        limit.mode == "relative",
        _describe(name, limit),
        None,
        None,
        None,
        None,
        False,
        None,
        f"{label}: {why}, not checked",
    )


def _measure_evidence(
    name: str,
    b: ArmSummary,
    c: ArmSummary,
    limit: Limit,
    settings: EvidenceSettings,
    share: float | None,
) -> tuple[MeasureEvidence, _Stat | None]:
    _, higher_is_worse, label = MEASURES.get(name, ("score", True, name))
    s = _stat(name, b, c, limit, settings.guard_factor)
    if s is None:
        if name == "cost_per_request" and (b.cost_unknown or c.cost_unknown):
            why = "price unknown for some requests"
        else:
            why = "no data in one arm"
        return _unchecked(name, label, limit, why), None
    verdict, lower, upper, gross = _verdict(s, s.var_c, s.var_b, s.n_c, s.n_b, settings)
    needed: int | None = None
    if verdict == "undecided":
        if not math.isfinite(s.var_c + s.var_b) and name in _QUANTILES:
            q = _QUANTILES[name]
            needed = max(1, quantile_min_n(q) - min(s.n_c, s.n_b))
        else:
            needed = _need(s, settings, share, fresh=False)
    hw = higher_is_worse if s.relative else True
    show_lower, show_upper = _display(lower, s.relative, hw), _display(upper, s.relative, hw)
    tol_value = limit.value if s.relative else s.tol
    info = {
        "relative": s.relative,
        "lower": show_lower,
        "upper": show_upper,
        "est": s.show,
        "tol": _describe(name, limit),
        "gross": gross,
        "gross_line": _describe(name, Limit(limit.mode, limit.value * settings.guard_factor)),
        "needed": needed,
        "on_line": abs(s.d - s.tol) <= 1e-12,
    }
    return (
        MeasureEvidence(
            name,
            label,
            verdict,
            s.relative,
            _describe(name, limit),
            tol_value,
            s.show,
            show_lower,
            show_upper,
            gross,
            needed,
            _words(name, label, verdict, info),
        ),
        s,
    )


def _count_shortfall(b: ArmSummary, c: ArmSummary, minimum: int, share: float | None) -> int:
    """Candidate requests still needed for both arms to hold ``minimum``."""
    need_c = max(0, minimum - c.n)
    split = _split(share, c.n, b.n)
    need_b = max(0, minimum - b.n)
    if need_b and split is not None:
        need_c = max(need_c, math.ceil(need_b * split / (1 - split)))
    return need_c


def evaluate_evidence(
    baseline: ArmSummary,
    candidate: ArmSummary,
    tolerances: Mapping[str, Limit] | None = None,
    settings: EvidenceSettings | None = None,
    *,
    share: float | None = None,
) -> Evidence:
    """Decide widen / hold / rollback for the current step from both arms' summaries.

    ``share`` is the candidate's share of this step (for the "needs ~N more" projection; estimated from
    the arms' sizes when not given).
    """
    b, c = baseline, candidate
    tols = DEFAULT_TOLERANCES if tolerances is None else tolerances
    chosen = settings or EvidenceSettings()
    missing: list[str] = []
    breaches: list[str] = []
    notes: list[str] = []
    measures: list[MeasureEvidence] = []
    needs: list[int] = []
    if b.n < chosen.min_count or c.n < chosen.min_count:
        short = _count_shortfall(b, c, chosen.min_count, share)
        needs.append(short)
        missing.append(
            f"not enough traffic yet: {c.n} candidate and {b.n} baseline requests in this step "
            f"(need {chosen.min_count} in each; ~{short} more candidate requests)"
        )
    for name in MEASURES:
        limit = tols.get(name)
        if limit is None:
            continue
        ev, _ = _measure_evidence(name, b, c, limit, chosen, share)
        measures.append(ev)
        if ev.verdict == "worse":
            breaches.append(ev.words)
            missing.append(ev.words)
        elif ev.verdict == "undecided":
            missing.append(ev.words)
            if ev.needed is not None:
                needs.append(ev.needed)
        elif ev.verdict == "unchecked" and b.n and c.n:
            notes.append(ev.words)
    if c.cost_unknown:
        notes.append(f"cost unknown for {c.cost_unknown} candidate requests (unknown price)")
    can_widen = not missing
    undecided = any(m.verdict == "undecided" and m.needed is None for m in measures)
    needed = None if can_widen or breaches or undecided or not needs else max(needs)
    return Evidence(can_widen, tuple(missing), tuple(breaches), tuple(notes), tuple(measures), needed)


def requests_needed(
    baseline: ArmSummary,
    candidate: ArmSummary,
    tolerances: Mapping[str, Limit],
    settings: EvidenceSettings | None = None,
    *,
    share: float,
) -> int | None:
    """About how many candidate requests a fresh step at ``share`` needs to decide every measure.

    The per-request spread of each measure and its observed worsening are taken from the current arms;
    None when a measure sits on its tolerance or its spread is not known yet.
    """
    chosen = settings or EvidenceSettings()
    if not 0 < share < 1:
        return None
    worst = math.ceil(max(chosen.min_count, chosen.min_count * share / (1 - share)))
    for name in MEASURES:
        limit = tolerances.get(name)
        if limit is None:
            continue
        s = _stat(name, baseline, candidate, limit, chosen.guard_factor)
        if s is None:
            continue
        k = _need(s, chosen, share, fresh=True)
        if k is None:
            return None
        worst = max(worst, k)
    return worst
