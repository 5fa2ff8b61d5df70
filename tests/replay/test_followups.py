"""Simulated follow-up turns: the support agent's order-memory weakness, found only with follow-ups."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import (
    LlmSimulator,
    ScenarioError,
    ScriptedSimulator,
    load_run,
    load_scenarios,
    parse_scenario,
    run_suite,
    scenario_content_hash,
)

from tests.replay.conftest import FakeOpenAI, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.support_agent import load_config  # noqa: E402

FOLLOWUPS = ROOT / "examples" / "support_agent" / "followups"
SYNC_TARGET = "examples.support_agent.target:run_session"
ASYNC_TARGET = "examples.support_agent.target:arun_session"


def _clean_config(seed: int = 5) -> dict[str, Any]:
    """The production configuration without planted failures or latency: only the weakness remains."""
    config = load_config("production").to_dict()
    config.update(latency_ms=0, seed=seed, rates={k: 0.0 for k in config["rates"]})
    return config


def _by_scenario(run: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for attempt in run.attempts:
        out.setdefault(attempt.scenario_id, []).append(attempt)
    return out


@pytest.mark.parametrize("target", [SYNC_TARGET, ASYNC_TARGET])
def test_scripted_followups_find_the_weakness_the_single_turn_scenario_misses(
    target: str, tmp_path: Path
) -> None:
    scenarios = load_scenarios(FOLLOWUPS)
    out = tmp_path / "run.json"
    run = run_suite(
        scenarios, target, _clean_config(), repeats=3, concurrency=2, out_path=out, progress=False,
        code_commit=None, seed=7,
    )  # fmt: skip
    attempts = _by_scenario(run)
    single, followed = attempts["order-memory-single-turn-001"], attempts["order-memory-followup-001"]
    assert [a.status for a in single] == ["pass"] * 3
    assert all(a.conversation is None for a in single)
    assert [a.status for a in followed] == ["fail"] * 3
    for attempt in followed:
        conv = attempt.conversation
        assert conv is not None and len(conv) >= 3
        assert conv[0].user == "Where is my order ORD-10048?" and not conv[0].generated
        assert all(t.generated for t in conv[1:])
        asked_again = [i + 1 for i, t in enumerate(conv) if re.search(r"(?i)order number", t.answer or "")]
        assert asked_again and asked_again[0] >= 3  # never in turn one: only a follow-up shows it
        failed = [c.name for c in attempt.checks if not c.passed]
        assert f"forbidden_output_regex@turn{asked_again[0]}" in failed
        assert "expected_label@turn1" not in failed
    assert run.fingerprint.simulator == {
        "kind": "scripted", "model": None, "prompt_version": "scripted-1", "temperature": None, "seed": 7,
    }  # fmt: skip
    saved = load_run(out)  # the run file keeps every generated turn
    assert [a.conversation for a in saved.attempts] == [a.conversation for a in run.attempts]
    artifacts = [json.loads(line) for line in Path(followed[0].artifact_path or "").read_text().splitlines()]
    conv_lines = [a["conversation"] for a in artifacts if a["scenario_id"] == "order-memory-followup-001"]
    assert conv_lines and all(len(c) >= 3 and c[1]["generated"] for c in conv_lines)


def test_scripted_simulator_is_reproducible_with_its_seed(tmp_path: Path) -> None:
    scenarios = [s for s in load_scenarios(FOLLOWUPS) if s.followups]

    def conversations(seed: int, name: str) -> list[Any]:
        run = run_suite(
            scenarios, SYNC_TARGET, _clean_config(), repeats=4, concurrency=2, out_path=tmp_path / name,
            progress=False, code_commit=None, simulator=ScriptedSimulator(seed),
        )  # fmt: skip
        return [[t.user for t in a.conversation or []] for a in run.attempts]

    first = conversations(1, "a.json")
    assert first == conversations(1, "b.json")
    assert len({tuple(c) for c in first}) > 1  # the k attempts do not all say the same


def _fenced(text: str) -> list[tuple[str, str]]:
    return re.findall(r"<<<UNTRUSTED-([0-9a-f]+)\n(.*?)\nUNTRUSTED-\1>>>", text, flags=re.S)


def _user_model(body: dict[str, Any]) -> Reply:
    """A stand-in for a model playing the customer: reads the last fenced answer, writes the next turn."""
    user = body["messages"][1]["content"]
    answers = [text for _, text in _fenced(user)]
    last = answers[-1] if answers else ""
    if re.search(r"(?i)order number", last):
        reply = {"message": "", "done": True}
    elif re.search(r"(?i)return|refund", last):
        reply = {"message": "Alright, please refund it.", "done": False}
    else:
        reply = {"message": "Could I return it if it doesn't fit my needs?", "done": False}
    return 200, completion(reply), 0.0


def test_llm_simulator_finds_the_weakness_against_a_local_endpoint(
    openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    openai_server.respond = _user_model
    simulator = LlmSimulator("user-sim-1", openai_server.url, temperature=0.9)
    run = run_suite(
        load_scenarios(FOLLOWUPS), SYNC_TARGET, _clean_config(), repeats=2, concurrency=2,
        out_path=tmp_path / "llm.json", progress=False, code_commit=None, simulator=simulator,
    )  # fmt: skip
    attempts = _by_scenario(run)
    assert [a.status for a in attempts["order-memory-single-turn-001"]] == ["pass", "pass"]
    followed = attempts["order-memory-followup-001"]
    assert [a.status for a in followed] == ["fail", "fail"]
    assert all([t.user for t in a.conversation or []][1:] == [
        "Could I return it if it doesn't fit my needs?", "Alright, please refund it."
    ] for a in followed)  # fmt: skip
    fp = run.fingerprint.simulator
    assert fp is not None and fp["model"] == "user-sim-1" and fp["temperature"] == 0.9
    assert fp["prompt_version"].startswith("llm-user-1+")
    body = openai_server.requests[-1]
    assert body["model"] == "user-sim-1" and body["temperature"] == 0.9
    assert body["response_format"]["json_schema"]["strict"] is True
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    fences = _fenced(user)
    assert fences and len({nonce for nonce, _ in fences}) == 1 and fences[0][0] in system
    assert "ORD-10048 (usb-c charger)" in fences[0][1]  # the agent's answer sits inside the fence
    assert "Find out whether the shipped order" in user.split("<<<")[0]  # the goal, outside any fence


@pytest.mark.parametrize(
    "reply", [(500, {"error": "down"}, 0.0), (200, completion({"text": "not the schema"}), 0.0)]
)
def test_a_failing_simulator_makes_the_attempt_an_error(
    reply: Reply, openai_server: FakeOpenAI, tmp_path: Path
) -> None:
    openai_server.respond = lambda body: reply
    scenarios = [s for s in load_scenarios(FOLLOWUPS) if s.followups]
    run = run_suite(
        scenarios, SYNC_TARGET, _clean_config(), repeats=2, concurrency=2, out_path=tmp_path / "e.json",
        progress=False, code_commit=None, simulator=LlmSimulator("m", openai_server.url),
    )  # fmt: skip
    assert [a.status for a in run.attempts] == ["error", "error"]
    assert all((a.error or "").startswith("simulated user failed:") for a in run.attempts)
    assert run.summary.errors == 2


_BASE = """
id: f-001
title: t
owner: o
origin: original-eval
added: 2026-12-01
turns: [hi]
"""


def test_followups_and_turn_targets_are_validated_and_hashed() -> None:
    plain = parse_scenario(_BASE, "f-001.yaml")
    with_followups = parse_scenario(_BASE + "followups: {max_turns: 2, goal: g}\n", "f-001.yaml")
    assert scenario_content_hash(plain) != scenario_content_hash(with_followups)
    last = parse_scenario(_BASE + "checks: [{type: contains, values: [x], turn: last}]\n", "f-001.yaml")
    bare = parse_scenario(_BASE + "checks: [{type: contains, values: [x]}]\n", "f-001.yaml")
    assert scenario_content_hash(last) == scenario_content_hash(bare)
    with pytest.raises(ScenarioError, match="turn 3"):
        parse_scenario(_BASE + "checks: [{type: contains, values: [x], turn: 3}]\n", "f-001.yaml")
    for bad in ("followups: {max_turns: 0, goal: g}", "followups: {max_turns: 2}",
                "followups: {max_turns: 2, goal: g, script: [{when: '(', say: [x]}]}",
                "followups: {max_turns: 2, goal: g, surprise: 1}"):  # fmt: skip
        with pytest.raises(ScenarioError):
            parse_scenario(_BASE + bad + "\n", "f-001.yaml")


def test_promote_from_run_freezes_a_simulated_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from replaygate.replay import load_scenario

    from replaygate.cli import main
    from replaygate.golden import GoldenSet, lint

    golden = tmp_path / "golden"
    shutil.copytree(FOLLOWUPS, golden)
    scenarios = load_scenarios(golden)
    out = tmp_path / "run.json"
    run = run_suite(
        scenarios, SYNC_TARGET, _clean_config(), repeats=2, out_path=out, progress=False, code_commit=None
    )
    attempt = next(a for a in run.attempts if a.scenario_id == "order-memory-followup-001" and a.index == 1)
    args = ["promote", "--from-run", str(out), f"{attempt.scenario_id}#1", "--owner", "li",
            "--origin", "near-miss", "--golden", str(golden), "--author", "li", "--json"]  # fmt: skip
    main(args)
    doc = json.loads(capsys.readouterr().out)
    assert doc["created"] is True and doc["id"] == "order-memory-followup-001-frozen-1"
    frozen = load_scenario(doc["path"])
    assert frozen.followups is None and frozen.origin == "near-miss" and frozen.owner == "li"
    assert frozen.turns == [t.user for t in attempt.conversation or []]
    followed = next(s for s in scenarios if s.followups)
    assert frozen.source_trace == attempt.trace_id
    assert [c.type for c in frozen.checks] == [c.type for c in followed.checks]
    assert [p for p in lint(GoldenSet(golden)) if p.severity == "error"] == []
    main(args)
    assert json.loads(capsys.readouterr().out)["created"] is False  # freezing twice finds the first
    replay = run_suite([frozen], SYNC_TARGET, _clean_config(), repeats=2, out_path=tmp_path / "r.json",
                       progress=False, code_commit=None)  # fmt: skip
    assert [a.status for a in replay.attempts] == ["fail", "fail"]  # the fixture reproduces the weakness
    assert all(a.conversation is None for a in replay.attempts)
    single = next(s for s in load_scenarios(golden) if s.id == "order-memory-single-turn-001")
    with pytest.raises(SystemExit) as exc:
        main(["promote", "--from-run", str(out), f"{single.id}#0", "--owner", "li", "--origin", "near-miss",
              "--golden", str(golden)])  # fmt: skip
    assert exc.value.code == 3
    assert "no simulated conversation" in capsys.readouterr().err
