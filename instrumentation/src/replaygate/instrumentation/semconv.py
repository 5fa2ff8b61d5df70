"""Attribute names written on spans (public: ``from replaygate.instrumentation import semconv``).

GenAI semantic conventions (``gen_ai.*``, v1.41) and, side by side, OpenInference (``openinference.*``,
``input.value``, ``retrieval.documents.{i}.document.*``) so the same trace reads well in Phoenix and
Langfuse. replaygate's own signals use the ``replaygate.*`` prefix.
"""

__all__ = [
    "AGENT_NAME",
    "AGENT_VERSION",
    "CONVERSATION_ID",
    "DATA_SOURCE_ID",
    "INPUT_MESSAGES",
    "OI_DOCUMENT_CONTENT",
    "OI_DOCUMENT_ID",
    "OI_DOCUMENT_METADATA",
    "OI_DOCUMENT_SCORE",
    "OI_INPUT_VALUE",
    "OI_OUTPUT_VALUE",
    "OI_SESSION_ID",
    "OI_SPAN_KIND",
    "OI_USER_ID",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "PROVIDER_NAME",
    "REQUEST_MODEL",
    "RESPONSE_MODEL",
    "RETRIEVAL_DOCUMENTS",
    "RG_CLARIFICATION",
    "RG_CONFIG_ID",
    "RG_CONTENT_HASHED",
    "RG_ESCALATION",
    "RG_ESCALATION_REASON",
    "RG_FAILURE_REASONS",
    "RG_RETRIEVAL_FILTERED",
    "RG_RETRIEVAL_QUERY",
    "RG_RETRIEVAL_THRESHOLD",
    "RG_VARIANT",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_NAME",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
    "oi_document",
    "OI_TOOL_NAME",
    "OI_LLM_MODEL_NAME",
    "OI_LLM_PROVIDER",
    "OI_TOKEN_PROMPT",
    "OI_TOKEN_COMPLETION",
    "RG_FAILURE_REASON",
    "RG_STREAM_CLOSED_EARLY",
    "RG_CANCELLED",
    "RG_EXPORT_DROPPED",
    "RG_EXPORT_SOURCE",
    "SCHEMA_URL",
    "ERROR_TYPE",
    "RETRIEVAL_QUERY_TEXT",
    "LANGFUSE_TRACE_TAGS",
    "USAGE_COST",
    "OI_COST_TOTAL",
]

#: The semantic conventions version replaygate writes (the tracer's schema URL).
SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"

# GenAI semantic conventions
OPERATION_NAME = "gen_ai.operation.name"  # invoke_agent | execute_tool | chat | retrieval
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_VERSION = "gen_ai.agent.version"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"  # JSON string
TOOL_CALL_RESULT = "gen_ai.tool.call.result"  # JSON string
INPUT_MESSAGES = "gen_ai.input.messages"  # JSON string
OUTPUT_MESSAGES = "gen_ai.output.messages"  # JSON string
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"  # JSON string: [{id, score, content?}]
DATA_SOURCE_ID = "gen_ai.data_source.id"
RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
ERROR_TYPE = "error.type"

# OpenInference
OI_SPAN_KIND = "openinference.span.kind"  # AGENT | RETRIEVER | TOOL | LLM
OI_INPUT_VALUE = "input.value"
OI_OUTPUT_VALUE = "output.value"
OI_SESSION_ID = "session.id"
OI_USER_ID = "user.id"
OI_DOCUMENT_ID = "document.id"
OI_DOCUMENT_SCORE = "document.score"
OI_DOCUMENT_CONTENT = "document.content"
OI_DOCUMENT_METADATA = "document.metadata"
OI_TOOL_NAME = "tool.name"
OI_LLM_MODEL_NAME = "llm.model_name"
OI_LLM_PROVIDER = "llm.provider"
OI_TOKEN_PROMPT = "llm.token_count.prompt"
OI_TOKEN_COMPLETION = "llm.token_count.completion"


def oi_document(index: int, field: str) -> str:
    """Return the OpenInference attribute name of one retrieved document's field."""
    return f"retrieval.documents.{index}.{field}"


# replaygate's own signals
RG_ESCALATION = "replaygate.escalation"  # bool
RG_ESCALATION_REASON = "replaygate.escalation.reason"
RG_CLARIFICATION = "replaygate.clarification"  # bool
RG_FAILURE_REASONS = "replaygate.failure.reasons"  # tuple of str, on the agent span
RG_VARIANT = "replaygate.variant"  # baseline | candidate
RG_CONFIG_ID = "replaygate.config_id"
RG_CONTENT_HASHED = "replaygate.content_hashed"  # bool: text replaced by sha256
RG_RETRIEVAL_QUERY = "replaygate.retrieval.query"
RG_RETRIEVAL_THRESHOLD = "replaygate.retrieval.threshold"
RG_RETRIEVAL_FILTERED = "replaygate.retrieval.filtered"  # chunks the threshold removed
RG_FAILURE_REASON = "replaygate.failure.reason"  # the text given to mark_failure(reason)
RG_STREAM_CLOSED_EARLY = "replaygate.stream.closed_early"  # bool: a streamed answer was closed before its end
RG_CANCELLED = "replaygate.cancelled"  # bool: the agent call was cancelled (asyncio), not a failure
# On the first span of an OTLP batch after the exporting process dropped spans: its running drop total and
# its name, which `replaygate collect` records in the store (`replaygate traces` shows them) and strips.
RG_EXPORT_DROPPED = "replaygate.export.dropped_spans"  # int
RG_EXPORT_SOURCE = "replaygate.export.source"  # host:pid:start_ns of the exporting process

# Langfuse's OpenTelemetry mapping reads these (tags and metadata of the trace)
LANGFUSE_TRACE_TAGS = "langfuse.trace.tags"  # tuple of str

USAGE_COST = "gen_ai.usage.cost"  # USD, when the price is known (Langfuse shows it)
OI_COST_TOTAL = "llm.cost.total"
