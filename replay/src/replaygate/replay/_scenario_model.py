"""The scenario model: one regression scenario of the golden set, as stored in a YAML file."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from replaygate.replay._scenario_checks import Check, JudgeSpec, compile_pattern

__all__ = [
    "ID_PATTERN",
    "ORIGINS",
    "STATES",
    "TIERS",
    "ActiveStatus",
    "ChangelogEntry",
    "Followups",
    "KnownFailureStatus",
    "Origin",
    "QuarantinedStatus",
    "RetiredStatus",
    "RetrievalLabels",
    "Scenario",
    "ScriptRule",
    "ScenarioStatus",
    "StopWhen",
    "Tier",
]

#: A scenario id (and its file stem).
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
ORIGINS = ("original-eval", "production-incident", "near-miss", "missed-escalation", "adversarial")
TIERS = ("smoke", "release", "scheduled")
STATES = ("active", "quarantined", "known-failure", "retired")

Origin = Literal["original-eval", "production-incident", "near-miss", "missed-escalation", "adversarial"]
Tier = Literal["smoke", "release", "scheduled"]
NonEmptyStr = Annotated[str, Field(min_length=1)]


def _reason(value: str) -> str:
    if not value.strip():
        raise ValueError("a reason must say why (it is empty)")
    return value


def _default_tiers() -> list[Tier]:
    return ["release"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ActiveStatus(_Model):
    """Runs and counts in the gate."""

    state: Literal["active"] = "active"


class QuarantinedStatus(_Model):
    """Flaky or under investigation: still runs; counts in the gate only when must-pass."""

    state: Literal["quarantined"] = "quarantined"
    owner: NonEmptyStr
    until: dt.date
    reason: str

    _check_reason = field_validator("reason")(_reason)


class KnownFailureStatus(_Model):
    """Fails today and everyone knows it: runs and stays visible in every report."""

    state: Literal["known-failure"] = "known-failure"
    reason: str

    _check_reason = field_validator("reason")(_reason)


class RetiredStatus(_Model):
    """No longer selected (the file stays, for history)."""

    state: Literal["retired"] = "retired"
    reason: str
    date: dt.date

    _check_reason = field_validator("reason")(_reason)


ScenarioStatus = Annotated[
    ActiveStatus | QuarantinedStatus | KnownFailureStatus | RetiredStatus, Field(discriminator="state")
]


class RetrievalLabels(_Model):
    """Relevant document ids for retrieval metrics@k; ``confirmed: false`` means suggested by promotion."""

    relevant: list[NonEmptyStr] = Field(default_factory=list)
    k: Annotated[int, Field(ge=1)] = 5
    confirmed: bool = True


def _pattern(value: str | None) -> str | None:
    if value is not None:
        compile_pattern(value)
    return value


class StopWhen(_Model):
    """When the simulated user stops early: the answer matches ``answer_regex`` or its label is listed."""

    answer_regex: NonEmptyStr | None = None
    labels: list[Literal["answer", "escalate", "clarify", "refuse"]] = Field(default_factory=list)

    _check_regex = field_validator("answer_regex")(_pattern)


class ScriptRule(_Model):
    """One rule of the scripted simulator: when the last answer matches ``when``, say one of ``say``.

    A rule without ``when`` always applies; the line is chosen with the run's seed, and each line is said
    at most once per conversation.
    """

    when: NonEmptyStr | None = None
    say: Annotated[list[NonEmptyStr], Field(min_length=1)]

    _check_when = field_validator("when")(_pattern)


class Followups(_Model):
    """Simulated follow-up turns: after each answer a simulator writes the next user turn.

    Up to ``max_turns`` turns, playing ``persona`` towards ``goal``; every turn goes through the session.
    """

    max_turns: Annotated[int, Field(ge=1, le=20)]
    goal: NonEmptyStr
    persona: str = ""
    stop_when: StopWhen | None = None
    script: list[ScriptRule] = Field(default_factory=list)


class ChangelogEntry(_Model):
    """Who changed the scenario, when, and why."""

    date: dt.date
    author: NonEmptyStr
    reason: str

    _check_reason = field_validator("reason")(_reason)


class Scenario(_Model):
    """One scenario of the golden set (see the module docstring of :mod:`replaygate.replay._scenario`)."""

    id: Annotated[str, Field(pattern=ID_PATTERN, max_length=200)]
    title: NonEmptyStr
    owner: NonEmptyStr
    origin: Origin
    source_trace: NonEmptyStr | None = None
    added: dt.date
    must_pass: bool = False
    tags: dict[NonEmptyStr, str] = Field(default_factory=dict)
    tiers: Annotated[list[Tier], Field(min_length=1)] = Field(default_factory=_default_tiers)
    holdout: bool = False
    status: ScenarioStatus = Field(default_factory=ActiveStatus)
    expected_behavior: str = ""
    turns: Annotated[list[NonEmptyStr], Field(min_length=1)]
    followups: Followups | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    allow_empty: bool = False
    checks: list[Check] = Field(default_factory=list)
    judges: list[JudgeSpec] = Field(default_factory=list)
    retrieval: RetrievalLabels | None = None
    repeats: Annotated[int, Field(ge=1, le=1000)] = 5
    threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.8
    changelog: list[ChangelogEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_tiers(self) -> Scenario:
        if len(set(self.tiers)) != len(self.tiers):
            raise ValueError(f"tiers lists a tier twice: {self.tiers}; list each tier once")
        longest = len(self.turns) + (self.followups.max_turns if self.followups else 0)
        for check in self.checks:
            if isinstance(check.turn, int) and check.turn > longest:
                raise ValueError(
                    f"a {check.type} check reads turn {check.turn}, but the conversation has at most "
                    f"{longest} turn(s); use a turn number up to {longest}, 'last' or 'every'"
                )
        return self

    @property
    def state(self) -> str:
        """The status name: active, quarantined, known-failure or retired."""
        return self.status.state
