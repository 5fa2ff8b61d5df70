"""`llm_calls: none`: the target configuration (or a scenario tag) declares the agent makes no LLM call."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import (
    NO_LLM_CALL,
    RunFile,
    Scenario,
    TargetError,
    run_suite,
    summary_lines,
)
from replaygate.replay._measures import declares_no_llm_calls


def _scenario(sid: str, **extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": sid,
        "title": f"scenario {sid}",
        "owner": "qa",
        "origin": "original-eval",
        "added": dt.date(2026, 12, 1),
        "turns": [f"question of {sid}"],
        "repeats": 2,
        "checks": [{"type": "contains", "values": ["rules"]}],
    }
    data.update(extra)
    return Scenario.model_validate(data)


def rule_engine(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> Any:
    """A deterministic agent: answers from rules, calls no model."""
    if context.get("fail"):
        raise RuntimeError("the rule table is missing")
    return "Answered from the rules."


def _run(tmp_path: Path, config: dict[str, Any], *scenarios: Scenario) -> RunFile:
    return run_suite(
        list(scenarios or [_scenario("a")]),
        rule_engine,
        config,
        out_path=tmp_path / "run.json",
        judges={},
        progress=False,
        code_commit=None,
    )


def test_without_a_declaration_an_attempt_without_llm_spans_has_unknown_cost(tmp_path: Path) -> None:
    run = _run(tmp_path, {"model": "none"})
    assert [a.status for a in run.attempts] == ["pass", "pass"]
    for a in run.attempts:
        assert a.measures.cost_usd is None and a.measures.input_tokens is None and a.measures.llm_calls == 0
    assert run.summary.guardrails.cost_usd is None
    assert NO_LLM_CALL in run.summary.guardrails.cost_note


def test_the_targets_declaration_makes_a_run_without_llm_spans_cost_zero(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        {"model": "none", "llm_calls": "none"},
        _scenario("a"),
        _scenario("b", context={"fail": True}),
    )
    by_status = {a.status for a in run.attempts if a.scenario_id == "b"}
    assert by_status == {"error"}
    for a in run.attempts:  # the errored attempts too: the agent makes no LLM call at all
        assert a.measures.cost_usd == 0.0 and a.measures.llm_calls == 0
    g = run.summary.guardrails
    assert g.cost_usd == 0.0 and g.cost_usd_mean == 0.0 and g.cost_unknown_attempts == 0 and g.cost_note == ""
    text = "\n".join(summary_lines(run.summary))
    assert "cost $0.0000" in text and NO_LLM_CALL not in text
    # the declaration is part of the configuration: it is in the fingerprint's config hash
    other = _run(tmp_path / "b", {"model": "none"})
    assert other.fingerprint.agent_config_hash != run.fingerprint.agent_config_hash


def test_the_scenario_tag_still_declares_it_for_one_scenario(tmp_path: Path) -> None:
    run = _run(tmp_path, {"model": "none"}, _scenario("a", tags={"llm_calls": "none"}), _scenario("b"))
    costs = {a.scenario_id: a.measures.cost_usd for a in run.attempts}
    assert costs == {"a": 0.0, "b": None}


def test_any_other_value_in_the_configuration_is_an_error_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="llm_calls is 'few'; the only value is 'none'"):
        _run(tmp_path, {"llm_calls": "few"})
    assert not (tmp_path / "run.json").exists()
    assert not declares_no_llm_calls({"llm_calls": "few"})  # a scenario tag may hold any text
    assert declares_no_llm_calls({"llm_calls": "none"}) and not declares_no_llm_calls({})
