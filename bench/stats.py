"""Benchmark: comparing two runs of 500 scenarios x k=5 (10,000 permutations plus bootstrap).

Prints, from one process run, the time of replaygate's paired permutation test (exact path and the
vectorised Monte Carlo path with 10,000 permutations, each with a 2,000-resample bootstrap) against a
pure-Python loop doing the same Monte Carlo permutations (timed on a slice and scaled, said so below).
Target: well under a second for the comparison.
"""

from __future__ import annotations

import random
import time

import numpy as np

from replaygate.stats import paired_permutation_test

N_SCENARIOS, K, N_PERM = 500, 5, 10_000


def make_runs(seed: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    rng = np.random.default_rng(seed)
    rates = np.where(rng.random(N_SCENARIOS) < 0.6, 1.0, rng.uniform(0.3, 0.95, N_SCENARIOS))
    base = [(int(rng.binomial(K, p)), K) for p in rates]
    head = [(int(rng.binomial(K, max(0.0, p - 0.03))), K) for p in rates]
    return base, head


def pure_python(base: list[tuple[int, int]], head: list[tuple[int, int]], n_perm: int) -> float:
    rnd = random.Random(0)
    observed = abs(sum(h / nh - b / nb for (b, nb), (h, nh) in zip(base, head, strict=True)) / len(base))
    hits = 0
    for _ in range(n_perm):
        total = 0.0
        for (b, nb), (h, nh) in zip(base, head, strict=True):
            pool = [1] * (b + h) + [0] * (nb + nh - b - h)
            rnd.shuffle(pool)
            total += sum(pool[:nh]) / nh - sum(pool[nh:]) / nb
        hits += abs(total / len(base)) >= observed - 1e-12
    return (hits + 1) / (n_perm + 1)


def timed(fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    base, head = make_runs(0)
    t_exact, r_exact = timed(lambda: paired_permutation_test(base, head, n_resamples=N_PERM))
    t_mc, r_mc = timed(lambda: paired_permutation_test(base, head, n_resamples=N_PERM, exact_limit=0))
    slice_perm = 200
    t_slice, _ = timed(lambda: pure_python(base, head, slice_perm), repeat=1)
    t_py = t_slice * N_PERM / slice_perm
    print(f"{N_SCENARIOS} scenarios x k={K}, {N_PERM:,} permutations + 2,000 bootstrap resamples")
    print(f"  replaygate exact path        {t_exact * 1000:8.1f} ms  p={r_exact.p_value:.4f} (exact)")
    print(f"  replaygate Monte Carlo path  {t_mc * 1000:8.1f} ms  p={r_mc.p_value:.4f}")
    print(f"  pure-Python loop (scaled from {slice_perm} permutations) {t_py * 1000:8.1f} ms")
    print(f"  ratio pure-Python / Monte Carlo: {t_py / t_mc:6.1f}x; / exact: {t_py / t_exact:6.1f}x")
    print(f"  target: comparison well under 1 s -> {'met' if max(t_exact, t_mc) < 1.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
