"""Did one scenario get worse beyond chance? The per-scenario test and what it can detect.

The test is the one-sided Fisher exact test of each scenario's 2x2 table (pass/fail x baseline/candidate):
with the margins fixed, the candidate's passes are hypergeometric under "no change", and the p-value is the
chance of that few passes or fewer. Across a suite the p-values are Benjamini-Hochberg-adjusted (false
discovery rate): a no-change release flags any scenario with probability at most alpha whatever the
suite's size, and when many scenarios really fall they are all found (Holm would lose them).

``scenario_detectable_drop`` says how far one scenario's pass rate must fall for that test to flag it with
the given power, among ``m`` scenarios: when it is the only one that fell, its adjusted p is below alpha
exactly when its raw p is below ``alpha / m``, so the power is an exact sum over the ``(n + 1)^2``
outcomes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from replaygate.stats._scipy import binom_pmf, hypergeom_cdf

__all__ = ["SCENARIO_TEST", "fisher_worse_p", "scenario_detectable_drop"]

#: The name of the per-scenario test, as reports print it.
SCENARIO_TEST = "one-sided Fisher exact test, Benjamini-Hochberg-adjusted across the suite's scenarios"


def _worse_p(
    sb: NDArray[np.int64], nb: NDArray[np.int64], sh: NDArray[np.int64], nh: NDArray[np.int64]
) -> NDArray[np.float64]:
    # P(X <= sh) for X ~ Hypergeom(population nb + nh, successes sb + sh, draws nh)
    cdf = hypergeom_cdf(sh, nb + nh, sb + sh, nh)
    p: NDArray[np.float64] = np.asarray(cdf, dtype=np.float64)
    return np.clip(p, 0.0, 1.0)


def fisher_worse_p(base: Sequence[tuple[int, int]], head: Sequence[tuple[int, int]]) -> list[float]:
    """One-sided Fisher exact p-value per scenario that the candidate passes less often than the baseline.

    Each pair is ``(passes, scored attempts)``; equals ``scipy.stats.fisher_exact`` with
    ``alternative="greater"`` on the table ``[[base passes, base fails], [head passes, head fails]]``.
    """
    if len(base) != len(head):
        raise ValueError("base and head must list the same scenarios")
    if not base:
        return []
    sb, nb = (np.asarray(x, dtype=np.int64) for x in zip(*base, strict=True))
    sh, nh = (np.asarray(x, dtype=np.int64) for x in zip(*head, strict=True))
    if (nb <= 0).any() or (nh <= 0).any():
        raise ValueError("every scenario needs at least one scored attempt on each side")
    if (sb < 0).any() or (sh < 0).any() or (sb > nb).any() or (sh > nh).any():
        raise ValueError("passes must be between 0 and the scored attempts")
    # one hypergeometric tail per distinct table (a big suite has few: k + 1 squared at most per k)
    tables, where = np.unique(np.stack([sb, nb, sh, nh]), axis=1, return_inverse=True)
    return [float(p) for p in _worse_p(*tables)[where.reshape(-1)]]


def scenario_detectable_drop(
    base_rate: float,
    n: int,
    m: int,
    alpha: float = 0.05,
    power: float = 0.8,
    step: float = 0.01,
) -> float | None:
    """Smallest fall in one scenario's pass rate that the adjusted one-sided Fisher test flags.

    Args:
        base_rate: the scenario's pass rate before the change.
        n: attempts on each side (k).
        m: scenarios in the family the p-values are adjusted over.
        alpha: significance level.
        power: the chance of flagging it that "detectable" means.
        step: resolution of the answer.

    Returns:
        The drop, on the grid of ``step``; None when even falling to 0 would be flagged less often than
        ``power`` (e.g. 5 attempts among 30 scenarios: 5/5 -> 0/5 has p = 0.004 > 0.05 / 30).
    """
    if not 0.0 <= base_rate <= 1.0:
        raise ValueError(f"base_rate must be in [0, 1], got {base_rate!r}")
    if n < 1 or m < 1:
        raise ValueError(f"need n >= 1 and m >= 1, got n={n}, m={m}")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must be in (0, 1)")
    return _detectable(round(base_rate, 12), n, m, alpha, power, step)


@lru_cache(maxsize=256)
def _flagged(n: int, m: int, alpha: float) -> NDArray[np.float64]:
    """1 where the outcome (base passes, head passes) of n attempts each is flagged among m scenarios."""
    counts = np.arange(n + 1, dtype=np.int64)
    xb, xh = np.meshgrid(counts, counts, indexing="ij")
    size = np.full_like(xb, n)
    out: NDArray[np.float64] = (_worse_p(xb, size, xh, size) < alpha / m).astype(np.float64)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4096)
def _detectable(base_rate: float, n: int, m: int, alpha: float, power: float, step: float) -> float | None:
    counts = np.arange(n + 1, dtype=np.int64)
    drops = np.round(np.arange(step, base_rate + 1e-9, step), 6)
    if drops.size == 0:
        return None
    before = binom_pmf(counts, n, base_rate)
    after = binom_pmf(counts[None, :], n, np.clip(base_rate - drops, 0.0, 1.0)[:, None])
    powers = after @ (before @ _flagged(n, m, alpha))  # power grows with the drop
    reached = np.nonzero(powers >= power - 1e-12)[0]
    return float(drops[reached[0]]) if reached.size else None
