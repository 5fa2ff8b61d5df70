"""Pin the public API of replaygate.instrumentation: a rename is a breaking change."""

import inspect

import replaygate.instrumentation as ri

EXPECTED = {
    "configure",
    "shutdown",
    "health",
    "trace_agent",
    "retrieval",
    "record_retrieval",
    "trace_retriever",
    "trace_tool",
    "tool_call",
    "trace_llm",
    "llm_call",
    "load_prices",
    "mark_escalation",
    "mark_clarification",
    "mark_failure",
    "record_feedback",
    "current_trace_id",
    "annotate_agent",
    "run_in_context",
    "wrap_for_executor",
    "SpanCollector",
    "SpanRecord",
    "TraceSummary",
    "TraceRecord",
    "Chunk",
    "ToolCall",
    "LlmCall",
    "FAILURE_REASONS",
    "ReplaygateError",
    "InstrumentationError",
    "StoreError",
    "__version__",
    "TraceStore",
    "StoreSpanExporter",
    "span_to_record",
    "summarize_spans",
    "choose_variant",
    "RoutingClient",
    "Variant",
    "configure_routing",
    "normalize_span",
    "span_record",
    "NormalizedSpan",
    "AgentRun",
    "Retrieval",
    "is_content_attribute",
    "call_cost",
    "capture",
    "CaptureResult",
    "watch",
    "Instrumentation",
    "ConfigureOptions",
    # exported for the other parts (issue 16: no private cross-part imports)
    "DEFAULT_STORE",
    "TRACE_COLUMNS",
    "TRACE_MIGRATIONS",
    "TRACE_SCHEMA_VERSION",
    "absolute_store",
    "BatchRows",
    "batch_trace_rows",
    "build_records",
    "close_route",
    "connect_store_db",
    "describe_destinations",
    "fast_init",
    "feedback_value",
    "id_chunks",
    "jsonable",
    "normalize_trace_id",
    "open_route",
    "ordered_reasons",
    "record_from_row",
    "record_to_row",
    "resolve_settings",
    "resolve_store_url",
    "trace_id_range",
    "watch_known_providers",
    # the one read path of both trace stores (issue 16)
    "Execute",
    "TraceQuery",
    "TraceReader",
    "read_feedback",
    "read_records",
    "read_spans",
}


def test_all_is_pinned() -> None:
    assert set(ri.__all__) == EXPECTED
    assert len(ri.__all__) == len(set(ri.__all__))
    for name in ri.__all__:
        assert hasattr(ri, name), name


def test_module_docstring_is_the_manual() -> None:
    doc = ri.__doc__ or ""
    for needle in (
        "@trace_agent",
        "REPLAYGATE_STORE",
        "REPLAYGATE_SAMPLE_RATIO",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "LANGFUSE_PUBLIC_KEY",
        "LANGFUSE_SECRET_KEY",
        "LANGFUSE_HOST",
    ):
        assert needle in doc, needle


def test_public_functions_have_docstrings() -> None:
    for name in ri.__all__:
        obj = getattr(ri, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__, name
