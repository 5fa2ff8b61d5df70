"""The one place that reads span attribute names: any producer's finished span to replaygate's records.

Teams already trace LLM calls with the ecosystem's instrumentors. :func:`normalize_span` reads a finished
span of any of these dialects and says what it is (agent run, LLM call, tool call, retrieval) and what it
carries:

- OpenTelemetry GenAI semantic conventions, current names (``gen_ai.operation.name``,
  ``gen_ai.provider.name``, ``gen_ai.usage.input_tokens``, ``gen_ai.input.messages`` …) and the deprecated
  ones still emitted (``gen_ai.system``, ``gen_ai.usage.prompt_tokens``/``completion_tokens``,
  ``gen_ai.prompt.{i}.*``/``gen_ai.completion.{i}.*``) — replaygate's own spans, the contrib
  ``opentelemetry-instrumentation-openai-v2``;
- OpenInference (``openinference.span.kind``, ``llm.model_name``, ``llm.provider``/``llm.system``,
  ``llm.token_count.*``, ``llm.cost.total``, ``input.value``/``output.value``, ``llm.input_messages.*``,
  ``llm.output_messages.*``, ``retrieval.documents.*``, ``tool.name``, ``tool.parameters``,
  ``session.id``, ``user.id``, ``agent.name``);
- OpenLLMetry (``traceloop.span.kind``, ``traceloop.entity.*``, ``traceloop.association.properties.*``,
  ``llm.request.type``, ``llm.usage.*`` and its ``gen_ai.*``).

It works on an SDK ``ReadableSpan``, on a :class:`SpanRecord`, or on plain fields (an attribute mapping with
name, status, times and ids), so spans decoded from OTLP protobuf/JSON or read from another tool's REST API
go through exactly the same code as spans finished in-process::

    from replaygate.instrumentation import normalize_span, span_record

    facts = normalize_span(readable_span)                 # an SDK span
    record = span_record(trace_id=..., span_id=..., name="ChatCompletion",
                         attributes=decoded_attributes, start_ns=..., end_ns=..., status="ok")
    facts = normalize_span(record)                        # the same, from decoded fields
    facts.kind, facts.llm, facts.tool, facts.chunks, facts.agent, facts.error

The store writes ``facts.record``; :func:`summarize_spans` builds a trace's summary from the facts of its
spans; content hashing asks :func:`is_content_attribute` which attributes carry text. Nothing else in
replaygate parses attribute names of other producers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._frozen import fast_init
from replaygate.instrumentation._records import Chunk, LlmCall, SpanKind, SpanRecord, ToolCall

__all__ = [
    "AGENT_NAMES",
    "INPUT_TOKEN_NAMES",
    "LL_ENTITY_NAME",
    "LL_SPAN_KIND",
    "MODEL_NAMES",
    "OUTPUT_TOKEN_NAMES",
    "PROVIDER_NAMES",
    "SESSION_NAMES",
    "USER_NAMES",
    "AgentRun",
    "agent_input",
    "agent_output",
    "attribute_items",
    "attribute_text",
    "first_value",
    "NormalizedSpan",
    "Retrieval",
    "as_float",
    "as_int",
    "decode_json",
    "error_text",
    "is_content_attribute",
    "is_content_event_attribute",
    "jsonable",
    "llm_call_of",
    "normalize_record",
    "normalize_span",
    "plain_attributes",
    "record_of_span",
    "session_of",
    "span_kind",
    "span_record",
    "span_to_record",
    "user_of",
]

_OPERATION_KINDS: dict[str, SpanKind] = {
    "invoke_agent": "agent",
    "create_agent": "agent",
    "execute_tool": "tool",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "embeddings": "llm",
    "retrieval": "retrieval",
}
_OPENINFERENCE_KINDS: dict[str, SpanKind] = {
    "AGENT": "agent",
    "TOOL": "tool",
    "LLM": "llm",
    "EMBEDDING": "llm",
    "RETRIEVER": "retrieval",
}
_TRACELOOP_KINDS: dict[str, SpanKind] = {"agent": "agent", "tool": "tool"}
_LLM_REQUEST_TYPES = frozenset({"chat", "completion", "embedding", "rerank"})
_STATUS = {StatusCode.OK: "ok", StatusCode.ERROR: "error", StatusCode.UNSET: "unset"}

# Deprecated / other-dialect names (the current GenAI names are in semconv).
_GEN_AI_SYSTEM = "gen_ai.system"
_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
_GEN_AI_COST = "gen_ai.usage.cost"
_RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
_OI_LLM_SYSTEM = "llm.system"
_OI_COST_TOTAL = "llm.cost.total"
_OI_AGENT_NAME = "agent.name"
_OI_TOOL_PARAMETERS = "tool.parameters"
_OI_TOOL_CALL_ID = "tool_call.id"
_OI_TOOL_ID = "tool.id"
_LL_SPAN_KIND = "traceloop.span.kind"
_LL_ENTITY_NAME = "traceloop.entity.name"
_LL_ENTITY_VERSION = "traceloop.entity.version"
_LL_ENTITY_INPUT = "traceloop.entity.input"
_LL_ENTITY_OUTPUT = "traceloop.entity.output"
_LL_SESSION = "traceloop.association.properties.session_id"
_LL_USER = "traceloop.association.properties.user_id"
_LL_REQUEST_TYPE = "llm.request.type"
_LL_PROMPT_TOKENS = "llm.usage.prompt_tokens"
_LL_COMPLETION_TOKENS = "llm.usage.completion_tokens"

_MODEL_NAMES = (
    sc.REQUEST_MODEL,
    sc.RESPONSE_MODEL,
    sc.OI_LLM_MODEL_NAME,
    "llm.request.model",
    "llm.response.model",
)
_PROVIDER_NAMES = (sc.PROVIDER_NAME, _GEN_AI_SYSTEM, sc.OI_LLM_PROVIDER, _OI_LLM_SYSTEM)
_INPUT_TOKEN_NAMES = (sc.USAGE_INPUT_TOKENS, _PROMPT_TOKENS, sc.OI_TOKEN_PROMPT, _LL_PROMPT_TOKENS)
_OUTPUT_TOKEN_NAMES = (
    sc.USAGE_OUTPUT_TOKENS,
    _COMPLETION_TOKENS,
    sc.OI_TOKEN_COMPLETION,
    _LL_COMPLETION_TOKENS,
)
_COST_NAMES = (_GEN_AI_COST, _OI_COST_TOTAL)
_SESSION_NAMES = (sc.CONVERSATION_ID, sc.OI_SESSION_ID, _LL_SESSION)
_USER_NAMES = (sc.OI_USER_ID, _LL_USER, "enduser.id")
_AGENT_NAMES = (sc.AGENT_NAME, _OI_AGENT_NAME)
# The same name lists for the store's trace-row reader (``_store_trace_row``), which reads what the row needs.
MODEL_NAMES, PROVIDER_NAMES, AGENT_NAMES = _MODEL_NAMES, _PROVIDER_NAMES, _AGENT_NAMES
INPUT_TOKEN_NAMES, OUTPUT_TOKEN_NAMES = _INPUT_TOKEN_NAMES, _OUTPUT_TOKEN_NAMES
SESSION_NAMES, USER_NAMES = _SESSION_NAMES, _USER_NAMES
LL_SPAN_KIND, LL_ENTITY_NAME = _LL_SPAN_KIND, _LL_ENTITY_NAME

#: Attributes that hold conversation text, retrieved text or tool payloads, in every dialect read here.
_CONTENT_NAMES = frozenset(
    {
        sc.OI_INPUT_VALUE,
        sc.OI_OUTPUT_VALUE,
        sc.INPUT_MESSAGES,
        sc.OUTPUT_MESSAGES,
        sc.TOOL_CALL_ARGUMENTS,
        sc.TOOL_CALL_RESULT,
        sc.RG_RETRIEVAL_QUERY,
        sc.RG_FAILURE_REASON,
        sc.RG_ESCALATION_REASON,
        "gen_ai.system_instructions",
        "gen_ai.prompt",
        "gen_ai.completion",
        _RETRIEVAL_QUERY_TEXT,
        _OI_TOOL_PARAMETERS,
        "llm.prompt_template.template",
        "llm.prompt_template.variables",
        _LL_ENTITY_INPUT,
        _LL_ENTITY_OUTPUT,
        "traceloop.prompt.template",
        "traceloop.prompt.template_variables",
        "exception.message",
        "exception.stacktrace",
        "error.message",
    }
)
_CONTENT_PATTERNS = re.compile(
    r"^(?:"
    r"(?:llm\.(?:input|output)_messages|gen_ai\.(?:prompt|completion))\.\d+\..*"  # OI / old OpenLLMetry
    r"(?:content|text|arguments|image\.url|message_content\.\w+)"
    r"|llm\.prompts(?:\.\d+.*)?"
    r"|(?:retrieval|reranker\.(?:input|output))\.documents\.\d+\.document\.(?:content|metadata)"
    r"|reranker\.query"
    r"|embedding\.embeddings\.\d+\.embedding\.text"
    r"|gen_ai\.(?:user|assistant|system|tool)\.message.*"
    r")$"
)
_NOT_CONTENT_SUFFIXES = (".role", ".finish_reason", ".name", ".id", ".type", ".tool_call_id")
_EVENT_CONTENT_NAMES = frozenset({"content", "body", "message", "gen_ai.prompt", "gen_ai.completion"})


def is_content_attribute(key: str) -> bool:
    """Whether the attribute ``key`` (of any dialect) carries content: hashed when capture is off."""
    if key in _CONTENT_NAMES:
        return True
    if key.endswith(_NOT_CONTENT_SUFFIXES):
        return False
    return bool(_CONTENT_PATTERNS.match(key))


def is_content_event_attribute(event_name: str, key: str) -> bool:
    """Whether an event attribute carries content (exception messages, GenAI message events, prompts)."""
    return (
        is_content_attribute(key)
        or key in _EVENT_CONTENT_NAMES
        or (
            event_name.startswith("gen_ai.")
            and not key.endswith(_NOT_CONTENT_SUFFIXES)
            and key not in _EVENT_META
        )
    )


_EVENT_META = frozenset({"gen_ai.system", "gen_ai.provider.name", "event.name", "index", "finish_reason"})


_PLAIN_TYPES = frozenset({str, bool, int, float, type(None)})


def jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data: tuples and other sequences become lists, unknown types text."""
    if type(value) in _PLAIN_TYPES or isinstance(value, str | bool | int | float):
        return value
    if type(value) is tuple and all(type(v) in _PLAIN_TYPES for v in value):
        return list(value)  # an OpenTelemetry array attribute
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset) or (
        isinstance(value, Sequence) and not isinstance(value, bytes | bytearray)
    ):
        return [jsonable(v) for v in value]
    return str(value)


