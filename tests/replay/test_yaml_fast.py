"""Issue 19: the libyaml path of ``load_yaml_bounded`` reads every document as the pure-Python loader does.

Same values, same node lines, and for a refused document the same message (the refusal is said by the
pure-Python loader in both cases).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replaygate.replay._bounded import load_yaml_bounded, load_yaml_python
from replaygate.replay._yaml_fast import AVAILABLE, NotFast, load_fast

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
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _lines(node: yaml.Node | None) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        out.append((n.tag, n.start_mark.line, n.end_mark.line))
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
