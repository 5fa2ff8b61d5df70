"""span_to_record and summarize_spans: spans from a real SDK TracerProvider, read back as a summary."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer
from replaygate.instrumentation import _summary
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._records import SpanRecord
from replaygate.instrumentation._summary import span_to_record, summarize_spans


@pytest.fixture()
def traced() -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def records(exporter: InMemorySpanExporter) -> list[SpanRecord]:
    return [span_to_record(s) for s in exporter.get_finished_spans()]


def agent_attrs(text: str, **extra: object) -> dict[str, object]:
    return {sc.OPERATION_NAME: "invoke_agent", sc.AGENT_NAME: "support", sc.OI_INPUT_VALUE: text, **extra}


def test_private_all_is_pinned() -> None:
    assert sorted(_summary.__all__) == [
        "decode_json",
        "jsonable",
        "row_summary",
        "span_kind",
        "span_to_record",
        "summarize_spans",
    ]


def test_span_to_record_ids_kinds_attributes_and_events(traced: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = traced
    with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("hi")) as root:
        root.set_attribute(sc.RG_FAILURE_REASONS, ("explicit", "escalation"))
        for name, operation in [
            ("chat m", "chat"),
            ("text m", "text_completion"),
            ("gen m", "generate_content"),
        ]:
            with tracer.start_as_current_span(name, attributes={sc.OPERATION_NAME: operation}):
                pass
        with tracer.start_as_current_span("kb", attributes={sc.OI_SPAN_KIND: "RETRIEVER"}):
            pass
        with tracer.start_as_current_span("t", attributes={sc.OI_SPAN_KIND: "TOOL"}) as tool:
            tool.add_event("note", {"k": (1, 2)})
            tool.set_status(Status(StatusCode.ERROR, "tool broke"))
        with tracer.start_as_current_span("plain"):
            pass
    spans = exporter.get_finished_spans()
    by_name = {s.name: span_to_record(s) for s in spans}
    root_record = by_name["invoke_agent support"]
    root_span = next(s for s in spans if s.name == "invoke_agent support")
    assert root_record.trace_id == format(root_span.context.trace_id, "032x")
    assert len(root_record.trace_id) == 32 and root_record.trace_id == root_record.trace_id.lower()
    assert len(root_record.span_id) == 16 and root_record.parent_id is None
    assert by_name["kb"].parent_id == root_record.span_id
    assert root_record.attributes[sc.RG_FAILURE_REASONS] == ["explicit", "escalation"]
    json.dumps(root_record.attributes)  # plain JSON data
    assert {n: r.kind for n, r in by_name.items()} == {
        "invoke_agent support": "agent",
        "chat m": "llm",
        "text m": "llm",
        "gen m": "llm",
        "kb": "retrieval",
        "t": "tool",
        "plain": "other",
    }
    tool_record = by_name["t"]
    assert tool_record.status == "error" and tool_record.status_message == "tool broke"
    assert tool_record.events[0]["name"] == "note"
    assert tool_record.events[0]["attributes"] == {"k": [1, 2]}
    assert tool_record.end_ns >= tool_record.start_ns > 0


def test_replay_attempt_with_several_turns(traced: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = traced
    with tracer.start_as_current_span("replay attempt", attributes={sc.RG_VARIANT: "candidate"}):
        for turn, answer in [("where is my order?", "It shipped."), ("can I get a refund?", "Yes, $20.")]:
            attrs = agent_attrs(turn, **{sc.CONVERSATION_ID: "s-1", sc.OI_USER_ID: "u-9"})
            with tracer.start_as_current_span("invoke_agent support", attributes=attrs) as agent:
                nested = agent_attrs("inner question")
                with tracer.start_as_current_span("invoke_agent helper", attributes=nested) as inner:
                    inner.set_attribute(sc.OI_OUTPUT_VALUE, "inner answer")
                agent.set_attribute(sc.OI_OUTPUT_VALUE, answer)
    summary = summarize_spans(records(exporter))
    assert summary.turns == ("where is my order?", "can I get a refund?")
    assert summary.outputs == ("It shipped.", "Yes, $20.")
    assert summary.output == "Yes, $20."
    assert summary.session_id == "s-1" and summary.user_id == "u-9" and summary.agent_name == "support"
    assert summary.variant == "candidate"
    assert summary.failure_reasons == ()
    assert summary.input_tokens is None and summary.output_tokens is None
    assert summary.latency_s > 0


def test_chunks_tools_llm_calls_and_tokens(traced: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = traced
    with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("refund?")) as agent:
        documents = [
            {"id": "refunds", "score": 0.9, "content": "Refunds up to $50."},
            {"id": "ship", "score": 0.4},
        ]
        retrieval_attrs = {
            sc.OPERATION_NAME: "retrieval",
            sc.RG_RETRIEVAL_QUERY: "refund?",
            sc.RETRIEVAL_DOCUMENTS: json.dumps(documents),
            sc.oi_document(0, sc.OI_DOCUMENT_ID): "ignored-when-genai-json-present",
            sc.RG_RETRIEVAL_THRESHOLD: 0.3,
            sc.RG_RETRIEVAL_FILTERED: 2,
        }
        with tracer.start_as_current_span("retrieval kb", attributes=retrieval_attrs):
            pass
        oi_only = {
            sc.OI_SPAN_KIND: "RETRIEVER",
            sc.oi_document(0, sc.OI_DOCUMENT_ID): "returns",
            sc.oi_document(0, sc.OI_DOCUMENT_SCORE): 0.7,
            sc.oi_document(0, sc.OI_DOCUMENT_CONTENT): "Returns within 30 days.",
            sc.oi_document(0, sc.OI_DOCUMENT_METADATA): json.dumps({"section": "returns"}),
            sc.oi_document(1, sc.OI_DOCUMENT_ID): "accounts",
        }
        with tracer.start_as_current_span("retrieval faq", attributes=oi_only):
            pass
        tool_attrs = {
            sc.OPERATION_NAME: "execute_tool",
            sc.TOOL_NAME: "lookup_order",
            sc.TOOL_CALL_ID: "c1",
            sc.TOOL_CALL_ARGUMENTS: json.dumps({"order_id": "A1"}),
            sc.TOOL_CALL_RESULT: json.dumps({"status": "shipped"}),
        }
        with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool_attrs):
            pass
        failing = {
            sc.OPERATION_NAME: "execute_tool",
            sc.TOOL_NAME: "issue_refund",
            sc.TOOL_CALL_ARGUMENTS: "[1]",
        }
        with pytest.raises(RuntimeError):
            with tracer.start_as_current_span("execute_tool issue_refund", attributes=failing):
                raise RuntimeError("refund service down")
        for model, tokens in [("gpt-a", (10, 5)), ("gpt-b", (None, 7))]:
            llm_attrs: dict[str, object] = {sc.OPERATION_NAME: "chat", sc.REQUEST_MODEL: model}
            llm_attrs[sc.PROVIDER_NAME] = "openai"
            if tokens[0] is not None:
                llm_attrs[sc.USAGE_INPUT_TOKENS] = tokens[0]
            llm_attrs[sc.USAGE_OUTPUT_TOKENS] = tokens[1]
            with tracer.start_as_current_span(f"chat {model}", attributes=llm_attrs):
                pass
        agent.set_attribute(sc.OI_OUTPUT_VALUE, "You can get $50 back.")
    summary = summarize_spans(records(exporter))
    assert [(c.id, c.score, c.rank) for c in summary.chunks] == [
        ("refunds", 0.9, 1),
        ("ship", 0.4, 2),
        ("returns", 0.7, 1),
        ("accounts", None, 2),
    ]
    assert summary.chunks[0].text == "Refunds up to $50." and summary.chunks[0].query == "refund?"
    assert summary.chunks[2].metadata == {"section": "returns"}
    assert summary.retrieval_threshold == 0.3 and summary.retrieval_filtered == 2
    lookup, refund = summary.tool_calls
    assert (lookup.name, lookup.arguments, lookup.result, lookup.call_id, lookup.error) == (
        "lookup_order",
        {"order_id": "A1"},
        {"status": "shipped"},
        "c1",
        None,
    )
    assert refund.arguments == {"value": [1]}
    assert refund.error is not None and "refund service down" in refund.error
    assert summary.failure_reasons == ()  # a failed tool call alone is not a failed trace
    assert [(c.model, c.provider, c.input_tokens, c.output_tokens) for c in summary.llm_calls] == [
        ("gpt-a", "openai", 10, 5),
        ("gpt-b", "openai", None, 7),
    ]
    assert summary.input_tokens == 10 and summary.output_tokens == 12
    assert all(c.latency_s >= 0 for c in summary.llm_calls)


def test_failure_signals(traced: tuple[Tracer, InMemorySpanExporter]) -> None:
    tracer, exporter = traced
    with pytest.raises(ValueError):
        with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("q1")):
            raise ValueError("order 7 not found")
    with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("q2")) as agent:
        agent.set_attribute(sc.OI_OUTPUT_VALUE, "   ")
    with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("q3")) as agent:
        agent.set_attribute(sc.OI_OUTPUT_VALUE, "A human will call you.")
        agent.set_attribute(sc.RG_ESCALATION, True)
        agent.set_attribute(sc.RG_ESCALATION_REASON, "angry customer")
        agent.set_attribute(sc.RG_CLARIFICATION, True)
        agent.set_attribute(sc.RG_FAILURE_REASONS, ("explicit",))
    with tracer.start_as_current_span("invoke_agent support", attributes=agent_attrs("q4")) as agent:
        inner_attrs = agent_attrs("sub", **{sc.RG_FAILURE_REASONS: ("exception",)})
        with tracer.start_as_current_span("invoke_agent helper", attributes=inner_attrs) as inner:
            inner.set_status(Status(StatusCode.ERROR, "handled"))
        agent.set_attribute(sc.OI_OUTPUT_VALUE, "fine after all")
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records(exporter):
        by_trace.setdefault(record.trace_id, []).append(record)
    summaries = sorted((summarize_spans(s) for s in by_trace.values()), key=lambda s: s.turns)
    raised, empty, escalated, nested = summaries
    assert raised.failure_reasons == ("exception",)
    assert raised.error == "ValueError: order 7 not found" and raised.output is None
    assert empty.failure_reasons == ("empty_answer",) and empty.error is None
    assert escalated.failure_reasons == ("escalation", "explicit")
    assert escalated.escalated and escalated.escalation_reason == "angry customer" and escalated.clarification
    assert nested.failure_reasons == () and nested.turns == ("q4",)


def test_messages_fallback_and_empty_input() -> None:
    attrs = {
        sc.OPERATION_NAME: "invoke_agent",
        sc.INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hello"}]}]),
        sc.OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "content": "hi there"}]),
    }
    span = SpanRecord(
        "a" * 32, "b" * 16, None, "invoke_agent bot", "agent", 0, 2_000_000_000, "ok", None, attrs
    )
    summary = summarize_spans([span])
    assert summary.turns == ("hello",) and summary.output == "hi there"
    assert summary.agent_name == "bot" and summary.latency_s == 2.0
    empty = summarize_spans([])
    assert empty.turns == () and empty.output is None and empty.failure_reasons == ()


def test_decorator_reasons_are_trusted_and_early_close_is_not_empty() -> None:
    base = {sc.OPERATION_NAME: "invoke_agent", sc.OI_INPUT_VALUE: "q"}
    closed = SpanRecord(
        "c" * 32,
        "1" * 16,
        None,
        "invoke_agent a",
        "agent",
        0,
        10,
        "unset",
        None,
        {**base, sc.RG_STREAM_CLOSED_EARLY: True},
    )
    assert summarize_spans([closed]).failure_reasons == ()
    trusted = SpanRecord(
        "c" * 32,
        "2" * 16,
        None,
        "invoke_agent a",
        "agent",
        0,
        10,
        "unset",
        None,
        {**base, sc.RG_FAILURE_REASONS: []},
    )
    assert summarize_spans([trusted]).failure_reasons == ()
    plain = SpanRecord("c" * 32, "3" * 16, None, "invoke_agent a", "agent", 0, 10, "unset", None, dict(base))
    assert summarize_spans([plain]).failure_reasons == ("empty_answer",)
