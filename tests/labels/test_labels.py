"""The reading queue, people's labels and judge agreement, with a judge planted to be wrong."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from replaygate.replay import JudgeVerdict, Scenario, load_run, run_suite

from replaygate.cli import cli
from replaygate.labels import (
    HumanLabel,
    LabelsError,
    append_label,
    draw_sample,
    judge_agreement,
    labels_path,
    read_labels,
)


class PlantedJudge:
    """Answers ``answer N``: truly supported when N is even; the judge is wrong whenever N % 5 == 0."""

    name = "groundedness"
    model = "planted-judge"
    prompt_version = "planted-1"
    needs_question = False

    async def judge(
        self, *, answer: str, chunks: Any, question: Any = None, mode: str = "answer"
    ) -> JudgeVerdict:
        n = int(answer.split()[-1])
        verdict = (n % 2 == 0) != (n % 5 == 0)
        return JudgeVerdict(score=1.0 if verdict else 0.0, verdict=verdict, detail=f"planted on {n}")


def truth(answer: str) -> bool:
    return int(answer.split()[-1]) % 2 == 0


def make_target() -> Any:
    counter = iter(range(10_000))
    lock = threading.Lock()

    def target(turns: list[str], context: dict[str, Any]) -> str:
        with lock:
            return f"answer {next(counter)}"

    return target


def scenario(sid: str = "planted-001") -> Scenario:
    return Scenario.model_validate(
        {
            "id": sid, "title": "t", "owner": "o", "origin": "original-eval", "added": "2026-12-01",
            "turns": ["q"], "judges": [{"type": "groundedness", "min_score": 0.5}], "repeats": 40,
            "threshold": 0.5,
        }
    )  # fmt: skip


def planted_run(path: Path) -> Any:
    return run_suite(
        [scenario()], make_target(), {}, repeats=40, concurrency=1, out_path=path, progress=False,
        judges={"groundedness": PlantedJudge()}, code_commit=None,
    )  # fmt: skip


def test_the_queue_is_reproducible_stratified_and_adds_newly_failing(tmp_path: Path) -> None:
    run = planted_run(tmp_path / "run.json")
    queue = draw_sample(run)
    assert len(queue) == 10 and queue == draw_sample(load_run(tmp_path / "run.json"))
    strata = {(i.status, i.verdict) for i in queue}
    assert strata == {(a.status, a.judges[0].passed) for a in run.attempts}  # every stratum is read
    assert len(draw_sample(run, size=25)) == 25 and len(draw_sample(run, size=500)) == 40
    with_report = draw_sample(run, newly_failing=["planted-001"])
    assert len(with_report) == 40 and {i.reason for i in with_report} == {"sample", "newly_failing"}


def _hand_kappa(pairs: list[tuple[bool, bool]]) -> float:
    n = len(pairs)
    both_yes = sum(1 for j, h in pairs if j and h)
    both_no = sum(1 for j, h in pairs if not j and not h)
    judge_yes = sum(1 for j, _ in pairs if j) / n
    human_yes = sum(1 for _, h in pairs if h) / n
    observed = (both_yes + both_no) / n
    expected = judge_yes * human_yes + (1 - judge_yes) * (1 - human_yes)
    return (observed - expected) / (1 - expected)


def test_labels_walk_agreement_and_gate_report(tmp_path: Path) -> None:
    base_path, head_path = tmp_path / "base.json", tmp_path / "head.json"
    planted_run(base_path)
    head = planted_run(head_path)
    queue = draw_sample(head, size=20)
    answers = {(a.scenario_id, a.index): a.answer or "" for a in head.attempts}
    verdicts = {(a.scenario_id, a.index): a.judges[0].passed for a in head.attempts}
    keys = [i.key for i in queue]
    wrong = sum(1 for k in keys if verdicts[k] != truth(answers[k]))
    assert 0 < wrong < len(keys)  # the judge is wrong on a known share of the sample
    runner = CliRunner()
    typed = "".join(("y" if truth(answers[k]) else "n") + "\nlooked at it\n" for k in keys[:7]) + "q\n"
    result = runner.invoke(cli, ["label", str(head_path), "--by", "ana", "--size", "20"], input=typed)
    assert result.exit_code == 0, result.output
    assert (
        "Is the answer supported by the retrieved context?" in result.output and "7 label(s)" in result.output
    )
    rest = "".join(("y" if truth(answers[k]) else "n") + "\n\n" for k in keys[7:])
    result = runner.invoke(cli, ["label", str(head_path), "--by", "ana", "--size", "20"], input=rest)
    assert result.exit_code == 0 and "13 label(s)" in result.output  # it continued where ana stopped
    labels = read_labels(labels_path(head_path))
    assert len(labels) == 20 and all(lab.by == "ana" and lab.at.endswith("Z") for lab in labels)
    assert labels[0].note == "looked at it" and labels[0].judge_model == "planted-judge"
    expected = _hand_kappa([(verdicts[k], truth(answers[k])) for k in keys])
    result = runner.invoke(cli, ["judge", "agreement", str(head_path), "--json"])
    doc = json.loads(result.output)
    [row] = doc["judges"]
    assert row["n"] == 20 and row["judge"] == "groundedness" and row["prompt_version"] == "planted-1"
    assert row["kappa"] == pytest.approx(expected, abs=1e-12)
    assert row["low"] <= row["kappa"] <= row["high"]
    assert row["agreement"] == pytest.approx(1 - wrong / 20)
    policy = tmp_path / "policy.yaml"
    policy.write_text("judge_calibration: {min_kappa: 0.99, min_labels: 10}\n", encoding="utf-8")
    out = tmp_path / "report"
    result = runner.invoke(cli, ["gate", "--policy", str(policy), "--baseline", str(base_path),
                                 "--candidate", str(head_path), "--out", str(out)])  # fmt: skip
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    [entry] = report["judge_agreement"]
    assert entry["agreement"]["kappa"] == pytest.approx(expected, abs=1e-12)
    assert entry["calibrated"] is False and "kappa" in entry["reason"]
    assert any("uncalibrated" in n for n in report["notes"])
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "Judge agreement with people" in markdown and f"{expected:.2f}" in markdown
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Judge agreement with people" in html and "uncalibrated" in html
    policy.write_text(f"judge_calibration: {{min_kappa: {expected - 0.01:.3f}, min_labels: 10}}\n")
    runner.invoke(cli, ["gate", "--policy", str(policy), "--baseline", str(base_path), "--candidate",
                        str(head_path), "--out", str(out)])  # fmt: skip
    assert json.loads((out / "report.json").read_text())["judge_agreement"][0]["calibrated"] is True


def test_a_new_judge_prompt_needs_new_labels(tmp_path: Path) -> None:
    label = HumanLabel(
        run_id="r", scenario_id="s", index=0, judge="groundedness", judge_model="m",
        judge_prompt_version="v1", judge_verdict=True, human=True, by="ana", at="2026-12-01T10:00:00Z",
    )  # fmt: skip
    from replaygate.labels import calibration

    rows = judge_agreement([label])
    [status] = calibration(rows, [("groundedness", "m", "v2")], min_labels=1)
    assert not status.calibrated and "earlier prompt or model" in status.reason
    [same] = calibration(rows, [("groundedness", "m", "v1")], min_labels=1)
    assert same.calibrated


def test_labels_file_is_append_only_and_bad_lines_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "run.json.labels.jsonl"
    label = HumanLabel(
        run_id="r", scenario_id="s", index=0, judge="checks", human=False, by="bo", at="2026-12-01T10:00:00Z"
    )
    append_label(path, label)
    append_label(path, label.model_copy(update={"human": True}))
    with path.open("a") as f:
        f.write('{"run_id": "r", "scen')  # a torn last line: skipped
    assert [lab.human for lab in read_labels(path)] == [False, True]
    path.write_text('not json\n{"also": "bad"}\n')
    with pytest.raises(LabelsError, match=r"labels.jsonl:1"):
        read_labels(path)
