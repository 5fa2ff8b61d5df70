"""Declarations of a scenario's deterministic checks and judges (their scoring lives in the replay engine).

Each check and judge is its own pydantic model, discriminated on ``type``. Regular expressions are compiled
(RE2, linear time; see :mod:`._regex`) and JSON schemas are checked when the scenario is loaded, so a bad
pattern is a load error with file:line, never a surprise in the middle of a run. Numbers are finite:
a ``tool_args`` bound of ``.nan`` or ``.inf`` is a load error.

Every check has ``turn``: ``last`` (the default: the final answer), ``every`` (each answer of the
conversation must pass) or a turn number N (1-based: the N-th answer). A check on a turn the attempt did
not reach fails, saying so.

Attribute note: the ``json_schema`` check's YAML key is ``schema``; in Python it is
:attr:`JsonSchemaCheck.json_schema` (``schema`` would shadow a pydantic ``BaseModel`` method).
"""

from __future__ import annotations

import math
import warnings
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from replaygate.replay._regex import ScenarioRegex, compile_scenario_regex

__all__ = [
    "CHECK_MODELS",
    "LABELS",
    "Check",
    "ContainsCheck",
    "ContextRelevanceJudgeSpec",
    "ExpectedLabelCheck",
    "ExpectedToolsCheck",
    "ForbiddenOutputRegexCheck",
    "ForbiddenToolsCheck",
    "GroundednessJudgeSpec",
    "JsonSchemaCheck",
    "JudgeSpec",
    "MaxCharsCheck",
    "MaxStepsCheck",
    "NotContainsCheck",
    "OutputRegexCheck",
    "ToolArgsCheck",
    "TurnTarget",
    "ValuesFromToolsCheck",
    "compile_pattern",
]

#: The labels an answer can carry (``expected_label``).
LABELS = ("answer", "escalate", "clarify", "refuse")

