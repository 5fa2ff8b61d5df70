"""The store's one-read ingest paths give exactly what the full paths give, for any dialect and shape.

``trace_row_draft`` (``_store_trace_row``) reads a trace's row straight from its records; the reference is
``summary_row_draft``, the same row built from ``row_summary`` (the full normalisation). Hypothesis draws
traces mixing GenAI semconv, OpenInference and OpenLLMetry attributes, nested and cyclic parents, duplicate
span ids, errors, empty answers, escalations, streams closed early, failure reasons as tuples or JSON, and
values of odd types. ``transform_row`` (a span to its record and SQL row in one read, the redaction check
on the row's JSON text) gives ``transform_record``'s record and ``record_to_row``'s row, and that check
never misses a trigger that the check over the span's strings finds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import SpanRecord
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._store_trace_row import draft_row, int64, json_list, preview, trace_row_draft
from replaygate.instrumentation._summary import row_summary


def summary_row_draft(spans: Sequence[SpanRecord]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The reference: :func:`trace_row_draft`'s row by way of ``row_summary`` (the full normalisation)."""
    summary = row_summary(spans)
    reasons = summary.failure_reasons
    error = summary.error is not None or "exception" in reasons
    empty = not error and (summary.output is None or not summary.output.strip() or "empty_answer" in reasons)
    calls = [[c.model, c.provider, c.input_tokens, c.output_tokens] for c in summary.llm_calls]
    row = draft_row(
        trace_id=summary.trace_id,
        start_ns=int64(min(s.start_ns for s in spans)),
        end_ns=int64(max(s.end_ns for s in spans)),
        session_id=summary.session_id,
        user_id=summary.user_id,
        agent_name=summary.agent_name,
        variant=summary.variant,
        config_id=summary.config_id,
        input_preview=preview(summary.turns[-1] if summary.turns else None),
        output_preview=preview(summary.output),
        error=int(error),
        empty=int(empty),
        escalated=int(summary.escalated or "escalation" in reasons),
        latency_s=float(summary.latency_s),
        llm_calls=json_list(calls),
    )
    return row, reasons


_IDS = [f"{i:016x}" for i in range(1, 7)]
_TEXT = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "hello", "x" * 250, '{"args": ["q"]}', '["a"]', '"quoted"']),
    st.integers(-3, 3),
    st.booleans(),
    st.lists(st.sampled_from(["a", "b", ""]), max_size=2).map(tuple),
)
_NAMES = [
    sc.OPERATION_NAME,
    sc.OI_SPAN_KIND,
    "traceloop.span.kind",
    "llm.request.type",
    sc.AGENT_NAME,
    "agent.name",
    "traceloop.entity.name",
    sc.OI_INPUT_VALUE,
    sc.OI_OUTPUT_VALUE,
    sc.INPUT_MESSAGES,
    sc.OUTPUT_MESSAGES,
    "traceloop.entity.input",
    "traceloop.entity.output",
    sc.CONVERSATION_ID,
    sc.OI_SESSION_ID,
    "traceloop.association.properties.session_id",
    sc.OI_USER_ID,
    "traceloop.association.properties.user_id",
    "enduser.id",
    sc.REQUEST_MODEL,
    sc.RESPONSE_MODEL,
    sc.OI_LLM_MODEL_NAME,
    sc.PROVIDER_NAME,
    "gen_ai.system",
    sc.OI_LLM_PROVIDER,
    sc.USAGE_INPUT_TOKENS,
    "gen_ai.usage.prompt_tokens",
    sc.OI_TOKEN_PROMPT,
    sc.USAGE_OUTPUT_TOKENS,
    "llm.usage.completion_tokens",
    sc.RG_ESCALATION,
    sc.RG_VARIANT,
    sc.RG_CONFIG_ID,
    sc.RG_STREAM_CLOSED_EARLY,
    sc.RG_FAILURE_REASONS,
]
_REASONS = ["exception", "empty_answer", "escalation", "explicit", ""]
_SPECIAL: dict[str, Any] = {
    sc.OPERATION_NAME: st.sampled_from(["invoke_agent", "chat", "execute_tool", "retrieval", "other"]),
    sc.OI_SPAN_KIND: st.sampled_from(["AGENT", "LLM", "TOOL", "RETRIEVER", "chain", "agent"]),
    "traceloop.span.kind": st.sampled_from(["agent", "tool", "workflow"]),
    "llm.request.type": st.sampled_from(["chat", "completion", "nope"]),
    sc.RG_ESCALATION: st.sampled_from([True, False, "true", "TRUE", "no"]),
    sc.RG_STREAM_CLOSED_EARLY: st.sampled_from([True, False, "true"]),
    sc.RG_FAILURE_REASONS: st.one_of(
        st.lists(
            st.sampled_from(["exception", "empty_answer", "escalation", "explicit", ""]), max_size=3
        ).map(tuple),
        st.sampled_from(['["explicit"]', '"exception"', "empty_answer", "[1, 2]"]),
    ),
    sc.INPUT_MESSAGES: st.sampled_from(
        [
            '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
            '[{"role":"user","content":"yo"}]',
            "x",
        ]
    ),
    sc.OUTPUT_MESSAGES: st.sampled_from(
        ['[{"role":"assistant","parts":[{"type":"text","content":"ok"}]}]', "[]", '{"a": 1}']
    ),
}


