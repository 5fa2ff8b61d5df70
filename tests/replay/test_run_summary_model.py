"""The typed run summary: built from guardrail_measures, same JSON keys as before, old files still load."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from replaygate.replay import (
    Attempt,
    Fingerprint,
    Measures,
    RunFile,
    RunFileError,
    RunSummary,
    ScenarioEntry,
    guardrail_measures,
    load_run,
    save_run,
    summarize_attempts,
    summary_lines,
)

#: The keys the run file's summary had while it was a dict (a reader of the JSON relies on them).
TOP_KEYS = {
    "run_id", "attempts", "errors", "fails", "passes", "error_attempts", "failing_attempts", "scenarios",
    "attribution", "guardrails", "retrieval", "capture_warnings",
}  # fmt: skip
GUARDRAIL_KEYS = {
    "latency_mean_s", "latency_p50_s", "latency_p95_s", "input_tokens", "output_tokens", "cost_usd",
    "cost_usd_known", "cost_usd_mean", "cost_unknown_attempts", "cost_note", "escalation_rate", "empty_rate",
    "error_rate",
}  # fmt: skip


def _attempts() -> list[Attempt]:
    def one(index: int, status: str, *, escalated: bool, empty: bool, cost: float | None) -> Attempt:
        return Attempt(
            scenario_id="s" if index < 3 else "t",
            index=index,
            status=status,  # type: ignore[arg-type]
            error="boom" if status == "error" else None,
            measures=Measures(latency_s=0.1 * (index + 1), escalated=escalated, empty=empty, cost_usd=cost),
            attribution="generation" if status == "fail" else None,
        )

    return [
        one(0, "pass", escalated=True, empty=False, cost=0.01),
        one(1, "fail", escalated=False, empty=True, cost=0.02),
        one(2, "error", escalated=False, empty=True, cost=None),
        one(3, "pass", escalated=False, empty=False, cost=0.03),
    ]


def _run(summary: RunSummary) -> RunFile:
    fingerprint = Fingerprint(
        agent_config_hash="sha256:x", target="t:f", replaygate_version="0", suite_hash="sha256:s", k=3,
        seed=0,
        date="2026-12-01T00:00:00Z",
    )  # fmt: skip
    return RunFile(
        run_id="r1",
        fingerprint=fingerprint,
        scenarios=[ScenarioEntry(id="s", title="S", repeats=3), ScenarioEntry(id="t", title="T", repeats=1)],
        attempts=_attempts(),
        summary=summary,
    )


def test_the_summary_is_typed_and_its_guardrails_are_guardrail_measures() -> None:
    attempts = _attempts()
    entries = [ScenarioEntry(id="s", title="S", repeats=3), ScenarioEntry(id="t", title="T", repeats=1)]
    summary = summarize_attempts(attempts, entries, run_id="r1", capture_warnings=["spans went elsewhere"])
    assert isinstance(summary, RunSummary)
    assert (summary.attempts, summary.errors, summary.fails, summary.passes) == (4, 1, 1, 2)
    assert summary.scenarios["s"].k == 3 and summary.scenarios["s"].errors == 1
    assert summary.attribution.generation == 1 and summary.attribution.unattributed == 0
    assert [(e.scenario_id, e.index, e.error) for e in summary.error_attempts] == [("s", 2, "boom")]
    g = guardrail_measures(attempts)
    # the one definition: rates over the three scored attempts, the error rate over all four
    assert summary.guardrails.escalation_rate == g.escalation_rate == pytest.approx(1 / 3)
    assert summary.guardrails.empty_rate == g.empty_rate == pytest.approx(1 / 3)
    assert summary.guardrails.error_rate == g.error_rate == pytest.approx(1 / 4)
    assert summary.guardrails.cost_usd is None  # one attempt's cost is unknown: never 0
    assert summary.guardrails.cost_usd_known == g.cost_usd_known == pytest.approx(0.06)
    assert summary.guardrails.cost_usd_mean == g.cost_usd_mean == pytest.approx(0.02)
    assert summary.capture_warnings == ["spans went elsewhere"]
    assert "WARNING: spans went elsewhere" in summary_lines(summary)


def test_the_run_files_summary_json_keeps_its_keys(tmp_path: Path) -> None:
    run = _run(summarize_attempts(_attempts(), [ScenarioEntry(id="s", title="S", repeats=3)], run_id="r1"))
    path = tmp_path / "run.json"
    save_run(run, path)
    raw = json.loads(path.read_text())["summary"]
    assert set(raw) == TOP_KEYS and set(raw["guardrails"]) == GUARDRAIL_KEYS
    assert set(raw["scenarios"]["s"]) == {"attempts", "errors", "fails", "passes", "k", "must_pass"}
    assert raw["error_attempts"] == [{"scenario_id": "s", "index": 2, "error": "boom"}]
    assert raw["failing_attempts"] == [
        {"scenario_id": "s", "index": 1, "failed": [], "attribution": "generation"}
    ]
    assert raw["guardrails"]["cost_usd"] is None
    assert load_run(path).summary == run.summary


def _rewrite_summary(path: Path, summary: object) -> None:
    data = json.loads(path.read_text())
    data["summary"] = summary  # the summary is outside the attempts digest
    path.write_text(json.dumps(data))


def test_an_older_run_files_summary_still_loads(tmp_path: Path) -> None:
    run = _run(summarize_attempts(_attempts(), [], run_id="r1"))
    path = tmp_path / "run.json"
    save_run(run, path)
    # A summary from before the cost breakdown, p50, retrieval and capture warnings existed.
    old = {
        "run_id": "r1", "attempts": 4, "errors": 1, "fails": 1, "passes": 2,
        "error_attempts": [{"scenario_id": "s", "index": 2, "error": "boom"}],
        "failing_attempts": [{"scenario_id": "s", "index": 1, "failed": ["regex"], "attribution": None}],
        "scenarios": {"s": {"attempts": 3, "errors": 1, "fails": 1, "passes": 1, "k": 3, "must_pass": False}},
        "attribution": {"retrieval": 0, "generation": 0, "unattributed": 1},
        "guardrails": {"latency_mean_s": 0.2, "input_tokens": None, "output_tokens": None, "cost_usd": None,
                       "escalation_rate": 0.25, "empty_rate": 0.5, "error_rate": 0.25},
    }  # fmt: skip
    _rewrite_summary(path, old)
    loaded = load_run(path).summary
    assert loaded.errors == 1 and loaded.failing_attempts[0].failed == ["regex"]
    assert loaded.guardrails.escalation_rate == 0.25
    # what the old file did not record reads as unknown, never as 0
    assert loaded.guardrails.latency_p95_s is None and loaded.guardrails.cost_unknown_attempts is None
    assert loaded.retrieval is None and loaded.capture_warnings == []
    assert any("cost $n/a" in line for line in summary_lines(loaded))
    _rewrite_summary(path, {})  # a file written before the run summary existed
    assert load_run(path).summary == RunSummary()


def test_a_summary_with_an_unknown_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        RunSummary.model_validate({"attempts": 1, "pass_rate": 1.0})
    run = _run(summarize_attempts(_attempts(), [], run_id="r1"))
    path = tmp_path / "run.json"
    save_run(run, path)
    _rewrite_summary(path, {"guardrails": {"cost": 0.0}})
    with pytest.raises(RunFileError, match="summary"):
        load_run(path)
