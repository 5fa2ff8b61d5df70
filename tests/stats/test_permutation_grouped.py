"""Issue 19: the grouped (numpy) permutation test equals the per-scenario one it replaced.

The reference below is the implementation before issue 19 (one hypergeometric law per scenario from
scipy, convolved one scenario at a time; one binomial draw per scenario and resample). The exact p-value
must be the same number (up to rounding); the bootstrap interval is drawn differently (one binomial per
distinct count pair) from the same law, so it must agree within Monte Carlo error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.stats import hypergeom

from replaygate.stats import paired_permutation_test
from replaygate.stats._permutation import _MAX_LATTICE, _exact_p


def _reference_exact_p(
    sb: NDArray[np.int64], nb: NDArray[np.int64], sh: NDArray[np.int64], nh: NDArray[np.int64]
) -> float | None:
    total, size = sb + sh, nb + nh
    scale = math.lcm(*[int(a * b) for a, b in zip(nh, nb, strict=True)])
    pmf, offset, step_gcd = np.array([1.0]), 0, 0
    laws = []
    for t, n_all, n_b, n_h in zip(total, size, nb, nh, strict=True):
        lo, hi = max(0, int(t - n_b)), min(int(t), int(n_h))
        if lo == hi:
            continue
        probs = hypergeom.pmf(np.arange(lo, hi + 1), int(n_all), int(t), int(n_h))
        unit = scale // int(n_h * n_b)
        step = int(n_h + n_b) * unit
        laws.append(((lo * int(n_b) - (int(t) - lo) * int(n_h)) * unit, step, probs))
        step_gcd = math.gcd(step_gcd, step)
    observed = int(((sh * nb - sb * nh) * (scale // (nh * nb))).sum())
    if not laws:
        return 1.0
    if sum((len(p) - 1) * (st_ // step_gcd) for _, st_, p in laws) > _MAX_LATTICE:
        return None
    for start, step, probs in laws:
        stride = step // step_gcd
        spread = np.zeros((len(probs) - 1) * stride + 1)
        spread[::stride] = probs
        pmf = np.convolve(pmf, spread)
        offset += start
    values = offset + np.arange(pmf.size) * step_gcd
    return float(min(1.0, pmf[np.abs(values) >= abs(observed)].sum()))


def _reference_bootstrap(
    sb: NDArray[np.int64], nb: NDArray[np.int64], sh: NDArray[np.int64], nh: NDArray[np.int64], n: int
) -> tuple[float, float]:
    rng = np.random.default_rng(7)
    bb = rng.binomial(nb, sb / nb, size=(n, nb.size)) / nb
    hh = rng.binomial(nh, sh / nh, size=(n, nh.size)) / nh
    low, high = np.quantile((hh - bb).mean(axis=1), [0.025, 0.975])
    return float(low), float(high)


@st.composite
def suites(draw: st.DrawFn) -> tuple[NDArray[np.int64], ...]:
    n = draw(st.integers(min_value=1, max_value=40))
    ks = st.sampled_from([1, 2, 3, 5, 10]) if draw(st.booleans()) else st.just(draw(st.sampled_from([3, 5])))
    nb = np.array([draw(ks) for _ in range(n)], dtype=np.int64)
    nh = nb.copy() if draw(st.booleans()) else np.array([draw(ks) for _ in range(n)], dtype=np.int64)
    sb = np.array([draw(st.integers(0, int(k))) for k in nb], dtype=np.int64)
    sh = np.array([draw(st.integers(0, int(k))) for k in nh], dtype=np.int64)
    return sb, nb, sh, nh


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(suites())
def test_exact_p_equals_the_per_scenario_convolution(arrays: tuple[NDArray[np.int64], ...]) -> None:
    ref = _reference_exact_p(*arrays)
    new = _exact_p(*arrays)
    assert (ref is None) == (new is None)
    if ref is not None and new is not None:
        assert new == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_exact_p_equals_the_reference_on_a_big_suite() -> None:
    rng = np.random.default_rng(3)
    nb = np.full(3000, 10, dtype=np.int64)
    sb = rng.binomial(10, 0.9, 3000)
    for sh in (rng.binomial(10, 0.9, 3000), rng.binomial(10, 0.87, 3000)):  # no change; a clear drop
        ref, new = _reference_exact_p(sb, nb, sh, nb), _exact_p(sb, nb, sh, nb)
        assert ref is not None and new is not None
        assert new == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bootstrap_interval_has_the_reference_law(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 300
    nb = rng.choice([5, 10], size=n)
    sb, sh = rng.binomial(nb, 0.85), rng.binomial(nb, 0.8)
    ref = _reference_bootstrap(sb, nb, sh, nb, 4000)
    res = paired_permutation_test(
        list(zip(sb, nb, strict=True)), list(zip(sh, nb, strict=True)), seed=seed, n_bootstrap=4000
    )
    # Monte Carlo error of a 2.5% quantile of 4000 draws: a few thousandths here
    assert res.low == pytest.approx(ref[0], abs=0.006)
    assert res.high == pytest.approx(ref[1], abs=0.006)
    assert res.low < res.delta < res.high
