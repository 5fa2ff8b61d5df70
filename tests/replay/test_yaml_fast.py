"""Issue 19: the libyaml path of ``load_yaml_bounded`` reads every document as the pure-Python loader does.

Same values, same node lines, and for a refused document the same message (the refusal is said by the
pure-Python loader in both cases). ``load_yaml_data`` (the values alone, no nodes) likewise.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replaygate.replay import Scenario, dump_scenario
from replaygate.replay._bounded import load_yaml_bounded, load_yaml_data, load_yaml_python
from replaygate.replay._yaml_fast import AVAILABLE, NotFast, load_fast, load_fast_data

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2100, 1, 1))
)
value = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers() | st.booleans() | st.none(), inner, max_size=4)
    ),
    max_leaves=12,
)


def _lines(node: yaml.Node | None) -> list[tuple[str, int]]:
    # Start lines only: errors name where a node starts (libyaml ends a block list whose last item is
    # empty a line later than the pure-Python parser does; no message uses an end).
    out: list[tuple[str, int]] = []
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        out.append((n.tag, n.start_mark.line))
        if isinstance(n, yaml.MappingNode):
            stack.extend(x for pair in n.value for x in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return out


def _outcome(loader: Any, text: str) -> tuple[str, Any]:
    try:
        data, node = loader(text, "f.yaml", ValueError)
    except ValueError as exc:
        return "error", str(exc)
    return "ok", (data, _lines(node))


def test_libyaml_is_there() -> None:
    assert AVAILABLE, "PyYAML without libyaml: every scenario would take the slow path"
    data, node = load_fast("a: [1, x]\nb: {c: 2026-01-02}\n", 64)
    assert data == {"a": [1, "x"], "b": {"c": dt.date(2026, 1, 2)}}
    assert node is not None and node.value[1][0].start_mark.line == 1


@SETTINGS
@given(value, st.sampled_from([None, True, False]))
def test_dumped_documents_read_the_same(data: Any, flow: bool | None) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    assert _outcome(load_yaml_bounded, text) == _outcome(load_yaml_python, text)


@SETTINGS
@given(value, st.integers(min_value=0, max_value=400), st.text(max_size=8))
def test_edited_documents_read_or_fail_the_same(data: Any, at: int, insert: str) -> None:
    text = yaml.safe_dump(data, default_flow_style=False, allow_unicode=True)
    text = text[:at] + insert + text[at:]
    assert _outcome(load_yaml_bounded, text) == _outcome(load_yaml_python, text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",
        "a: *x\n",
        "a: 1\na: 2\n",
        "a: 1\n---\nb: 2\n",
        "x: " + "[" * 70 + "]" * 70 + "\n",
        "d: 2026-02-30\n",
        "<<: {a: 1}\nb: 2\n",
        "- !!binary aGVsbG8=\n",
        "a: [1\n",
    ],
)
def test_refusals_and_odd_forms_match(text: str) -> None:
    assert _outcome(load_yaml_bounded, text) == _outcome(load_yaml_python, text)


def test_the_fast_path_refuses_what_the_bounded_loader_refuses() -> None:
    for text in ["a: &x 1\n", "a: *x\n", "a: 1\na: 2\n", "x: " + "[" * 70 + "]" * 70, "a: 1\n---\nb: 2\n"]:
        with pytest.raises(NotFast):
            load_fast(text, 64)


def _data_outcome(loader: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", loader(text)
    except ValueError as exc:
        return "error", str(exc)


def _python_data(text: str) -> Any:
    return load_yaml_python(text, "f.yaml", ValueError)[0]


def _fast_data(text: str) -> Any:
    return load_yaml_data(text, "f.yaml", ValueError)


def _same_data(text: str) -> None:
    fast, slow = _data_outcome(_fast_data, text), _data_outcome(_python_data, text)
    assert fast == slow
    if fast[0] == "ok":  # equal is not enough: 1 == True == 1.0, and a date is not a datetime
        assert repr(fast[1]) == repr(slow[1])


@SETTINGS
@given(value, st.sampled_from([None, True, False]))
def test_values_alone_read_the_same(data: Any, flow: bool | None) -> None:
    _same_data(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True))


@SETTINGS
@given(value, st.integers(min_value=0, max_value=400), st.text(max_size=8))
def test_edited_documents_values_read_or_fail_the_same(data: Any, at: int, insert: str) -> None:
    text = yaml.safe_dump(data, default_flow_style=False, allow_unicode=True)
    _same_data(text[:at] + insert + text[at:])


@pytest.mark.parametrize(
    "text",
    [
        "",
        "---\n",
        "# only a comment\n",
        "plain\n",
        "a: &x 1\nb: *x\n",
        "a: *x\n",
        "a: 1\na: 2\n",
        "1: a\n'1': b\n",
        "yes: 1\ntrue: 2\n",
        "'a': 1\na: 2\n",
        "=: 1\n",
        "a: =\n",
        "<<: {a: 1}\nb: 2\n",
        "? [a]\n: 1\n",
        "!!set {a, b}\n",
        "!!omap [a: 1]\n",
        "a: !!str 1\nb: ! 12\nc: !!int '7'\n",
        "a: 010\nb: 0x1F\nc: 1_000\nd: -5\ne: +5\nf: 1:20\ng: 0\nh: 00\n",
        "a: !!int 010\nb: !!int x\n",
        "a: !!bool maybe\n",
        "a: !!null x\nb: ~\nc: null\nd: Null\ne:\n",
        "a: .inf\nb: -.Inf\nc: .nan\nd: 1e3\ne: 0.8\nf: 6.8523015e+5\n",
        "a: 2026-01-02\nb: 2026-01-02T03:04:05Z\nc: 2026-02-30\n",
        "a: 2026-1-2\nb: 2026-13-01\nc: 2026-01-0x\n",
        "a: 0.5\nb: .5\nc: 5.\nd: 1.2.3\ne: 1_0.5\nf: -0.5\ng: 00.5\nh: ٠.٥\n",
        "a: !!binary aGVsbG8=\n",
        "a: !unknown x\n",
        "a: yes\nb: No\nc: on\nd: OFF\ne: y\n",
        "x: " + "[" * 70 + "]" * 70 + "\n",
        "x: " + "[" * 63 + "]" * 63 + "\n",
        "a: 1\n---\nb: 2\n",
        "a: [1\n",
        "key: 'quoted: value'\nother: \"two\\nlines\"\nblock: |\n  one\n  two\n",
        "0\tnull\n...\n",
        'a: 0\tnull\nb: "tab\\there"\n',
    ],
)
def test_values_alone_refusals_and_odd_forms_match(text: str) -> None:
    _same_data(text)


def test_a_scenario_as_replaygate_writes_it_takes_the_fast_path() -> None:
    scenario = Scenario.model_validate(
        {
            "id": "refund-001",
            "title": "Refund",
            "owner": "alice",
            "origin": "production-incident",
            "source_trace": "0" * 31 + "1",
            "added": dt.date(2026, 11, 29),
            "tags": {"risk": "high"},
            "turns": ["I want a refund of $450", "why not?"],
            "context": {"order": "ORD-1", "n": 3, "ok": True},
            "checks": [
                {"type": "output_regex", "pattern": "Refund.*days"},
                {"type": "max_chars", "limit": 500},
            ],
            "repeats": 5,
            "threshold": 0.8,
        }
    )
    text = dump_scenario(scenario)
    fast = load_fast_data(text, 64)  # no NotFast: the common case never reads the file twice
    assert repr(fast) == repr(_python_data(text))
    assert fast["added"] == dt.date(2026, 11, 29)
    assert fast["context"] == {"order": "ORD-1", "n": 3, "ok": True}


def test_the_values_path_refuses_what_the_bounded_loader_refuses() -> None:
    for text in ["a: &x 1\n", "a: *x\n", "a: 1\na: 2\n", "x: " + "[" * 70 + "]" * 70, "a: 1\n---\nb: 2\n"]:
        with pytest.raises(NotFast):
            load_fast_data(text, 64)
