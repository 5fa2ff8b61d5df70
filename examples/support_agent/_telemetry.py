"""The one place the support agent talks to replaygate's instrumentation.

Every span and signal the agent emits goes through these few functions, so the agent logic stays
testable on its own and the instrumentation seam is visible at a glance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

__all__ = [
    "LlmSpan",
    "RetrievalSpan",
    "ToolSpan",
    "agent_span",
    "annotate",
    "annotate_config",
    "current_trace_id",
    "escalation",
    "clarification",
    "failure",
    "feedback",
    "llm_span",
    "retrieval_span",
    "tool_span",
]

F = TypeVar("F", bound=Callable[..., Any])


class RetrievalSpan(Protocol):
    def record(self, documents: Sequence[Mapping[str, Any]], filtered: int | None = None) -> None: ...


class ToolSpan(Protocol):
    def set_result(self, value: Any) -> None: ...


class LlmSpan(Protocol):
    def set_usage(self, input_tokens: int | None, output_tokens: int | None) -> None: ...

    def set_output(self, output: Any) -> None: ...


class _Null:
    def record(self, documents: Sequence[Mapping[str, Any]], filtered: int | None = None) -> None:
        pass

    def set_result(self, value: Any) -> None:
        pass

    def set_usage(self, input_tokens: int | None, output_tokens: int | None) -> None:
        pass

    def set_output(self, output: Any) -> None:
        pass


def agent_span(name: str, version: str) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        return fn

    return wrap


@contextmanager
def retrieval_span(query: str, data_source: str, threshold: float | None) -> Iterator[RetrievalSpan]:
    yield _Null()


@contextmanager
def tool_span(name: str, arguments: Mapping[str, Any]) -> Iterator[ToolSpan]:
    yield _Null()


@contextmanager
def llm_span(model: str, provider: str) -> Iterator[LlmSpan]:
    yield _Null()


def escalation(reason: str) -> None:
    pass


def clarification() -> None:
    pass


def failure(reason: str) -> None:
    pass


def annotate(attributes: Mapping[str, Any]) -> None:
    pass


def annotate_config(config_id: str, agent_version: str, prompt_version: str) -> None:
    """Record which configuration answered on the agent span (config id, agent and prompt version)."""
    annotate(
        {
            "replaygate.config_id": config_id,
            "gen_ai.agent.version": agent_version,
            "support_agent.prompt_version": prompt_version,
        }
    )


def current_trace_id() -> str | None:
    return None


def feedback(trace_id: str, score: float, comment: str | None, store: str | Path | None) -> None:
    pass
