"""Plain records of captured spans and traces, shared by the store, replay, promotion and canary.

A :class:`SpanRecord` is one finished span as stored (and as captured in-process during replay);
a :class:`TraceSummary` is what a trace means for replaygate: the turns, the answer, the retrieved
chunks, tool and LLM calls, and the failure signals. ``summarize_spans`` derives the second from the
first, so the trace store, the replay engine and the canary's live measures read traces one way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from replaygate.instrumentation._frozen import fast_init
from replaygate.instrumentation._reasons import FAILURE_REASONS, ordered_reasons

__all__ = [
    "FAILURE_REASONS",
    "Chunk",
    "LlmCall",
    "SpanKind",
    "SpanRecord",
    "ToolCall",
    "TraceRecord",
    "TraceSummary",
    "ordered_reasons",
]

SpanKind = Literal["agent", "retrieval", "tool", "llm", "other"]


@fast_init
@dataclass(frozen=True)
class SpanRecord:
    """One finished span: ids as lowercase hex, times in nanoseconds since the epoch."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    status: Literal["ok", "error", "unset"]
    status_message: str | None
    attributes: dict[str, Any]
    events: tuple[dict[str, Any], ...] = ()


@fast_init
@dataclass(frozen=True)
class Chunk:
    """One retrieved chunk, ``rank`` starting at 1; ``text`` is a sha256 hash when content is off."""

    id: str
    score: float | None
    rank: int
    text: str | None
    query: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@fast_init
@dataclass(frozen=True)
class ToolCall:
    """One tool call with its decoded arguments and result (``error`` when the tool raised)."""

    name: str
    arguments: dict[str, Any]
    result: Any
    call_id: str | None = None
    error: str | None = None


@fast_init
@dataclass(frozen=True)
class LlmCall:
    """One LLM call; token counts are None when the provider did not report them.

    ``cost_usd`` is the cost the span itself reported (``gen_ai.usage.cost``, OpenInference's
    ``llm.cost.total``), None when it carried none; replay prices calls with genai-prices otherwise.
    """

    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float
    cost_usd: float | None = None


@fast_init
@dataclass(frozen=True)
class TraceSummary:
    """What one trace means: one or more agent calls (turns) and everything under them."""

    trace_id: str
    session_id: str | None
    user_id: str | None
    agent_name: str | None
    agent_version: str | None
    turns: tuple[str, ...]  # user inputs, in order, one per agent call in this trace
    output: str | None  # the final answer (last agent call's output)
    outputs: tuple[str | None, ...]  # every agent call's output, in order
    error: str | None  # exception type and message when an agent call raised
    chunks: tuple[Chunk, ...]
    tool_calls: tuple[ToolCall, ...]
    llm_calls: tuple[LlmCall, ...]
    escalated: bool
    escalation_reason: str | None
    clarification: bool
    failure_reasons: tuple[str, ...]
    latency_s: float
    input_tokens: int | None
    output_tokens: int | None
    variant: str | None = None
    config_id: str | None = None
    retrieval_threshold: float | None = None
    retrieval_filtered: int | None = None


@dataclass(frozen=True)
class TraceRecord:
    """A stored trace: its summary, its spans, and when it started (ns since the epoch)."""

    summary: TraceSummary
    spans: tuple[SpanRecord, ...]
    start_ns: int
    end_ns: int
    feedback: tuple[dict[str, Any], ...] = ()
