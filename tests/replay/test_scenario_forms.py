"""Checks written as other tools write them: the shorthand is accepted (and written back as written), the
rest gets a did-you-mean; the JSON Schema of a scenario accepts every example scenario."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from replaygate.replay import (
    ContainsCheck,
    ExpectedToolsCheck,
    ForbiddenOutputRegexCheck,
    MaxCharsCheck,
    ScenarioError,
    ToolArgsCheck,
    dump_scenario,
    scenario_content_hash,
    scenario_json_schema,
)
from replaygate.replay._scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[2]
HEAD = "id: s-1\ntitle: T\nowner: alice\norigin: near-miss\nadded: 2026-11-29\nturns: [hello]\n"


def errors_of(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(HEAD + text, source="s-1.yaml")
    return str(info.value)


def test_one_key_shorthand_is_accepted_and_equals_the_full_form() -> None:
    short = parse_scenario(
        HEAD + "checks:\n"
        '  - forbidden_output_regex: "(?i)refund issued"\n'
        "  - expected_tools: [web_search]\n"
        "  - max_chars: 80\n"
        "  - contains: ORD-1\n"
        "  - tool_args: {tool: issue_refund, arg: amount, max: 200}\n"
    )
    full = parse_scenario(
        HEAD + "checks:\n"
        '  - {type: forbidden_output_regex, pattern: "(?i)refund issued"}\n'
        "  - {type: expected_tools, tools: [web_search]}\n"
        "  - {type: max_chars, limit: 80}\n"
        "  - {type: contains, values: [ORD-1]}\n"
        "  - {type: tool_args, tool: issue_refund, arg: amount, max: 200}\n"
    )
    assert short.checks == [
        ForbiddenOutputRegexCheck(pattern="(?i)refund issued"),
        ExpectedToolsCheck(tools=["web_search"]),
        MaxCharsCheck(limit=80),
        ContainsCheck(values=["ORD-1"]),
        ToolArgsCheck(tool="issue_refund", arg="amount", max=200),
    ]
    assert [c.model_dump() for c in short.checks] == [c.model_dump() for c in full.checks]
    # the same pass condition, whichever form: the lock and the gate see no change
    assert scenario_content_hash(short) == scenario_content_hash(full)


def test_each_check_is_written_back_in_the_form_its_file_used() -> None:
    text = (
        HEAD + "checks:\n"
        '  - forbidden_output_regex: "(?i)refund issued"\n'
        "  - {type: expected_tools, tools: [lookup]}\n"
        "  - max_chars: 80\n"
        "  - contains: {values: [ORD-1], case_sensitive: true}\n"
    )
    dumped = dump_scenario(parse_scenario(text))
    lines = dumped.split("checks:\n")[1].split("judges:")[0].splitlines()
    assert lines == [
        "  - forbidden_output_regex: '(?i)refund issued'",
        "  - {type: expected_tools, tools: [lookup]}",
        "  - max_chars: 80",
        "  - contains: {values: [ORD-1], case_sensitive: true}",
    ]
    again = parse_scenario(dumped)
    assert dump_scenario(again) == dumped and again == parse_scenario(text)


def test_value_for_values_gets_one_did_you_mean() -> None:
    message = errors_of("checks:\n  - {type: contains, value: refund}\n")
    assert message == (
        "s-1.yaml:8: checks[0].value: `value` is not a field of a contains check; did you mean `values` "
        "(a list: `values: [refund]`)? (contains takes values, case_sensitive)"
    )


def test_a_dashed_type_gets_its_underscored_name() -> None:
    message = errors_of("checks:\n  - {type: not-contains, values: [guarantee]}\n")
    assert message.startswith("s-1.yaml:8: checks[0].type: unknown check type `not-contains`; did you mean ")
    assert "did you mean `not_contains`?" in message
    assert len(message.splitlines()) == 1  # not the validator's tag error on top


def test_promptfoo_assert_is_explained() -> None:
    message = errors_of("assert:\n  - type: contains\n    value: refund\n")
    assert message == (
        "s-1.yaml:7: assert: `assert` is not a scenario field: replaygate calls these `checks:`; "
        "`type: contains, value: x` is `{type: contains, values: [x]}` (or the shorthand `- contains: x`)"
    )


def test_a_misspelt_shorthand_and_a_misspelt_key_say_what_was_meant() -> None:
    message = errors_of("checks:\n  - max_chars: 10\n  - forbiden_output_regex: x\n")
    assert message.startswith("s-1.yaml:9: checks[1].forbiden_output_regex: unknown check type")
    assert "did you mean `forbidden_output_regex`?" in message and "`- TYPE: VALUE`" in message
    assert "tier: Extra inputs are not permitted; did you mean `tiers`?" in errors_of("tier: [smoke]\n")
    judge = errors_of("judges:\n  - {type: groundednes}\n")
    assert "did you mean `groundedness`?" in judge


def test_a_check_without_its_type_says_how_to_name_it() -> None:
    message = errors_of("checks:\n  - {pattern: x, max_chars: 3}\n")
    assert "a check names its type" in message and "add `type: max_chars`" in message
    assert "Unable to extract tag" not in message
    bad_value = errors_of("checks:\n  - tool_args: 3\n")
    assert "`tool_args:` takes a mapping of its fields (tool, arg, min, max, equals, pattern)" in bad_value


def test_problems_in_several_checks_are_all_reported() -> None:
    message = errors_of("checks:\n  - {type: contains, value: x}\n  - max_chars: -1\n")
    lines = message.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("s-1.yaml:8: checks[0].value:")
    assert lines[1].startswith("s-1.yaml:9: checks[1].max_chars.limit: Input should be greater than")


def _as_json(path: Path) -> object:
    return json.loads(json.dumps(yaml.safe_load(path.read_text(encoding="utf-8")), default=str))


def test_the_schema_validates_every_example_scenario_and_refuses_bad_ones() -> None:
    schema = scenario_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    examples = sorted((ROOT / "examples").rglob("golden/*.yaml"))
    assert len(examples) >= 10
    for path in examples:
        errors = [e.message for e in validator.iter_errors(_as_json(path))]
        assert errors == [], path
    good = yaml.safe_load(HEAD)
    good["added"] = "2026-11-29"
    for check in ({"max_chars": 80}, {"expected_tools": "web_search"}, {"type": "max_chars", "limit": 3}):
        assert list(validator.iter_errors({**good, "checks": [check]})) == [], check
    for check in ({"max_chars": "x"}, {"max_chars": 3, "extra": 1}, {"type": "contains", "value": "x"}):
        assert list(validator.iter_errors({**good, "checks": [check]})), check
    assert list(validator.iter_errors({**good, "assert": []}))
