"""Binomial intervals and pass^k estimates."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

from replaygate.stats._scipy import norm_ppf

__all__ = [
    "Verdict",
    "min_repeats_to_fail",
    "min_repeats_to_pass",
    "pass_at_k",
    "pass_hat_k",
    "scenario_verdict",
    "threshold_note",
    "wilson_interval",
    "z_value",
]

Verdict = Literal["pass", "fail", "inconclusive"]


@lru_cache(maxsize=64)
def z_value(confidence: float) -> float:
    """Return the two-sided normal quantile for a confidence level in (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return norm_ppf(1.0 - (1.0 - confidence) / 2.0)


def _check_counts(successes: int, n: int) -> None:
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return the Wilson score interval for a binomial proportion.

    Matches ``scipy.stats.binomtest(successes, n).proportion_ci(confidence, method="wilson")``.
    With ``n == 0`` nothing is known and the interval is ``(0.0, 1.0)``.
    """
    _check_counts(successes, n)
    return _wilson(successes, n, confidence)


@lru_cache(maxsize=4096)
def _wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """The interval itself (a suite has few distinct counts: each is computed once)."""
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
    _check_threshold(threshold)
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


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")


def min_repeats_to_pass(threshold: float, confidence: float = 0.95, limit: int = 100_000) -> int | None:
    """Fewest attempts at which a scenario that passes every one is confirmed at or above ``threshold``.

    The Wilson lower bound of ``n`` out of ``n`` is ``n / (n + z^2)``, so a threshold of 0.8 needs 16
    attempts at 95%: with fewer, the verdict can only be ``inconclusive`` or ``fail``. None when no count
    up to ``limit`` reaches it (a threshold of 1.0).
    """
    _check_threshold(threshold)
    if threshold <= 0.0:
        return 1
    if threshold >= 1.0:
        return None
    z2 = z_value(confidence) ** 2
    guess = max(1, math.ceil(threshold * z2 / (1.0 - threshold)) - 1)
    for n in range(guess, limit + 1):  # the closed form, confirmed with the interval itself
        if wilson_interval(n, n, confidence)[0] >= threshold:
            return n
    return None


def min_repeats_to_fail(threshold: float, confidence: float = 0.95, limit: int = 100_000) -> int | None:
    """Fewest attempts at which a scenario that fails every one is confirmed below ``threshold``.

    The Wilson upper bound of 0 out of ``n`` is ``z^2 / (n + z^2)``: a threshold of 0.2 needs 16 attempts
    at 95%, and below that a scenario can only be ``inconclusive`` or ``pass``. None for a threshold of 0.
    """
    _check_threshold(threshold)
    if threshold <= 0.0:
        return None
    z2 = z_value(confidence) ** 2
    guess = max(1, math.floor(z2 * (1.0 - threshold) / threshold))
    for n in range(guess, limit + 1):
        if wilson_interval(0, n, confidence)[1] < threshold:
            return n
    return None


@lru_cache(maxsize=1024)  # a suite has few distinct thresholds and repeats: each said once
def threshold_note(threshold: float, repeats: int, confidence: float = 0.95) -> str:
    """Say when a threshold cannot be confirmed (or refuted) at ``repeats`` attempts; "" when it can.

    E.g. "threshold 0.8 needs at least 16 repeats to be confirmed at 95%; at 5 it can only be
    inconclusive or fail".
    """
    _check_threshold(threshold)
    level = f"{confidence:.0%}"
    to_pass = min_repeats_to_pass(threshold, confidence)
    if to_pass is None:
        return (
            f"threshold {threshold:g} can never be confirmed by a {level} interval; make the scenario "
            "must_pass (every attempt must pass) or lower the threshold"
        )
    if repeats < to_pass:
        return (
            f"threshold {threshold:g} needs at least {to_pass} repeats to be confirmed at {level}; at "
            f"{repeats} it can only be inconclusive or fail"
        )
    to_fail = min_repeats_to_fail(threshold, confidence)
    if to_fail is not None and repeats < to_fail:
        return (
            f"threshold {threshold:g} needs at least {to_fail} repeats to be refuted at {level}; at "
            f"{repeats} it can only be inconclusive or pass"
        )
    return ""
