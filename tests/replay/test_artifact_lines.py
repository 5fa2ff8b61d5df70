"""Artifact lines serialized a group at a time: each line exactly :meth:`Artifact.line`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import SpanRecord
from replaygate.replay._artifacts import Artifact, ArtifactWriter, _lines

_text = st.text(max_size=10) | st.just('},{"scenario_id":')
_value = st.none() | st.integers() | st.floats(allow_nan=False) | _text | st.lists(_text, max_size=2)
_span = st.builds(
    lambda name, attributes, events, status: SpanRecord(
        trace_id="t" * 32,
        span_id="s" * 16,
        parent_id=None,
        name=name,
        kind="other",
        start_ns=1,
        end_ns=2,
        status=status,
        status_message=None,
        attributes=attributes,
        events=tuple({"name": e, "timestamp_ns": 1, "attributes": {}} for e in events),
    ),
    _text,
    st.dictionaries(_text, _value, max_size=3),
    st.lists(_text, max_size=2),
    st.sampled_from(["ok", "error", "unset"]),
)
_artifact = st.builds(
    lambda sid, index, answer, messages, spans: Artifact(
        scenario_id=sid,
        index=index,
        trace_id="t" * 32,
        answer=answer,
        label=None,
        error=None,
        messages=messages,
        spans=spans,
    ),
    _text,
    st.integers(0, 5),
    st.none() | _text,
    st.lists(st.dictionaries(st.sampled_from(["scenario_id", "role"]), _text, max_size=2), max_size=2),
    st.lists(_span, max_size=2) | st.lists(_span, max_size=2).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_artifact, max_size=6))
def test_group_lines_are_each_artifacts_own(items: list[Artifact]) -> None:
    together = _lines(items)
    if together is not None:
        assert together == [a.line() for a in items]
    else:  # too few, or the separator inside an artifact: each is serialized on its own
        assert len(items) < 2 or any(b'},{"scenario_id":' in a.line()[1:-2] for a in items)


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_an_unserializable_artifact_sends_the_group_one_by_one() -> None:
    good = Artifact(scenario_id="a", index=0, trace_id=None, answer="x", label=None, error=None)
    bad: Any = Artifact(
        scenario_id="b", index=0, trace_id=None, answer="x", label=None, error=None, messages=[_Unprintable()]
    )
    assert _lines([good, good]) == [good.line(), good.line()]
    assert _lines([good, bad]) is None


def test_the_writer_writes_every_good_line_of_a_long_group_and_fails_only_the_bad_one(tmp_path: Path) -> None:
    # 600 artifacts are serialized in parts; the bad one costs its own line only, in whichever part
    good = [
        Artifact(scenario_id="a", index=i, trace_id=None, answer=f"x{i}", label=None, error=None)
        for i in range(600)
    ]
    bad: Any = Artifact(
        scenario_id="b", index=0, trace_id=None, answer="x", label=None, error=None, messages=[_Unprintable()]
    )
    items = [*good[:400], bad, *good[400:]]
    writer = ArtifactWriter(tmp_path / "artifacts.jsonl")
    for item in items:
        writer.submit(item)
    writer.flush()
    assert writer.close() == {("b", 0)}
    assert (tmp_path / "artifacts.jsonl").read_bytes() == b"".join(a.line() for a in good)
