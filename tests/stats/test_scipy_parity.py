"""The distributions taken from ``scipy.special`` give ``scipy.stats``'s values bit for bit, without it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from replaygate.stats import mann_whitney, two_proportion_diff, z_value
from replaygate.stats._scipy import binom_pmf, hypergeom_cdf, norm_isf, norm_ppf, norm_sf


def test_hypergeom_cdf_equals_scipy_on_every_small_table() -> None:
    c = np.arange(0, 21)
    sb, nb, sh, nh = np.meshgrid(c, c[1:], c, c[1:], indexing="ij")
    keep = (sb <= nb) & (sh <= nh)
    sb, nb, sh, nh = sb[keep], nb[keep], sh[keep], nh[keep]
    want = stats.hypergeom.cdf(sh, nb + nh, sb + sh, nh)
    got = hypergeom_cdf(sh, nb + nh, sb + sh, nh)
    assert got.shape == want.shape
    assert np.array_equal(got, want)
    # below and above the support, too
    assert np.array_equal(
        hypergeom_cdf(sh - 1, nb + nh, sb + sh, nh), stats.hypergeom.cdf(sh - 1, nb + nh, sb + sh, nh)
    )
    with pytest.raises(ValueError):
        hypergeom_cdf(np.array([1]), np.array([0]), np.array([0]), np.array([0]))


@pytest.mark.parametrize("n", [1, 2, 5, 10, 16, 33])
def test_binom_pmf_equals_scipy(n: int) -> None:
    k = np.arange(n + 1)
    p = np.concatenate([np.linspace(0, 1, 101), [1e-9, 0.123456789, 1 - 1e-12]])
    assert np.array_equal(binom_pmf(k[None, :], n, p[:, None]), stats.binom.pmf(k[None, :], n, p[:, None]))
    assert np.array_equal(binom_pmf(k, n, 0.37), stats.binom.pmf(k, n, 0.37))


def test_normal_quantiles_and_tail_equal_scipy() -> None:
    for q in np.linspace(1e-6, 1 - 1e-6, 501).tolist():
        assert norm_ppf(q) == float(stats.norm.ppf(q))
        assert norm_isf(q) == float(stats.norm.isf(q))
    for x in [*np.linspace(-40, 40, 801).tolist(), float("inf"), float("-inf")]:
        assert norm_sf(x) == float(stats.norm.sf(x))
    assert z_value(0.95) == float(stats.norm.ppf(0.975))
    # edge arguments go to scipy.stats itself
    assert norm_ppf(0.0) == float("-inf") and norm_isf(1.0) == float("-inf")


@pytest.mark.parametrize("seed", range(6))
def test_mann_whitney_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n1, n2 in [(9, 9), (10, 40), (200, 150), (3000, 2000), (5, 30), (1, 1), (8, 100)]:
        # rounded, so that there are ties (latencies and costs repeat)
        base = np.round(rng.lognormal(0, 1, n1), 1 + seed % 3).tolist()
        head = np.round(rng.lognormal(0.1, 1, n2), 1 + seed % 3).tolist()
        got = mann_whitney(base, head)
        want = stats.mannwhitneyu(np.asarray(head), np.asarray(base), alternative="two-sided")
        assert got.p_value == float(want.pvalue)
        assert got.statistic == float(want.statistic)
    same = [0.5] * 20
    got = mann_whitney(same, same)
    want = stats.mannwhitneyu(np.asarray(same), np.asarray(same), alternative="two-sided")
    assert np.isnan(got.p_value) == np.isnan(want.pvalue)
    if not np.isnan(got.p_value):
        assert got.p_value == float(want.pvalue)


def test_two_proportion_diff_p_equals_scipy_tail() -> None:
    d = two_proportion_diff(40, 100, 55, 100)
    pb, ph, pooled = 0.4, 0.55, 95 / 200
    se = (pooled * (1 - pooled) * (1 / 100 + 1 / 100)) ** 0.5
    assert d.p_value == float(2 * stats.norm.sf(abs(ph - pb) / se))


def test_the_gate_statistics_do_not_import_scipy_stats() -> None:
    code = (
        "import sys\n"
        "from replaygate.stats import minimum_detectable_drop, paired_permutation_test, fisher_worse_p, "
        "scenario_detectable_drop, wilson_interval, mann_whitney, two_proportion_diff\n"
        "base = [(s, 10) for s in [10, 9, 8, 10, 7] * 40]\n"
        "head = [(s, 10) for s in [9, 9, 8, 10, 6] * 40]\n"
        "paired_permutation_test(base, head)\n"
        "minimum_detectable_drop(base, n_sims=20)\n"
        "fisher_worse_p(base, head)\n"
        "scenario_detectable_drop(0.9, 10, 200)\n"
        "wilson_interval(9, 10)\n"
        "mann_whitney([0.1 * i for i in range(50)], [0.11 * i for i in range(60)])\n"
        "two_proportion_diff(3, 100, 5, 100)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False"


def test_several_tolerances_from_one_simulation_equal_one_simulation_each() -> None:
    from replaygate.stats import minimum_detectable_drop, minimum_detectable_drops

    rng = np.random.default_rng(3)
    base = [(int(s), 10) for s in rng.binomial(10, 0.85, 300)]
    beyond = (0.0, 0.01, 0.03, 0.2)
    got = minimum_detectable_drops(base, alpha=0.05, power=0.8, seed=1, beyond=beyond)
    assert got == [minimum_detectable_drop(base, alpha=0.05, power=0.8, seed=1, beyond=b) for b in beyond]
    assert got[0] is not None and got[0] < got[2]  # a tolerance to beat needs a larger drop