@st.composite
def _span(draw: st.DrawFn, index: int) -> SpanRecord:
    keys = draw(st.lists(st.sampled_from(_NAMES), max_size=9, unique=True))
    attributes = {k: draw(_SPECIAL.get(k, _TEXT)) for k in keys}
    start = draw(st.integers(0, 5))
    events: tuple[dict[str, Any], ...] = ()
    if draw(st.booleans()):
        events = (
            {
                "name": "exception",
                "timestamp_ns": 1,
                "attributes": {"exception.type": draw(_TEXT), "exception.message": draw(_TEXT)},
            },
        )
    return SpanRecord(
        trace_id="ab" * 16,
        span_id=draw(st.sampled_from(_IDS)) if draw(st.integers(0, 5)) == 0 else _IDS[index % len(_IDS)],
        parent_id=draw(st.one_of(st.none(), st.sampled_from(_IDS), st.just("ffffffffffffffff"))),
        name=draw(st.sampled_from(["invoke_agent support", "invoke_agent", "chat gpt", "work"])),
        kind=draw(st.sampled_from(["agent", "llm", "tool", "retrieval", "other", "other"])),
        start_ns=start,
        end_ns=start + draw(st.integers(-1, 4)),
        status=draw(st.sampled_from(["ok", "error", "unset"])),
        status_message=draw(st.sampled_from([None, "", "boom"])),
        attributes=attributes,
        events=events,
    )


@st.composite
def _trace(draw: st.DrawFn) -> list[SpanRecord]:
    n = draw(st.integers(1, 6))
    return [draw(_span(i)) for i in range(n)]


@settings(max_examples=600, deadline=None)
@given(_trace())
def test_trace_row_draft_equals_the_row_of_row_summary(spans: list[SpanRecord]) -> None:
    assert trace_row_draft(spans) == summary_row_draft(spans)


