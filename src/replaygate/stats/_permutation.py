"""The case-stratified paired permutation test, with a within-case bootstrap interval.

Labels are shuffled between base and head attempts *within each scenario*; the statistic is the mean over
scenarios of the per-scenario pass-rate difference (head - base). For pass/fail outcomes the number of
head successes under the null is hypergeometric per scenario, so the exact permutation distribution is the
convolution of those distributions (computed on an integer lattice); when that lattice is too large the
test falls back to Monte Carlo with the (b + 1) / (m + 1) estimate.

The work grows with the number of distinct per-scenario count pairs, not with the scenarios: scenarios
with equal margins share one hypergeometric law (raised to their count by repeated
squaring), and the bootstrap draws one binomial per distinct pair and resample.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Counts",
    "PermutationResult",
    "paired_permutation_test",
    "paired_permutation_test_values",
]

Counts = tuple[int, int]  # (successes, attempts)

_MAX_LATTICE = 4_000_000
_MAX_EXACT_VALUE_PERMUTATIONS = 20_000
_CHUNK = 1_000


@dataclass(frozen=True)
class PermutationResult:
    """Result of a paired permutation test: ``delta`` is head - base, ``low``/``high`` its interval."""

    delta: float
    p_value: float
    low: float
    high: float
    exact: bool
    n_resamples: int


def _arrays(
    base: Sequence[Counts], head: Sequence[Counts]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    if len(base) != len(head):
        raise ValueError(f"base has {len(base)} scenarios and head {len(head)}; they must be paired")
    if not base:
        raise ValueError("no scenarios to compare")
    sb, nb = (np.asarray(x, dtype=np.int64) for x in zip(*base, strict=True))
    sh, nh = (np.asarray(x, dtype=np.int64) for x in zip(*head, strict=True))
    if (nb <= 0).any() or (nh <= 0).any():
        raise ValueError("every scenario needs at least one attempt on each side")
    if (sb < 0).any() or (sh < 0).any() or (sb > nb).any() or (sh > nh).any():
        raise ValueError("successes must be between 0 and attempts")
    return sb, nb, sh, nh


def _groups(
    s: NDArray[np.int64], n: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The distinct ``(s, n)`` pairs and how many scenarios share each."""
    pairs, counts = np.unique(np.stack([s, n]), axis=1, return_counts=True)
    return pairs[0], pairs[1], counts.astype(np.int64)


def _bootstrap(
    sb: NDArray[np.int64],
    nb: NDArray[np.int64],
    sh: NDArray[np.int64],
    nh: NDArray[np.int64],
    rng: np.random.Generator,
    n_bootstrap: int,
    confidence: float,
) -> tuple[float, float]:
    """Within-scenario parametric bootstrap of the mean delta.

    Each scenario's passes are redrawn Binomial(n, s / n) on each side. Scenarios with the same ``(s, n)``
    are independent and identically drawn, so the sum of their rates is one Binomial(m n, s / n) over n:
    one draw per distinct pair and resample, whatever the number of scenarios (memory: pairs x resamples).
    """

    def side(s: NDArray[np.int64], n: NDArray[np.int64]) -> NDArray[np.float64]:
        gs, gn, m = _groups(s, n)
        draws = rng.binomial(m * gn, gs / gn, size=(n_bootstrap, gs.size))
        total: NDArray[np.float64] = (draws / gn).sum(axis=1)
        return total

    base = side(sb, nb)
    deltas = (side(sh, nh) - base) / sb.size
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(deltas, [tail, 1.0 - tail])
    return float(low), float(high)


def _hypergeom_pmf(n_all: int, t: int, n_h: int, lo: int, hi: int) -> NDArray[np.float64]:
    """P(X = x) for x in lo..hi, X the head successes among ``t`` (of ``n_all``) drawn ``n_h`` times."""
    whole = math.comb(n_all, t)
    return np.array([math.comb(n_h, x) * math.comb(n_all - n_h, t - x) / whole for x in range(lo, hi + 1)])


