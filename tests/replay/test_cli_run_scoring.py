"""``replaygate run`` as a user sees it: retrieval metrics and the threshold no-op flag in the summary,
the LLM judge through the CLI (a judge failure is an error, never a pass), and --resume with its judges."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay._journal import restore_journal
from replaygate.replay._runfile import load_run
from replaygate.replay._scenario import Scenario, save_scenario

from tests.replay.conftest import FakeOpenAI, cli, completion

TARGETS = textwrap.dedent("""
    from replaygate.instrumentation import record_retrieval

    DOCS = [
        {"id": "refund-limits#1", "score": 0.9, "text": "Refunds above $200 are escalated to a person."},
        {"id": "shipping#2", "score": 0.4, "text": "Shipping takes 3 to 5 business days."},
    ]

    def answer(turns, context, config):
        kept = [d for d in DOCS if d["score"] >= config["threshold"]]
        record_retrieval(turns[-1], kept, data_source="kb", threshold=config["threshold"],
                         filtered=len(DOCS) - len(kept))
        return context["answer"]
""")


def scenario(sid: str, answer: str, relevant: list[str], **extra: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "id": sid,
            "title": sid,
            "owner": "qa",
            "origin": "original-eval",
            "added": dt.date(2026, 11, 29),
            "turns": ["Can I get a $450 refund?"],
            "context": {"answer": answer},
            "repeats": 2,
            "checks": [{"type": "contains", "values": ["escalated"]}],
            "retrieval": {"relevant": relevant, "k": 2, "confirmed": True},
            **extra,
        }
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rg_scoring_targets.py").write_text(TARGETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for name in ("REPLAYGATE_GOLDEN", "REPLAYGATE_JUDGE_BASE_URL", "REPLAYGATE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    golden = tmp_path / "golden"
    golden.mkdir()
    good = "Refunds above $200 are escalated to a person."
    save_scenario(scenario("a-found", good, ["refund-limits"]), golden)
    # The relevant document is not in the index: a retrieval failure.
    save_scenario(scenario("b-missing", "Refunds up to $200 are instant.", ["refund-policy"]), golden)
    judged = scenario("c-judged", good, ["refund-limits"], judges=[{"type": "groundedness"}])
    (tmp_path / "golden-judged").mkdir()
    save_scenario(judged, tmp_path / "golden-judged")
    return tmp_path


def run_args(threshold: float, out: str, golden: str = "golden") -> list[str]:
    Path(f"cfg-{threshold}.yaml").write_text(f"threshold: {threshold}\n")
    return ["run", "--target", "rg_scoring_targets:answer", "--config", f"cfg-{threshold}.yaml"] + [
        "--golden",
        golden,
        "--out",
        out,
    ]


def test_summary_shows_retrieval_metrics_attribution_and_a_noop_threshold(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(run_args(0.1, "noop.json")) == 0
    out = capsys.readouterr().out
    assert "4 attempts: 0 errors, 2 fails, 2 passes" in out
    assert "b-missing#0: contains [retrieval failure]" in out
    assert "failure attribution: retrieval 2, generation 0" in out
    assert "retrieval (4 attempts with labels): hit rate@k 0.50, MRR@k 0.50, recall@k 0.50" in out
    assert "  a-found @k=2: hit 1.00, MRR 1.00, recall 1.00, nDCG 1.00 [threshold no-op]" in out
    assert "  b-missing @k=2: hit 0.00, MRR 0.00, recall 0.00, nDCG 0.00 [threshold no-op]" in out
    assert "retrieval threshold 0.1: NO-OP, it filtered no chunk in any of 4 attempts" in out

    assert cli(run_args(0.5, "filtering.json")) == 0
    out = capsys.readouterr().out
    assert "retrieval threshold 0.5: filtered 4 chunks, in 4 of 4 attempts" in out
    assert "NO-OP" not in out and "[threshold no-op]" not in out
    run = load_run(project / "filtering.json")
    assert {(a.retrieval.filtered, a.retrieval.threshold_noop) for a in run.attempts if a.retrieval} == {
        (1, False)
    }


def test_llm_judge_failure_through_the_cli_is_an_error_never_a_pass(
    project: Path, openai_server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    openai_server.respond = lambda body: (200, completion("I think it is SUPPORTED"), 0.0)
    judge = ["--judge", "llm", "--judge-model", "judge-m", "--judge-base-url", openai_server.url]
    code = cli(run_args(0.1, "bad-judge.json", "golden-judged") + judge + ["--judge-timeout", "5"])
    out, err = capsys.readouterr()
    assert code == 1 and "2 of 2 attempts errored" in err
    assert "2 attempts: 2 errors, 0 fails, 0 passes" in out
    assert "c-judged#0: scenario c-judged: judge groundedness (judge-m) failed: JudgeError" in out
    assert len(openai_server.requests) == 4  # each attempt: one call and one retry
    assert all("Can I get" not in json.dumps(r) for r in openai_server.requests)  # no question text

    supported = {"verdict": "supported", "score": 1.0, "document_ids": ["refund-limits#1"], "reason": "r"}
    openai_server.respond = lambda body: (200, completion(supported), 0.0)
    assert cli(run_args(0.1, "judged.json", "golden-judged") + judge + ["--quiet"]) == 0
    run = load_run(project / "judged.json")
    assert {a.status for a in run.attempts} == {"pass"}
    assert run.fingerprint.judge_model == "judge-m"
    assert run.fingerprint.judge_prompt_version and "llm-" in run.fingerprint.judge_prompt_version


def test_resume_rebuilds_the_runs_judges_and_refuses_others(
    project: Path,
    openai_server: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    supported = {"verdict": "supported", "score": 1.0, "document_ids": ["refund-limits#1"], "reason": "r"}
    openai_server.respond = lambda body: (200, completion(supported), 0.0)
    args = run_args(0.1, "run.json", "golden-judged") + ["--quiet"]
    assert cli(args + ["--judge-model", "judge-m", "--judge-base-url", openai_server.url]) == 0
    whole = load_run(project / "run.json")
    jpath = restore_journal(project / "run.json")  # removed when the run completed
    jpath.write_bytes(b"\n".join(jpath.read_bytes().split(b"\n")[:2]) + b"\n")  # killed after one attempt
    calls = len(openai_server.requests)

    assert cli(args + ["--resume", "--judge", "offline"]) == 3
    assert "cannot resume: the run was judged by judge-m" in capsys.readouterr().err
    assert cli(args + ["--resume", "--judge-model", "other-m", "--judge-base-url", openai_server.url]) == 3
    capsys.readouterr()

    monkeypatch.setenv("REPLAYGATE_JUDGE_BASE_URL", openai_server.url)
    assert cli(args + ["--resume"]) == 0  # no --judge: the run's own LLM judge, rebuilt from its fingerprint
    resumed = load_run(project / "run.json")
    assert resumed.run_id == whole.run_id and resumed.fingerprint.judge_model == "judge-m"
    assert [(a.scenario_id, a.index, a.status) for a in resumed.attempts] == [
        ("c-judged", 0, "pass"),
        ("c-judged", 1, "pass"),
    ]
    assert len(openai_server.requests) == calls + 1  # only the missing attempt was judged again
    assert openai_server.requests[-1]["model"] == "judge-m"


def test_judge_options_that_contradict_each_other_exit_3(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(run_args(0.1, "x.json") + ["--judge", "offline", "--judge-model", "m"]) == 3
    assert "--judge-model and --judge-base-url go with --judge llm" in capsys.readouterr().err
    assert cli(run_args(0.1, "x.json") + ["--judge-timeout", "0"]) == 3
    assert cli(run_args(0.1, "x.json") + ["--resume"]) == 3
    assert "no journal to resume from" in capsys.readouterr().err
