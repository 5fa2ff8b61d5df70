"""A trace's meaning from its spans: ``summarize_spans``, over spans of any dialect.

``summarize_spans`` reads the spans of one trace the way the store, the replay engine and the canary all
read them: the user turns, the answer, the retrieved chunks, tool and LLM calls, and the failure signals.
Each span is read through :func:`~replaygate.instrumentation._normalize.normalize_span` (GenAI semconv,
OpenInference, OpenLLMetry), so a trace whose LLM calls come from the ecosystem's instrumentors is summarized
like one made with replaygate's own span helpers. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._normalize import (
    NormalizedSpan,
    decode_json,
    jsonable,
    normalize_record,
    session_of,
    span_kind,
    span_to_record,
    user_of,
)
from replaygate.instrumentation._records import (
    Chunk,
    SpanRecord,
    ToolCall,
    TraceSummary,
    ordered_reasons,
)

__all__ = ["decode_json", "jsonable", "row_summary", "span_kind", "span_to_record", "summarize_spans"]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _first(spans: Iterable[SpanRecord], *names: str) -> Any:
    for span in spans:
        for name in names:
            value = span.attributes.get(name)
            if value is not None and value != "":
                return value
    return None


def _token_total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _has_agent_ancestor(span: SpanRecord, by_id: Mapping[str, NormalizedSpan]) -> bool:
    seen: set[str] = set()
    parent_id = span.parent_id
    while parent_id is not None and parent_id in by_id and parent_id not in seen:
        seen.add(parent_id)
        parent = by_id[parent_id]
        if parent.kind == "agent":
            return True
        parent_id = parent.record.parent_id
    return False


def _reason_list(value: Any) -> list[str]:
    value = decode_json(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if v]
    return []


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _agent_reasons(span: NormalizedSpan, top_level: bool) -> list[str]:
    """Failure reasons one agent span stands for.

    ``replaygate.failure.reasons`` (written by ``@trace_agent``) is trusted when present; otherwise the
    reasons are read from the span (error status, empty output unless the stream was closed early). A nested
    agent's exception or empty answer may have been handled by its caller, so only a top-level agent's count.
    """
    attributes = span.record.attributes
    if sc.RG_FAILURE_REASONS in attributes:
        reasons = _reason_list(attributes[sc.RG_FAILURE_REASONS])
    else:
        reasons = []
        if span.record.status == "error":
            reasons.append("exception")
        else:
            output = span.agent.output if span.agent is not None else None
            closed_early = _true(attributes.get(sc.RG_STREAM_CLOSED_EARLY))
            if not closed_early and (output is None or not output.strip()):
                reasons.append("empty_answer")
    if not top_level:
        reasons = [r for r in reasons if r not in ("exception", "empty_answer")]
    return reasons


def _start_end(span: SpanRecord) -> tuple[int, int]:
    return span.start_ns, span.end_ns


def _requested_only(llms: Sequence[NormalizedSpan]) -> tuple[ToolCall, ...]:
    return tuple(call for span in llms for call in span.requested_tools)


def summarize_spans(spans: Sequence[SpanRecord]) -> TraceSummary:
    """Read what one trace means from its spans.

    Turns are the inputs of the agent spans that have no agent ancestor (several when a replay attempt
    wraps several turns in one root span), ordered by start (an agent span without a recorded input adds
    no turn; ``outputs`` still has one entry per agent call); the output is the last of them. Failure
    reasons come from ``replaygate.failure.reasons`` on agent spans (or, without it, from what a top-level
    agent span shows: an exception, an empty answer) and any escalation; a failed tool call alone is not a
    failure. Tool calls are the trace's tool spans; a trace with none (an agent that runs the tools its
    model asks for without tracing them) lists the tool calls its LLM spans' outputs asked for instead.

    Args:
        spans: the finished spans of one trace, in any order, of any dialect.

    Returns:
        The trace's summary; token totals are None when no LLM span reported any.
    """
    return _summarize(spans, detail=True)


def row_summary(spans: Sequence[SpanRecord]) -> TraceSummary:
    """:func:`summarize_spans` without what a trace's row never reads: chunks and tool calls are empty.

    The definition a trace's stored row is held to (``trace_row_draft`` reads the same facts in one pass).
    """
    return _summarize(spans, detail=False)


def _summarize(spans: Sequence[SpanRecord], *, detail: bool) -> TraceSummary:
    """Read one trace (``detail=False``: without chunks and tool calls)."""
    ordered = sorted(spans, key=_start_end) if len(spans) > 1 else list(spans)
    facts = [normalize_record(span, detail=detail) for span in ordered]
    agents: list[NormalizedSpan] = []
    retrievals: list[NormalizedSpan] = []
    llms: list[NormalizedSpan] = []
    tools: list[NormalizedSpan] = []
    by_kind = {"agent": agents, "retrieval": retrievals, "llm": llms, "tool": tools}
    escalated = clarification = False
    for fact in facts:  # one pass: spans by kind, and the signals any span may carry
        bucket = by_kind.get(fact.kind)
        if bucket is not None:
            bucket.append(fact)
        attributes = fact.record.attributes
        escalated = escalated or _true(attributes.get(sc.RG_ESCALATION))
        clarification = clarification or _true(attributes.get(sc.RG_CLARIFICATION))
    if agents:
        by_id = {f.record.span_id: f for f in facts}
        top = [f for f in agents if not _has_agent_ancestor(f.record, by_id)]
    else:
        top = []
    runs = [f.agent for f in top if f.agent is not None]
    inputs = [run.input for run in runs]
    outputs = tuple(run.output for run in runs)
    errors = [f.error for f in top if f.record.status == "error" and f.error]

    chunks: list[Chunk] = []
    thresholds: list[float] = []
    filtered: list[int] = []
    for fact in retrievals:
        found = fact.retrieval
        if found is None:
            continue
        chunks.extend(found.chunks)
        if found.threshold is not None:
            thresholds.append(found.threshold)
        if found.filtered is not None:
            filtered.append(found.filtered)
    llm_calls = tuple(f.llm for f in llms if f.llm is not None)
    if detail:
        tool_calls = tuple(f.tool for f in tools if f.tool is not None) or _requested_only(llms)
    else:
        tool_calls = ()

    top_ids = {f.record.span_id for f in top}
    preferred = [f.record for f in top] + [f.record for f in facts if f.record.span_id not in top_ids]
    reasons = [r for fact in agents for r in _agent_reasons(fact, fact.record.span_id in top_ids)]
    if escalated:
        reasons.append("escalation")

    if top:
        latency_s = (max(f.record.end_ns for f in top) - min(f.record.start_ns for f in top)) / 1e9
    elif ordered:
        latency_s = (max(s.end_ns for s in ordered) - ordered[0].start_ns) / 1e9
    else:
        latency_s = 0.0
    named = [f.agent for f in (top or agents) if f.agent is not None]
    return TraceSummary(
        trace_id=ordered[0].trace_id if ordered else "",
        session_id=_first_of(r.session_id for r in named) or session_of(preferred),
        user_id=_first_of(r.user_id for r in named) or user_of(preferred),
        agent_name=_first_of(r.name for r in named),
        agent_version=_first_of(r.version for r in named),
        turns=tuple(i for i in inputs if i is not None),
        output=outputs[-1] if outputs else None,
        outputs=outputs,
        error=errors[0] if errors else None,
        chunks=tuple(chunks),
        tool_calls=tool_calls,
        llm_calls=llm_calls,
        escalated=escalated,
        escalation_reason=_text(_first(preferred, sc.RG_ESCALATION_REASON)),
        clarification=clarification,
        failure_reasons=ordered_reasons(reasons),
        latency_s=max(0.0, latency_s),
        input_tokens=_token_total(c.input_tokens for c in llm_calls),
        output_tokens=_token_total(c.output_tokens for c in llm_calls),
        variant=_text(_first(preferred, sc.RG_VARIANT)),
        config_id=_text(_first(preferred, sc.RG_CONFIG_ID)),
        retrieval_threshold=thresholds[-1] if thresholds else None,
        retrieval_filtered=sum(filtered) if filtered else None,
    )


def _first_of(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


# The same readers for the store's trace-row reader (``_store_trace_row``; not part of ``__all__``).
reason_list = _reason_list
true_value = _true
