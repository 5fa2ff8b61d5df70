"""From OpenTelemetry spans to replaygate records: ``span_to_record`` and ``summarize_spans``.

``span_to_record`` turns a finished SDK span into a plain :class:`SpanRecord` (hex ids, JSON-able
attributes); ``summarize_spans`` reads the spans of one trace the way the store, the replay engine and the
canary all read them: the user turns, the answer, the retrieved chunks, tool and LLM calls, and the failure
signals. Both are pure functions with no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from replaygate.instrumentation import _semconv as sc
from replaygate.instrumentation._records import (
    Chunk,
    LlmCall,
    SpanKind,
    SpanRecord,
    ToolCall,
    TraceSummary,
    ordered_reasons,
)

__all__ = ["decode_json", "jsonable", "span_kind", "span_to_record", "summarize_spans"]

_OPERATION_KINDS: dict[str, SpanKind] = {
    "invoke_agent": "agent",
    "create_agent": "agent",
    "execute_tool": "tool",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "retrieval": "retrieval",
}
_OPENINFERENCE_KINDS: dict[str, SpanKind] = {
    "AGENT": "agent",
    "TOOL": "tool",
    "LLM": "llm",
    "RETRIEVER": "retrieval",
}
_STATUS = {StatusCode.OK: "ok", StatusCode.ERROR: "error", StatusCode.UNSET: "unset"}


def jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data: tuples and other sequences become lists, unknown types text."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset) or (
        isinstance(value, Sequence) and not isinstance(value, bytes | bytearray)
    ):
        return [jsonable(v) for v in value]
    return str(value)


def span_kind(attributes: Mapping[str, Any]) -> SpanKind:
    """Classify a span from ``gen_ai.operation.name``, falling back to ``openinference.span.kind``."""
    operation = attributes.get(sc.OPERATION_NAME)
    if isinstance(operation, str) and operation in _OPERATION_KINDS:
        return _OPERATION_KINDS[operation]
    oi_kind = attributes.get(sc.OI_SPAN_KIND)
    if isinstance(oi_kind, str) and oi_kind.upper() in _OPENINFERENCE_KINDS:
        return _OPENINFERENCE_KINDS[oi_kind.upper()]
    return "other"


def span_to_record(span: ReadableSpan) -> SpanRecord:
    """Convert a finished SDK span into a :class:`SpanRecord` (32/16-character lowercase hex ids)."""
    context = span.context
    attributes = {k: jsonable(v) for k, v in (span.attributes or {}).items()}
    events = tuple(
        {
            "name": event.name,
            "timestamp_ns": int(event.timestamp or 0),
            "attributes": {k: jsonable(v) for k, v in (event.attributes or {}).items()},
        }
        for event in span.events
    )
    start_ns = int(span.start_time or 0)
    return SpanRecord(
        trace_id=format(context.trace_id if context else 0, "032x"),
        span_id=format(context.span_id if context else 0, "016x"),
        parent_id=format(span.parent.span_id, "016x") if span.parent is not None else None,
        name=span.name,
        kind=span_kind(attributes),
        start_ns=start_ns,
        end_ns=int(span.end_time or start_ns),
        status=_STATUS.get(span.status.status_code, "unset"),  # type: ignore[arg-type]
        status_message=span.status.description or None,
        attributes=attributes,
        events=events,
    )


def decode_json(value: Any) -> Any:
    """Decode a JSON string attribute; anything that is not valid JSON is returned unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _message_text(raw: Any, role: str | None) -> str | None:
    """The text of the last message (of ``role`` when given) in a ``gen_ai.*.messages`` JSON value."""
    messages = decode_json(raw)
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if not isinstance(message, dict) or (role is not None and message.get("role") != role):
            continue
        if isinstance(message.get("content"), str):
            return str(message["content"])
        parts = message.get("parts")
        if isinstance(parts, list):
            texts = [str(p["content"]) for p in parts if isinstance(p, dict) and "content" in p]
            if texts:
                return "\n".join(texts)
    return None


def _agent_input(span: SpanRecord) -> str | None:
    value = span.attributes.get(sc.OI_INPUT_VALUE)
    if value is not None:
        return _text(value)
    return _message_text(span.attributes.get(sc.INPUT_MESSAGES), "user")


def _agent_output(span: SpanRecord) -> str | None:
    value = span.attributes.get(sc.OI_OUTPUT_VALUE)
    if value is not None:
        return _text(value)
    return _message_text(span.attributes.get(sc.OUTPUT_MESSAGES), None)


def _error_text(span: SpanRecord) -> str | None:
    """``Type: message`` of the span's exception event, else its status message (None when not an error)."""
    for event in span.events:
        if event.get("name") == "exception":
            attrs = event.get("attributes") or {}
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            if kind or message:
                return f"{kind}: {message}" if kind and message else str(kind or message)
    if span.status == "error":
        return span.status_message or "error"
    return None


