"""Binomial intervals and pass^k estimates."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

from scipy.stats import norm

__all__ = ["Verdict", "pass_at_k", "pass_hat_k", "scenario_verdict", "wilson_interval", "z_value"]

Verdict = Literal["pass", "fail", "inconclusive"]


@lru_cache(maxsize=64)
def z_value(confidence: float) -> float:
    """Return the two-sided normal quantile for a confidence level in (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(norm.ppf(1.0 - (1.0 - confidence) / 2.0))


def _check_counts(successes: int, n: int) -> None:
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Wilson score interval for a binomial proportion.

    Matches ``scipy.stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")``.
    With ``n == 0`` nothing is known and the interval is ``(0.0, 1.0)``.
    """
    _check_counts(successes, n)
    if n == 0:
        return (0.0, 1.0)
    z = z_value(confidence)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


def pass_hat_k(successes: int, n: int, k: int) -> float:
    """Unbiased estimate of the probability that k of k attempts pass: C(c, k) / C(n, k)."""
    _check_counts(successes, n)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    return math.comb(successes, k) / math.comb(n, k)


def pass_at_k(successes: int, n: int, k: int) -> float:
    """Unbiased estimate of the probability that at least one of k attempts passes."""
    _check_counts(successes, n)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    return 1.0 - math.comb(n - successes, k) / math.comb(n, k)


def scenario_verdict(
    successes: int, n: int, must_pass: bool, threshold: float, confidence: float = 0.95
) -> Verdict:
    """Decide one scenario from its attempts.

    Must-pass scenarios use pass^k: every attempt must pass. Others compare the Wilson interval with the
    threshold: lower bound >= threshold passes, upper bound < threshold fails, anything else is
    inconclusive (the suite needs more attempts to tell). No attempts at all is inconclusive.
    """
    _check_counts(successes, n)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
    if n == 0:
        return "inconclusive"
    if must_pass:
        return "pass" if successes == n else "fail"
    low, high = wilson_interval(successes, n, confidence)
    if low >= threshold:
        return "pass"
    if high < threshold:
        return "fail"
    return "inconclusive"
