"""Attempts copied from a kept score: their JSON and artifact lines from templates equal the serializer's."""

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import SpanRecord
from replaygate.replay import read_artifacts, run_suite
from replaygate.replay._artifacts import Artifact
from replaygate.replay._attempt_templates import KeptJson, copy_kept, root_only_record
from replaygate.replay._json_template import JsonTemplate
from replaygate.replay._runfile import Attempt, CheckResult, Measures, RetrievalScores
from replaygate.replay._target_types import TargetOutput

from tests.conftest import make_scenario

# Text that may look like the templates' anchors, JSON syntax, escapes and non-ASCII.
_pieces = ['"', "\\", "\x01", "\n", "é", "😀", ',"index":', '"trace_id":', "3141", "a", ","]
tricky = st.lists(st.sampled_from(_pieces), max_size=8).map("".join)
latencies = st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.0, 1e-7, 1.5e-5, 2718281.828125, 1e16])
ids = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


def test_template_cuts_and_fills() -> None:
    text = '{"a":"X","b":7,"c":"X"}'
    tpl = JsonTemplate.cut(text, [('"a":', '"X"'), (',"b":', "7"), (',"c":', '"X"')])
    assert tpl is not None
    assert tpl.fill(['"X"', "7", '"X"']) == text
    assert tpl.fill(['"y"', "12", "null"]) == '{"a":"y","b":12,"c":null}'
    assert JsonTemplate.cut(text, [(',"b":', "8")]) is None  # the value is not there
    assert JsonTemplate.cut(text, [('"X"', "")]) is None  # the anchor occurs twice
    assert JsonTemplate.cut(text, [(',"c":', '"X"'), (',"b":', "7")]) is None  # out of order


def _kept(answer: str | None, status: str, error: str | None, retrieval: bool, path: str | None) -> Attempt:
    return Attempt(
        scenario_id="s-" + (answer or "")[:5],
        index=0,
        status=status,  # type: ignore[arg-type]
        error=error,
        answer=answer,
        checks=[CheckResult(name="contains", passed=status == "pass", detail=answer or "")],
        retrieval=RetrievalScores(k=3, hit_rate=1.0, mrr=0.5, recall=1 / 3, ndcg=0.63, retrieved=3)
        if retrieval
        else None,
        measures=Measures(latency_s=0.25, input_tokens=3, cost_usd=None, llm_calls=0),
        trace_id="ab" * 16,
        artifact_path=path,
        started="2026-12-01T00:00:00Z",
    )


@settings(max_examples=300, deadline=None)
@given(
    answer=st.none() | tricky,
    status=st.sampled_from(["pass", "fail"]),
    error=st.none() | tricky,
    retrieval=st.booleans(),
    path=st.none() | tricky,
    copies=st.lists(
        st.tuples(st.integers(0, 10**6), ids, tricky, st.none() | tricky, latencies), min_size=1, max_size=4
    ),
)
def test_copies_json_is_model_dump_json(
    answer: str | None,
    status: str,
    error: str | None,
    retrieval: bool,
    path: str | None,
    copies: list[tuple[int, str, str, str | None, float]],
) -> None:
    kept = _kept(answer, status, error, retrieval, path)
    first = copy_kept(kept, *copies[0])
    made = KeptJson(first, None, None)
    assert made.first_text == first.model_dump_json()
    for values in copies:
        copy = copy_kept(kept, *values)
        text = made.attempt_json(copy)
        assert text is None or text == copy.model_dump_json()
    assert made.attempt is not None  # an anchor cannot hide in a string: a template is always made


def _record(trace_id: str, span_id: str, start: int, end: int, sid: str, index: int) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=None,
        name="replay attempt",
        kind="other",
        start_ns=start,
        end_ns=end,
        status="unset",
        status_message=None,
        attributes={"replaygate.scenario.id": sid, "replaygate.attempt.index": index},
    )