Label = Literal["answer", "escalate", "clarify", "refuse"]
NonEmptyStr = Annotated[str, Field(min_length=1)]
Scalar = str | int | float | bool


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: Whether the file wrote this check as a one-key shorthand (it is written back the same way).
    _shorthand: bool = PrivateAttr(default=False)

    def __eq__(self, other: object) -> bool:
        """Equal when the fields are: the form a file wrote a check in is not part of what it checks."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__


def compile_pattern(pattern: str) -> ScenarioRegex:
    """Compile a scenario regex (RE2, else bounded ``re``); a bad one raises ``ValueError`` saying why."""
    return compile_scenario_regex(pattern)


#: Which turn of the conversation a check reads: the last (default), every one, or turn N (1-based).
TurnTarget = Literal["last", "every"] | Annotated[int, Field(ge=1)]


class _CheckSpec(_Spec):
    turn: TurnTarget = "last"
    """``last`` (default), ``every`` (each turn's answer must pass) or N: the N-th turn's answer."""


class _PatternMixin(_CheckSpec):
    pattern: NonEmptyStr

    @field_validator("pattern")
    @classmethod
    def _compile(cls, value: str) -> str:
        compile_pattern(value)
        return value

    @property
    def regex(self) -> ScenarioRegex:
        """The compiled pattern (cached)."""
        return compile_scenario_regex(self.pattern)


class OutputRegexCheck(_PatternMixin):
    """The answer must match ``pattern`` (``re.search``)."""

    type: Literal["output_regex"] = "output_regex"


class ForbiddenOutputRegexCheck(_PatternMixin):
    """The answer must not match ``pattern``; an empty answer never passes it by accident."""

    type: Literal["forbidden_output_regex"] = "forbidden_output_regex"


class ContainsCheck(_CheckSpec):
    """The answer must contain every one of ``values``."""

    type: Literal["contains"] = "contains"
    values: Annotated[list[NonEmptyStr], Field(min_length=1)]
    case_sensitive: bool = False


class NotContainsCheck(_CheckSpec):
    """The answer must contain none of ``values``."""

    type: Literal["not_contains"] = "not_contains"
    values: Annotated[list[NonEmptyStr], Field(min_length=1)]
    case_sensitive: bool = False


class MaxCharsCheck(_CheckSpec):
    """The answer is at most ``limit`` characters long."""

    type: Literal["max_chars"] = "max_chars"
    limit: Annotated[int, Field(ge=0)]


class ExpectedToolsCheck(_CheckSpec):
    """Every tool in ``tools`` is called (in that order when ``ordered``).

    ``suggested: true`` marks a check drafted by promotion from the tools the failing trace called: it
    still runs, but a person should confirm it (and remove the flag, with a changelog entry).
    """

    type: Literal["expected_tools"] = "expected_tools"
    tools: Annotated[list[NonEmptyStr], Field(min_length=1)]
    ordered: bool = False
    suggested: bool = False


class ForbiddenToolsCheck(_CheckSpec):
    """None of ``tools`` is called."""

    type: Literal["forbidden_tools"] = "forbidden_tools"
    tools: Annotated[list[NonEmptyStr], Field(min_length=1)]


class ToolArgsCheck(_CheckSpec):
    """Every call of ``tool`` has argument ``arg`` within bounds (``min``/``max``), ``equals`` or ``pattern``.

    Calls of other tools are ignored; when ``tool`` is not called the check passes (pair it with
    ``expected_tools`` to require the call).
    """

    type: Literal["tool_args"] = "tool_args"
    tool: NonEmptyStr
    arg: NonEmptyStr
    min: float | None = None
    max: float | None = None
    equals: Scalar | None = None
    pattern: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compile(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)
        return value

    @field_validator("min", "max")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"a bound must be a finite number, not {value}; write a number such as 200")
        return value

    @field_validator("equals")
    @classmethod
    def _finite_equals(cls, value: Scalar | None) -> Scalar | None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"equals must be a finite number, not {value}")
        return value

    @model_validator(mode="after")
    def _some_bound(self) -> ToolArgsCheck:
        if self.min is None and self.max is None and self.equals is None and self.pattern is None:
            raise ValueError("a tool_args check needs at least one of min, max, equals or pattern")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"tool_args min {self.min} is greater than max {self.max}; swap them")
        return self

    @property
    def regex(self) -> ScenarioRegex | None:
        """The compiled ``pattern``, or None."""
        return None if self.pattern is None else compile_scenario_regex(self.pattern)


class MaxStepsCheck(_CheckSpec):
    """The attempt takes at most ``limit`` steps (LLM calls plus tool calls)."""

    type: Literal["max_steps"] = "max_steps"
    limit: Annotated[int, Field(ge=1)]


class ExpectedLabelCheck(_CheckSpec):
    """The answer's label (answer, escalate, clarify, refuse) is ``label``."""

    type: Literal["expected_label"] = "expected_label"
    label: Label


class JsonSchemaCheck(_CheckSpec):
    """The answer parses as JSON and validates against the schema (YAML key ``schema``)."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: dict[str, Any] = Field(alias="schema")

    @field_validator("json_schema")
    @classmethod
    def _check_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        import jsonschema.exceptions
        import jsonschema.validators

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                validator = jsonschema.validators.validator_for(value)
                validator.check_schema(value)
            except jsonschema.exceptions.SchemaError as exc:
                raise ValueError(f"invalid JSON schema: {exc.message}; fix the schema") from None
            except Warning as exc:
                raise ValueError(f"JSON schema not usable: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - any failure of an arbitrary schema is a load error
                raise ValueError(f"JSON schema cannot be checked ({type(exc).__name__}: {exc})") from None
        return value


class ValuesFromToolsCheck(_CheckSpec):
    """Every match of ``pattern`` in the answer occurs in a result of ``tools`` (all tools when omitted)."""

    type: Literal["values_from_tools"] = "values_from_tools"
    pattern: NonEmptyStr
    tools: list[NonEmptyStr] | None = None

    @field_validator("pattern")
    @classmethod
    def _compile(cls, value: str) -> str:
        compile_pattern(value)
        return value

    @property
    def regex(self) -> ScenarioRegex:
        """The compiled pattern."""
        return compile_scenario_regex(self.pattern)


Check = Annotated[
    OutputRegexCheck
    | ForbiddenOutputRegexCheck
    | ContainsCheck
    | NotContainsCheck
    | MaxCharsCheck
    | ExpectedToolsCheck
    | ForbiddenToolsCheck
    | ToolArgsCheck
    | MaxStepsCheck
    | ExpectedLabelCheck
    | JsonSchemaCheck
    | ValuesFromToolsCheck,
    Field(discriminator="type"),
]
#: check type -> its model, read from the ``Check`` union (the one list of checks: the loader's forms,
#: the JSON schema and the scorer all go by it).
CHECK_MODELS: dict[str, type[BaseModel]] = {
    model.model_fields["type"].default: model for model in get_args(get_args(Check)[0])
}

Score = Annotated[float, Field(ge=0.0, le=1.0)]


class GroundednessJudgeSpec(_Spec):
    """Groundedness of the answer in the attempt's retrieved chunks; ``claims`` mode checks each claim."""

    type: Literal["groundedness"] = "groundedness"
    mode: Literal["answer", "claims"] = "answer"
    min_score: Score = 0.8


class ContextRelevanceJudgeSpec(_Spec):
    """Relevance of each retrieved chunk to the question; passes when the score reaches ``min_score``."""

    type: Literal["context_relevance"] = "context_relevance"
    min_score: Score = 0.5


JudgeSpec = Annotated[GroundednessJudgeSpec | ContextRelevanceJudgeSpec, Field(discriminator="type")]