def decode_json(value: Any) -> Any:
    """Decode a JSON string attribute; anything that is not valid JSON is returned unchanged."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def as_int(value: Any) -> int | None:
    """An integer attribute value, or None (booleans and non-numbers are None)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def as_float(value: Any) -> float | None:
    """A float attribute value, or None (booleans and non-numbers are None)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _first(attrs: Mapping[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        value = attrs.get(name)
        if value is not None and value != "":
            return value
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def session_of(spans: Iterable[SpanRecord]) -> str | None:
    """The first session / conversation id any of ``spans`` carries, in any dialect."""
    for span in spans:
        value = _first(span.attributes, _SESSION_NAMES)
        if value is not None:
            return _text(value)
    return None


def user_of(spans: Iterable[SpanRecord]) -> str | None:
    """The first user id any of ``spans`` carries, in any dialect."""
    for span in spans:
        value = _first(span.attributes, _USER_NAMES)
        if value is not None:
            return _text(value)
    return None


def span_kind(attributes: Mapping[str, Any]) -> SpanKind:
    """Classify a span by ``gen_ai.operation.name``, ``openinference.span.kind``, then OpenLLMetry's kinds."""
    operation = attributes.get(sc.OPERATION_NAME)
    if isinstance(operation, str) and operation in _OPERATION_KINDS:
        return _OPERATION_KINDS[operation]
    oi_kind = attributes.get(sc.OI_SPAN_KIND)
    if isinstance(oi_kind, str) and oi_kind.upper() in _OPENINFERENCE_KINDS:
        return _OPENINFERENCE_KINDS[oi_kind.upper()]
    ll_kind = attributes.get(_LL_SPAN_KIND)
    if isinstance(ll_kind, str) and ll_kind.lower() in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[ll_kind.lower()]
    request_type = attributes.get(_LL_REQUEST_TYPE)
    if isinstance(request_type, str) and request_type.lower() in _LLM_REQUEST_TYPES:
        return "llm"
    if oi_kind is None and ll_kind is None and _first(attributes, _INPUT_TOKEN_NAMES + _OUTPUT_TOKEN_NAMES):
        if _first(attributes, _MODEL_NAMES) is not None:
            return "llm"  # an LLM call named by no operation: a model and token counts
    return "other"