def _first(spans: Iterable[SpanRecord], *names: str) -> Any:
    for span in spans:
        for name in names:
            value = span.attributes.get(name)
            if value is not None and value != "":
                return value
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _chunk_metadata(value: Any) -> dict[str, Any]:
    decoded = decode_json(value)
    return {str(k): v for k, v in decoded.items()} if isinstance(decoded, dict) else {}


def _chunks(span: SpanRecord) -> list[Chunk]:
    """Chunks of one retrieval span: ``gen_ai.retrieval.documents`` first, OpenInference documents else."""
    attrs = span.attributes
    query = _text(attrs.get(sc.RG_RETRIEVAL_QUERY) or attrs.get(sc.OI_INPUT_VALUE))
    documents = decode_json(attrs.get(sc.RETRIEVAL_DOCUMENTS))
    chunks: list[Chunk] = []
    if isinstance(documents, list) and documents:
        for index, doc in enumerate(documents):
            if not isinstance(doc, dict) or doc.get("id") is None:
                continue
            text = doc.get("content", doc.get("text"))
            chunks.append(
                Chunk(
                    id=str(doc["id"]),
                    score=_as_float(doc.get("score")),
                    rank=_as_int(doc.get("rank")) or index + 1,
                    text=_text(text),
                    query=query,
                    metadata=_chunk_metadata(doc.get("metadata")),
                )
            )
        return chunks
    index = 0
    while (doc_id := attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_ID))) is not None:
        chunks.append(
            Chunk(
                id=str(doc_id),
                score=_as_float(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_SCORE))),
                rank=index + 1,
                text=_text(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_CONTENT))),
                query=query,
                metadata=_chunk_metadata(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_METADATA))),
            )
        )
        index += 1
    return chunks


def _tool_call(span: SpanRecord) -> ToolCall:
    attrs = span.attributes
    name = attrs.get(sc.TOOL_NAME) or span.name.removeprefix("execute_tool").strip() or span.name
    raw_args = attrs.get(sc.TOOL_CALL_ARGUMENTS, attrs.get(sc.OI_INPUT_VALUE))
    arguments = decode_json(raw_args)
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        arguments = {"value": arguments}
    result = decode_json(attrs.get(sc.TOOL_CALL_RESULT, attrs.get(sc.OI_OUTPUT_VALUE)))
    call_id = attrs.get(sc.TOOL_CALL_ID)
    return ToolCall(
        name=str(name),
        arguments=arguments,
        result=result,
        call_id=str(call_id) if call_id is not None else None,
        error=_error_text(span) if span.status == "error" else None,
    )


def _llm_call(span: SpanRecord) -> LlmCall:
    attrs = span.attributes
    model = attrs.get(sc.REQUEST_MODEL) or attrs.get(sc.RESPONSE_MODEL)
    provider = attrs.get(sc.PROVIDER_NAME)
    return LlmCall(
        model=str(model) if model is not None else None,
        provider=str(provider) if provider is not None else None,
        input_tokens=_as_int(attrs.get(sc.USAGE_INPUT_TOKENS)),
        output_tokens=_as_int(attrs.get(sc.USAGE_OUTPUT_TOKENS)),
        latency_s=max(0, span.end_ns - span.start_ns) / 1e9,
    )


