"""The one place the support agent talks to replaygate's instrumentation.

Every span and signal the agent emits goes through these few functions, so the agent logic stays
readable and the instrumentation seam is visible at a glance. Nothing here configures export: the
process that runs the agent calls ``replaygate.instrumentation.configure`` (the demo does; without it
the spans go to the global OpenTelemetry provider, a no-op by default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from replaygate.instrumentation import (
    annotate_agent,
    llm_call,
    mark_clarification,
    mark_escalation,
    mark_failure,
    record_feedback,
    retrieval,
    tool_call,
    trace_agent,
)
from replaygate.instrumentation import current_trace_id as _current_trace_id

__all__ = [
    "LlmSpan",
    "RetrievalSpan",
    "ToolSpan",
    "agent_span",
    "annotate_config",
    "clarification",
    "current_trace_id",
    "escalation",
    "failure",
    "feedback",
    "llm_span",
    "retrieval_span",
    "tool_span",
]

F = TypeVar("F", bound=Callable[..., Any])


class RetrievalSpan(Protocol):
    def record(self, documents: Iterable[Any], filtered: int | None = None) -> None: ...


class ToolSpan(Protocol):
    def set_result(self, value: Any) -> None: ...


class LlmSpan(Protocol):
    def set_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None: ...

    def set_output(self, output: Any) -> None: ...


def agent_span(name: str, version: str) -> Callable[[F], F]:
    """Decorate the agent's entry point: one ``invoke_agent {name}`` span (one trace) per call."""
    return trace_agent(name=name, version=version)


def retrieval_span(
    query: str, data_source: str, threshold: float | None
) -> AbstractContextManager[RetrievalSpan]:
    return retrieval(query, data_source=data_source, threshold=threshold)


def tool_span(name: str, arguments: Mapping[str, Any]) -> AbstractContextManager[ToolSpan]:
    return tool_call(name, dict(arguments))


def llm_span(model: str, provider: str, input_messages: Any = None) -> AbstractContextManager[LlmSpan]:
    return llm_call(model, provider=provider, input_messages=input_messages)


def escalation(reason: str) -> None:
    mark_escalation(reason)


def clarification() -> None:
    mark_clarification()


def failure(reason: str) -> None:
    mark_failure(reason)


def annotate_config(config_id: str, agent_version: str, prompt_version: str) -> None:
    """Record which configuration answered on the agent span (config id, agent and prompt version)."""
    annotate_agent(
        {
            "replaygate.config_id": config_id,
            "gen_ai.agent.version": agent_version,
            "support_agent.prompt_version": prompt_version,
        }
    )


def current_trace_id() -> str | None:
    return _current_trace_id()


def feedback(trace_id: str, score: float, comment: str | None, store: str | Path | None) -> None:
    record_feedback(trace_id, score, comment, store=store)