def _hex(value: str | int | bytes | None, width: int) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.hex()
    if isinstance(value, int):
        return format(value, f"0{width}x") if value else None
    text = value.strip().lower().removeprefix("0x")
    return text.rjust(width, "0") if text else None


def span_record(
    *,
    trace_id: str | int | bytes,
    span_id: str | int | bytes,
    name: str,
    attributes: Mapping[str, Any],
    start_ns: int,
    end_ns: int | None = None,
    parent_id: str | int | bytes | None = None,
    status: str = "unset",
    status_message: str | None = None,
    events: Iterable[Mapping[str, Any]] = (),
) -> SpanRecord:
    """Build a :class:`SpanRecord` from plain fields (a span decoded from OTLP, JSON or a REST API).

    Ids may be hex text, ints or raw bytes (OTLP protobuf); ``status`` is ``ok``, ``error`` or ``unset``
    (OTLP's ``STATUS_CODE_*`` names and codes 0/1/2 are accepted); events are mappings with ``name``,
    ``timestamp_ns`` (or ``time_unix_nano``) and ``attributes``. The kind is classified from the attributes.
    """
    attrs = {str(k): jsonable(v) for k, v in attributes.items()}
    status_text = str(status).lower().removeprefix("status_code_")
    status_text = {"0": "unset", "1": "ok", "2": "error"}.get(status_text, status_text)
    return SpanRecord(
        trace_id=_hex(trace_id, 32) or "0" * 32,
        span_id=_hex(span_id, 16) or "0" * 16,
        parent_id=_hex(parent_id, 16),
        name=str(name),
        kind=span_kind(attrs),
        start_ns=int(start_ns),
        end_ns=int(end_ns if end_ns is not None else start_ns),
        status=status_text if status_text in ("ok", "error") else "unset",  # type: ignore[arg-type]
        status_message=status_message or None,
        attributes=attrs,
        events=tuple(
            {
                "name": str(e.get("name", "")),
                "timestamp_ns": int(e.get("timestamp_ns", e.get("time_unix_nano", 0)) or 0),
                "attributes": {str(k): jsonable(v) for k, v in (e.get("attributes") or {}).items()},
            }
            for e in events
        ),
    )


