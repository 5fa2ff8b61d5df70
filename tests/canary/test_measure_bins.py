"""The page's per-measure series: counts per arm and time bin exact (in SQL on a store), quantiles sampled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replaygate.canary import CanaryController, arm_measures, sample_from_trace


def _expected(ctl: CanaryController, arm: str, start: int, end: int, bins: int) -> list[Any]:
    """The old way: every trace of the arm read back, binned in Python."""
    assert ctl.traces is not None
    width = max(1, (end - start) // bins + 1)
    binned: list[list[Any]] = [[] for _ in range(bins)]
    for record in ctl.traces.list_traces(limit=None, since_ns=start, variant=arm):
        s = sample_from_trace(record)
        if start <= s.start_ns < start + width * bins:
            binned[min(bins - 1, (s.start_ns - start) // width)].append(s)
    return [arm_measures(b) for b in binned]


def test_bins_match_every_trace_read_back(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    ctl = make_controller()
    ctl.start("dec-pass", actor="ana")
    traces.add("baseline", 30, latency_s=1.0)
    traces.add("candidate", 10, escalated=True, latency_s=2.0)
    traces.add("baseline", 20, error=True, latency_s=3.0)
    traces.add("candidate", 15, empty=True, latency_s=0.5)
    records = traces.list_traces(limit=None)
    start = min(r.start_ns for r in records)
    end = max(r.start_ns for r in records) + 1
    got = ctl.measure_bins(start, end, 4)
    for arm in ("baseline", "candidate"):
        want = _expected(ctl, arm, start, end, 4)
        assert [m.n for m in got[arm]] == [m.n for m in want]
        assert [m.counts for m in got[arm]] == [m.counts for m in want]
        assert [m.latency_p50 for m in got[arm]] == [m.latency_p50 for m in want]
        assert [m.cost_per_request for m in got[arm]] == [m.cost_per_request for m in want]
    assert sum(m.n for m in got["baseline"]) == 50
    assert sum(m.counts["error_rate"] for m in got["baseline"]) == 20
    assert sum(m.counts["escalation_rate"] for m in got["candidate"]) == 10


def test_a_large_arm_is_counted_exactly_and_sampled_for_latency(
    make_controller: Callable[..., CanaryController], traces: Any
) -> None:
    ctl = make_controller(sample_size=40)
    ctl.start("dec-pass", actor="ana")
    traces.add("baseline", 300, escalated=True, latency_s=1.5)
    records = traces.list_traces(limit=None)
    start = min(r.start_ns for r in records)
    got = ctl.measure_bins(start, max(r.start_ns for r in records) + 1, 3)["baseline"]
    assert sum(m.n for m in got) == 300 and sum(m.counts["escalation_rate"] for m in got) == 300
    assert all(m.latency_p50 in (None, 1.5) for m in got)
    assert all(m.rates["escalation_rate"] == 1.0 for m in got if m.n)