def _power(law: NDArray[np.float64], times: int) -> NDArray[np.float64]:
    """The law of the sum of ``times`` independent draws of ``law`` (repeated squaring)."""
    result: NDArray[np.float64] | None = None
    square = law
    while times:
        if times & 1:
            result = square if result is None else np.convolve(result, square)
        times >>= 1
        if times:
            square = np.convolve(square, square)
    assert result is not None
    return result


def _exact_p(
    sb: NDArray[np.int64],
    nb: NDArray[np.int64],
    sh: NDArray[np.int64],
    nh: NDArray[np.int64],
    limit: int = _MAX_LATTICE,
) -> float | None:
    """Exact two-sided p-value by convolving per-scenario hypergeometric laws; None when too large.

    Scenarios with the same margins ``(successes, base attempts, head attempts)`` share one law, so the
    convolution runs over the distinct laws, each raised to its count by repeated squaring.
    """
    total = sb + sh
    # per-scenario difference as an integer on the lattice of 1 / (nh * nb * scale)
    scale = math.lcm(*{int(a * b) for a, b in zip(nh.tolist(), nb.tolist(), strict=True)})
    observed = int(((sh * nb - sb * nh) * (scale // (nh * nb))).sum())
    margins, counts = np.unique(np.stack([total, nb, nh]), axis=1, return_counts=True)
    step_gcd = 0
    laws: list[tuple[int, int, int, NDArray[np.float64]]] = []
    for t, n_b, n_h, times in zip(*margins.tolist(), counts.tolist(), strict=True):
        lo, hi = max(0, t - n_b), min(t, n_h)
        if lo == hi:
            continue
        probs = _hypergeom_pmf(n_b + n_h, t, n_h, lo, hi)
        unit = scale // (n_h * n_b)
        step = (n_h + n_b) * unit  # value changes by this much per extra head success
        start = (lo * n_b - (t - lo) * n_h) * unit
        laws.append((start, step, times, probs))
        step_gcd = math.gcd(step_gcd, step)
    if not laws:
        return 1.0
    span = sum((len(p) - 1) * (st // step_gcd) * times for _, st, times, p in laws)
    if span > limit:
        return None
    pmf = np.array([1.0])
    offset = 0  # integer value of pmf[0]
    for start, step, times, probs in laws:
        summed = _power(probs, times)
        stride = step // step_gcd
        spread = np.zeros((len(summed) - 1) * stride + 1)
        spread[::stride] = summed
        pmf = np.convolve(pmf, spread)
        offset += start * times
    values = offset + np.arange(pmf.size) * step_gcd
    # values and observed share the lattice up to the constant offset, so compare exactly as integers
    extreme = np.abs(values) >= abs(observed)
    return float(min(1.0, pmf[extreme].sum()))


def paired_permutation_test(
    base: Sequence[Counts],
    head: Sequence[Counts],
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    n_bootstrap: int = 2_000,
    *,
    exact_limit: int | None = None,
) -> PermutationResult:
    """Test whether head's pass rates differ from base's, scenario by scenario.

    Args:
        base: per-scenario ``(successes, attempts)`` of the baseline run.
        head: the same for the candidate, in the same scenario order.
        n_resamples: Monte Carlo permutations when the exact distribution is too large to enumerate.
        seed: seed of the random generator (permutations and bootstrap).
        confidence: level of the bootstrap interval for the delta.
        n_bootstrap: within-scenario bootstrap resamples.
        exact_limit: the largest lattice of deltas the exact path convolves (0: always Monte Carlo;
            None: the built-in limit, 4,000,000).

    Returns:
        The mean per-scenario delta (head - base), a two-sided p-value and a bootstrap interval.
    """
    sb, nb, sh, nh = _arrays(base, head)
    rng = np.random.default_rng(seed)
    delta = float((sh / nh - sb / nb).mean())
    p_exact = _exact_p(sb, nb, sh, nh, _MAX_LATTICE if exact_limit is None else exact_limit)
    if p_exact is not None:
        p_value, exact, used = p_exact, True, 0
    else:
        total = sb + sh
        observed = abs(delta) - 1e-12
        hits = 0
        for start in range(0, n_resamples, _CHUNK):
            m = min(_CHUNK, n_resamples - start)
            x = rng.hypergeometric(total, nb + nh - total, nh, size=(m, total.size))
            stat = (x / nh - (total - x) / nb).mean(axis=1)
            hits += int((np.abs(stat) >= observed).sum())
        p_value, exact, used = (hits + 1) / (n_resamples + 1), False, n_resamples
    low, high = _bootstrap(sb, nb, sh, nh, rng, n_bootstrap, confidence)
    return PermutationResult(delta, p_value, low, high, exact, used)


def paired_permutation_test_values(
    base_values: Sequence[Sequence[float]],
    head_values: Sequence[Sequence[float]],
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    n_bootstrap: int = 2_000,
) -> PermutationResult:
    """The same test for graded scores (judge scores, retrieval metrics) in per-scenario lists.

    Scenarios with no value on either side are left out of the statistic (they carry no information).
    """
    if len(base_values) != len(head_values):
        raise ValueError("base and head must list the same scenarios")
    pairs = [
        (np.asarray(b, dtype=float), np.asarray(h, dtype=float))
        for b, h in zip(base_values, head_values, strict=True)
        if len(b) and len(h)
    ]
    if not pairs:
        raise ValueError("no scenario has scores on both sides")
    rng = np.random.default_rng(seed)
    delta = float(np.mean([h.mean() - b.mean() for b, h in pairs]))
    observed = abs(delta) - 1e-12
    pooled = [np.concatenate([b, h]) for b, h in pairs]
    sizes = [(len(b), len(h)) for b, h in pairs]
    n_perms = math.prod(math.comb(nb_ + nh_, nh_) for nb_, nh_ in sizes)
    if n_perms <= _MAX_EXACT_VALUE_PERMUTATIONS:
        per_case: list[NDArray[np.float64]] = []
        for values, (nb_, nh_) in zip(pooled, sizes, strict=True):
            case_diffs = []
            for idx in itertools.combinations(range(nb_ + nh_), nh_):
                mask = np.zeros(nb_ + nh_, dtype=bool)
                mask[list(idx)] = True
                case_diffs.append(values[mask].mean() - values[~mask].mean())
            per_case.append(np.asarray(case_diffs, dtype=np.float64))
        grid = np.zeros(1)
        for case in per_case:
            grid = (grid[:, None] + case[None, :]).ravel()
        stats = grid / len(pairs)
        p_value, exact, used = float((np.abs(stats) >= observed).mean()), True, 0
    else:
        sums = np.zeros(n_resamples)
        for values, (nb_, nh_) in zip(pooled, sizes, strict=True):
            keys = rng.random((n_resamples, nb_ + nh_))
            order = np.argsort(keys, axis=1)
            shuffled = values[order]
            sums += shuffled[:, :nh_].mean(axis=1) - shuffled[:, nh_:].mean(axis=1)
        stats = sums / len(pairs)
        hits = int((np.abs(stats) >= observed).sum())
        p_value, exact, used = (hits + 1) / (n_resamples + 1), False, n_resamples
    boot = np.zeros(n_bootstrap)
    for b, h in pairs:
        bi = rng.integers(0, len(b), size=(n_bootstrap, len(b)))
        hi = rng.integers(0, len(h), size=(n_bootstrap, len(h)))
        boot += h[hi].mean(axis=1) - b[bi].mean(axis=1)
    boot /= len(pairs)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return PermutationResult(delta, p_value, float(low), float(high), exact, used)
