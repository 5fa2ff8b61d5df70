"""Simulated live traffic via choose_variant into the real trace store: planted breach vs no difference."""

from __future__ import annotations

from pathlib import Path

import pytest
from replaygate.instrumentation import TraceStore, _routing

from replaygate.canary import (
    CanaryController,
    CanarySettings,
    CanaryStore,
    EvidenceSettings,
    TrafficProfile,
    parse_plan,
    simulate_live_traffic,
)

SEEDS = (0, 1, 2)


def _run(
    tmp_path: Path, decisions: object, seed: int, escalation_delta: float, batch_size: int = 250
) -> tuple[object, TraceStore]:
    path = tmp_path / f"store-{seed}-{escalation_delta}.db"
    traces = TraceStore(path)
    settings = CanarySettings(
        plan=parse_plan("20,50,100"),
        evidence=EvidenceSettings(min_count=50, min_breach_count=50),
        groundedness_sample=0,
    )
    store = CanaryStore(path)
    ctl = CanaryController(store, traces, decisions, settings=settings)  # type: ignore[arg-type]
    ctl.start("dec-pass", actor="ana", salt=f"salt-{seed}")
    report = simulate_live_traffic(
        ctl,
        candidate=TrafficProfile().planted(escalation_rate=escalation_delta),
        batches=25,
        batch_size=batch_size,
        seed=seed,
    )
    store.close()
    return report, traces


@pytest.fixture(autouse=True)
def _fresh_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_routing, "_client", None)


@pytest.mark.parametrize("seed", SEEDS)
def test_planted_escalation_is_rolled_back(tmp_path: Path, decisions: object, seed: int) -> None:
    report, traces = _run(tmp_path, decisions, seed, 0.10)
    try:
        assert report.rolled_back, report  # type: ignore[attr-defined]
        assert "escalation rate is confidently worse than the tolerance" in (report.rollback_reason or "")  # type: ignore[attr-defined]
        # the spans really went through the store, split by the variant choose_variant picked
        cand = traces.list_traces(limit=None, variant="candidate")
        base = traces.list_traces(limit=None, variant="baseline")
        assert len(cand) == report.candidate_requests  # type: ignore[attr-defined]
        assert len(cand) + len(base) == report.requests  # type: ignore[attr-defined]
        assert {r.summary.config_id for r in cand} == {"candidate-fixed"}
        assert sum(r.summary.escalated for r in cand) / len(cand) > sum(
            r.summary.escalated for r in base
        ) / len(base)
    finally:
        traces.close()


@pytest.mark.parametrize("seed", SEEDS[:1])  # bench/canary_calibration.py measures the rates
def test_no_difference_is_widened_to_100_without_rollback(
    tmp_path: Path, decisions: object, seed: int
) -> None:
    # every measure must be confidently within its tolerance (error rate within +2 points) at 20% and 50%
    report, traces = _run(tmp_path, decisions, seed, 0.0, batch_size=500)
    traces.close()
    assert not report.rolled_back, report.rollback_reason  # type: ignore[attr-defined]
    assert report.final_share == 1.0  # type: ignore[attr-defined]
    assert [t.action for t in report.transitions] == ["widen", "widen"]  # type: ignore[attr-defined]
