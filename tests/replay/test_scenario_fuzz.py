"""Property-based tests on the scenario loader: any input gives a scenario or a clear ScenarioError."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import re2  # type: ignore[import-untyped]
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from replaygate.replay._errors import ScenarioError
from replaygate.replay._scenario import Scenario, dump_scenario, load_scenario, parse_scenario

BASE: dict[str, Any] = {
    "id": "s-1",
    "title": "A title",
    "owner": "alice",
    "origin": "original-eval",
    "added": dt.date(2026, 11, 29),
    "turns": ["hello"],
    "checks": [{"type": "contains", "values": ["x"]}],
}
LOCATED = re.compile(r"^\S+:\d+: .+", re.S)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


def assert_clear(text: str) -> Scenario | None:
    try:
        return parse_scenario(text, "f.yaml")
    except ScenarioError as exc:
        message = str(exc)
        assert LOCATED.match(message), message
        assert "Traceback" not in message
        return None


@FAST
@given(st.text(max_size=200))
def test_random_text_never_a_traceback(text: str) -> None:
    assert_clear(text)


@FAST
@given(
    st.sampled_from(sorted(BASE) + ["checks", "judges", "status", "retrieval", "tags", "tiers", "zzz"]),
    json_value,
)
def test_wrong_values_give_located_errors(key: str, value: Any) -> None:
    data = dict(BASE)
    data[key] = value
    assert_clear(yaml.safe_dump(data, sort_keys=False))


@FAST
@given(
    st.sampled_from(
        ["output_regex", "forbidden_output_regex", "values_from_tools", "tool_args", "json_schema"]
    ),
    st.dictionaries(
        st.sampled_from(["pattern", "schema", "tool", "arg", "min", "max", "equals"]), json_value
    ),
)
def test_random_check_parameters(kind: str, params: dict[str, Any]) -> None:
    data = dict(BASE)
    data["checks"] = [{"type": kind, **params}]
    assert_clear(yaml.safe_dump(data, sort_keys=False))


def _compiles(pattern: str) -> bool:
    """The oracle: a non-empty pattern that RE2 compiles, or Python's ``re`` (the fallback engine)."""
    if not pattern:
        return False
    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options=options)
        return True
    except Exception:  # noqa: BLE001 - any refusal of RE2's: try the fallback engine
        pass
    try:
        re.compile(pattern)
        return True
    except Exception:  # noqa: BLE001 - re.error, or an overflow on a huge repeat count
        return False


@FAST
@given(st.text(max_size=30))
@example("(")
@example("[a-")
@example("a{2,1}")
@example("(?P<x>a)(?P=x)")
def test_random_regex_compiled_at_load(pattern: str) -> None:
    _check_regex_at_load(pattern)


def _check_regex_at_load(pattern: str) -> None:
    data = dict(BASE)
    data["checks"] = [{"type": "output_regex", "pattern": pattern}]
    loaded = assert_clear(yaml.safe_dump(data))
    # a pattern is compiled when the scenario is loaded: a bad one is refused there, never at run time
    assert (loaded is not None) is _compiles(pattern), pattern


def test_the_regex_check_catches_a_loader_that_skips_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutant without the compile-at-load check (the fuzz test once passed with it)."""
    from replaygate.replay import _scenario_checks

    monkeypatch.setattr(_scenario_checks, "compile_pattern", lambda pattern: None)
    with pytest.raises(AssertionError):
        _check_regex_at_load("(")
    _check_regex_at_load("a+")  # a good pattern still loads


@FAST
@given(st.binary(max_size=100))
def test_random_bytes_in_a_file(tmp_path_factory: Any, raw: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("b")) / "s-1.yaml"
    path.write_bytes(raw)
    try:
        load_scenario(path)
    except ScenarioError as exc:
        assert str(exc).startswith(str(path))


@FAST
@given(
    title=safe_text.filter(lambda t: t.strip() != ""),
    turns=st.lists(safe_text.filter(bool), min_size=1, max_size=3),
    behaviour=safe_text,
    context=st.dictionaries(st.text(max_size=8), json_leaf.filter(lambda v: v == v), max_size=3),
    threshold=st.floats(min_value=0.01, max_value=1.0),
    repeats=st.integers(min_value=1, max_value=50),
)
def test_round_trip_of_generated_scenarios(
    title: str, turns: list[str], behaviour: str, context: dict[str, Any], threshold: float, repeats: int
) -> None:
    data = dict(BASE, title=title, turns=turns, expected_behavior=behaviour, context=context)
    data.update(threshold=threshold, repeats=repeats)
    scenario = Scenario.model_validate(data)
    text = dump_scenario(scenario)
    assert parse_scenario(text, "s-1.yaml", expected_id="s-1") == scenario
