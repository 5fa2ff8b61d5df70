"""Benchmark: does the canary honour the tolerances it reports, over 100 looks?

Simulated rollouts with fixed seeds, the example gate policy's tolerances (escalation +5 points, error
+2 points, latency p50 +35% / p95 +50%) and the 10/25/50/100 plan; 300 requests per batch and a look after
every batch (the controller's check: roll back, widen or hold) for up to 100 looks. Each candidate is
equal, or worse by half, exactly, or twice the tolerance in one measure (latency: the whole distribution
slower, so p50 and p95 move together). One table: the share of rollouts rolled back, widened to 100% and
still held after 100 looks, and the median candidate requests until the rollback or the last widen.

The rule and the state machine are the real ones (``evaluate_evidence``, ``_machine``); the requests go
straight into the arms' summaries instead of spans and SQLite (thousands of rollouts in minutes; the
SQLite path is driven end to end by ``tests/canary/test_simulate.py``). Must hold: equal rolled back
<= 2% and widened >= 95%; half the tolerance rolled back <= 5%; twice the tolerance (escalation, latency
p50) rolled back >= 95% with a median <= 300 candidate requests. Also shown: an equal candidate on the
default plan (1/5/25/50/100), where rare events at 1% hold the first step.

    uv run --locked python bench/canary_calibration.py [--rollouts 200]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path

from replaygate.canary import (
    Arm,
    EvidenceSettings,
    Limit,
    RolloutState,
    Tally,
    evaluate_evidence,
    simulate_rollouts,
    start_rollout,
    step_arms,
    step_outlook,
    tolerances_from_policy,
)
from replaygate.gate import load_policy

POLICY = Path(__file__).resolve().parent.parent / "examples" / "gate-policy.yaml"
PLAN = (0.10, 0.25, 0.50, 1.0)
DEFAULT_PLAN = (0.01, 0.05, 0.25, 0.50, 1.0)
BASE = Arm()

#: (row, candidate, must-hold check or None)
CELLS: list[tuple[str, Arm, str | None]] = [
    ("equal", BASE, "equal"),
    ("escalation +2.5 pts (half)", Arm(escalation_rate=0.125), "half"),
    ("escalation +5 pts (at)", Arm(escalation_rate=0.15), None),
    ("escalation +10 pts (twice)", Arm(escalation_rate=0.20), "twice"),
    ("error +1 pt (half)", Arm(error_rate=0.02), "half"),
    ("error +2 pts (at)", Arm(error_rate=0.03), None),
    ("error +4 pts (twice)", Arm(error_rate=0.05), None),
    ("latency +17% (half)", Arm(latency_s=0.8 * 1.17), "half"),
    ("latency +35% (at p50)", Arm(latency_s=0.8 * 1.35), None),
    ("latency +70% (twice p50)", Arm(latency_s=0.8 * 1.70), "twice"),
]


def _check(kind: str | None, t: Tally) -> str:
    if kind == "equal":
        ok = t.share("rolled_back") <= 0.02 and t.share("widened") >= 0.95
        return ("ok" if ok else "FAIL") + " (<=2% rolled back, >=95% widened)"
    if kind == "half":
        return ("ok" if t.share("rolled_back") <= 0.05 else "FAIL") + " (<=5% rolled back)"
    if kind == "twice":
        median = t.median_requests("rolled_back")
        ok = t.share("rolled_back") >= 0.95 and median is not None and median <= 300
        return ("ok" if ok else "FAIL") + " (>=95% rolled back, median <=300)"
    return ""


def _median(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _outlook_example(tolerances: Mapping[str, Limit], max_hold: float | None) -> None:
    """What the status says of an equal candidate held at 1%: 3,600 requests an hour, two hours in."""
    state = start_rollout(
        RolloutState(),
        rollout_id="r",
        decision_id="d",
        decision_outcome="pass",
        baseline_config_id="b",
        candidate_config_id="c",
        salt="s",
        now_ns=0,
        plan=DEFAULT_PLAN,
    ).after
    base, cand = step_arms(BASE, BASE, share=0.01, requests=7200, seed=3)
    settings = EvidenceSettings()
    evidence = evaluate_evidence(base, cand, tolerances, settings, share=0.01)
    now = 2 * 3600 * 10**9
    outlook = step_outlook(state, evidence, base, cand, tolerances, settings, now_ns=now, max_hold_s=max_hold)
    print(f"\nAn equal candidate at 1% after 2 h of 3,600 requests an hour ({cand.n} on the candidate):")
    print(f"  {evidence.reason}")
    print(f"  {outlook.text if outlook else ''}")


def main() -> None:
    """Run every cell and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=200, help="rollouts per cell (seeds 0..n-1)")
    args = parser.parse_args()
    tolerances = tolerances_from_policy(load_policy(POLICY))
    print(f"{args.rollouts} rollouts per cell, 300 requests a batch, a look after each, up to 100 looks")
    header = f"{'candidate':<30} {'plan':<14} {'rolled back':>11} {'widened':>8} {'held':>6} " + (
        f"{'median n (rb)':>13} {'median n (wid)':>14}  must hold"
    )
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    rows: list[tuple[str, Arm, str | None, tuple[float, ...]]] = [(n, a, k, PLAN) for n, a, k in CELLS]
    rows.append(("equal", BASE, None, DEFAULT_PLAN))
    failed = False
    for name, arm, kind, plan in rows:
        t = simulate_rollouts(BASE, arm, tolerances, plan=plan, rollouts=args.rollouts, seed=0)
        verdict = _check(kind, t)
        failed = failed or verdict.startswith("FAIL")
        plan_text = "/".join(f"{p * 100:g}" for p in plan)
        print(
            f"{name:<30} {plan_text:<14} {t.share('rolled_back'):>11.1%} {t.share('widened'):>8.1%} "
            f"{t.share('held'):>6.1%} {_median(t.median_requests('rolled_back')):>13} "
            f"{_median(t.median_requests('widened')):>14}  {verdict}",
            flush=True,
        )
    print(f"({time.perf_counter() - started:.0f} s; median n = candidate requests until the decision)")
    _outlook_example(tolerances, load_policy(POLICY).max_hold)
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
