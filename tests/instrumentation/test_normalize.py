"""normalize_span: one finished span of any dialect to replaygate's records.

The attribute sets below are what the instrumentors really emit for one chat completion with a tool call
(OpenInference's openai instrumentor, OpenLLMetry's, the contrib openai-v2 one, older OpenLLMetry's
flattened prompts); the tests with the real instrumentors are in test_instrumentors_*.py.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from replaygate.instrumentation import (
    SpanRecord,
    _normalize,
    is_content_attribute,
    normalize_span,
    span_record,
    summarize_spans,
)

OPENINFERENCE_LLM = {
    "openinference.span.kind": "LLM",
    "llm.system": "openai",
    "llm.model_name": "gpt-4o-mini",
    "input.value": '{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where is ORD-1?"}]}',
    "input.mime_type": "application/json",
    "output.value": '{"id": "chatcmpl-1"}',
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Where is ORD-1?",
    "llm.token_count.prompt": 13,
    "llm.token_count.completion": 15,
    "llm.token_count.total": 28,
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_ord1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": "ORD-1"}',
}
OPENLLMETRY_LLM = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": "gpt-4o-mini",
    "gen_ai.input.messages": '[{"role": "user", "parts": [{"content": "Where is ORD-1?", "type": "text"}]}]',
    "gen_ai.usage.input_tokens": 13,
    "gen_ai.usage.output_tokens": 15,
    "gen_ai.output.messages": json.dumps(
        [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "name": "lookup_order",
                        "id": "call_ord1",
                        "arguments": {"order_id": "ORD-1"},
                    }
                ],
                "finish_reason": "tool_call",
            }
        ]
    ),
}
CONTRIB_V2_LLM = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.system": "openai",
    "gen_ai.response.model": "gpt-4o-mini",
    "gen_ai.response.finish_reasons": ("tool_calls",),
    "gen_ai.usage.input_tokens": 13,
    "gen_ai.usage.output_tokens": 15,
}
OLD_OPENLLMETRY_LLM = {
    "llm.request.type": "chat",
    "gen_ai.system": "OpenAI",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.usage.prompt_tokens": 13,
    "gen_ai.usage.completion_tokens": 15,
    "gen_ai.prompt.0.role": "user",
    "gen_ai.prompt.0.content": "Where is ORD-1?",
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.tool_calls.0.id": "call_ord1",
    "gen_ai.completion.0.tool_calls.0.name": "lookup_order",
    "gen_ai.completion.0.tool_calls.0.arguments": '{"order_id": "ORD-1"}',
}


@pytest.mark.parametrize(
    "attributes",
    [OPENINFERENCE_LLM, OPENLLMETRY_LLM, CONTRIB_V2_LLM, OLD_OPENLLMETRY_LLM],
    ids=["openinference", "openllmetry", "contrib-v2", "openllmetry-old"],
)
def test_llm_call_of_every_dialect(attributes: dict[str, object]) -> None:
    facts = normalize_span(attributes, name="chat", trace_id=1, span_id=2, start_ns=1_000, end_ns=501_000)
    assert facts.kind == "llm"
    assert facts.llm is not None
    assert (facts.llm.model, facts.llm.provider) == ("gpt-4o-mini", "openai")
    assert (facts.llm.input_tokens, facts.llm.output_tokens) == (13, 15)
    assert facts.llm.latency_s == pytest.approx(0.0005)
    assert facts.llm.cost_usd is None
    if attributes is not CONTRIB_V2_LLM:  # v2 keeps messages off the span
        [call] = facts.requested_tools
        assert (call.name, call.arguments, call.call_id) == (
            "lookup_order",
            {"order_id": "ORD-1"},
            "call_ord1",
        )


def test_cost_the_span_carries_is_read() -> None:
    facts = normalize_span({**OPENINFERENCE_LLM, "llm.cost.total": 0.0012}, name="c")
    assert facts.llm is not None and facts.llm.cost_usd == pytest.approx(0.0012)
    facts = normalize_span({**OPENLLMETRY_LLM, "gen_ai.usage.cost": 0.5}, name="c")
    assert facts.llm is not None and facts.llm.cost_usd == pytest.approx(0.5)


def test_tool_span_of_every_dialect() -> None:
    oi = normalize_span(
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup_order",
            "input.value": '{"order_id": "ORD-1"}',
            "output.value": '{"status": "shipped"}',
        },
        name="lookup_order",
    )
    ll = normalize_span(
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "lookup_order",
            "traceloop.entity.input": '{"args": [], "kwargs": {"order_id": "ORD-1"}}',
            "traceloop.entity.output": '{"status": "shipped"}',
        },
        name="lookup_order.tool",
    )
    semconv = normalize_span(
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": '{"order_id": "ORD-1"}',
            "gen_ai.tool.call.result": '{"status": "shipped"}',
        },
        name="execute_tool lookup_order",
    )
    for facts in (oi, ll, semconv):
        assert facts.kind == "tool" and facts.tool is not None
        assert facts.tool.name == "lookup_order"
        assert facts.tool.arguments == {"order_id": "ORD-1"}
        assert facts.tool.result == {"status": "shipped"}
    assert semconv.tool is not None and semconv.tool.call_id == "c1"


def test_agent_spans_of_openinference_and_openllmetry() -> None:
    oi = normalize_span(
        {
            "openinference.span.kind": "AGENT",
            "agent.name": "support",
            "input.value": "hi",
            "output.value": "hello",
            "session.id": "s1",
            "user.id": "u1",
        },
        name="Agent workflow",
    )
    ll = normalize_span(
        {
            "traceloop.span.kind": "agent",
            "traceloop.entity.name": "support",
            "traceloop.entity.input": '{"args": ["hi"], "kwargs": {}}',
            "traceloop.entity.output": '"hello"',
            "traceloop.association.properties.session_id": "s1",
            "traceloop.association.properties.user_id": "u1",
        },
        name="support.agent",
    )
    for facts in (oi, ll):
        assert facts.kind == "agent" and facts.agent is not None
        run = facts.agent
        assert (run.name, run.input, run.output, run.session_id, run.user_id) == (
            "support",
            "hi",
            "hello",
            "s1",
            "u1",
        )


def test_openinference_retriever_documents() -> None:
    facts = normalize_span(
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "refund policy",
            "retrieval.documents.0.document.id": "kb-1",
            "retrieval.documents.0.document.score": 0.9,
            "retrieval.documents.0.document.content": "Refunds within 30 days",
            "retrieval.documents.1.document.id": "kb-2",
            "retrieval.documents.1.document.score": 0.4,
        },
        name="retrieve",
    )
    assert facts.kind == "retrieval" and facts.retrieval is not None
    assert facts.retrieval.query == "refund policy"
    assert [(c.id, c.rank, c.score, c.text) for c in facts.retrieval.chunks] == [
        ("kb-1", 1, 0.9, "Refunds within 30 days"),
        ("kb-2", 2, 0.4, None),
    ]


def test_semconv_retrieval_query_text() -> None:
    facts = normalize_span(
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": "q",
            "gen_ai.retrieval.documents": '[{"id": "a", "score": 0.5}]',
        },
        name="retrieval kb",
    )
    assert facts.retrieval is not None and facts.retrieval.query == "q"
    assert [c.id for c in facts.retrieval.chunks] == ["a"]


def test_readable_span_record_and_mapping_agree() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span(
        "ChatCompletion", attributes=OPENINFERENCE_LLM
    ) as span:
        span.set_status(Status(StatusCode.ERROR, "rate limited"))
    provider.shutdown()
    [finished] = exporter.get_finished_spans()
    from_sdk = normalize_span(finished)
    record = from_sdk.record
    from_record = normalize_span(record)
    from_fields = normalize_span(
        dict(finished.attributes or {}),
        name=finished.name,
        trace_id=record.trace_id,
        span_id=int(record.span_id, 16),
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        status="STATUS_CODE_ERROR",
        status_message="rate limited",
    )
    assert from_sdk.llm == from_record.llm == from_fields.llm
    assert from_sdk.error == from_fields.error == "rate limited"
    assert from_fields.record.status == "error" and from_fields.record.trace_id == record.trace_id


def test_span_record_accepts_otlp_shapes() -> None:
    record = span_record(
        trace_id=bytes.fromhex("0af7651916cd43dd8448eb211c80319c"),
        span_id=bytes.fromhex("b7ad6b7169203331"),
        parent_id=b"",
        name="chat",
        attributes={"gen_ai.operation.name": "chat", "k": [1, 2]},
        start_ns=5,
        status=2,  # type: ignore[arg-type]
        events=[{"name": "exception", "time_unix_nano": 7, "attributes": {"exception.type": "E"}}],
    )
    assert record.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert record.span_id == "b7ad6b7169203331" and record.parent_id is None
    assert (record.kind, record.status, record.end_ns) == ("llm", "error", 5)
    assert record.events[0]["timestamp_ns"] == 7 and record.attributes["k"] == [1, 2]
    assert normalize_span(record).error == "E"


def _record(span_id: str, parent: str | None, attributes: dict[str, object], start: int) -> SpanRecord:
    return span_record(
        trace_id="ab" * 16,
        span_id=span_id,
        parent_id=parent,
        name="s",
        attributes=attributes,
        start_ns=start,
        end_ns=start + 10,
    )


def test_summary_of_an_agent_whose_llm_calls_come_from_openinference() -> None:
    root = _record(
        "01",
        None,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "a",
            "input.value": "Where is ORD-1?",
            "output.value": "shipped",
        },
        0,
    )
    llm1 = _record("02", "01", OPENINFERENCE_LLM, 1)
    llm2 = _record("03", "01", {**OPENINFERENCE_LLM, "llm.token_count.prompt": 7}, 2)
    summary = summarize_spans([root, llm1, llm2])
    assert [(c.model, c.provider) for c in summary.llm_calls] == [("gpt-4o-mini", "openai")] * 2
    assert (summary.input_tokens, summary.output_tokens) == (20, 30)
    # no tool spans: the calls the model asked for are the trace's tool calls
    assert [t.name for t in summary.tool_calls] == ["lookup_order", "lookup_order"]
    tool = _record("04", "01", {"openinference.span.kind": "TOOL", "tool.name": "lookup_order"}, 3)
    assert [t.name for t in summarize_spans([root, llm1, tool]).tool_calls] == ["lookup_order"]


@pytest.mark.parametrize(
    "key",
    [
        "input.value",
        "output.value",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.retrieval.query.text",
        "llm.input_messages.0.message.content",
        "llm.output_messages.3.message.tool_calls.0.tool_call.function.arguments",
        "llm.input_messages.1.message.contents.0.message_content.text",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.tool_calls.0.arguments",
        "retrieval.documents.2.document.content",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "tool.parameters",
        "llm.prompt_template.variables",
    ],
)
def test_content_attributes_of_every_dialect(key: str) -> None:
    assert is_content_attribute(key)


@pytest.mark.parametrize(
    "key",
    [
        "llm.model_name",
        "gen_ai.request.model",
        "llm.input_messages.0.message.role",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
        "gen_ai.completion.0.tool_calls.0.name",
        "llm.token_count.prompt",
        "retrieval.documents.0.document.id",
        "openinference.span.kind",
    ],
)
def test_metadata_is_not_content(key: str) -> None:
    assert not is_content_attribute(key)


def test_private_all_is_pinned() -> None:
    for name in _normalize.__all__:
        assert hasattr(_normalize, name), name
