"""Benchmark: the whole gate's calibration, simulated the way a team sees it.

Each simulated release draws a baseline run, a second baseline run and a candidate run of one suite from
the same true per-scenario pass rates (no change) or with a planted regression, and gates them with the
real code (``compare_runs`` then ``evaluate_gate``) under ``examples/gate-policy.yaml``. Prints:

1. For a grid of no-change suites (12, 30, 100 scenarios x k 3, 5, 10, heterogeneous rates, without and
   with must-pass scenarios whose true rate is 1): the share of releases that pass, need a signature and
   block. Must hold in every cell: signature <= 10%, block <= 5%.
2. For planted regressions, the share caught: the seed collapse (12 scenarios, 3 go 5/5 -> 0/5; must be
   >= 95% block or sign-off); a reliable must-pass scenario failing 1 of 5 (must block every time); one
   ordinary scenario falling 0.95 -> 0.10 at k=10 among 30; a 5-point drop over one category of 10
   scenarios among 100 (k=10). For the last two, the power sits next to the smallest drop the report
   says it can detect (median over the releases), and the same plant at that stated drop.

Run: ``python bench/gate_calibration.py [--sims N] [--seed N] [--skip-grid]`` (100 releases per cell
by default; about a quarter of an hour on an idle 2-core machine).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from replaygate.gate import (
    GateReport,
    Policy,
    SimulatedSuite,
    heterogeneous_suite,
    load_policy,
    simulate_gate,
)

POLICY = Path(__file__).resolve().parents[1] / "examples" / "gate-policy.yaml"
GRID = [(n, k) for n in (12, 30, 100) for k in (3, 5, 10)]
SIGN_MAX, BLOCK_MAX = 0.10, 0.05
print = functools.partial(print, flush=True)  # noqa: A001 (progress shows while it runs)


def _shares(reports: list[GateReport]) -> dict[str, float]:
    counts = Counter(r.outcome for r in reports)
    return {o: counts[o] / len(reports) for o in ("pass", "needs-sign-off", "block")}


def _run(make: Callable[[np.random.Generator], GateReport], sims: int, seed: int) -> list[GateReport]:
    rng = np.random.default_rng(seed)
    return [make(rng) for _ in range(sims)]


def no_change_grid(policy: Policy, sims: int, seed: int) -> bool:
    print("1. No change (baseline, second baseline and candidate from the same rates)")
    print(f"{'suite':>10} {'must-pass':>9} {'pass':>7} {'sign-off':>9} {'block':>7}  holds  seconds")
    ok = True
    for cell, (n, k) in enumerate(GRID):
        for must in (0, max(2, n // 5)):

            def make(rng: np.random.Generator, n: int = n, k: int = k, must: int = must) -> GateReport:
                return simulate_gate(heterogeneous_suite(n, k, rng, must_pass=must), policy, rng)

            t0 = time.perf_counter()
            sh = _shares(_run(make, sims, seed + cell * 2 + bool(must)))
            holds = sh["needs-sign-off"] <= SIGN_MAX and sh["block"] <= BLOCK_MAX
            ok &= holds
            print(
                f"{f'{n} x k={k}':>10} {must:>9} {sh['pass']:>7.1%} {sh['needs-sign-off']:>9.1%} "
                f"{sh['block']:>7.1%}  {'yes' if holds else 'NO':>5}  {time.perf_counter() - t0:7.1f}"
            )
    return ok


def seed_collapse(policy: Policy, sims: int, seed: int) -> bool:
    base = (1.0,) * 9 + (0.8, 0.8, 0.0)
    suite = SimulatedSuite(base_rates=base, head_rates=(0.0,) * 3 + base[3:], k=5)
    sh = _shares(_run(lambda rng: simulate_gate(suite, policy, rng), sims, seed))
    caught = sh["block"] + sh["needs-sign-off"]
    print(
        f"   seed collapse (12 x k=5, 3 go 5/5 -> 0/5): block {sh['block']:.1%}, sign-off "
        f"{sh['needs-sign-off']:.1%}, never passes in {caught:.1%} (must be >= 95%)"
    )
    return caught >= 0.95


def must_pass_one_of_five(policy: Policy, sims: int, seed: int) -> bool:
    def make(rng: np.random.Generator) -> GateReport:
        suite = heterogeneous_suite(12, 5, rng, must_pass=3)
        return simulate_gate(suite, policy, rng, fixed_head={0: 4})

    reports = _run(make, sims, seed)
    blocked = sum(r.outcome == "block" and r.rule1_fired for r in reports) / len(reports)
    print(f"   must-pass scenario fails 1 of 5 (12 x k=5): blocked by rule 1 in {blocked:.1%} (must be 100%)")
    return blocked == 1.0


def _one_scenario(policy: Policy, sims: int, seed: int, after: float) -> tuple[float, float | None]:
    def make(rng: np.random.Generator) -> GateReport:
        suite = heterogeneous_suite(30, 10, rng)
        rates = list(suite.base_rates)
        rates[5] = 0.95
        planted = SimulatedSuite(
            base_rates=tuple(rates),
            head_rates=(*rates[:5], after, *rates[6:]),
            k=10,
            thresholds=(0.8,) * 30,
            tags=suite.tags,
        )
        return simulate_gate(planted, policy, rng)

    reports = _run(make, sims, seed)
    caught = sum("sim-006" in r.newly_failing and r.outcome != "pass" for r in reports) / len(reports)
    stated = [d for r in reports if (d := r.comparison.scenarios[5].detectable_drop) is not None]
    return caught, statistics.median(stated) if stated else None


def _category(policy: Policy, sims: int, seed: int, drop: float) -> tuple[float, float | None]:
    def make(rng: np.random.Generator) -> GateReport:
        suite = heterogeneous_suite(100, 10, rng, category_size=10)
        base = np.asarray(suite.base_rates)
        head = base.copy()
        mean = float(base[20:30].mean())
        head[20:30] = np.clip(base[20:30] * (1 - drop / mean), 0.0, 1.0)  # category type02 falls by `drop`
        return simulate_gate(suite.with_head(head.tolist()), policy, rng)

    reports = _run(make, sims, seed)
    name = "request_type=type02"
    caught = sum(any(f.rule == "rule-2" and f.subject == name for f in r.findings) for r in reports) / len(
        reports
    )
    stated = [
        g.detectable_drop
        for r in reports
        for g in r.comparison.categories
        if g.name == name and g.detectable_drop is not None
    ]
    return caught, statistics.median(stated) if stated else None


def _agree(drop: float, power: float, stated: float | None, target: float) -> str:
    if stated is None:
        return "agree" if power < target else "DISAGREE (says undetectable)"
    expected = drop >= stated
    return "agree" if expected == (power >= target - 0.1) else "DISAGREE"


def planted(policy: Policy, sims: int, seed: int) -> bool:
    print("2. Planted regressions (share of releases caught)")
    ok = seed_collapse(policy, sims, seed)
    ok &= must_pass_one_of_five(policy, sims, seed + 1)
    target = policy.power
    power, stated = _one_scenario(policy, sims, seed + 2, 0.10)
    shown = "none" if stated is None else f"{stated:.2f}"
    print(
        f"   one scenario 0.95 -> 0.10 (drop 0.85) at k=10 among 30: caught {power:.1%}; the report says "
        f"it detects a drop of {shown} (power {target:g}): {_agree(0.85, power, stated, target)}"
    )
    if stated is not None and 0.95 - stated >= 0:
        at, _ = _one_scenario(policy, sims, seed + 3, round(0.95 - stated, 2))
        print(f"     the same plant at the stated drop {stated:.2f}: caught {at:.1%}")
    power, stated = _category(policy, sims, seed + 4, 0.05)
    shown = "none" if stated is None else f"{stated:.2f}"
    print(
        f"   5-point drop over one category of 10 among 100 (k=10): caught {power:.1%}; the report says the "
        f"category's smallest blocking drop is {shown}: {_agree(0.05, power, stated, target)}"
    )
    if stated is not None:
        at, _ = _category(policy, sims, seed + 5, stated)
        print(f"     the same category at the stated drop {stated:.2f}: caught {at:.1%}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=100, help="simulated releases per cell (default 100)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--skip-grid", action="store_true", help="only the planted regressions")
    args = parser.parse_args()
    policy = load_policy(POLICY)
    print(f"policy {POLICY.name}, {args.sims} simulated releases per cell, seed {args.seed}")
    ok = True if args.skip_grid else no_change_grid(policy, args.sims, args.seed)
    ok &= planted(policy, args.sims, args.seed + 100)
    print("all must-hold items hold" if ok else "SOME MUST-HOLD ITEM FAILS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
