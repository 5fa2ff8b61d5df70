"""replaygate.stats against published reference values and by simulation (fixed seeds)."""

import math

import numpy as np
import pytest
from scipy.stats import binomtest, fisher_exact

import replaygate.stats as st


def test_public_names() -> None:
    assert sorted(st.__all__) == sorted(
        [
            "Counts", "NoiseFloor", "PermutationResult", "ProportionDiff", "RankTest", "SCENARIO_TEST",
            "Verdict", "bh_adjust", "cohen_kappa", "fisher_exact_per_scenario", "fisher_worse_p",
            "holm_adjust", "mann_whitney", "min_repeats_to_fail", "min_repeats_to_pass",
            "minimum_detectable_drop", "minimum_detectable_drops", "noise_floor", "paired_permutation_test",
            "paired_permutation_test_values", "pass_at_k", "pass_hat_k", "scenario_detectable_drop",
            "scenario_verdict", "threshold_note", "two_proportion_diff", "wilson_interval", "z_value",
        ]
    )  # fmt: skip


@pytest.mark.parametrize("n,confidence", [(5, 0.95), (5, 0.9), (10, 0.95), (1000, 0.95), (12345, 0.99)])
def test_wilson_matches_scipy(n: int, confidence: float) -> None:
    successes = range(n + 1) if n <= 10 else [0, 1, n // 3, n // 2, n - 1, n]
    for s in successes:
        ref = binomtest(s, n).proportion_ci(confidence_level=confidence, method="wilson")
        low, high = st.wilson_interval(s, n, confidence)
        assert low == pytest.approx(ref.low, abs=1e-12)
        assert high == pytest.approx(ref.high, abs=1e-12)


def test_wilson_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="successes"):
        st.wilson_interval(6, 5)
    assert st.wilson_interval(0, 0) == (0.0, 1.0)