def span_to_record(span: ReadableSpan, *, attributes: Mapping[str, Any] | None = None) -> SpanRecord:
    """Convert a finished SDK span into a :class:`SpanRecord` (32/16-character lowercase hex ids).

    ``attributes`` replaces the span's own attributes (the exporters pass them with the derived ones
    added, read once from the SDK's mapping).
    """
    if attributes is None:
        return record_of_span(span, plain_attributes(span))
    plain = _PLAIN_TYPES
    return record_of_span(span, {k: v if type(v) in plain else jsonable(v) for k, v in attributes.items()})


def _attribute_items(span: ReadableSpan) -> Iterable[tuple[str, Any]]:
    """The attributes of a span, read straight from the SDK's dict once the span has ended.

    ``ReadableSpan.attributes`` is a read-only proxy of a ``BoundedAttributes`` whose every item goes
    through Python-level ``__iter__``/``__getitem__`` (~5 us for 11 attributes, against ~1 us for its
    dict). The dict is read only when the SDK has made the mapping immutable (the span has ended);
    anything else goes through the public mapping.
    """
    raw = getattr(span, "_attributes", None)
    if type(raw) is BoundedAttributes and getattr(raw, "_immutable", False):
        inner = getattr(raw, "_dict", None)
        if type(inner) is dict:
            return inner.items()
    return (span.attributes or {}).items()


def plain_attributes(span: ReadableSpan) -> dict[str, Any]:
    """A finished span's attributes as plain JSON data (as :func:`span_to_record` stores them)."""
    plain = _PLAIN_TYPES
    return {k: v if type(v) in plain else jsonable(v) for k, v in _attribute_items(span)}


