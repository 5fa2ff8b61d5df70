"""Each measure's worsening on its decision scale, and the time-uniform boundary around it (pure).

:func:`worsening` turns two :class:`ArmSummary` into a :class:`Stat`: the candidate's worsening over the
baseline (a difference for an absolute tolerance, the log of the ratio for a relative one), its variance
split by arm, and the tolerance and twice the tolerance on the same scale. Rates use the Agresti-Caffo
estimate (one event and one non-event added per arm); latency quantiles a distribution-free standard error
from the order statistics one standard error either side; cost and groundedness the mean and its variance.
:func:`mixture_bound` is the one-sided normal-mixture confidence-sequence boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from replaygate.canary._summary import RATE_MEASURES, ArmSummary, MeanSummary
from replaygate.canary._tolerances import Limit

__all__ = ["QUANTILES", "Stat", "display", "mixture_bound", "quantile_min_n", "worsening"]

QUANTILES = {"latency_p50": 0.5, "latency_p95": 0.95}
_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


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


@dataclass(frozen=True)
class Stat:
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


def display(value: float, relative: bool, higher_is_worse: bool) -> float:
    if not relative or not math.isfinite(value):
        return value
    return math.expm1(value) if higher_is_worse else -math.expm1(-value)


def _rate_stat(name: str, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> Stat | None:
    if b.n == 0 or c.n == 0 or name not in b.events or name not in c.events:
        return None
    xb, xc = b.events[name], c.events[name]
    pb, pc = (xb + 1) / (b.n + 2), (xc + 1) / (c.n + 2)
    tol, gross = _scale(limit, 1, True), _scale(limit, factor, True)
    if limit.mode == "absolute":
        raw = xc / c.n - xb / b.n
        p0 = min(1 - 1e-6, pb + limit.value)  # the guard's null: worse by exactly the tolerance
        return Stat(
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
    return Stat(
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
) -> Stat | None:
    if b is None or c is None or b.n < 2 or c.n < 2:
        return None
    sign = 1.0 if higher_is_worse else -1.0
    tol, gross = _scale(limit, 1, higher_is_worse), _scale(limit, factor, higher_is_worse)
    if limit.mode == "absolute":
        d = sign * (c.mean - b.mean)
        return Stat(
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
    return Stat(
        d=d,
        var_c=var_c,
        var_b=var_b,
        n_c=c.n,
        n_b=b.n,
        relative=True,
        tol=tol,
        gross=gross,
        show=display(d, True, higher_is_worse),
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


def _quantile_stat(q: float, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> Stat | None:
    if len(b.latencies) < 2 or len(c.latencies) < 2:
        return None
    lb, lc = b.latencies, c.latencies
    qb, qc = _quantile(lb, q), _quantile(lc, q)
    tol, gross = _scale(limit, 1, True), _scale(limit, factor, True)
    relative = limit.mode == "relative"
    d = math.log(max(qc, 1e-9) / max(qb, 1e-9)) if relative else qc - qb
    return Stat(
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


def worsening(name: str, b: ArmSummary, c: ArmSummary, limit: Limit, factor: float) -> Stat | None:
    if name in RATE_MEASURES:
        return _rate_stat(name, b, c, limit, factor)
    if name in QUANTILES:
        return _quantile_stat(QUANTILES[name], b, c, limit, factor)
    if name == "cost_per_request":
        if b.cost_unknown or c.cost_unknown:
            return None
        return _mean_stat(b.cost, c.cost, limit, factor, True)
    if name == "groundedness":
        return _mean_stat(b.groundedness, c.groundedness, limit, factor, False)
    return None
