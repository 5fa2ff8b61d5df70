"""The run file's per-attempt models built without a pass through pydantic, when their values are plain.

Scoring one attempt makes a ``CheckResult`` per check, a ``Measures`` and an ``Attempt``; validating each
costs more than the checks themselves for a fast target. :func:`check_result`, :func:`measures` and
:func:`attempt` make the very objects the validating constructor makes (same field values, same fields
set, same class) when every value already has the exact type its field declares — a ``str`` for a
``str``, an ``int`` (not a ``bool``) for an ``int``, an instance of the field's model class — and call the
validating constructor otherwise, so anything else is validated (coerced or refused) as before. A test
compares them with the constructors on generated values.
"""

from __future__ import annotations

from typing import Any

from replaygate.replay._runfile import (
    Attempt,
    CheckResult,
    ConversationTurn,
    JudgeResult,
    Measures,
    RetrievalScores,
)

__all__ = ["attempt", "check_result", "measures"]

_new = object.__new__
_set = object.__setattr__
_CHECK_FIELDS = frozenset(("name", "passed", "detail"))
_MEASURES_FIELDS = frozenset(Measures.model_fields)
_STATUS = frozenset(("pass", "fail", "error"))
_ATTRIBUTION = (None, "retrieval", "generation")
_ATTEMPT_DEFAULTS: dict[str, Any] = {
    name: field.get_default(call_default_factory=True) for name, field in Attempt.model_fields.items()
}


def _built(cls: type[Any], values: dict[str, Any], fields_set: set[str]) -> Any:
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_private__", None)
    return model


def check_result(name: str, passed: bool, detail: str) -> CheckResult:
    """``CheckResult(name=name, passed=passed, detail=detail)``."""
    if type(name) is str and type(passed) is bool and type(detail) is str:
        built: CheckResult = _built(
            CheckResult, {"name": name, "passed": passed, "detail": detail}, set(_CHECK_FIELDS)
        )
        return built
    return CheckResult(name=name, passed=passed, detail=detail)


def _int_or_none(value: Any) -> bool:
    return value is None or type(value) is int


def measures(
    *,
    latency_s: float,
    input_tokens: int | None,
    output_tokens: int | None,
    cost_usd: float | None,
    escalated: bool,
    empty: bool,
    steps: int,
    llm_calls: int | None,
) -> Measures:
    """``Measures(...)`` with every field given."""
    if (
        type(latency_s) is float
        and _int_or_none(input_tokens)
        and _int_or_none(output_tokens)
        and (cost_usd is None or type(cost_usd) is float)
        and type(escalated) is bool
        and type(empty) is bool
        and type(steps) is int
        and _int_or_none(llm_calls)
    ):
        values = {
            "latency_s": latency_s,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost_usd,
            "escalated": escalated,
            "empty": empty,
            "steps": steps,
            "llm_calls": llm_calls,
        }
        built: Measures = _built(Measures, values, set(_MEASURES_FIELDS))
        return built
    return Measures(
        latency_s=latency_s,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost_usd,
        escalated=escalated,
        empty=empty,
        steps=steps,
        llm_calls=llm_calls,
    )


def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _plain_attempt(values: dict[str, Any]) -> bool:
    checks, judges, conversation = values["checks"], values["judges"], values["conversation"]
    retrieval = values["retrieval"]
    return (
        type(values["scenario_id"]) is str
        and type(values["index"]) is int
        and type(values["status"]) is str
        and values["status"] in _STATUS
        and _str_or_none(values["error"])
        and _str_or_none(values["answer"])
        and type(checks) is list
        and all(type(c) is CheckResult for c in checks)
        and type(judges) is list
        and all(type(j) is JudgeResult for j in judges)
        and (retrieval is None or type(retrieval) is RetrievalScores)
        and type(values["measures"]) is Measures
        and values["attribution"] in _ATTRIBUTION
        and (type(values["attribution"]) is str or values["attribution"] is None)
        and _str_or_none(values["trace_id"])
        and _str_or_none(values["artifact_path"])
        and type(values["started"]) is str
        and (
            conversation is None
            or (type(conversation) is list and all(type(t) is ConversationTurn for t in conversation))
        )
    )


def attempt(**given: Any) -> Attempt:
    """``Attempt(**given)``."""
    unknown = given.keys() - _ATTEMPT_DEFAULTS.keys()
    if not unknown:
        values = {name: given.get(name, default) for name, default in _ATTEMPT_DEFAULTS.items()}
        if _plain_attempt(values):
            for name in ("checks", "judges"):  # the constructor gives each attempt a list of its own
                values[name] = list(values[name])
            if values["conversation"] is not None:
                values["conversation"] = list(values["conversation"])
            built: Attempt = _built(Attempt, values, set(given))
            return built
    return Attempt(**given)
