"""Deterministic checks: each passes and fails on small hand-made cases, and says why."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter
from replaygate.instrumentation import LlmCall, ToolCall, TraceSummary
from replaygate.replay._checks import CheckContext, run_check, run_checks
from replaygate.replay._labels import derive_label, looks_like_refusal
from replaygate.replay._runfile import CheckResult
from replaygate.replay._scenario_checks import Check

CHECK = TypeAdapter(Check)


def make_summary(**over: Any) -> TraceSummary:
    base: dict[str, Any] = dict(
        trace_id="t1",
        session_id=None,
        user_id=None,
        agent_name="a",
        agent_version="1",
        turns=("q",),
        output=None,
        outputs=(),
        error=None,
        chunks=(),
        tool_calls=(),
        llm_calls=(),
        escalated=False,
        escalation_reason=None,
        clarification=False,
        failure_reasons=(),
        latency_s=0.1,
        input_tokens=None,
        output_tokens=None,
    )
    base.update(over)
    return TraceSummary(**base)


def check(spec: dict[str, Any], answer: str, *, label: str = "answer", **summary: Any) -> CheckResult:
    ctx = CheckContext(answer=answer, label=label, summary=make_summary(**summary))
    return run_check(CHECK.validate_python(spec), ctx)


def tools(*calls: tuple[str, dict[str, Any], Any]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(name=n, arguments=a, result=r) for n, a, r in calls)


def test_output_regex() -> None:
    ok = check({"type": "output_regex", "pattern": r"ORD-\d+"}, "Your order ORD-42 shipped.")
    assert ok.passed and "ORD-42" in ok.detail
    bad = check({"type": "output_regex", "pattern": r"ORD-\d+"}, "It shipped.")
    assert not bad.passed and "not found" in bad.detail and bad.name == "output_regex"


def test_forbidden_output_regex_names_the_matching_text() -> None:
    bad = check(
        {"type": "forbidden_output_regex", "pattern": r"refund (issued|approved)"}, "Refund approved!"
    )
    assert bad.passed  # case-sensitive pattern: "Refund approved" does not match "refund approved"
    bad = check(
        {"type": "forbidden_output_regex", "pattern": r"(?i)refund (issued|approved)"}, "Refund approved!"
    )
    assert not bad.passed and '"Refund approved"' in bad.detail
    ok = check({"type": "forbidden_output_regex", "pattern": "refund issued"}, "I escalated it.")
    assert ok.passed


@pytest.mark.parametrize("answer", ["", "   \n"])
def test_forbidden_checks_never_pass_on_empty_output(answer: str) -> None:
    for spec in (
        {"type": "forbidden_output_regex", "pattern": "anything"},
        {"type": "not_contains", "values": ["x"]},
    ):
        result = check(spec, answer)
        assert not result.passed and "empty" in result.detail


def test_forbidden_check_on_empty_output_passes_when_empty_is_allowed() -> None:
    spec = CHECK.validate_python({"type": "forbidden_output_regex", "pattern": "x"})
    ctx = CheckContext(answer="", label="answer", summary=make_summary(), allow_empty=True)
    assert run_check(spec, ctx).passed
    assert [r.name for r in run_checks([spec], ctx)] == ["forbidden_output_regex"]


def test_non_empty_is_an_explicit_result() -> None:
    spec = CHECK.validate_python({"type": "max_chars", "limit": 10})
    empty = run_checks([spec], CheckContext(answer=" ", label="answer", summary=make_summary()))
    assert empty[0].name == "non_empty" and not empty[0].passed
    full = run_checks([spec], CheckContext(answer="hi", label="answer", summary=make_summary()))
    assert all(r.passed for r in full) and full[0].name == "non_empty"


def test_contains_and_case() -> None:
    assert check({"type": "contains", "values": ["REFUND", "days"]}, "refund within 30 days").passed
    bad = check({"type": "contains", "values": ["REFUND", "days"], "case_sensitive": True}, "refund, 3 days")
    assert not bad.passed and '"REFUND"' in bad.detail and "days" not in bad.detail.split("missing")[1]


def test_not_contains() -> None:
    assert check({"type": "not_contains", "values": ["guarantee"]}, "We will try.").passed
    bad = check({"type": "not_contains", "values": ["guarantee", "promise"]}, "I Promise it.")
    assert not bad.passed and '"promise"' in bad.detail and "guarantee" not in bad.detail


def test_max_chars() -> None:
    assert check({"type": "max_chars", "limit": 5}, "12345").passed
    bad = check({"type": "max_chars", "limit": 5}, "123456")
    assert not bad.passed and "6 characters" in bad.detail


def test_expected_tools_missing_and_order() -> None:
    calls = tools(("lookup_order", {}, {}), ("issue_refund", {}, {}))
    assert check({"type": "expected_tools", "tools": ["issue_refund"]}, "x", tool_calls=calls).passed
    missing = check({"type": "expected_tools", "tools": ["escalate"]}, "x", tool_calls=calls)
    assert not missing.passed and "escalate" in missing.detail
    spec = {"type": "expected_tools", "tools": ["issue_refund", "lookup_order"], "ordered": True}
    unordered = check(spec, "x", tool_calls=calls)
    assert not unordered.passed and "order" in unordered.detail
    spec["tools"] = ["lookup_order", "issue_refund"]
    assert check(spec, "x", tool_calls=calls).passed


def test_forbidden_tools() -> None:
    calls = tools(("issue_refund", {"amount": 5}, {}))
    bad = check({"type": "forbidden_tools", "tools": ["issue_refund"]}, "x", tool_calls=calls)
    assert not bad.passed and "issue_refund" in bad.detail
    assert check({"type": "forbidden_tools", "tools": ["delete"]}, "x", tool_calls=calls).passed


def test_tool_args_bounds_equals_pattern() -> None:
    calls = tools(("issue_refund", {"amount": 250, "order": "ORD-1"}, {}))
    over = check(
        {"type": "tool_args", "tool": "issue_refund", "arg": "amount", "max": 200}, "x", tool_calls=calls
    )
    assert not over.passed and "250" in over.detail and "maximum 200" in over.detail
    under = check(
        {"type": "tool_args", "tool": "issue_refund", "arg": "amount", "min": 300}, "x", tool_calls=calls
    )
    assert not under.passed and "minimum 300" in under.detail
    inside = {"type": "tool_args", "tool": "issue_refund", "arg": "amount", "min": 1, "max": 250}
    assert check(inside, "x", tool_calls=calls).passed
    eq = {"type": "tool_args", "tool": "issue_refund", "arg": "order", "equals": "ORD-2"}
    assert not check(eq, "x", tool_calls=calls).passed
    pat = {"type": "tool_args", "tool": "issue_refund", "arg": "order", "pattern": r"^ORD-\d+$"}
    assert check(pat, "x", tool_calls=calls).passed
    missing = {"type": "tool_args", "tool": "issue_refund", "arg": "reason", "pattern": "."}
    result = check(missing, "x", tool_calls=calls)
    assert not result.passed and "without argument 'reason'" in result.detail
    text = check(
        {"type": "tool_args", "tool": "t", "arg": "n", "max": 3},
        "x",
        tool_calls=tools(("t", {"n": "many"}, {})),
    )
    assert not text.passed and "not a number" in text.detail
    not_called = check({"type": "tool_args", "tool": "other", "arg": "a", "max": 1}, "x", tool_calls=calls)
    assert not_called.passed and "not called" in not_called.detail


def test_max_steps_counts_llm_and_tool_calls() -> None:
    llm = tuple(
        LlmCall(model="m", provider=None, input_tokens=1, output_tokens=1, latency_s=0.1) for _ in range(2)
    )
    calls = tools(("a", {}, {}), ("b", {}, {}))
    assert check({"type": "max_steps", "limit": 4}, "x", llm_calls=llm, tool_calls=calls).passed
    bad = check({"type": "max_steps", "limit": 3}, "x", llm_calls=llm, tool_calls=calls)
    assert not bad.passed and "4 steps" in bad.detail


def test_expected_label() -> None:
    assert check({"type": "expected_label", "label": "escalate"}, "x", label="escalate").passed
    bad = check({"type": "expected_label", "label": "escalate"}, "x", label="answer")
    assert not bad.passed and "'answer'" in bad.detail


def test_json_schema() -> None:
    spec = {
        "type": "json_schema",
        "schema": {"type": "object", "required": ["order"], "properties": {"order": {"type": "string"}}},
    }
    assert check(spec, '{"order": "ORD-1"}').passed
    assert check(spec, '```json\n{"order": "ORD-1"}\n```').passed
    wrong = check(spec, '{"order": 5}')
    assert not wrong.passed and "order" in wrong.detail
    not_json = check(spec, "order ORD-1")
    assert not not_json.passed and "not JSON" in not_json.detail


def test_values_from_tools() -> None:
    calls = tools(("get_availability", {}, {"slots": ["10:00", "14:30"]}), ("other", {}, "16:00"))
    spec: dict[str, Any] = {
        "type": "values_from_tools",
        "pattern": r"\b\d{1,2}:\d{2}\b",
        "tools": ["get_availability"],
    }
    assert check(spec, "I can offer 10:00 or 14:30.", tool_calls=calls).passed
    invented = check(spec, "I can offer 10:00 or 16:00.", tool_calls=calls)
    assert not invented.passed and '"16:00"' in invented.detail and "10:00" not in invented.detail
    spec.pop("tools")
    assert check(spec, "I can offer 10:00 or 16:00.", tool_calls=calls).passed  # any tool's result counts
    grouped = {"type": "values_from_tools", "pattern": r"order (\d+)"}
    assert not check(grouped, "your order 999", tool_calls=tools(("t", {}, {"id": 123}))).passed
    assert check(grouped, "your order 123", tool_calls=tools(("t", {}, {"id": 123}))).passed


@pytest.mark.parametrize(
    ("answer", "result", "found"),
    [
        ("Order ORD-100 is refunded.", {"order": "ORD-1004"}, False),  # a prefix of another id
        ("Order ORD-1004 is refunded.", {"order": "ORD-1004"}, True),
        ("Order ORD-1004 is refunded.", {"order": "XORD-1004"}, False),
        ("You get $45 back.", {"amount": "$450"}, False),
        ("You get $45 back.", {"amount": 45.5}, False),  # 45 is not the whole of 45.5
        ("You get $45 back.", {"amount": 45}, True),
        ("You get $45.50 back.", {"amount": 45.5}, False),  # the tool said 45.5, not 45.50
        ("Slot 10:00 is free.", {"slots": ["10:00-11:00"]}, True),
        ("Slot 10:00 is free.", {"slots": ["110:00"]}, False),
    ],
)
def test_values_from_tools_match_whole_values(answer: str, result: Any, found: bool) -> None:
    spec = {"type": "values_from_tools", "pattern": r"(ORD-\d+|\d+(?:\.\d+)?(?::\d{2})?)"}
    outcome = check(spec, answer, tool_calls=tools(("lookup", {}, result)))
    assert outcome.passed is found, outcome.detail


def test_repeated_check_types_get_distinct_names() -> None:
    specs = [CHECK.validate_python({"type": "contains", "values": [v]}) for v in ("a", "b")]
    results = run_checks(specs, CheckContext(answer="a", label="answer", summary=make_summary()))
    assert [r.name for r in results] == ["non_empty", "contains", "contains#2"]
    assert [r.passed for r in results] == [True, True, False]


def test_label_derivation() -> None:
    assert derive_label(make_summary(escalated=True), "ok") == "escalate"
    assert derive_label(make_summary(tool_calls=tools(("escalate_to_human", {}, None))), "ok") == "escalate"
    assert derive_label(make_summary(clarification=True), "which order?") == "clarify"
    assert derive_label(make_summary(), "I'm sorry, but I can't help with that.") == "refuse"
    assert derive_label(make_summary(), "Your refund is on its way.") == "answer"
    assert (
        derive_label(make_summary(escalated=True), "x", "answer") == "answer"
    )  # the target's own label wins
    with pytest.raises(ValueError, match="expected one of"):
        derive_label(make_summary(), "x", "maybe")
    assert looks_like_refusal("I cannot provide legal advice.")
    assert not looks_like_refusal("I can provide the tracking number.")


def test_tool_args_ignores_calls_the_tool_refused() -> None:
    spec = {"type": "tool_args", "tool": "issue_refund", "arg": "amount", "max": 200}
    refused = (ToolCall(name="issue_refund", arguments={"amount": 450}, result=None, error="RefundRefused"),)
    ok = check(spec, "x", tool_calls=refused)
    assert ok.passed and "refused by the tool" in ok.detail
    granted = refused + (ToolCall(name="issue_refund", arguments={"amount": 300}, result={"ok": True}),)
    bad = check(spec, "x", tool_calls=granted)
    assert not bad.passed and "300" in bad.detail


def test_one_registry_of_check_types() -> None:
    """The ``Check`` union is the one list: the loader's forms and the scorer cover exactly its types."""
    from typing import get_args

    from replaygate.replay import _checks, _scenario_checks, _scenario_forms

    union = [m.model_fields["type"].default for m in get_args(get_args(_scenario_checks.Check)[0])]
    assert list(_scenario_forms.CHECK_MODELS) == union
    assert set(_checks._RUNNERS) == set(union)
