"""Redaction rules and the span copy an exporter sees (pure logic)."""

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._encoding import content_hash
from replaygate.instrumentation._redaction import Redactor
from replaygate.instrumentation._spancopy import derived_attributes, transform_span


def test_default_patterns() -> None:
    r = Redactor()
    cases = {
        "mail me: a.b+c@mail.example.co.uk now": "mail me: [REDACTED:email] now",
        "key sk-proj-AbCdEf0123456789xyz ok": "key [REDACTED:api_key] ok",
        "anthropic sk-ant-api03-abcdefghijklmnop": "anthropic [REDACTED:api_key]",
        "Authorization: Bearer abc.def-ghi_jkl": "Authorization: [REDACTED:credential]",
        "aws AKIAABCDEFGHIJKLMNOP": "aws [REDACTED:api_key]",
        "gh ghp_abcdefghijklmnopqrstuvwxyz0123456789": "gh [REDACTED:api_key]",
        "plain: sk-short, task-manager, me@localhost": "plain: sk-short, task-manager, me@localhost",
    }
    for raw, expected in cases.items():
        assert r.redact(raw)[0] == expected, raw
    assert r.redact("x@y.io and z@w.org")[1] == 2


def test_custom_patterns_and_defaults_off() -> None:
    r = Redactor([r"ORD-\d+"], defaults=False)
    assert r.redact("ORD-10042 for a@b.com") == ("[REDACTED] for a@b.com", 1)
    assert r.redact_value(("ORD-1", "x")) == (("[REDACTED]", "x"), 1)
    assert r.redact_value(42) == (42, 0)


def _span(attributes: dict[str, object], name: str = "invoke_agent a") -> object:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    span = provider.get_tracer("t").start_span(name, attributes=attributes)  # type: ignore[arg-type]
    span.add_event("note", {"detail": "from ops@example.com"})
    span.end()
    return memory.get_finished_spans()[0]


def test_transform_redacts_everything_and_keeps_the_original() -> None:
    span = _span({sc.OPERATION_NAME: "invoke_agent", sc.OI_INPUT_VALUE: "I am bob@example.com"})
    copy, n = transform_span(span, Redactor(), capture_content=True)  # type: ignore[arg-type]
    assert n == 3  # input, derived input messages, event
    assert copy.attributes[sc.OI_INPUT_VALUE] == "I am [REDACTED:email]"  # type: ignore[index]
    assert "bob@" not in str(copy.attributes[sc.INPUT_MESSAGES])  # type: ignore[index]
    assert copy.events[0].attributes["detail"] == "from [REDACTED:email]"  # type: ignore[index]
    assert span.attributes[sc.OI_INPUT_VALUE] == "I am bob@example.com"  # type: ignore[attr-defined]
    assert copy.context == span.context and copy.parent == span.parent  # type: ignore[attr-defined]


def test_transform_returns_the_span_itself_when_nothing_changes() -> None:
    span = _span({sc.OPERATION_NAME: "execute_tool", sc.TOOL_NAME: "t"}, name="execute_tool t")
    redactor = Redactor([r"never-matches-\d{40}"], defaults=False)
    same, n = transform_span(span, redactor, capture_content=True)  # type: ignore[arg-type]
    # the event has an e-mail address only for the default rules; these custom rules change nothing
    assert same is span and n == 0


def test_transform_hashes_content_when_capture_is_off() -> None:
    docs = json.dumps([{"id": "d1", "score": 0.5, "content": "secret text", "metadata": {"a": 1}}])
    span = _span(
        {
            sc.OPERATION_NAME: "retrieval",
            sc.RG_RETRIEVAL_QUERY: "q",
            sc.RETRIEVAL_DOCUMENTS: docs,
            sc.oi_document(0, sc.OI_DOCUMENT_ID): "d1",
            sc.oi_document(0, sc.OI_DOCUMENT_CONTENT): "secret text",
        },
        name="retrieval",
    )
    copy, _ = transform_span(span, Redactor(), capture_content=False)  # type: ignore[arg-type]
    attrs = copy.attributes or {}
    assert attrs[sc.RG_RETRIEVAL_QUERY] == content_hash("q")
    assert attrs[sc.oi_document(0, sc.OI_DOCUMENT_CONTENT)] == content_hash("secret text")
    assert attrs[sc.oi_document(0, sc.OI_DOCUMENT_ID)] == "d1"
    decoded = json.loads(str(attrs[sc.RETRIEVAL_DOCUMENTS]))
    assert decoded[0]["content"] == content_hash("secret text") and decoded[0]["id"] == "d1"
    assert attrs[sc.RG_CONTENT_HASHED] is True


def test_derived_attributes() -> None:
    derived = derived_attributes(
        {
            sc.OPERATION_NAME: "invoke_agent",
            sc.OI_INPUT_VALUE: "hi",
            sc.OI_OUTPUT_VALUE: "yo",
            sc.OI_SESSION_ID: "s",
        }
    )
    assert json.loads(derived[sc.INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert json.loads(derived[sc.OUTPUT_MESSAGES])[0]["finish_reason"] == "stop"
    assert derived[sc.CONVERSATION_ID] == "s"
    assert derived_attributes({sc.OPERATION_NAME: "chat", sc.OI_INPUT_VALUE: "x"}) == {}