def record_of_span(span: ReadableSpan, values: dict[str, Any]) -> SpanRecord:
    """The record of ``span`` with ``values`` (already plain, see :func:`plain_attributes`) as attributes."""
    context = span.context
    parent = span.parent
    raw_events = span.events
    events = (
        tuple(
            {
                "name": event.name,
                "timestamp_ns": int(event.timestamp or 0),
                "attributes": {k: jsonable(v) for k, v in (event.attributes or {}).items()},
            }
            for event in raw_events
        )
        if raw_events
        else ()
    )
    start_ns = int(span.start_time or 0)
    status = span.status
    # positional, in field order: the hot path of the store's export thread ("%x" is twice format()'s speed)
    return SpanRecord(
        "%032x" % (context.trace_id if context else 0),  # noqa: UP031
        "%016x" % (context.span_id if context else 0),  # noqa: UP031
        "%016x" % parent.span_id if parent is not None else None,  # noqa: UP031
        span.name,
        span_kind(values),
        start_ns,
        int(span.end_time or start_ns),
        _STATUS.get(status.status_code, "unset"),  # type: ignore[arg-type]
        status.description or None,
        values,
        events,
    )


@fast_init
@dataclass(frozen=True)
class AgentRun:
    """What an agent span says: the user's input, the answer, who and which agent."""

    name: str | None
    version: str | None
    input: str | None
    output: str | None
    session_id: str | None
    user_id: str | None


@fast_init
@dataclass(frozen=True)
class Retrieval:
    """What a retrieval span says: the query, the chunks in rank order, and the threshold's effect."""

    query: str | None
    chunks: tuple[Chunk, ...]
    threshold: float | None
    filtered: int | None


@fast_init
@dataclass(frozen=True)
class NormalizedSpan:
    """One finished span read in any dialect: its record, its kind, and the facts of that kind.

    ``requested_tools`` are the tool calls an LLM span's output asked for (read when the agent runs its tools
    without spans of their own); ``error`` is ``Type: message`` of its exception, or its status message.
    """

    record: SpanRecord
    kind: SpanKind
    agent: AgentRun | None = None
    llm: LlmCall | None = None
    tool: ToolCall | None = None
    retrieval: Retrieval | None = None
    error: str | None = None

    @functools.cached_property
    def requested_tools(self) -> tuple[ToolCall, ...]:
        """The tool calls this LLM span's output asked for (read on first use; empty for other kinds)."""
        return _requested_tools(self.record.attributes) if self.kind == "llm" else ()


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


def _unwrap_entity(value: Any) -> Any:
    """OpenLLMetry's ``traceloop.entity.input`` is ``{"args": [...], "kwargs": {...}}``: the call's input."""
    decoded = decode_json(value)
    if isinstance(decoded, dict) and set(decoded) <= {"args", "kwargs"}:
        args, kwargs = decoded.get("args") or [], decoded.get("kwargs") or {}
        if kwargs and not args:
            return kwargs
        if len(args) == 1 and not kwargs:
            return args[0]
    return decoded


def _agent_input(attrs: Mapping[str, Any]) -> str | None:
    value = attrs.get(sc.OI_INPUT_VALUE)
    if value is not None:
        return _text(value)
    text = _message_text(attrs.get(sc.INPUT_MESSAGES), "user")
    if text is not None:
        return text
    entity = attrs.get(_LL_ENTITY_INPUT)
    return _text(_unwrap_entity(entity)) if entity is not None else None


def _agent_output(attrs: Mapping[str, Any]) -> str | None:
    value = attrs.get(sc.OI_OUTPUT_VALUE)
    if value is not None:
        return _text(value)
    text = _message_text(attrs.get(sc.OUTPUT_MESSAGES), None)
    if text is not None:
        return text
    entity = attrs.get(_LL_ENTITY_OUTPUT)
    return _text(_unwrap_entity(entity)) if entity is not None else None


def _agent(record: SpanRecord) -> AgentRun:
    attrs = record.attributes
    name = _first(attrs, _AGENT_NAMES)
    if name is None and _LL_SPAN_KIND in attrs:
        name = attrs.get(_LL_ENTITY_NAME)
    if name is None:
        name = record.name.removeprefix("invoke_agent").strip() or None
    return AgentRun(
        name=_text(name),
        version=_text(_first(attrs, (sc.AGENT_VERSION, _LL_ENTITY_VERSION))),
        input=_agent_input(attrs),
        output=_agent_output(attrs),
        session_id=_text(_first(attrs, _SESSION_NAMES)),
        user_id=_text(_first(attrs, _USER_NAMES)),
    )


def error_text(record: SpanRecord) -> str | None:
    """``Type: message`` of the span's exception event, else its status message (None when not an error)."""
    for event in record.events:
        if event.get("name") == "exception":
            attrs = event.get("attributes") or {}
            kind, message = attrs.get("exception.type"), attrs.get("exception.message")
            if kind or message:
                return f"{kind}: {message}" if kind and message else str(kind or message)
    if record.status == "error":
        return record.status_message or _text(record.attributes.get("error.type")) or "error"
    return None


