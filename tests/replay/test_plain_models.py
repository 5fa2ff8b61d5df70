"""The plain builders make what the validating constructors make (or call them)."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from replaygate.replay._plain_models import attempt, check_result, measures
from replaygate.replay._runfile import Attempt, CheckResult, ConversationTurn, Measures, RetrievalScores

values = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=5)


def same(mine: Any, theirs: Any) -> None:
    assert type(mine) is type(theirs)
    assert mine == theirs
    assert mine.__pydantic_fields_set__ == theirs.__pydantic_fields_set__
    assert mine.model_dump_json() == theirs.model_dump_json()
    assert list(mine.__dict__) == list(theirs.__dict__)


def outcome(fn: Any, **kwargs: Any) -> Any:
    try:
        return fn(**kwargs)
    except ValidationError as exc:
        return ("invalid", str(exc))


@settings(max_examples=300, deadline=None)
@given(name=values, passed=values, detail=values)
def test_check_result(name: Any, passed: Any, detail: Any) -> None:
    mine = outcome(
        lambda **k: check_result(k["name"], k["passed"], k["detail"]), name=name, passed=passed, detail=detail
    )
    theirs = outcome(CheckResult, name=name, passed=passed, detail=detail)
    if isinstance(theirs, tuple):
        assert mine == theirs
    else:
        same(mine, theirs)


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({k: values for k in Measures.model_fields}))
def test_measures(fields: dict[str, Any]) -> None:
    mine, theirs = outcome(measures, **fields), outcome(Measures, **fields)
    if isinstance(theirs, tuple):
        assert mine == theirs
    else:
        same(mine, theirs)


good_attempt = {
    "scenario_id": "s",
    "index": 2,
    "status": "fail",
    "error": None,
    "answer": "a",
    "checks": [CheckResult(name="contains", passed=False, detail="missing")],
    "judges": [],
    "retrieval": RetrievalScores(k=3, hit_rate=0.0, mrr=0.0, recall=0.0, ndcg=0.0, retrieved=2),
    "measures": Measures(latency_s=0.5),
    "attribution": "retrieval",
    "trace_id": "ab" * 16,
    "artifact_path": None,
    "started": "2026-12-01T00:00:00Z",
}


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from([*good_attempt, "conversation"]),
    value=values
    | st.just([CheckResult(name="x", passed=True)])
    | st.just([{"name": "x", "passed": True}])
    | st.just([ConversationTurn(user="u")])
    | st.sampled_from(["pass", "error", "generation"]),
    drop=st.booleans(),
)
def test_attempt(field: str, value: Any, drop: bool) -> None:
    fields = dict(good_attempt)
    if drop:
        fields.pop(field, None)
    else:
        fields[field] = value
    mine, theirs = outcome(attempt, **fields), outcome(Attempt, **fields)
    if isinstance(theirs, tuple):
        assert mine == theirs
    else:
        same(mine, theirs)
        assert mine.checks is not fields.get("checks")  # a list of its own, as the constructor gives


def test_attempt_refuses_what_the_constructor_refuses() -> None:
    with pytest.raises(ValidationError):
        attempt(**{**good_attempt, "unknown": 1})
    with pytest.raises(ValidationError):
        attempt(**{**good_attempt, "status": "maybe"})
