"""Suite-level quantities: the noise floor, the minimum detectable drop and judge agreement."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from replaygate.stats._head_draws import HeadDraws
from replaygate.stats._permutation import Counts, paired_permutation_test
from replaygate.stats._scipy import norm_isf

__all__ = ["NoiseFloor", "cohen_kappa", "minimum_detectable_drop", "minimum_detectable_drops", "noise_floor"]

_SIM_CHUNK = 25  # simulations tested at once (bounds the temporary arrays)
# simulations drawn at once: a draw's temporaries are 8 to 20 bytes per attempt (uint64 and float64), so
# fewer at a time keep the peak near the draws kept (4 to 5 bytes per attempt); the stream is the same
_DRAW_CHUNK = 5


@dataclass(frozen=True)
class NoiseFloor:
    """The delta between two runs of one configuration, its interval and p-value."""

    delta: float
    low: float
    high: float
    p_value: float

    @property
    def magnitude(self) -> float:
        """The largest absolute difference the two runs leave plausible: a drop below it is noise."""
        return max(abs(self.low), abs(self.high), abs(self.delta))


def noise_floor(
    run_a: Sequence[Counts], run_b: Sequence[Counts], confidence: float = 0.95, seed: int = 0
) -> NoiseFloor:
    """Measure how much two runs of the same configuration differ by chance alone."""
    res = paired_permutation_test(run_a, run_b, seed=seed, confidence=confidence)
    return NoiseFloor(res.delta, res.low, res.high, res.p_value)


def minimum_detectable_drop(
    base: Sequence[Counts],
    alpha: float = 0.05,
    power: float = 0.8,
    n_sims: int = 200,
    seed: int = 0,
    beyond: float = 0.0,
) -> float | None:
    """Smallest suite-level drop in pass rate this suite, with its k, detects with the given power.

    Simulated from the baseline's per-scenario rates: a drop ``d`` lowers every scenario's rate in
    proportion to it (the suite mean falls by exactly ``d``); both runs are drawn binomially and tested
    with the normal approximation of the paired permutation test. With ``beyond`` (a tolerance, a noise
    floor) a detection also needs the observed drop to exceed it, as the gate's rule 2 does. Returns None
    when even losing every pass would not be detected, or when the baseline passes nothing.
    """
    return minimum_detectable_drops(base, alpha, power, n_sims, seed, (beyond,))[0]


def minimum_detectable_drops(
    base: Sequence[Counts],
    alpha: float = 0.05,
    power: float = 0.8,
    n_sims: int = 200,
    seed: int = 0,
    beyond: Sequence[float] = (0.0,),
) -> list[float | None]:
    """:func:`minimum_detectable_drop` for each of ``beyond``, from one simulation (the same values).

    The simulated runs do not depend on ``beyond``; each drop tried is simulated once for all of them.
    """
    if not base:
        raise ValueError("no scenarios")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must be in (0, 1)")
    for b in beyond:
        if b < 0:
            raise ValueError(f"beyond must be at least 0, got {b!r}")
    s = np.array([c for c, _ in base], dtype=float)
    n = np.array([a for _, a in base], dtype=np.int64)
    if (n <= 0).any():
        raise ValueError("every scenario needs at least one attempt")
    p = s / n
    mean = float(p.mean())
    if mean <= 0:
        return [None] * len(beyond)
    rng = np.random.default_rng(seed)
    drops = np.round(np.arange(0.01, mean + 1e-9, 0.01), 4)
    if drops.size == 0:
        return [None] * len(beyond)
    # Common random numbers: one uniform per (simulation, scenario, attempt), reused for every drop, so
    # the simulated head outcomes fall monotonically as the drop grows and a bisection over drops is sound.
    k_max = int(n.max())
    invalid = np.arange(k_max)[None, :] >= n[:, None]  # (S, k_max): attempts a scenario does not have
    ragged = bool(invalid.any())
    # counts of at most k_max (the sums below at most 2 k_max): the same values in fewer bytes
    xb = np.zeros((n_sims, p.size), dtype=np.int16 if k_max < 2**14 else np.int64)
    for start in range(0, n_sims, _DRAW_CHUNK):  # the same stream as one (n_sims, S, k_max) draw
        u = rng.random((min(_DRAW_CHUNK, n_sims - start), p.size, k_max))
        below = u < p[None, :, None]
        if ragged:
            below &= ~invalid
        xb[start : start + u.shape[0]] = below.sum(axis=2)
    # The head's uniforms, the next of the same stream, kept in 4 bytes each and compared exactly
    head = HeadDraws(rng, n_sims, p.size, k_max, ~invalid if ragged else None, _DRAW_CHUNK)
    half_step = 1.0 / (p.size * k_max)
    z_crit = norm_isf(alpha / 2)
    # what does not depend on the drop, computed once (the same values, so the same power)
    big_n = 2 * n
    spread = big_n - n
    denominator = np.maximum(big_n - 1, 1)
    weight = (2.0 / n) ** 2
    count_type = np.int8 if k_max < 128 else np.int64  # counts of at most k_max

    limits = [-b - 1e-12 for b in beyond]
    powers: dict[int, list[float]] = {}

    def power_at(at: int) -> list[float]:
        """The power at ``drops[at]`` for each of ``beyond`` (simulated once, then remembered)."""
        if at in powers:
            return powers[at]
        drop = float(drops[at])
        q = np.clip(p * (1.0 - drop / mean), 0.0, 1.0)
        xh_all = head.counts(q, count_type)
        detected = [0] * len(limits)
        for start in range(0, n_sims, _SIM_CHUNK):  # row by row as one array would (bounded temporaries)
            rows = slice(start, start + _SIM_CHUNK)
            xh = xh_all[rows]
            delta = (xh / n - xb[rows] / n).mean(axis=1)  # the baseline's rates made here, not kept
            total = xb[rows] + xh
            frac = total / big_n
            var_x = n * frac * (1 - frac) * spread / denominator
            sd = np.sqrt((weight * var_x).sum(axis=1)) / p.size
            # continuity correction: the permutation distribution lives on a lattice of step 2 / (n S),
            # and without half a step off |delta| the normal tail overstates the power of small suites
            magnitude = np.maximum(np.abs(delta) - half_step, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(sd > 0, magnitude / sd, np.where(magnitude > 0, np.inf, 0.0))
            # 2 * norm.sf(z) < alpha, without computing the p-values
            significant = z > z_crit
            for j, limit in enumerate(limits):
                detected[j] += int((significant & (delta < limit)).sum())
        powers[at] = [d / n_sims for d in detected]
        return powers[at]

    out: list[float | None] = []
    for j in range(len(limits)):
        if power_at(drops.size - 1)[j] < power:
            out.append(None)
            continue
        lo, hi = 0, drops.size - 1  # invariant: power_at(hi) >= power
        while lo < hi:
            mid = (lo + hi) // 2
            if power_at(mid)[j] >= power:
                hi = mid
            else:
                lo = mid + 1
        out.append(float(drops[hi]))
    return out


def cohen_kappa(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters (e.g. a judge and human labels).

    Returns NaN when agreement by chance is certain (both raters always gave the same single label):
    kappa is undefined there, and reporting 1.0 would overstate what was measured.
    """
    if len(labels_a) != len(labels_b):
        raise ValueError(f"{len(labels_a)} labels against {len(labels_b)}: they must be paired")
    if not labels_a:
        raise ValueError("no labels")
    n = len(labels_a)
    observed = sum(a == b for a, b in zip(labels_a, labels_b, strict=True)) / n
    categories = set(labels_a) | set(labels_b)
    expected = sum(
        (sum(a == c for a in labels_a) / n) * (sum(b == c for b in labels_b) / n) for c in categories
    )
    if math.isclose(expected, 1.0):
        return math.nan
    return (observed - expected) / (1.0 - expected)
