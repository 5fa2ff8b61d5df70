"""Judge specs in the run file: any registered judge is rebuilt from a run, and old run files still load."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay._errors import JudgeError
from replaygate.replay._judges import JudgeVerdict, create_judge, judges_from_fingerprint, register_judge
from replaygate.replay._runfile import JudgeSpec, load_run
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import Scenario


@register_judge("test_spec_strict")
class StrictJudge:
    """A custom judge with arguments of its own: only its spec can rebuild it."""

    model: str | None = "strict-rules"
    prompt_version = "strict-1"

    def __init__(self, task: str, floor: float = 0.5) -> None:
        self.name = task
        self.needs_question = task == "context_relevance"
        self.floor = floor

    async def judge(
        self, *, answer: str, chunks: Any, question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        return JudgeVerdict(score=max(self.floor, 0.9), verdict=True)


def _scenario() -> Scenario:
    return Scenario.model_validate(
        {
            "id": "spec-001",
            "title": "spec",
            "owner": "qa",
            "origin": "adversarial",
            "added": dt.date(2026, 11, 29),
            "turns": ["hello"],
            "repeats": 1,
            "checks": [{"type": "contains", "values": ["ok"]}],
        }
    )


def _target(turns: list[str], context: dict[str, Any], config: dict[str, Any], **_: Any) -> str:
    return "ok"


def _run(tmp_path: Path, judges: dict[str, Any]) -> Path:
    out = tmp_path / "run.json"
    run_suite(
        [_scenario()],
        _target,
        {},
        judges=judges,
        out_path=out,
        progress=False,
        artifacts=False,
        code_commit=None,
    )
    return out


def test_a_custom_judge_is_rebuilt_from_the_run_file(tmp_path: Path) -> None:
    judges = {
        "groundedness": create_judge("test_spec_strict", task="groundedness", floor=0.7),
        "context_relevance": create_judge("test_spec_strict", task="context_relevance"),
    }
    run = load_run(_run(tmp_path, judges))
    assert run.fingerprint.judges == {
        "context_relevance": JudgeSpec(name="test_spec_strict", args={"task": "context_relevance"}),
        "groundedness": JudgeSpec(name="test_spec_strict", args={"task": "groundedness", "floor": 0.7}),
    }
    rebuilt = judges_from_fingerprint(run.fingerprint)
    assert set(rebuilt) == set(judges)
    assert all(isinstance(j, StrictJudge) for j in rebuilt.values())
    assert rebuilt["groundedness"].floor == 0.7 and rebuilt["context_relevance"].needs_question  # type: ignore[attr-defined]


def test_built_in_judges_record_their_spec_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load_run(_run(tmp_path, {"groundedness": create_judge("offline_groundedness")}))
    assert run.fingerprint.judges == {"groundedness": JudgeSpec(name="offline_groundedness")}
    assert judges_from_fingerprint(run.fingerprint)["groundedness"].model == "offline"


def test_a_run_file_without_specs_still_loads_and_rebuilds_its_built_in_judges(tmp_path: Path) -> None:
    from replaygate.replay._judges import create_judges

    path = _run(tmp_path, create_judges("offline"))
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["fingerprint"]["judges"]  # a run file written before specs were recorded
    path.write_text(json.dumps(data), encoding="utf-8")
    old = load_run(path)
    assert old.fingerprint.judges is None
    assert {j.model for j in judges_from_fingerprint(old.fingerprint).values()} == {"offline"}


def test_a_judge_not_made_by_create_judge_records_no_spec(tmp_path: Path) -> None:
    handmade = StrictJudge("groundedness")  # not through create_judge: nothing says how to rebuild it
    run = load_run(_run(tmp_path, {"groundedness": handmade}))
    assert run.fingerprint.judges is None and run.fingerprint.judge_model == "strict-rules"
    with pytest.raises(JudgeError):  # the judge-model path cannot make this judge (no spec, no endpoint)
        judges_from_fingerprint(run.fingerprint)