def test_pass_hat_k_and_pass_at_k() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert st.pass_hat_k(c, n, k) == pytest.approx(math.comb(c, k) / math.comb(n, k))
                assert st.pass_at_k(c, n, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
    assert st.pass_hat_k(5, 5, 5) == 1.0
    assert st.pass_hat_k(4, 5, 5) == 0.0
    with pytest.raises(ValueError):
        st.pass_hat_k(3, 5, 6)


def test_scenario_verdict() -> None:
    assert st.scenario_verdict(5, 5, True, 0.8) == "pass"
    assert st.scenario_verdict(4, 5, True, 0.8) == "fail"
    assert st.scenario_verdict(0, 5, False, 0.8) == "fail"
    assert st.scenario_verdict(5, 5, False, 0.8) == "inconclusive"  # Wilson low 0.57 < 0.8
    assert st.scenario_verdict(50, 50, False, 0.8) == "pass"
    assert st.scenario_verdict(3, 5, False, 0.8) == "inconclusive"
    assert st.scenario_verdict(0, 0, True, 0.8) == "inconclusive"


def _seed_case() -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    rates = [5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 2]  # 53/60 = 88%
    base = [(r, 5) for r in rates]
    head = [(0, 5) if i < 3 else (r, 5) for i, r in enumerate(rates)]  # 38/60 = 63..67%
    return base, head


def test_seed_case_is_significant() -> None:
    base, head = _seed_case()
    res = st.paired_permutation_test(base, head)
    assert res.delta == pytest.approx(-0.25)
    assert res.exact
    assert res.p_value < 0.05
    assert res.high < 0  # the bootstrap interval excludes zero


def test_exact_matches_monte_carlo() -> None:
    rng = np.random.default_rng(3)
    base = [(int(rng.integers(0, 6)), 5) for _ in range(15)]
    head = [(int(rng.integers(0, 6)), 5) for _ in range(15)]
    exact = st.paired_permutation_test(base, head)
    assert exact.exact
    # brute-force Monte Carlo by literally shuffling attempt labels within each scenario
    observed = np.mean([h / 5 - b / 5 for (b, _), (h, _) in zip(base, head, strict=True)])
    hits = 0
    m = 4000
    for _ in range(m):
        stat = 0.0
        for (b, _), (h, _) in zip(base, head, strict=True):
            pool = np.array([1] * (b + h) + [0] * (10 - b - h))
            rng.shuffle(pool)
            stat += pool[:5].mean() - pool[5:].mean()
        hits += abs(stat / len(base)) >= abs(observed) - 1e-12
    assert exact.p_value == pytest.approx(hits / m, abs=0.03)


def test_identical_runs_have_p_one() -> None:
    base = [(3, 5), (5, 5), (0, 5), (4, 5)]
    res = st.paired_permutation_test(base, base)
    assert res.delta == 0.0
    assert res.p_value == pytest.approx(1.0)


def test_unequal_attempts_exact_and_monte_carlo_agree() -> None:
    base = [(3, 4), (5, 6), (2, 3), (7, 8), (1, 5)] * 3
    head = [(1, 4), (2, 6), (0, 3), (6, 8), (0, 5)] * 3
    exact = st.paired_permutation_test(base, head)
    assert exact.exact
    import replaygate.stats._permutation as perm

    old = perm._MAX_LATTICE
    perm._MAX_LATTICE = 0  # force Monte Carlo
    try:
        mc = st.paired_permutation_test(base, head, n_resamples=20_000, seed=1)
    finally:
        perm._MAX_LATTICE = old
    assert not mc.exact
    assert mc.p_value == pytest.approx(exact.p_value, abs=0.01 + 0.1 * exact.p_value)


def test_values_test() -> None:
    base = [[0.9, 0.8, 1.0], [0.7, 0.9, 0.8], [1.0, 1.0, 0.9], [0.8, 0.8, 0.9]]
    head = [[0.2, 0.3, 0.1], [0.2, 0.1, 0.3], [0.3, 0.2, 0.2], [0.1, 0.2, 0.3]]
    res = st.paired_permutation_test_values(base, head)
    assert res.delta < -0.5
    assert res.p_value < 0.01
    same = st.paired_permutation_test_values(base, base)
    assert same.p_value == pytest.approx(1.0)


def _null_fpr(n_scen: int, k: int, n_suites: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejections = 0
    for i in range(n_suites):
        rates = np.where(rng.random(n_scen) < 0.6, 1.0, rng.uniform(0.2, 0.95, n_scen))
        base = [(int(rng.binomial(k, p)), k) for p in rates]
        head = [(int(rng.binomial(k, p)), k) for p in rates]
        res = st.paired_permutation_test(base, head, seed=i, n_bootstrap=20, n_resamples=2000)
        rejections += res.p_value < 0.05
    return rejections / n_suites


@pytest.mark.parametrize("n_scen,k", [(12, 5), (40, 3), (120, 10), (200, 5)])
def test_type_one_error_is_controlled(n_scen: int, k: int) -> None:
    n_suites = 300
    fpr = _null_fpr(n_scen, k, n_suites, seed=n_scen * 100 + k)
    assert fpr <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / n_suites)


def test_power_for_a_large_drop() -> None:
    rng = np.random.default_rng(11)
    caught = 0
    sims = 200
    for i in range(sims):
        base = [(int(rng.binomial(5, 0.9)), 5) for _ in range(12)]
        head = [(int(rng.binomial(5, 0.4)), 5) for _ in range(12)]
        res = st.paired_permutation_test(base, head, seed=i, n_bootstrap=20)
        caught += res.p_value < 0.05 and res.delta < 0
    assert caught / sims >= 0.95


def test_fisher_per_scenario() -> None:
    ps = st.fisher_exact_per_scenario([(5, 5), (2, 5)], [(0, 5), (2, 5)])
    assert ps[0] == pytest.approx(fisher_exact([[5, 0], [0, 5]]).pvalue)
    assert ps[1] == pytest.approx(1.0)


def test_noise_floor_and_minimum_detectable_drop() -> None:
    run_a = [(5, 5)] * 8 + [(3, 5), (4, 5)]
    run_b = [(5, 5)] * 8 + [(4, 5), (2, 5)]
    nf = st.noise_floor(run_a, run_b)
    assert nf.low <= nf.delta <= nf.high
    assert nf.magnitude >= abs(nf.delta)
    small = st.minimum_detectable_drop([(4, 5)] * 12)
    large = st.minimum_detectable_drop([(4, 5)] * 300)
    assert small is not None and large is not None
    assert large < small  # a bigger suite detects smaller drops
    assert 0 < large < 0.2
    assert st.minimum_detectable_drop([(0, 5)] * 5) is None


def test_cohen_kappa() -> None:
    # Worked example: 50 items, agreement table [[20, 5], [10, 15]] -> kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert st.cohen_kappa(a, b) == pytest.approx(0.4)
    assert st.cohen_kappa(a, a) == pytest.approx(1.0)
    assert math.isnan(st.cohen_kappa(["x"] * 4, ["x"] * 4))
    with pytest.raises(ValueError):
        st.cohen_kappa(["x"], [])


def test_holm() -> None:
    assert st.holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_two_proportions_and_mann_whitney() -> None:
    d = st.two_proportion_diff(10, 1000, 60, 1000)
    assert d.delta == pytest.approx(0.05)
    assert d.low > 0 and d.p_value < 1e-6
    same = st.two_proportion_diff(10, 100, 10, 100)
    assert same.low < 0 < same.high and same.p_value == pytest.approx(1.0)
    assert st.two_proportion_diff(0, 0, 1, 2).p_value == 1.0
    mw = st.mann_whitney([1.0, 1.1, 0.9, 1.2] * 10, [2.0, 2.1, 1.9, 2.2] * 10)
    assert mw.p_value < 1e-6 and mw.median_delta == pytest.approx(1.0)


def test_minimum_detectable_drop_is_detected_with_the_promised_power_by_the_real_test() -> None:
    # the MDD is estimated with a normal approximation; check it against the exact permutation test on a
    # small suite, where the discrete test is weakest (without the continuity correction this was ~0.72)
    rng = np.random.default_rng(5)
    rates = np.where(rng.random(14) < 0.6, 1.0, rng.uniform(0.4, 0.95, 14))
    base = [(round(p * 5), 5) for p in rates]
    observed = np.array([c / 5 for c, _ in base])
    mdd = st.minimum_detectable_drop(base, alpha=0.05, power=0.8)
    assert mdd is not None
    dropped = np.clip(observed * (1 - mdd / observed.mean()), 0, 1)
    sims, caught = 200, 0
    for i in range(sims):
        b = [(int(rng.binomial(5, p)), 5) for p in observed]
        h = [(int(rng.binomial(5, p)), 5) for p in dropped]
        res = st.paired_permutation_test(b, h, seed=i, n_bootstrap=10, n_resamples=500)
        caught += res.p_value < 0.05 and res.delta < 0
    assert caught / sims >= 0.8 - 2 * math.sqrt(0.8 * 0.2 / sims)


def test_repeats_needed_to_confirm_a_threshold() -> None:
    # the Wilson lower bound of n/n is n / (n + z^2): 0.8 needs 16 at 95%, 0.5 needs 4
    assert st.min_repeats_to_pass(0.8) == 16
    assert st.wilson_interval(16, 16)[0] >= 0.8 > st.wilson_interval(15, 15)[0]
    assert st.min_repeats_to_pass(0.5) == 4 and st.min_repeats_to_pass(1.0) is None
    assert st.min_repeats_to_fail(0.2) == 16 and st.min_repeats_to_fail(0.8) == 1
    assert st.threshold_note(0.8, 5) == (
        "threshold 0.8 needs at least 16 repeats to be confirmed at 95%; at 5 it can only be inconclusive "
        "or fail"
    )
    assert st.threshold_note(0.8, 16) == "" and st.threshold_note(0.5, 5) == ""
    assert "refuted" in st.threshold_note(0.2, 5) and "must_pass" in st.threshold_note(1.0, 5)
    for t in np.linspace(0.05, 0.95, 19):
        n = st.min_repeats_to_pass(float(t))
        assert n is not None and st.scenario_verdict(n, n, False, float(t)) == "pass"
        assert n == 1 or st.scenario_verdict(n - 1, n - 1, False, float(t)) != "pass"


def test_one_sided_fisher_matches_scipy_and_bh_matches_scipy() -> None:
    from scipy.stats import false_discovery_control

    rng = np.random.default_rng(3)
    base = [(int(rng.integers(0, 11)), 10) for _ in range(40)]
    head = [(int(rng.integers(0, 6)), 5) for _ in range(40)]
    ours = st.fisher_worse_p(base, head)
    for (sb, nb), (sh, nh), p in zip(base, head, ours, strict=True):
        ref = fisher_exact([[sb, nb - sb], [sh, nh - sh]], alternative="greater").pvalue
        assert p == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert st.fisher_worse_p([(5, 5)], [(0, 5)]) == [pytest.approx(1 / 252)]
    ps = rng.random(25) ** 2
    assert st.bh_adjust(list(ps)) == pytest.approx(list(false_discovery_control(ps, method="bh")))


def test_scenario_detectable_drop_is_detected_with_the_promised_power() -> None:
    # 0.95 at k=10 among 30: the stated drop is flagged (BH-adjusted one-sided Fisher) with power >= 0.8,
    # and a drop 0.05 smaller is not
    drop = st.scenario_detectable_drop(0.95, 10, 30)
    assert drop is not None and 0.75 < drop < 0.9
    rng = np.random.default_rng(5)

    def power(d: float) -> float:
        hits = 0
        sims = 600
        for _ in range(sims):
            others = [(int(x), 10) for x in rng.binomial(10, 0.9, 29)]
            base = [(int(rng.binomial(10, 0.95)), 10), *others]
            head = [(int(rng.binomial(10, 0.95 - d)), 10), *[(int(x), 10) for x in rng.binomial(10, 0.9, 29)]]
            hits += st.bh_adjust(st.fisher_worse_p(base, head))[0] < 0.05
        return hits / sims

    assert power(drop) >= 0.8 - 0.04
    assert power(drop - 0.05) < 0.8
    assert st.scenario_detectable_drop(1.0, 5, 30) is None  # 5/5 -> 0/5 has p = 0.004 > 0.05 / 30