def _chunk_metadata(value: Any) -> dict[str, Any]:
    decoded = decode_json(value)
    return {str(k): v for k, v in decoded.items()} if isinstance(decoded, dict) else {}


def _retrieval(record: SpanRecord) -> Retrieval:
    """``gen_ai.retrieval.documents`` first, OpenInference's ``retrieval.documents.{i}.document.*`` else."""
    attrs = record.attributes
    query = _text(_first(attrs, (sc.RG_RETRIEVAL_QUERY, _RETRIEVAL_QUERY_TEXT, sc.OI_INPUT_VALUE)))
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
                    score=as_float(doc.get("score")),
                    rank=as_int(doc.get("rank")) or index + 1,
                    text=_text(text),
                    query=query,
                    metadata=_chunk_metadata(doc.get("metadata")),
                )
            )
    else:
        index = 0
        while (doc_id := attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_ID))) is not None:
            chunks.append(
                Chunk(
                    id=str(doc_id),
                    score=as_float(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_SCORE))),
                    rank=index + 1,
                    text=_text(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_CONTENT))),
                    query=query,
                    metadata=_chunk_metadata(attrs.get(sc.oi_document(index, sc.OI_DOCUMENT_METADATA))),
                )
            )
            index += 1
    return Retrieval(
        query=query,
        chunks=tuple(chunks),
        threshold=as_float(attrs.get(sc.RG_RETRIEVAL_THRESHOLD)),
        filtered=as_int(attrs.get(sc.RG_RETRIEVAL_FILTERED)),
    )


def _arguments(value: Any) -> dict[str, Any]:
    decoded = _unwrap_entity(value)
    if decoded is None:
        return {}
    return decoded if isinstance(decoded, dict) else {"value": decoded}


def _tool(record: SpanRecord) -> ToolCall:
    attrs = record.attributes
    name = _first(attrs, (sc.TOOL_NAME, sc.OI_TOOL_NAME))
    if name is None and _LL_SPAN_KIND in attrs:
        name = attrs.get(_LL_ENTITY_NAME)
    if name is None:
        name = record.name.removeprefix("execute_tool").strip() or record.name
    raw_args = _first(
        attrs, (sc.TOOL_CALL_ARGUMENTS, sc.OI_INPUT_VALUE, _LL_ENTITY_INPUT, _OI_TOOL_PARAMETERS)
    )
    raw_result = _first(attrs, (sc.TOOL_CALL_RESULT, sc.OI_OUTPUT_VALUE, _LL_ENTITY_OUTPUT))
    call_id = _first(attrs, (sc.TOOL_CALL_ID, _OI_TOOL_CALL_ID, _OI_TOOL_ID))
    return ToolCall(
        name=str(name),
        arguments=_arguments(raw_args),
        result=_unwrap_entity(raw_result),
        call_id=str(call_id) if call_id is not None else None,
        error=error_text(record) if record.status == "error" else None,
    )


def llm_call_of(attrs: Mapping[str, Any], start_ns: int, end_ns: int) -> LlmCall:
    """The LLM call an LLM span's attributes describe (any dialect), without building its record."""
    model, provider = _first(attrs, _MODEL_NAMES), _first(attrs, _PROVIDER_NAMES)
    return LlmCall(
        model=str(model) if model is not None else None,
        provider=str(provider).lower() if provider is not None else None,
        input_tokens=as_int(_first(attrs, _INPUT_TOKEN_NAMES)),
        output_tokens=as_int(_first(attrs, _OUTPUT_TOKEN_NAMES)),
        latency_s=max(0, end_ns - start_ns) / 1e9,
        cost_usd=as_float(_first(attrs, _COST_NAMES)),
    )


def _llm(record: SpanRecord) -> LlmCall:
    return llm_call_of(record.attributes, record.start_ns, record.end_ns)


_OI_TOOL_CALL = re.compile(
    r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$"
)
_LL_TOOL_CALL = re.compile(r"^gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.(id|name|arguments)$")


