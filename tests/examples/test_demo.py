"""``python -m examples.demo`` end to end, in a subprocess, on a store in a temporary directory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from replaygate.instrumentation import TraceStore

from examples.demo import STAGES, main

ROOT = Path(__file__).resolve().parents[2]

# Runs the demo twice in one interpreter (a re-run against the same store), separated by a marker.
SCRIPT = """
import sys
from examples.demo import main
first = main(sys.argv[1:])
print("=== second run ===", flush=True)
second = main([a for a in sys.argv[1:] if a not in ("--seed", "7")])
sys.exit(first or second)
"""


@pytest.mark.timeout(300)  # the whole demo, twice, on a shared 2-core machine
def test_demo_captures_traffic_lists_failure_candidates_and_runs_again(tmp_path):
    store = tmp_path / "demo" / "replaygate.db"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SUPPORT_AGENT_", "OTEL_", "LANGFUSE_"))
    }
    env["REPLAYGATE_STORE"] = str(tmp_path / "not-this-one.db")  # --store wins over the environment
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, "--store", str(store), "--requests", "100", "--seed", "7"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first, second = (" ".join(part.split()) for part in result.stdout.split("=== second run ==="))
    for run in (first, second):
        assert "Stage 1: capture production traffic" in run and "Stage 2: failure inbox" in run
        assert "Captured 100 traces in this run" in run
        assert "Failure candidates by reason" in run
        # the release loop: promotion (idempotent), lint, replay, the gate blocks then passes, canary
        assert "created " in run and "already promoted as " in run
        assert "0 error(s)" in run  # the golden set with the promoted scenarios lints clean
        assert "BLOCK;" in run and "[rule-1] must-pass scenario refund-over-limit-001 newly fails" in run
        assert "PASS;" in run or "NEEDS-SIGN-OFF" in run.upper()
        assert "signed by release-bob" in run
        assert "start: signed gate pass; now canary 10%" in run
        assert "widen:" in run
        assert "automatic rollback: escalation rate is confidently worse than the tolerance" in run
        assert "Rolled back automatically: the escalation rate is confidently worse than the tolerance" in run
        assert "state: rolled back" in run
        # the harness: failure classes, simulated follow-ups, a reading queue with judge agreement
        assert "Planted failure kinds and the classes the inbox found" in run
        assert "order-memory-followup-001" in run and "forbidden_output_regex@turn" in run
        assert "created order-memory-followup-001-frozen-0" in run
        assert "Judge agreement with people" in run
    assert "negative_feedback" in first
    assert not (tmp_path / "not-this-one.db").exists()
    with TraceStore(store) as trace_store:
        traffic = [
            t for t in trace_store.list_traces(limit=None) if (t.summary.session_id or "").startswith("sim-")
        ]
        assert len(traffic) == 200  # both runs' production traffic, nothing lost
        failures = [f for f in trace_store.failures(limit=None) if f in traffic]
        assert failures and all(f.summary.failure_reasons for f in failures)
        reasons = {r for f in failures for r in f.summary.failure_reasons}
        assert {"escalation", "negative_feedback"} <= reasons


def test_stages_are_a_list_later_issues_extend():
    names = [name for name, _ in STAGES]
    assert names[:2] == ["capture production traffic", "failure inbox"]
    assert all(callable(fn) for _, fn in STAGES)


def test_bad_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--config", "no-such-config"])
    assert exc.value.code == 2 and "no-such-config" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--requests", "0"])
