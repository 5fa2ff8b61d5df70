import numpy as np
import pytest
from replaygate.replay._run_summary import summarize_attempts, summary_lines
from replaygate.replay._runfile import Attempt, Measures, ScenarioEntry


def attempt(index: int, status: str, latency_s: float) -> Attempt:
    return Attempt(
        scenario_id="s",
        index=index,
        status=status,  # type: ignore[arg-type]
        error="timed out after 5s" if status == "error" else None,
        measures=Measures(latency_s=latency_s),
    )


def test_latency_figures_are_those_of_the_scored_attempts_with_the_gates_percentile() -> None:
    latencies = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 2.0, 0.15]
    attempts = [attempt(i, "pass" if i % 2 else "fail", x) for i, x in enumerate(latencies)]
    attempts.append(attempt(len(latencies), "error", 5.0))  # a timeout: not a latency of the agent
    entry = ScenarioEntry(id="s", title="t", repeats=12)
    guardrails = summarize_attempts(attempts, [entry]).guardrails
    assert guardrails.latency_p95_s == pytest.approx(float(np.percentile(latencies, 95)))
    assert guardrails.latency_p95_s == pytest.approx(1.45)  # between 0.9 and 2.0, not either rank
    assert guardrails.latency_mean_s == pytest.approx(sum(latencies) / len(latencies))
    assert guardrails.error_rate == pytest.approx(1 / 12)
    only_errors = summarize_attempts([attempt(0, "error", 5.0)], [entry])
    assert only_errors.guardrails.latency_p95_s is None
    assert only_errors.guardrails.latency_mean_s is None
    text = "\n".join(summary_lines(only_errors))
    assert "latency mean n/a p95 n/a;" in text and "s#0: timed out after 5s" in text
