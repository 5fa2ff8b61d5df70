"""Calibrate the whole gate by simulation: how often it passes, asks for a signature or blocks.

A team sees the gate as this module draws it: a baseline run, a second baseline run and a candidate run
of one suite, each scenario's attempts drawn from its true pass rate, gated by the real code
(:func:`compare_runs` then :func:`evaluate_gate`) under a real policy. With equal rates on both sides
(no change) every non-pass is a false alarm; with planted drops the non-passes are the power.

Usage::

    rng = np.random.default_rng(0)
    suite = heterogeneous_suite(30, k=5, rng=rng, must_pass=6)
    report = simulate_gate(suite, load_policy("examples/gate-policy.yaml"), rng)
    report.outcome  # "pass" | "needs-sign-off" | "block"

Guardrail measures (latency, cost, escalations) are held fixed: this calibrates the pass/fail statistics,
not the machine's timing noise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from replaygate.replay import Attempt, CheckResult, Fingerprint, Measures, RunFile, ScenarioEntry

from replaygate.gate._compare import compare_runs
from replaygate.gate._gate_model import GateReport
from replaygate.gate._policy import Policy
from replaygate.gate._rules import evaluate_gate

__all__ = ["SimulatedSuite", "heterogeneous_suite", "simulate_gate", "synthetic_run"]


@dataclass(frozen=True)
class SimulatedSuite:
    """A suite's true per-scenario pass rates before and after a change, and how it is declared."""

    base_rates: tuple[float, ...]
    head_rates: tuple[float, ...]
    k: int
    must_pass: frozenset[int] = frozenset()
    thresholds: tuple[float, ...] = ()  # per scenario; empty: 0.8 for all
    tags: tuple[Mapping[str, str], ...] = field(default=())  # per scenario; empty: none

    def __post_init__(self) -> None:
        """Refuse a suite whose lists disagree in length or whose rates leave [0, 1]."""
        n = len(self.base_rates)
        if n == 0 or len(self.head_rates) != n:
            raise ValueError("base_rates and head_rates must list the same scenarios (at least one)")
        if self.thresholds and len(self.thresholds) != n or self.tags and len(self.tags) != n:
            raise ValueError("thresholds and tags, when given, need one entry per scenario")
        if any(not 0.0 <= r <= 1.0 for r in (*self.base_rates, *self.head_rates)):
            raise ValueError("pass rates must be in [0, 1]")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")

    def with_head(self, head_rates: Sequence[float]) -> SimulatedSuite:
        """The same suite with other candidate rates (a planted change)."""
        return replace(self, head_rates=tuple(head_rates))


def _sid(i: int) -> str:
    return f"sim-{i + 1:03d}"


def synthetic_run(suite: SimulatedSuite, passes: Sequence[int], run_id: str) -> RunFile:
    """A run file in which scenario ``i`` passes ``passes[i]`` of its ``k`` attempts (then fails)."""
    entries = [
        ScenarioEntry(
            id=_sid(i),
            title=f"simulated scenario {i + 1}",
            must_pass=i in suite.must_pass,
            threshold=suite.thresholds[i] if suite.thresholds else 0.8,
            repeats=suite.k,
            tags=dict(suite.tags[i]) if suite.tags else {},
        )
        for i in range(len(passes))
    ]
    measures = Measures(latency_s=0.5, cost_usd=0.001)
    ok, bad = [CheckResult(name="check", passed=True)], [CheckResult(name="check", passed=False)]
    attempts = [
        Attempt(
            scenario_id=_sid(i),
            index=j,
            status="pass" if j < p else "fail",
            answer="simulated",
            checks=ok if j < p else bad,
            measures=measures,
        )
        for i, p in enumerate(passes)
        for j in range(suite.k)
    ]
    fingerprint = Fingerprint(
        agent_config_hash="sha256:simulated",
        target="simulated",
        replaygate_version="simulated",
        suite_hash=f"sha256:simulated-{len(passes)}",
        k=suite.k,
        seed=0,
        date="2026-01-01T00:00:00+00:00",
    )
    return RunFile(run_id=run_id, fingerprint=fingerprint, scenarios=entries, attempts=attempts)


def simulate_gate(
    suite: SimulatedSuite,
    policy: Policy,
    rng: np.random.Generator,
    *,
    second_baseline: bool = True,
    fixed_head: Mapping[int, int] | None = None,
) -> GateReport:
    """Draw a baseline, a second baseline and a candidate run of ``suite``; gate them with the real rules.

    ``fixed_head`` pins some scenarios' candidate passes (scenario index -> passes of k) instead of
    drawing them, e.g. a must-pass scenario that fails exactly 1 of 5.
    """
    base_p = np.asarray(suite.base_rates)
    head_p = np.asarray(suite.head_rates)
    base = synthetic_run(suite, rng.binomial(suite.k, base_p).tolist(), "baseline")
    noise = synthetic_run(suite, rng.binomial(suite.k, base_p).tolist(), "baseline-2")
    head_passes = rng.binomial(suite.k, head_p).tolist()
    for i, passes in (fixed_head or {}).items():
        head_passes[i] = passes
    head = synthetic_run(suite, head_passes, "candidate")
    comparison = compare_runs(base, head, noise if second_baseline else None, policy)
    return evaluate_gate(comparison, policy, created_at="2026-01-01T00:00:00+00:00")


def heterogeneous_suite(
    n: int,
    k: int,
    rng: np.random.Generator,
    *,
    must_pass: int = 0,
    thresholds: Sequence[float] = (0.8, 0.5),
    category_size: int = 10,
) -> SimulatedSuite:
    """A suite of ``n`` scenarios with mixed true pass rates, unchanged between baseline and candidate.

    The first ``must_pass`` scenarios are must-pass and truly reliable (rate 1). Of the rest, half are
    reliable (0.9-1.0), three in ten middling (0.6-0.9) and one in five poor (0.1-0.6). Thresholds cycle
    through ``thresholds``. Tags: ``dimension`` (4 values), ``risk`` (one in five ``high``) and
    ``request_type`` (blocks of ``category_size`` scenarios).
    """
    if not 0 <= must_pass <= n:
        raise ValueError(f"must_pass must be between 0 and {n}, got {must_pass}")
    kind = rng.random(n)
    rates = np.where(
        kind < 0.5,
        rng.uniform(0.9, 1.0, n),
        np.where(kind < 0.8, rng.uniform(0.6, 0.9, n), rng.uniform(0.1, 0.6, n)),
    )
    rates[:must_pass] = 1.0
    risk = ("high", "medium", "medium", "low", "low")
    tags = tuple(
        {"dimension": f"d{i % 4}", "risk": risk[i % 5], "request_type": f"type{i // category_size:02d}"}
        for i in range(n)
    )
    values = tuple(float(r) for r in rates)
    return SimulatedSuite(
        base_rates=values,
        head_rates=values,
        k=k,
        must_pass=frozenset(range(must_pass)),
        thresholds=tuple(thresholds[i % len(thresholds)] for i in range(n)),
        tags=tags,
    )
