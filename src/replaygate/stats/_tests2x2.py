"""Two-sample tests for live measures and per-scenario tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from replaygate.stats._intervals import wilson_interval
from replaygate.stats._scipy import norm_sf, scipy_stats, special

__all__ = [
    "ProportionDiff",
    "RankTest",
    "bh_adjust",
    "fisher_exact_per_scenario",
    "holm_adjust",
    "mann_whitney",
    "two_proportion_diff",
]


@dataclass(frozen=True)
class ProportionDiff:
    """Head rate minus base rate with Newcombe's hybrid score interval and a two-sided z-test p."""

    delta: float
    low: float
    high: float
    p_value: float
    base_rate: float | None
    head_rate: float | None


@dataclass(frozen=True)
class RankTest:
    """Mann-Whitney U test of head against base; ``median_delta`` is head median minus base median."""

    p_value: float
    statistic: float
    median_delta: float | None


def fisher_exact_per_scenario(
    base: Sequence[tuple[int, int]], head: Sequence[tuple[int, int]]
) -> list[float]:
    """Return the two-sided Fisher exact p-value of each scenario's 2x2 table (pass/fail x base/head)."""
    if len(base) != len(head):
        raise ValueError("base and head must list the same scenarios")
    out = []
    for (sb, nb), (sh, nh) in zip(base, head, strict=True):
        table = [[sb, nb - sb], [sh, nh - sh]]
        out.append(float(scipy_stats().fisher_exact(table, alternative="two-sided").pvalue))
    return out


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment (family-wise error), returned in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def bh_adjust(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjustment (false discovery rate), returned in the input order.

    Matches ``scipy.stats.false_discovery_control(p, method="bh")``. With no real change anywhere it
    controls the chance of any discovery at alpha, like Holm; with many real changes it finds them all.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for rank, i in enumerate(order):
        running = min(running, m * p_values[i] / (m - rank))  # m - rank: the BH rank of p_values[i]
        adjusted[i] = min(1.0, running)
    return adjusted


def two_proportion_diff(
    x_base: int, n_base: int, x_head: int, n_head: int, confidence: float = 0.95
) -> ProportionDiff:
    """Compare two independent proportions (e.g. error rates of the canary arms).

    The interval is Newcombe's hybrid score interval (built from the two Wilson intervals); the p-value
    is the pooled two-proportion z-test. An empty arm gives the widest interval and p = 1.
    """
    if n_base == 0 or n_head == 0:
        rb = x_base / n_base if n_base else None
        rh = x_head / n_head if n_head else None
        return ProportionDiff(0.0, -1.0, 1.0, 1.0, rb, rh)
    pb, ph = x_base / n_base, x_head / n_head
    lb, ub = wilson_interval(x_base, n_base, confidence)
    lh, uh = wilson_interval(x_head, n_head, confidence)
    delta = ph - pb
    low = delta - math.sqrt((ph - lh) ** 2 + (ub - pb) ** 2)
    high = delta + math.sqrt((uh - ph) ** 2 + (pb - lb) ** 2)
    pooled = (x_base + x_head) / (n_base + n_head)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_base + 1 / n_head))
    p = 1.0 if se == 0 else float(2 * norm_sf(abs(delta) / se))
    return ProportionDiff(delta, max(-1.0, low), min(1.0, high), p, pb, ph)


def _mwu_asymptotic(x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[float, float]:
    """U of ``x`` and the two-sided p of its tie-corrected normal approximation, with continuity correction.

    The steps and the operations of ``scipy.stats.mannwhitneyu`` (``method="asymptotic"``), so the same
    values: average ranks of the pooled sample, tie counts, ``U = max(U1, U2)``, ``2 * ndtr(-z)``.
    """
    n1, n2 = x.size, y.size
    xy = np.concatenate((x, y))
    order = np.argsort(xy, kind="stable")
    ordinal = np.arange(1, xy.size + 1, dtype=np.float64)
    ys = xy[order]
    first = np.concatenate([np.ones(1, dtype=bool), ys[:-1] != ys[1:]])
    starts = np.arange(xy.size)[first]
    counts = np.diff(starts, append=np.asarray([xy.size], dtype=starts.dtype))
    sorted_ranks = np.repeat(ordinal[first] + (counts.astype(np.float64) - 1) / 2, counts)
    ranks = np.empty(xy.size, dtype=np.float64)
    ranks[order] = sorted_ranks
    ties = np.zeros(xy.size, dtype=np.float64)
    ties[first] = counts.astype(np.float64)
    u1 = np.sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = np.maximum(u1, n1 * n2 - u1)
    n = n1 + n2
    tie_term = np.sum(ties**3 - ties)
    s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    numerator = u - n1 * n2 / 2
    numerator -= 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        z = numerator / s
    p = np.clip(special().ndtr(-z) * 2, 0.0, 1.0)
    return float(u1), float(p)


def mann_whitney(
    base: Sequence[float] | NDArray[np.float64], head: Sequence[float] | NDArray[np.float64]
) -> RankTest:
    """Two-sided Mann-Whitney U test (for latency and other skewed measures).

    ``scipy.stats.mannwhitneyu``'s values; samples of more than 8 finite values each (where it uses the
    normal approximation) are ranked here with numpy, without importing ``scipy.stats``.
    """
    if len(base) == 0 or len(head) == 0:
        return RankTest(1.0, math.nan, None)
    x, y = np.asarray(head, float), np.asarray(base, float)
    median_delta = float(np.median(head) - np.median(base))
    if x.size > 8 and y.size > 8 and np.isfinite(x).all() and np.isfinite(y).all():
        statistic, p_value = _mwu_asymptotic(x, y)
        return RankTest(p_value, statistic, median_delta)
    res = scipy_stats().mannwhitneyu(x, y, alternative="two-sided")
    return RankTest(float(res.pvalue), float(res.statistic), median_delta)
