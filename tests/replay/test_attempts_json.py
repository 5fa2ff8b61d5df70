"""The journal's attempt JSON: serialized a group at a time, each text exactly ``model_dump_json()``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.replay import Attempt, CheckResult, ConversationTurn, JudgeResult, Measures, attempt_digest
from replaygate.replay._runfile import attempt_json, attempts_json

_text = st.text(max_size=12) | st.sampled_from(['},{"scenario_id":', ',"artifact_path":', ',"started":"x"'])

_attempt = st.builds(
    lambda sid, index, status, answer, detail, claim, path, turns: Attempt(
        scenario_id=sid,
        index=index,
        status=status,
        answer=answer,
        checks=[CheckResult(name="contains", passed=status == "pass", detail=detail)],
        judges=[JudgeResult(name="g", score=0.5, passed=True, claims=[claim])] if claim else [],
        measures=Measures(latency_s=0.25),
        artifact_path=path,
        started="2026-12-01T00:00:00Z",
        conversation=[ConversationTurn(user=t, answer=t) for t in turns] if turns else None,
    ),
    _text,
    st.integers(0, 9),
    st.sampled_from(["pass", "fail", "error"]),
    st.none() | _text,
    _text,
    st.none() | st.dictionaries(st.sampled_from(["scenario_id", "x"]), _text, max_size=2),
    st.none() | _text,
    st.none() | st.lists(_text, max_size=2),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_attempt, max_size=6))
def test_group_texts_are_each_attempts_own(attempts: list[Attempt]) -> None:
    got = attempts_json(attempts)
    assert [text for text, _ in got] == [a.model_dump_json() for a in attempts]
    assert [digest for _, digest in got] == [attempt_digest(a) for a in attempts]
    assert got == [attempt_json(a) for a in attempts]


def test_a_claim_that_looks_like_the_next_attempt_is_not_cut_there() -> None:
    tricky = Attempt(
        scenario_id="a",
        index=0,
        status="pass",
        judges=[JudgeResult(name="g", score=1.0, passed=True, claims=[{"x": {}}, {"scenario_id": "b"}])],
        measures=Measures(latency_s=0.1),
    )
    plain = Attempt(scenario_id="b", index=0, status="pass", measures=Measures(latency_s=0.1))
    assert '},{"scenario_id":' in tricky.model_dump_json()
    got = attempts_json([tricky, plain, tricky])
    assert [text for text, _ in got] == [a.model_dump_json() for a in (tricky, plain, tricky)]


def test_a_long_group_is_serialized_in_parts_with_the_same_texts() -> None:
    # more than one part (the journal hands over thousands at once when the target never waits)
    attempts = [
        Attempt(scenario_id=f"s{i % 7}", index=i, status="pass", measures=Measures(latency_s=i / 1000))
        for i in range(600)
    ]
    got = attempts_json(attempts)
    assert len(got) == 600
    assert got == [attempt_json(a) for a in attempts]