def _token_total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _has_agent_ancestor(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> bool:
    seen: set[str] = set()
    parent_id = span.parent_id
    while parent_id is not None and parent_id in by_id and parent_id not in seen:
        seen.add(parent_id)
        parent = by_id[parent_id]
        if parent.kind == "agent":
            return True
        parent_id = parent.parent_id
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


def _agent_reasons(span: SpanRecord, top_level: bool) -> list[str]:
    """Failure reasons one agent span stands for.

    ``replaygate.failure.reasons`` (written by ``@trace_agent``) is trusted when present; otherwise the
    reasons are read from the span (error status, empty output unless the stream was closed early). A nested
    agent's exception or empty answer may have been handled by its caller, so only a top-level agent's count.
    """
    if sc.RG_FAILURE_REASONS in span.attributes:
        reasons = _reason_list(span.attributes[sc.RG_FAILURE_REASONS])
    else:
        reasons = []
        if span.status == "error":
            reasons.append("exception")
        else:
            output = _agent_output(span)
            closed_early = _true(span.attributes.get(sc.RG_STREAM_CLOSED_EARLY))
            if not closed_early and (output is None or not output.strip()):
                reasons.append("empty_answer")
    if not top_level:
        reasons = [r for r in reasons if r not in ("exception", "empty_answer")]
    return reasons


def _start_end(span: SpanRecord) -> tuple[int, int]:
    return span.start_ns, span.end_ns


def summarize_spans(spans: Sequence[SpanRecord]) -> TraceSummary:
    """Read what one trace means from its spans.

    Turns are the inputs of the agent spans that have no agent ancestor (several when a replay attempt
    wraps several turns in one root span), ordered by start (an agent span without a recorded input adds
    no turn; ``outputs`` still has one entry per agent call); the output is the last of them. Failure
    reasons come from ``replaygate.failure.reasons`` on agent spans (or, without it, from what a top-level
    agent span shows: an exception, an empty answer) and any escalation; a failed tool call alone is not a
    failure.

    Args:
        spans: the finished spans of one trace, in any order.

    Returns:
        The trace's summary; token totals are None when no LLM span reported any.
    """
    ordered = sorted(spans, key=_start_end) if len(spans) > 1 else list(spans)
    agents: list[SpanRecord] = []
    retrievals: list[SpanRecord] = []
    llms: list[SpanRecord] = []
    tools: list[SpanRecord] = []
    by_kind = {"agent": agents, "retrieval": retrievals, "llm": llms, "tool": tools}
    escalated = clarification = False
    for span in ordered:  # one pass: spans by kind, and the signals any span may carry
        bucket = by_kind.get(span.kind)
        if bucket is not None:
            bucket.append(span)
        attributes = span.attributes
        escalated = escalated or _true(attributes.get(sc.RG_ESCALATION))
        clarification = clarification or _true(attributes.get(sc.RG_CLARIFICATION))
    if agents:
        by_id = {s.span_id: s for s in ordered}
        top = [s for s in agents if not _has_agent_ancestor(s, by_id)]
    else:
        top = []
    inputs = [_agent_input(s) for s in top]
    outputs = tuple(_agent_output(s) for s in top)
    errors = [e for e in (_error_text(s) for s in top if s.status == "error") if e]

    chunks: list[Chunk] = []
    thresholds: list[float] = []
    filtered: list[int] = []
    for span in retrievals:
        chunks.extend(_chunks(span))
        threshold = _as_float(span.attributes.get(sc.RG_RETRIEVAL_THRESHOLD))
        if threshold is not None:
            thresholds.append(threshold)
        count = _as_int(span.attributes.get(sc.RG_RETRIEVAL_FILTERED))
        if count is not None:
            filtered.append(count)
    llm_calls = tuple(_llm_call(s) for s in llms)

    top_ids = {s.span_id for s in top}
    # top-level agents first
    preferred = top + [s for s in ordered if s.span_id not in top_ids] if top else ordered
    reasons = [r for span in agents for r in _agent_reasons(span, span.span_id in top_ids)]
    if escalated:
        reasons.append("escalation")

    if top:
        latency_s = (max(s.end_ns for s in top) - min(s.start_ns for s in top)) / 1e9
    elif ordered:
        latency_s = (max(s.end_ns for s in ordered) - ordered[0].start_ns) / 1e9
    else:
        latency_s = 0.0
    variant, config_id = _first(preferred, sc.RG_VARIANT), _first(preferred, sc.RG_CONFIG_ID)
    session_id = _first(preferred, sc.CONVERSATION_ID, sc.OI_SESSION_ID)
    user_id = _first(preferred, sc.OI_USER_ID)
    agent_name = _first(top or agents, sc.AGENT_NAME)
    if agent_name is None and (top or agents):
        agent_name = (top or agents)[0].name.removeprefix("invoke_agent").strip() or None
    agent_version = _first(top or agents, sc.AGENT_VERSION)
    return TraceSummary(
        trace_id=ordered[0].trace_id if ordered else "",
        session_id=_text(session_id),
        user_id=_text(user_id),
        agent_name=_text(agent_name),
        agent_version=_text(agent_version),
        turns=tuple(i for i in inputs if i is not None),
        output=outputs[-1] if outputs else None,
        outputs=outputs,
        error=errors[0] if errors else None,
        chunks=tuple(chunks),
        tool_calls=tuple(_tool_call(s) for s in tools),
        llm_calls=llm_calls,
        escalated=escalated,
        escalation_reason=_text(_first(preferred, sc.RG_ESCALATION_REASON)),
        clarification=clarification,
        failure_reasons=ordered_reasons(reasons),
        latency_s=max(0.0, latency_s),
        input_tokens=_token_total(c.input_tokens for c in llm_calls),
        output_tokens=_token_total(c.output_tokens for c in llm_calls),
        variant=_text(variant),
        config_id=_text(config_id),
        retrieval_threshold=thresholds[-1] if thresholds else None,
        retrieval_filtered=sum(filtered) if filtered else None,
    )
