"""Per-session conversation state, the result of one turn, and the runtime a model drives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from examples.support_agent._config import AgentConfig
from examples.support_agent._retriever import RetrievalResult
from examples.support_agent._tools import SupportTools

__all__ = ["INJECTED_FAILURES", "Label", "Runtime", "SessionState", "TurnModel", "TurnResult"]

Label = Literal["answer", "escalate", "clarify", "refuse"]

#: The failures the offline model can plant, as recorded in ``TurnResult.injected``.
INJECTED_FAILURES = (
    "refusal_without_tools",
    "ungrounded_claim",
    "empty_answer",
    "refund_over_limit",
    "missed_escalation",
    "unneeded_escalation",
)


@dataclass(frozen=True)
class TurnResult:
    """What happened in one turn: the answer, its label, and the ground truth the simulator needs."""

    message: str
    answer: str
    label: Label
    intent: str
    trace_id: str | None = None
    must_escalate: bool = False
    injected: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    tool_calls: tuple[dict[str, Any], ...] = ()
    chunk_ids: tuple[str, ...] = ()


@dataclass
class SessionState:
    """What the agent remembers of one conversation."""

    session_id: str | None
    user_id: str | None = None
    history: list[dict[str, str]] = field(default_factory=list)
    turns: list[TurnResult] = field(default_factory=list)
    topic_query: str | None = None  # the retrieval query of the last topical turn
    order_id: str | None = None
    pending: str | None = None  # the intent waiting for details we asked for
    pending_amount: float | None = None


class Runtime(Protocol):
    """What a turn model may use: the configuration, tools, retrieval and a traced model step."""

    config: AgentConfig
    tools: SupportTools

    def retrieve(self, query: str) -> RetrievalResult: ...

    def model_step(self, input_text: str, output_text: str) -> None: ...


class TurnModel(Protocol):
    """A model that plays one turn of the conversation (the offline stand-in or a real endpoint)."""

    name: str

    def run_turn(self, message: str, state: SessionState, runtime: Runtime) -> TurnResult: ...
