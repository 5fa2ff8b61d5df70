"""``python -m examples.demo`` end to end, in a subprocess, on a store in a temporary directory."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from replaygate.instrumentation import TraceStore

from examples.demo import STAGES, Demo, main, prepare

ROOT = Path(__file__).resolve().parents[2]

#: What differs between two runs of the same story: ids, clock times, durations, measured latencies.
VARYING = [
    (re.compile(r"run-\d{8}T\d{6}Z-[0-9a-f]+"), "RUN"),
    (re.compile(r"[0-9a-f]{8,}"), "ID"),
    (re.compile(r"\d\d:\d\d:\d\d"), "TIME"),
    (re.compile(r"seconds │ +\d+\.\d"), "seconds S"),
]


def _story(text: str) -> str:
    # Latencies are measured on this machine: a loaded one can add a latency finding to a gate report.
    kept = [line for line in text.splitlines() if "latency" not in line]
    flat = " ".join(" ".join(kept).split())
    for pattern, replacement in VARYING:
        flat = pattern.sub(replacement, flat)
    return flat


@pytest.mark.timeout(480)  # two whole demos, each ~30 s on an idle 2-core machine
def test_demo_twice_in_a_row_tells_the_same_story_from_a_clean_folder(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SUPPORT_AGENT_", "OTEL_", "LANGFUSE_", "REPLAYGATE_"))
    }
    env["PYTHONPATH"] = str(ROOT)
    outputs = []
    for _ in range(2):  # as `make demo` twice in a row: two processes, one working directory
        result = subprocess.run(
            [sys.executable, "-m", "examples.demo", "--requests", "100"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    first, second = outputs
    assert _story(first) == _story(second)
    run = " ".join(first.split())
    assert "Demo folder .replaygate/demo/ (store, golden-set copy, runs, reports): starting clean" in run
    assert "Stage 1: capture production traffic" in run and "Stage 2: failure inbox" in run
    assert "Captured 100 traces in this run (100 in .replaygate/demo/replaygate.db)" in run
    assert (
        "Not planted in support-prod-2026-11: refund_over_limit" in run and "planted refund_over" not in run
    )
    assert "Failure candidates by reason" in run and "negative_feedback" in run
    # the release loop: promotion (idempotent), lint, replay, the gate blocks then passes, canary
    assert "created " in run and "already promoted as " in run
    assert "('" not in run and "',)" not in run  # turns are quoted text, not a Python tuple
    assert "0 error(s)" in run  # the golden set with the promoted scenarios lints clean
    assert "BLOCK;" in run and "[rule-1] must-pass scenario refund-over-limit-001 newly fails" in run
    assert "PASS;" in run or "NEEDS-SIGN-OFF" in run.upper()
    assert "signed by release-bob" in run
    assert "start: signed gate pass; now canary 10%" in run
    assert "widen:" in run
    assert "automatic rollback: escalation rate is confidently worse than the tolerance" in run
    assert "Rolled back automatically: the escalation rate is confidently worse than the tolerance" in run
    assert "state: rolled back" in run
    # every `canary simulate` that ran was printed with its own seed
    simulated = re.findall(r"\$ replaygate canary simulate --batches 1 --batch-size 500 --seed (\d+)", run)
    batches = re.findall(r"(\d+) requests \(\d+ on the candidate\) in 1 batches", run)
    assert simulated == [str(i) for i in range(1, len(simulated) + 1)] and len(batches) == len(simulated)
    assert "Audit log: replaygate canary audit --store .replaygate/demo/replaygate.db" in run
    store = tmp_path / ".replaygate" / "demo" / "replaygate.db"
    with TraceStore(store) as trace_store:
        traffic = [
            t for t in trace_store.list_traces(limit=None) if (t.summary.session_id or "").startswith("sim-")
        ]
        assert len(traffic) == 100  # the second run started clean: only its own traffic
        failures = [f for f in trace_store.failures(limit=None) if f in traffic]
        reasons = {r for f in failures for r in f.summary.failure_reasons}
        assert {"escalation", "negative_feedback"} <= reasons
    assert not list((store.parent / "runs").glob("*.journal"))  # completed runs leave no journal
    audit = subprocess.run(
        [str(Path(sys.executable).with_name("replaygate")), "canary", "audit", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = audit.stdout.splitlines()
    assert audit.returncode == 0 and " rollback " in lines[0] and " start " in lines[-1]  # newest first


def test_a_store_given_is_reused_and_said_so(tmp_path, capsys):
    store = tmp_path / "mine.db"
    with TraceStore(store):
        pass
    demo = Demo(store=store, work=tmp_path / "demo", reused=True)
    prepare(demo)
    out = " ".join(capsys.readouterr().out.split())
    assert f"Reusing the store {store} (0 traces already in it)" in out
    assert store.exists()
    fresh = Demo(store=tmp_path / "d" / "replaygate.db", work=tmp_path / "d")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("previous demo")
    prepare(fresh)
    assert not (tmp_path / "d").exists()  # removed; stage 1 makes it anew


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