def test_the_common_replaygate_trace() -> None:
    agent = SpanRecord(
        "cd" * 16,
        "0000000000000001",
        None,
        "invoke_agent support",
        "agent",
        10,
        50,
        "ok",
        None,
        {
            sc.OPERATION_NAME: "invoke_agent",
            sc.AGENT_NAME: "support",
            sc.OI_INPUT_VALUE: "where is my order?",
            sc.OI_OUTPUT_VALUE: "tomorrow",
            sc.OI_SESSION_ID: "s-1",
            sc.RG_FAILURE_REASONS: [],
        },
    )
    llm = SpanRecord(
        "cd" * 16,
        "0000000000000002",
        "0000000000000001",
        "chat gpt-4o-mini",
        "llm",
        20,
        40,
        "ok",
        None,
        {sc.REQUEST_MODEL: "gpt-4o-mini", sc.PROVIDER_NAME: "OpenAI", sc.USAGE_INPUT_TOKENS: 12},
    )
    row, reasons = trace_row_draft([llm, agent])
    assert (row, reasons) == summary_row_draft([llm, agent])
    assert reasons == ()
    assert row["session_id"] == "s-1" and row["agent_name"] == "support"
    assert row["input_preview"] == "where is my order?" and row["output_preview"] == "tomorrow"
    assert row["llm_calls"] == '[["gpt-4o-mini", "openai", 12, null]]'
    assert row["latency_s"] == 40 / 1e9 and (row["error"], row["empty"], row["escalated"]) == (0, 0, 0)


def test_transform_row_is_transform_record_and_its_row() -> None:
    """The export worker's one-read path gives transform_record's record and count, and its row."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from replaygate.instrumentation import record_to_row
    from replaygate.instrumentation._redaction import Redactor
    from replaygate.instrumentation._spancopy import transform_record, transform_row

    provider, memory = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    values = [
        "plain words",
        "mail help@example.com",
        "Authorization: Bearer abcdefghijklmnop",
        "a token with spaces",
        "sk-abcdefghijklmnopqrstu",
        "\bbasic abcdefghij",
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_" + "a" * 36,
        "xoxb-1234567890",
        "TOKEN",
    ]
    for i, value in enumerate(values):
        with tracer.start_as_current_span(f"span {i}") as span:
            span.set_attributes({"gen_ai.usage.input_tokens": 3, "llm.token_count.prompt": 3, "k": value})
            span.set_attribute("list", ("x", value))
            span.add_event("note", {"text": value})
            if i % 2:
                span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
                span.set_attribute(sc.OI_INPUT_VALUE, value)
    spans = memory.get_finished_spans()
    assert len(spans) == len(values)
    for redactor in (Redactor(), Redactor(["ORD-\\d+"]), Redactor(defaults=False)):
        for capture in (True, False):
            changed = 0
            for span in spans:
                record, row, n = transform_row(span, redactor, capture_content=capture)
                assert (record, n) == transform_record(span, redactor, capture_content=capture)
                assert row == record_to_row(record)
                changed += n > 0
            if capture and redactor is not None and len(redactor._rules) == 7:
                assert changed >= 6  # the secrets above were found, not skipped by the check


_PIECES = st.sampled_from(
    ["a", "k", "-", "@", "x", "o", "TOK", "en", "token", "Basic", "bearer", "A", "KIA", "AIza", "gh", "p_"]
    + ["\b", '"']
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(
        st.lists(_PIECES, max_size=4).map("".join),
        st.one_of(st.lists(_PIECES, max_size=6).map("".join), st.integers(), st.floats(allow_nan=False)),
        max_size=5,
    )
)
@example({"k": "sk-x"})
@example({"k": "mail@x"})
@example({"k": "xoxb"})
@example({"AKIA": 1, "v": "AKIA"})
@example({"token": "Token"})
@example({"input_tokens": 1, "v": "ghp_"})
@example({"basic": "a\bbasic"})
def test_the_check_on_json_text_never_misses_a_trigger_in_a_value(attributes: dict[str, Any]) -> None:
    import json

    from replaygate.instrumentation._redaction import may_hold_trigger, may_hold_trigger_in_values

    values = "\n".join(v for v in attributes.values() if isinstance(v, str))
    encoded = json.dumps(attributes, ensure_ascii=False, separators=(",", ":"))
    if may_hold_trigger(values):
        assert may_hold_trigger_in_values(encoded, "\n".join(attributes))
