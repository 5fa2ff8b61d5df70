"""What replaygate writes conforms to the GenAI semantic conventions it names (v1.41), pinned against the
installed opentelemetry-semantic-conventions package."""

import json

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import SpanKind
from replaygate.instrumentation import retrieval, trace_agent
from replaygate.instrumentation import semconv as sc


def test_constants_match_the_installed_conventions() -> None:
    assert sc.SCHEMA_URL == Schemas.V1_41_0.value
    pairs = {
        sc.OPERATION_NAME: gen_ai.GEN_AI_OPERATION_NAME,
        sc.PROVIDER_NAME: gen_ai.GEN_AI_PROVIDER_NAME,
        sc.AGENT_NAME: gen_ai.GEN_AI_AGENT_NAME,
        sc.AGENT_VERSION: gen_ai.GEN_AI_AGENT_VERSION,
        sc.REQUEST_MODEL: gen_ai.GEN_AI_REQUEST_MODEL,
        sc.RESPONSE_MODEL: gen_ai.GEN_AI_RESPONSE_MODEL,
        sc.USAGE_INPUT_TOKENS: gen_ai.GEN_AI_USAGE_INPUT_TOKENS,
        sc.USAGE_OUTPUT_TOKENS: gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.CONVERSATION_ID: gen_ai.GEN_AI_CONVERSATION_ID,
        sc.TOOL_NAME: gen_ai.GEN_AI_TOOL_NAME,
        sc.TOOL_CALL_ID: gen_ai.GEN_AI_TOOL_CALL_ID,
        sc.TOOL_CALL_ARGUMENTS: gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS,
        sc.TOOL_CALL_RESULT: gen_ai.GEN_AI_TOOL_CALL_RESULT,
        sc.INPUT_MESSAGES: gen_ai.GEN_AI_INPUT_MESSAGES,
        sc.OUTPUT_MESSAGES: gen_ai.GEN_AI_OUTPUT_MESSAGES,
        sc.RETRIEVAL_DOCUMENTS: gen_ai.GEN_AI_RETRIEVAL_DOCUMENTS,
        sc.RETRIEVAL_QUERY_TEXT: gen_ai.GEN_AI_RETRIEVAL_QUERY_TEXT,
        sc.DATA_SOURCE_ID: gen_ai.GEN_AI_DATA_SOURCE_ID,
        sc.ERROR_TYPE: error_attributes.ERROR_TYPE,
    }
    assert {ours: theirs for ours, theirs in pairs.items() if ours != theirs} == {}
    operations = {v.value for v in gen_ai.GenAiOperationNameValues}
    assert {"invoke_agent", "execute_tool", "chat", "retrieval"} <= operations


@trace_agent(name="conformant", provider="openai")
def respond(message: str) -> str:
    with retrieval(message, data_source="kb") as r:
        r.record([{"id": "d1", "score": 0.5, "text": "t"}])
    if message == "fail":
        raise KeyError("missing")
    return "plain answer"


def test_spans_carry_what_the_conventions_require(memory: InMemorySpanExporter) -> None:
    respond("hello")
    with pytest.raises(KeyError):
        respond("fail")
    spans = memory.get_finished_spans()
    agents = [s for s in spans if s.name == "invoke_agent conformant"]
    ok, failed = agents
    attrs = dict(ok.attributes or {})
    assert attrs[sc.PROVIDER_NAME] == "openai"
    assert ok.instrumentation_scope is not None and ok.instrumentation_scope.schema_url == sc.SCHEMA_URL
    [message] = json.loads(str(attrs[sc.OUTPUT_MESSAGES]))
    assert message == {
        "role": "assistant",
        "parts": [{"type": "text", "content": "plain answer"}],
        "finish_reason": "stop",
    }
    [user] = json.loads(str(attrs[sc.INPUT_MESSAGES]))
    assert user["role"] == "user" and user["parts"] == [{"type": "text", "content": "hello"}]
    assert attrs["output.mime_type"] == "text/plain"
    assert (failed.attributes or {})[sc.ERROR_TYPE] == "KeyError"
    [search, _] = [s for s in spans if s.name.startswith("retrieval")]
    assert search.kind == SpanKind.CLIENT
    assert (search.attributes or {})[sc.RETRIEVAL_QUERY_TEXT] == "hello"