@settings(max_examples=200, deadline=None)
@given(
    answer=tricky,
    label=st.none() | tricky,
    copies=st.lists(
        st.tuples(st.integers(0, 10**6), ids, ids.map(lambda t: t[:16]), st.integers(0, 2**63 - 1)),
        min_size=2,
        max_size=4,
    ),
)
def test_artifact_lines_are_the_artifacts(
    answer: str, label: str | None, copies: list[tuple[int, str, str, int]]
) -> None:
    kept = _kept(answer, "pass", None, False, "/tmp/artifacts.jsonl")
    output = TargetOutput(answer=answer, label=label)
    made: KeptJson | None = None
    for index, trace_id, span_id, start in copies:
        sid = kept.scenario_id
        rec = _record(trace_id, span_id, start, start + 5, sid, index)
        assert root_only_record([rec], sid, index) is rec
        copy = copy_kept(kept, index, trace_id, "2026-12-01T00:00:01Z", kept.artifact_path, 0.5)
        expected = Artifact(
            scenario_id=sid,
            index=index,
            trace_id=trace_id,
            answer=answer,
            label=label,
            error=None,
            messages=[],
            spans=[rec],
            conversation=[],
        ).line()
        if made is None:
            made = KeptJson(copy, rec, output)
            assert made.first_line == expected
            assert made.artifact is not None
        else:
            line = made.artifact_line(index, rec)
            assert line is None or line == expected


def test_root_only_record_refuses_what_the_agent_changed() -> None:
    rec = _record("ab" * 16, "cd" * 8, 1, 2, "s", 0)
    assert root_only_record([rec], "s", 0) is rec
    assert root_only_record([rec, rec], "s", 0) is None
    assert root_only_record([rec], "s", 1) is None  # the agent set the index attribute to another value
    other = dataclasses.replace(rec, attributes={**rec.attributes, "replaygate.attempt.index": True})
    assert root_only_record([other], "s", 1) is None


def answer_of(turns: list[str], context: dict[str, Any]) -> Any:
    q = turns[0]
    if "messages" in q:
        return {"answer": "ok with messages", "messages": [{"role": "assistant", "content": "ok"}]}
    if "label" in q:
        return {"answer": 'ok "quoted" é', "label": "refund"}
    if "empty" in q:
        return ""
    return "ok " + q


@pytest.mark.parametrize("artifacts", [True, False])
def test_run_file_journal_and_artifacts_equal_the_serializers(tmp_path: Path, artifacts: bool) -> None:
    suite = [
        make_scenario("plain", repeats=4),
        make_scenario("messages", repeats=3, turns=["with messages"]),
        make_scenario("label", repeats=3, turns=["with label"]),
        make_scenario("empty", repeats=3, turns=["empty"]),
        make_scenario("once", repeats=1),
        make_scenario("failing", repeats=3, checks=[{"type": "contains", "values": ["absent"]}]),
    ]
    made: list[str] = []
    real = KeptJson.attempt_json

    def spy(self: KeptJson, attempt: Attempt) -> str | None:
        text = real(self, attempt)
        if text is not None:
            made.append(text)
        return text

    out = tmp_path / "run.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(KeptJson, "attempt_json", spy)
        run = run_suite(suite, answer_of, out_path=out, progress=False, code_commit=None, artifacts=artifacts)
    assert made  # the templates were used
    assert run.summary.attempts == 17
    lines = out.read_text().split('"attempts": [\n', 1)[1].splitlines()[:-2]
    assert len(lines) == 17
    for line, attempt in zip(lines, run.attempts, strict=True):
        body = line.strip().removesuffix(",")
        assert body == attempt.model_dump_json()
        assert body == Attempt.model_validate_json(body).model_dump_json()
    if artifacts:
        path = Path(run.attempts[0].artifact_path or "")
        raw = path.read_bytes().splitlines(keepends=True)
        assert len(raw) == 17
        for line in raw:
            data = json.loads(line)
            data.pop("format_version")
            data["spans"] = [SpanRecord(**{**s, "events": tuple(s["events"])}) for s in data["spans"]]
            assert Artifact(**data).line() == line
        assert len(read_artifacts(path)) == 17
