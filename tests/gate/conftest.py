"""Run-file factories for the comparison and gate tests (also loaded by tests/report)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from replaygate.replay import (
    Attempt,
    CheckResult,
    Fingerprint,
    JudgeResult,
    Measures,
    RetrievalScores,
    RunFile,
    ScenarioEntry,
    content_hash,
    suite_hash_of,
)

# The seed case: 12 scenarios x 5 attempts, 53/60 (88%) -> 40/60 (67%): three go 5/5 -> 0/5.
SEED_BASE = [5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 0]
SEED_HEAD = [0, 0, 0, 5, 5, 5, 5, 5, 5, 4, 4, 2]


def sid(i: int) -> str:
    return f"s{i + 1:02d}"


def make_run(
    passes: Sequence[int],
    *,
    run_id: str = "run",
    k: int = 5,
    suite_hash: str | None = None,
    must_pass: Sequence[int] = (),
    errors: Mapping[int, int] | None = None,
    attempts: Mapping[int, int] | None = None,
    drop: Sequence[int] = (),
    tags: Callable[[int], dict[str, str]] | None = None,
    policy: dict[str, Any] | None = None,
    policy_hash: str | None = None,
    tier: str | None = None,
    date: str = "2026-11-29T10:00:00+00:00",
    config_hash: str = "sha256:cfg",
    latency: float = 0.5,
    cost: float | None = 0.001,
    escalated_every: int = 0,
    answer: str = "ok",
    judge: float | None = None,
    not_counted: Sequence[int] = (),
    threshold: float = 0.8,
) -> RunFile:
    """Scenario i gets passes[i] passing attempts, then failing ones, then errors[i] errors (of k)."""
    errors = dict(errors or {})
    attempts = dict(attempts or {})
    scenarios = []
    rows = []
    n_esc = 0
    for i, p in enumerate(passes):
        if i in drop:
            continue
        tag = (
            tags(i)
            if tags
            else {"dimension": "refunds" if i % 2 else "booking", "risk": "high" if i < 3 else "low"}
        )
        scenarios.append(
            ScenarioEntry(
                id=sid(i),
                title=f"scenario {i + 1}",
                must_pass=i in must_pass,
                threshold=threshold,
                repeats=k,
                counts=i not in not_counted,
                status="quarantined" if i in not_counted else "active",
                tags=tag,
            )
        )
        total = attempts.get(i, k)
        e = errors.get(i, 0)
        for j in range(total):
            if j < p:
                status = "pass"
            elif j < total - e:
                status = "fail"
            else:
                status = "error"
            n_esc += 1
            esc = bool(escalated_every) and n_esc % escalated_every == 0
            rows.append(
                Attempt(
                    scenario_id=sid(i),
                    index=j,
                    status=status,  # type: ignore[arg-type]
                    error="target timed out after 60s" if status == "error" else None,
                    answer=None if status == "error" else answer,
                    checks=[
                        CheckResult(
                            name="contains",
                            passed=status == "pass",
                            detail="" if status == "pass" else "missing 'refund'",
                        )
                    ],
                    judges=[JudgeResult(name="groundedness", score=judge, passed=judge >= 0.5)]
                    if judge is not None
                    else [],
                    retrieval=RetrievalScores(k=3, hit_rate=1.0, mrr=1.0, recall=1.0, ndcg=1.0, retrieved=3)
                    if judge is not None
                    else None,
                    measures=Measures(latency_s=latency, cost_usd=cost, escalated=esc),
                )
            )
    if suite_hash is None:  # the hash the replay engine records for the suite (dropped scenarios too)
        suite_hash = suite_hash_of(
            (sid(i), "quarantined" if i in not_counted else "active", "") for i in range(len(passes))
        )
    fp = Fingerprint(
        agent_config_hash=config_hash,
        target="examples.agent:respond",
        replaygate_version="0.1.0",
        suite_hash=suite_hash,
        policy_hash=policy_hash
        if policy_hash is not None
        else (content_hash(policy) if policy is not None else None),
        tier=tier,
        k=k,
        seed=0,
        date=date,
        declared_versions={"config_id": f"cfg-{run_id}"},
    )
    return RunFile(run_id=run_id, fingerprint=fp, scenarios=scenarios, attempts=rows, policy=policy)


@pytest.fixture
def seed_runs() -> tuple[RunFile, RunFile]:
    return make_run(SEED_BASE, run_id="base"), make_run(SEED_HEAD, run_id="head")


class Factory:
    """What the tests use: ``f.run(...)``, ``f.BASE``, ``f.HEAD``."""

    BASE = SEED_BASE
    HEAD = SEED_HEAD
    run = staticmethod(make_run)
    sid = staticmethod(sid)


@pytest.fixture
def f() -> type[Factory]:
    return Factory