def _requested_tools(attrs: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """Tool calls an LLM's output asked for, from ``gen_ai.output.messages`` or the flattened dialects."""
    calls: list[ToolCall] = []
    messages = decode_json(attrs.get(sc.OUTPUT_MESSAGES))
    if isinstance(messages, list):
        for message in messages:
            for part in (message.get("parts") or []) if isinstance(message, dict) else []:
                if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name"):
                    call_id = part.get("id")
                    calls.append(
                        ToolCall(
                            name=str(part["name"]),
                            arguments=_arguments(part.get("arguments")),
                            result=None,
                            call_id=str(call_id) if call_id is not None else None,
                        )
                    )
        if calls:
            return tuple(calls)
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        if not (key.startswith("llm.output_messages.") or key.startswith("gen_ai.completion.")):
            continue
        match = _OI_TOOL_CALL.match(key) or _LL_TOOL_CALL.match(key)
        if match:
            field = match.group(3).removeprefix("function.")
            found.setdefault((int(match.group(1)), int(match.group(2))), {})[field] = value
    for _, fields in sorted(found.items()):
        if fields.get("name"):
            calls.append(
                ToolCall(
                    name=str(fields["name"]),
                    arguments=_arguments(fields.get("arguments")),
                    result=None,
                    call_id=str(fields["id"]) if fields.get("id") is not None else None,
                )
            )
    return tuple(calls)


def normalize_span(
    span: ReadableSpan | SpanRecord | Mapping[str, Any],
    *,
    name: str = "",
    trace_id: str | int | bytes = 0,
    span_id: str | int | bytes = 0,
    parent_id: str | int | bytes | None = None,
    start_ns: int = 0,
    end_ns: int | None = None,
    status: str = "unset",
    status_message: str | None = None,
    events: Iterable[Mapping[str, Any]] = (),
) -> NormalizedSpan:
    """Read one finished span, whatever produced it.

    Args:
        span: an SDK ``ReadableSpan``, a :class:`SpanRecord`, or a plain attribute mapping (then the keyword
            arguments give its name, ids, times, status and events, as :func:`span_record` takes them).
        name: the span name (only with an attribute mapping).
        trace_id: hex, int or bytes (only with an attribute mapping).
        span_id: hex, int or bytes (only with an attribute mapping).
        parent_id: hex, int or bytes, or None for a root span (only with an attribute mapping).
        start_ns: start time in ns since the epoch (only with an attribute mapping).
        end_ns: end time (only with an attribute mapping; default the start).
        status: ``ok``, ``error`` or ``unset`` (only with an attribute mapping).
        status_message: the status description (only with an attribute mapping).
        events: the span's events (only with an attribute mapping).

    Returns:
        The span's record and what it carries for its kind.
    """
    if isinstance(span, SpanRecord):
        return normalize_record(span)
    if isinstance(span, ReadableSpan):
        record = span_to_record(span)
    else:
        record = span_record(
            trace_id=trace_id,
            span_id=span_id,
            parent_id=parent_id,
            name=name,
            attributes=span,
            start_ns=start_ns,
            end_ns=end_ns,
            status=status,
            status_message=status_message,
            events=events,
        )
    return _facts(record)


def normalize_record(record: SpanRecord, *, detail: bool = True) -> NormalizedSpan:
    """:func:`normalize_span` of a record; ``detail=False`` leaves a tool or retrieval span's facts unread.

    A trace's row needs the agent and LLM facts only, so the store's writers skip decoding tool payloads
    and retrieved documents (``tool`` and ``retrieval`` are None then).
    """
    kind = span_kind(record.attributes) if record.kind == "other" else record.kind
    if kind != record.kind:
        record = dataclasses.replace(record, kind=kind)
    return _facts(record, detail)


def _facts(record: SpanRecord, detail: bool = True) -> NormalizedSpan:
    kind = record.kind
    error = error_text(record)
    if kind == "agent":
        return NormalizedSpan(record, kind, agent=_agent(record), error=error)
    if kind == "llm":
        return NormalizedSpan(record, kind, llm=_llm(record), error=error)
    if not detail:
        return NormalizedSpan(record, kind, error=error)
    if kind == "tool":
        return NormalizedSpan(record, kind, tool=_tool(record), error=error)
    if kind == "retrieval":
        return NormalizedSpan(record, kind, retrieval=_retrieval(record), error=error)
    return NormalizedSpan(record, kind, error=error)


# What the store's trace-row reader (``_store_trace_row``) reads attributes with: the same readers.
first_value = _first
attribute_text = _text
agent_input = _agent_input
agent_output = _agent_output
attribute_items = _attribute_items
