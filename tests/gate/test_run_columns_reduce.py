"""Issue 19: a run read as columns reduces, scenario by scenario, to what its validated attempts give.

``load_run_data`` visits only each scenario's first answer, failures, errors and scored rows (found
for every scenario at once); ``RunData.of`` (the reducer over ``Attempt`` objects) is the oracle.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.replay import (
    Attempt,
    CheckResult,
    Measures,
    RetrievalScores,
    load_run,
    save_run,
    scan_run_columns,
)

from replaygate.gate import RunData, load_run_data
from tests.gate.conftest import make_run

_plain = st.text(st.sampled_from("ab é!"), max_size=4)
_attempt = st.builds(
    lambda sid, index, status, error, answer, checks, retrieval: Attempt(
        scenario_id=sid,
        index=index,
        status=status,
        error=error,
        answer=answer,
        checks=checks,
        retrieval=retrieval,
        measures=Measures(latency_s=0.1),
    ),
    st.sampled_from(["s01", "s02", "s03"]),
    st.integers(0, 3),
    st.sampled_from(["pass", "fail", "error"]),
    st.none() | _plain,
    st.none() | _plain,
    st.lists(st.builds(CheckResult, name=_plain, passed=st.booleans(), detail=_plain), max_size=3),
    st.none()
    | st.builds(
        RetrievalScores,
        k=st.just(3),
        hit_rate=st.sampled_from([0.0, 0.5, 1.0]),
        mrr=st.just(0.25),
        recall=st.just(1.0),
        ndcg=st.just(0.75),
        retrieved=st.just(3),
    ),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_attempt, max_size=14))
def test_columns_reduce_as_the_validated_attempts(attempts: list[Attempt]) -> None:
    run = make_run([1, 1, 1], run_id="r", k=4).model_copy(update={"attempts": attempts})
    with tempfile.TemporaryDirectory() as folder:
        path = save_run(run, Path(folder) / "run.json")
        if attempts:
            assert scan_run_columns(path) is not None  # the columns path, not the per-line one
        assert load_run_data(path) == RunData.of(load_run(path))


def test_the_reduction_keeps_what_the_report_shows() -> None:
    """Not vacuous: answers, errors, failure details and scores all come through."""
    attempts = [
        Attempt(scenario_id="s01", index=1, status="pass", answer="late", measures=Measures(latency_s=0.1)),
        Attempt(scenario_id="s01", index=0, status="pass", answer=None, measures=Measures(latency_s=0.1)),
        Attempt(
            scenario_id="s01",
            index=2,
            status="fail",
            answer="wrong",
            checks=[CheckResult(name="c", passed=False, detail="d")],
            measures=Measures(latency_s=0.1),
        ),
        Attempt(scenario_id="s02", index=0, status="error", error="boom", measures=Measures(latency_s=0.1)),
    ]
    run = make_run([1, 1], run_id="r", k=3).model_copy(update={"attempts": attempts})
    with tempfile.TemporaryDirectory() as folder:
        data = load_run_data(save_run(run, Path(folder) / "run.json"))
    s1, s2 = data.scenarios["s01"], data.scenarios["s02"]
    assert (s1.passed, s1.failed, s1.sample_answer, s1.failure_details) == (2, 1, "wrong", ["check c: d"])
    assert s1.positions == [1, 0, 2] and s2.error_messages == ["boom"] and s2.errors == 1
