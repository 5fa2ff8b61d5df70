"""Issue 14: checks that cannot be switched off or stall a run.

Regexes run on RE2 (linear time); a pattern RE2 cannot run is stopped at the attempt's deadline and the
attempt is an ``error``, never a fail or a pass. ``tool_args`` bounds are finite, and an agent's value
is parsed strictly: ``"nan"``, ``"inf"``, ``"1e999"`` are outside every bound.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import ToolCall, TraceSummary
from replaygate.replay._checks import CheckContext, run_check
from replaygate.replay._errors import ScenarioError
from replaygate.replay._regex import (
    CheckBudgetError,
    Found,
    ScenarioRegex,
    check_deadline,
    needs_backtracking,
)
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import Scenario, parse_scenario
from replaygate.replay._scenario_checks import ToolArgsCheck

ANSWER = "a" * 31 + "!"  # the reviewer's 31-character answer
REDOS_RE2 = "^(a+)+$"  # catastrophic in Python's re, linear in RE2
REDOS_BACKTRACKING = "^(?=(a+)+$)a"  # look-ahead: RE2 cannot run it, Python's re backtracks for minutes


def scenario(sid: str, checks: list[dict[str, Any]]) -> Scenario:
    return Scenario.model_validate(
        {
            "id": sid,
            "title": sid,
            "owner": "qa",
            "origin": "adversarial",
            "added": dt.date(2026, 11, 29),
            "turns": ["say a lot of a"],
            "repeats": 1,
            "checks": checks,
        }
    )


def redos_target(turns: list[str], context: dict[str, Any], config: dict[str, Any], **_: Any) -> str:
    return ANSWER


def summary(*calls: ToolCall) -> TraceSummary:
    return TraceSummary(
        trace_id="t" * 32,
        session_id=None,
        user_id=None,
        agent_name="a",
        agent_version="1",
        turns=("q",),
        output="ok",
        outputs=("ok",),
        error=None,
        chunks=(),
        tool_calls=calls,
        llm_calls=(),
        escalated=False,
        escalation_reason=None,
        clarification=False,
        failure_reasons=(),
        latency_s=0.1,
        input_tokens=None,
        output_tokens=None,
    )


def test_the_reviewers_pattern_is_linear_on_re2() -> None:
    rx = ScenarioRegex(REDOS_RE2)
    assert rx.linear and not needs_backtracking(REDOS_RE2)
    t0 = time.perf_counter()
    assert rx.search("a" * 200_000 + "!") is None
    assert time.perf_counter() - t0 < 1.0


def test_a_backtracking_pattern_is_stopped_at_the_deadline() -> None:
    rx = ScenarioRegex(REDOS_BACKTRACKING)
    assert not rx.linear and needs_backtracking(REDOS_BACKTRACKING)
    assert rx.search("aaa") is not None  # it still works on small inputs, in a child process
    t0 = time.perf_counter()
    with check_deadline(time.monotonic() + 1.0), pytest.raises(CheckBudgetError, match="deadline"):
        rx.search(ANSWER)
    assert time.perf_counter() - t0 < 5.0


@pytest.mark.parametrize(
    ("pattern", "status"), [(REDOS_RE2, "fail"), (REDOS_BACKTRACKING, "error")], ids=["re2", "backtracking"]
)
def test_redos_finishes_within_the_attempt_timeout(tmp_path: Path, pattern: str, status: str) -> None:
    s = scenario("redos-001", [{"type": "output_regex", "pattern": pattern}])
    t0 = time.perf_counter()
    run = run_suite(
        [s],
        redos_target,
        {},
        timeout_s=2.0,
        out_path=tmp_path / "run.json",
        progress=False,
        artifacts=False,
        code_commit=None,
    )
    elapsed = time.perf_counter() - t0
    (attempt,) = run.attempts
    assert attempt.status == status, attempt.error
    if status == "error":
        assert attempt.error is not None and "output_regex" in attempt.error and "deadline" in attempt.error
    assert elapsed < 2.0 + 6.0  # the attempt's 2 s, plus process start-up on a busy machine


@pytest.mark.parametrize("bound", [".nan", ".inf", "-.inf", ".NaN"])
def test_tool_args_bounds_must_be_finite(bound: str) -> None:
    text = f"""id: refund-001
title: t
owner: qa
origin: adversarial
added: 2026-11-29
turns: [refund please]
checks:
  - {{type: tool_args, tool: issue_refund, arg: amount, max: {bound}}}
"""
    with pytest.raises(ScenarioError, match="finite"):
        parse_scenario(text, "refund-001.yaml")


@pytest.mark.parametrize(
    "value", ["nan", "NaN", "inf", "-Infinity", "1e999", float("nan"), float("inf"), 10**400]
)
def test_agent_values_that_are_not_finite_numbers_are_out_of_bounds(value: object) -> None:
    check = ToolArgsCheck(tool="issue_refund", arg="amount", max=200)
    ctx = CheckContext(
        answer="done", label="answer", summary=summary(ToolCall("issue_refund", {"amount": value}, {}))
    )
    result = run_check(check, ctx)
    assert not result.passed and "not a number" in result.detail


@pytest.mark.parametrize(
    ("value", "passed"), [(199, True), ("$199.00", True), ("1,299", False), (349, False)]
)
def test_ordinary_values_are_still_compared(value: object, passed: bool) -> None:
    check = ToolArgsCheck(tool="issue_refund", arg="amount", max=200)
    ctx = CheckContext(
        answer="done", label="answer", summary=summary(ToolCall("issue_refund", {"amount": value}, {}))
    )
    assert run_check(check, ctx).passed is passed


def test_lint_warns_about_a_pattern_that_needs_backtracking(tmp_path: Path) -> None:
    from replaygate.golden import GoldenSet, lint

    gs = GoldenSet(tmp_path / "golden")
    gs.write([scenario("look-001", [{"type": "output_regex", "pattern": REDOS_BACKTRACKING}])])
    warnings = [str(p) for p in lint(gs) if p.severity == "warning"]
    assert any("needs the backtracking engine" in w and "look-001" in w for w in warnings)


_PATTERNS = [
    "Refund.*days",
    r"(\d+)-(\d+)?",
    r"(a)|(b)",
    r"^$",
    r"x*",
    r"(?i)ÉTÉ|(é)",
    r"\bword\b",
    r"(\w+)@(\w+)\.com",
]


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.sampled_from(_PATTERNS),
    text=st.text(alphabet=st.sampled_from(list("abRefund days1234-@.com xé\nWORD word")), max_size=40),
)
def test_search_on_ascii_text_matches_re2s_own_layer(pattern: str, text: str) -> None:
    """The direct RE2 call used for ASCII text finds what the ``re2`` module's search finds, groups too."""
    rx = ScenarioRegex(pattern)
    assert rx._match is not None  # this google-re2 has the direct call: the fast path is the one tested
    layer = rx._linear.search(text)
    found = rx.search(text)
    if layer is None:
        assert found is None
    else:
        assert found == Found(layer.group(0), tuple(layer.groups()))
