"""The minimum detectable drop with its uniforms kept in 4 bytes: the same counts, the same drops.

``reference_mdd`` is the float64 simulation as it was before (every uniform kept as a double); the
compact one must give the very same drop for every suite, ragged or not, and ``HeadDraws.counts`` the
very same counts, including when a threshold ties the top bits of a uniform (counted again exactly).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats as scipy_stats

from replaygate.stats import minimum_detectable_drop
from replaygate.stats._head_draws import HeadDraws


def reference_mdd(
    base: Sequence[tuple[int, int]], alpha: float = 0.05, power: float = 0.8, n_sims: int = 200,
    seed: int = 0, beyond: float = 0.0,
) -> float | None:  # fmt: skip
    s = np.array([c for c, _ in base], dtype=float)
    n = np.array([a for _, a in base], dtype=np.int64)
    p = s / n
    mean = float(p.mean())
    if mean <= 0:
        return None
    rng = np.random.default_rng(seed)
    drops = np.round(np.arange(0.01, mean + 1e-9, 0.01), 4)
    if drops.size == 0:
        return None
    k_max = int(n.max())
    invalid = np.arange(k_max)[None, :] >= n[:, None]
    xb = np.zeros((n_sims, p.size), dtype=np.int64)
    for start in range(0, n_sims, 25):
        u = rng.random((min(25, n_sims - start), p.size, k_max))
        xb[start : start + u.shape[0]] = ((u < p[None, :, None]) & ~invalid).sum(axis=2)
    u_head = np.empty((k_max, n_sims, p.size))
    for start in range(0, n_sims, 25):
        u = rng.random((min(25, n_sims - start), p.size, k_max))
        u[:, invalid] = 2.0
        u_head[:, start : start + u.shape[0], :] = u.transpose(2, 0, 1)
    half_step = 1.0 / (p.size * k_max)
    z_crit = float(scipy_stats.norm.isf(alpha / 2))

    def power_at(drop: float) -> float:
        q = np.clip(p * (1.0 - drop / mean), 0.0, 1.0)
        xh = np.zeros((n_sims, p.size), dtype=np.int64)
        for column in u_head:
            xh += column < q
        delta = (xh / n - xb / n).mean(axis=1)
        total = xb + xh
        big_n = 2 * n
        frac = total / big_n
        var_x = n * frac * (1 - frac) * (big_n - n) / np.maximum(big_n - 1, 1)
        sd = np.sqrt(((2.0 / n) ** 2 * var_x).sum(axis=1)) / p.size
        magnitude = np.maximum(np.abs(delta) - half_step, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, magnitude / sd, np.where(magnitude > 0, np.inf, 0.0))
        return float(((z > z_crit) & (delta < -beyond - 1e-12)).mean())

    if power_at(float(drops[-1])) < power:
        return None
    lo, hi = 0, drops.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if power_at(float(drops[mid])) >= power:
            hi = mid
        else:
            lo = mid + 1
    return float(drops[hi])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_drop_is_the_float64_simulations(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    size = int(rng.integers(3, 400))
    k = int(rng.integers(2, 12))
    ragged = seed % 2 == 1
    ns = rng.integers(1, k + 1, size) if ragged else np.full(size, k)
    base = [(int(rng.binomial(m, rng.uniform(0.5, 1.0))), int(m)) for m in ns]
    for alpha, beyond in ((0.05, 0.0), (0.0125, 0.03)):
        got = minimum_detectable_drop(base, alpha=alpha, seed=seed, beyond=beyond)
        assert got == reference_mdd(base, alpha=alpha, seed=seed, beyond=beyond)


@pytest.mark.parametrize("chunk", [25, 5, 7])  # the chunk the drop draws with, and a ragged last one
@pytest.mark.parametrize("ragged", [False, True])
def test_counts_are_exact_even_when_a_threshold_ties_the_top_bits(ragged: bool, chunk: int) -> None:
    sims, size, k = 60, 40, 7
    valid = (
        (np.arange(k)[None, :] < np.random.default_rng(1).integers(1, k + 1, size)[:, None])
        if ragged
        else None
    )
    draws = HeadDraws(np.random.default_rng(9), sims, size, k, valid, chunk)
    u = np.random.default_rng(9).random((sims, size, k))  # the uniforms themselves
    q = np.random.default_rng(3).uniform(0.2, 1.0, size)
    # ties: thresholds just above and just below a uniform, sharing its top 32 bits; and q == 1
    for s, (i, j) in enumerate([(0, 0), (30, 3), (59, 6), (26, 1)]):
        q[s] = np.nextafter(u[i, s, j], 2.0)
        q[s + 4] = u[i, s + 4, j]
    q[9] = 1.0
    expected = u < q[None, :, None]
    if valid is not None:
        expected &= valid[None, :, :]
    got = draws.counts(q, np.int8)
    assert (got == expected.sum(axis=2)).all()
    assert got.dtype == np.int8


def test_a_tie_is_counted_again_from_the_uniforms(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = HeadDraws(np.random.default_rng(4), 30, 5, 3, None, 25)
    u = np.random.default_rng(4).random((30, 5, 3))
    settled: list[bool] = []
    real = draws._settle
    monkeypatch.setattr(draws, "_settle", lambda *a: (settled.append(True), real(*a)))
    q = np.full(5, 0.5)
    assert (draws.counts(q, np.int8) == (u < q[None, :, None]).sum(axis=2)).all() and not settled
    q[2] = np.nextafter(u[27, 2, 1], 2.0)  # in the second chunk
    assert (draws.counts(q, np.int8) == (u < q[None, :, None]).sum(axis=2)).all() and settled
