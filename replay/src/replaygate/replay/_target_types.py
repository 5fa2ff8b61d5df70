"""What a target is and what it returns: the types both target kinds (callable, HTTP) share.

:class:`Target` is the protocol the replay runner calls; :class:`TargetOutput` is one attempt's answer;
:func:`parse_target_output` validates what an agent returned (a str, or a mapping with a str ``answer``,
optional ``label`` and ``messages``) and says what came back when it is anything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from replaygate.instrumentation import fast_init
from replaygate.replay._errors import TargetError
from replaygate.replay._runfile import ConversationTurn

__all__ = ["Target", "TargetOutput", "parse_target_output"]


@fast_init
@dataclass(frozen=True)
class TargetOutput:
    """What a target returned for one attempt."""

    answer: str
    label: str | None = None
    messages: list[Any] = field(default_factory=list)
    raw: Any = None
    conversation: tuple[ConversationTurn, ...] = ()
    """Every turn of a conversation with simulated follow-ups (empty otherwise)."""


@runtime_checkable
class Target(Protocol):
    """Runs one session of the agent; the replay runner calls ``call`` once per attempt."""

    spec: str

    async def call(
        self, turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any], *, session_id: str
    ) -> TargetOutput: ...

    async def aclose(self) -> None: ...


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def parse_target_output(value: Any) -> TargetOutput:
    """Validate what a target returned; garbage raises :class:`TargetError` saying what came back."""
    if isinstance(value, str):
        return TargetOutput(answer=value, raw=value)
    if isinstance(value, Mapping):
        answer = value.get("answer")
        if not isinstance(answer, str):
            raise TargetError(
                f"bad target output: the mapping's 'answer' is {_describe(answer)}, expected a str "
                "(return a str or a mapping with a str 'answer')"
            )
        label = value.get("label")
        if label is not None and not isinstance(label, str):
            raise TargetError(f"bad target output: 'label' is {_describe(label)}, expected a str or null")
        messages = value.get("messages")
        if messages is None:
            messages = []
        if not isinstance(messages, list):
            raise TargetError(f"bad target output: 'messages' is {_describe(messages)}, expected a list")
        return TargetOutput(answer=answer, label=label, messages=list(messages), raw=dict(value))
    raise TargetError(
        f"bad target output: got {type(value).__name__} {_describe(value)}; "
        "expected a str or a mapping with a str 'answer'"
    )
