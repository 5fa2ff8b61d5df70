"""replaygate.instrumentation: what a production agent installs — one decorator, OpenTelemetry spans.

Usage::

    from replaygate.instrumentation import configure, trace_agent, retrieval, tool_call, llm_call

    configure(service_name="support-agent")          # embedded store at .replaygate/replaygate.db

    @trace_agent(name="support-agent", version="1.4.0")
    def respond(message: str, session_id: str | None = None, user_id: str | None = None) -> str:
        with retrieval(message, data_source="policies") as r:
            chunks = search(message)
            r.record(chunks)                          # dicts or objects with id, score, text[, metadata]
        with tool_call("lookup_order", {"order_id": "ORD-10042"}) as t:
            t.set_result(lookup_order("ORD-10042"))
        with llm_call("gpt-4o-mini", provider="openai") as llm:
            answer = model(message, chunks)
            llm.set_usage(input_tokens=812, output_tokens=96)
            llm.set_output(answer)
        return answer

Each call of ``respond`` becomes one trace: an ``invoke_agent support-agent`` span (input, output,
session, user, agent name and version, failure reasons) with ``retrieval``, ``execute_tool`` and ``chat``
child spans, named after the OpenTelemetry GenAI semantic conventions (v1.41) and written the
OpenInference way too, so the same trace reads well in Phoenix and Langfuse. ``@trace_agent`` works on
functions and methods, sync or async, and on (async) generators that stream the answer (recorded when the
stream ends, including an early ``close()``). Decorator forms exist for the child spans: ``@trace_tool``,
``@trace_llm``, ``@trace_retriever``.

Failure signals (the failure inbox reads them): an exception (propagated unchanged), an empty answer,
``mark_escalation(reason)``, ``mark_failure(reason)``, and ``record_feedback(trace_id, score)`` arriving
later from any process (``current_trace_id()`` gives the id to hand to the UI). ``mark_clarification()``
notes a clarifying question. ``annotate_agent({...})`` sets attributes on the innermost agent span.

Threads: ``contextvars`` do not follow work into an executor; submit ``wrap_for_executor(fn)`` so spans and
marks made there belong to the agent call that submitted them. asyncio tasks inherit the context.

Where spans go — ``configure(...)`` (call it again to change; the last call wins). It returns an
``Instrumentation`` handle (``health()``, ``shutdown()``, ``activate()``); decorators and span helpers use
the handle active in the current context (a context variable: ``with handle.activate():``), else the
default one, so a second handle made with ``configure(..., default=False)`` serves only where activated:

- the embedded store (SQLite, default ``.replaygate/replaygate.db``; ``store=None`` disables it), read by
  ``replaygate traces`` / ``replaygate failures``;
- OTLP to any collector, Phoenix, Jaeger (``otlp_endpoint``, ``http/protobuf`` or ``grpc``);
- Langfuse, through its OpenTelemetry endpoint ``{host}/api/public/otel/v1/traces`` (keys as basic auth;
  no Langfuse SDK needed);
- extra ``SpanExporter`` objects (``exporters=[...]``).

``configure`` attaches its processor to the global SDK TracerProvider when one exists (other tools' spans
are untouched, and only traces replaygate took part in are exported), creates one when there is none, or
uses an isolated provider given as ``tracer_provider=`` (then nothing reaches the global provider).
Without any ``configure`` call the decorators use the global provider; when that is the default no-op
one they cost almost nothing.
Export is asynchronous and bounded: each exporter has its own queue and worker thread, a dead collector
costs the agent nothing but dropped spans (counted in ``health()``), and ``shutdown(timeout)`` (also run
at exit) flushes with a deadline. Redaction (API keys such as ``sk-…``, bearer tokens, e-mail addresses
and your patterns) runs on every span before any exporter sees it. With content capture off for an
exporter, text (inputs, outputs, messages, tool payloads, retrieved text) is replaced by
``sha256:<hex>``. Instrumentation faults never reach the agent: they are counted and logged once.
``health()`` returns the counters: exported, dropped (queue full or left at shutdown) and failed spans,
export errors, instrumentation faults, redactions, spans queued now, and the same per exporter.
To keep the decorated call cheap, ``gen_ai.input.messages``, ``gen_ai.output.messages`` and
``gen_ai.conversation.id`` of agent spans are derived from ``input.value``, ``output.value`` and
``session.id`` by the export workers (and by ``SpanCollector``), not on the agent's thread.

Environment variables (an explicit ``configure`` argument wins):

- ``REPLAYGATE_STORE``: store path or ``sqlite:///path`` URL; ``off`` disables the store.
- ``REPLAYGATE_CAPTURE_CONTENT``: keep text in the store and extra exporters (default ``true``).
- ``REPLAYGATE_OTLP_CAPTURE_CONTENT``, ``REPLAYGATE_LANGFUSE_CAPTURE_CONTENT``: keep text in OTLP /
  Langfuse export (default ``false``: hashed).
- ``REPLAYGATE_REDACT``: an extra regular expression, or a JSON list of them.
- ``REPLAYGATE_REDACT_DEFAULTS``: ``false`` turns the built-in patterns off.
- ``REPLAYGATE_SAMPLE_RATIO``: share of traces exported (0..1, by trace id; default 1).
- ``REPLAYGATE_QUEUE_SIZE`` (50000 spans per exporter: a 5 s burst of 2,000 calls/s fits; a queued span
  holds ~3 KB, so a full queue ~150 MB), ``REPLAYGATE_BATCH_SIZE`` (512), ``REPLAYGATE_SCHEDULE_DELAY``
  (seconds, 1), ``REPLAYGATE_SHUTDOWN_TIMEOUT`` (seconds, 5), ``REPLAYGATE_MAX_TEXT_CHARS`` (32768).
- ``OTEL_SERVICE_NAME``; ``OTEL_EXPORTER_OTLP_ENDPOINT`` (base URL, ``/v1/traces`` appended for HTTP) or
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is); ``OTEL_EXPORTER_OTLP_HEADERS`` /
  ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (``k=v,k2=v2``); ``OTEL_EXPORTER_OTLP_PROTOCOL`` /
  ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` (``http/protobuf`` or ``grpc``); ``OTEL_EXPORTER_OTLP_TIMEOUT``.
- ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``, ``LANGFUSE_HOST`` (default
  ``https://cloud.langfuse.com``): Langfuse export is on when both keys are set.

Canary routing: ``choose_variant(user_or_session_id)`` returns the sticky ``Variant`` (baseline or
candidate) to serve and records it on the agent span; ``RoutingClient`` / ``configure_routing`` read the
canary state (``help(RoutingClient)``; env ``REPLAYGATE_CANARY_SOURCE``, ``REPLAYGATE_CANARY_REFRESH_S``).

Capture by trace: ``with capture() as cap:`` runs the block in a trace of its own and keeps that trace's
spans (``cap.spans``, ``cap.summary``) from every provider replaygate watches (the global one and those
given to ``configure``; ``watch(provider)`` adds another), whichever library made them. Captures running
at once each get their own spans; production export keeps running, and captured traces stay out of it.
This is how ``replaygate run`` captures each attempt.

For the replay engine: ``SpanCollector`` is a span processor keeping finished spans per trace
(``pop(trace_id)``) as ``SpanRecord``; ``summarize_spans`` turns them into a ``TraceSummary``.

Spans of any producer: ``normalize_span(span)`` reads one finished span — an SDK ``ReadableSpan``, a
``SpanRecord``, or a plain attribute mapping with its name, ids, times and status (spans decoded from OTLP
or read from another tool's API; ``span_record(...)`` builds the record from such fields) — in any of the
dialects teams already emit: the OpenTelemetry GenAI conventions (current and deprecated names),
OpenInference and OpenLLMetry. It returns a ``NormalizedSpan``: the record, its kind and the facts of that
kind (``AgentRun``, ``LlmCall``, ``ToolCall``, ``Retrieval``, the error). The store, replay capture, the run
summary and ``replaygate trace`` all read spans through it; ``is_content_attribute(name)`` says which
attributes carry text (hashed when capture is off). Read other producers' spans through these, never by
attribute name.

For replaygate's other parts (and tools of your own), everything is imported from this package, never
from its private modules: the attribute names are in the public module ``semconv``
(``from replaygate.instrumentation import semconv``); the store's file and row format
(``DEFAULT_STORE``, ``resolve_store_url``, ``connect_store_db``, ``TRACE_SCHEMA_VERSION``,
``TRACE_MIGRATIONS``, ``record_to_row`` / ``record_from_row``, ``build_records``, ``batch_trace_rows``
(``BatchRows``: the same rows, built before the write transaction),
``normalize_trace_id``, ``trace_id_range``, ``id_chunks``, ``feedback_value``, ``ordered_reasons``) so the
control plane's SQL store writes the same rows, and the one read path (``TraceReader``, ``TraceQuery``,
``read_records``, ``read_spans``, ``read_feedback``, ``Execute``) so it reads the same records; capture
routes (``open_route``, ``close_route``, ``watch_known_providers``) for the replay engine;
``resolve_settings``, ``describe_destinations`` and ``absolute_store`` for ``replaygate doctor``;
``jsonable`` for artifact files.

Importing the package costs about what the OpenTelemetry API costs: it loads the decorators and span
helpers only; every other public name (``configure``, the store, capture, routing, normalisation, prices)
loads its module on first use, so a process that only decorates never loads the SDK's export side,
sqlite3 or OpenSSL's hashing until ``configure`` (or a replay) asks for them.
"""

import importlib
from typing import TYPE_CHECKING, Any

from replaygate.instrumentation._agent import (
    annotate_agent,
    current_trace_id,
    mark_clarification,
    mark_escalation,
    mark_failure,
)
from replaygate.instrumentation._context import run_in_context, wrap_for_executor
from replaygate.instrumentation._errors import InstrumentationError, ReplaygateError, StoreError
from replaygate.instrumentation._span_decorators import trace_llm, trace_retriever, trace_tool
from replaygate.instrumentation._spans import llm_call, record_retrieval, retrieval, tool_call
from replaygate.instrumentation._trace_agent import trace_agent
from replaygate.instrumentation.version import __version__

if TYPE_CHECKING:  # the names below are loaded on first use (PEP 562 ``__getattr__`` below)
    from replaygate.instrumentation._collector import SpanCollector
    from replaygate.instrumentation._configure import Instrumentation, configure, health, shutdown
    from replaygate.instrumentation._destinations import absolute_store, describe_destinations
    from replaygate.instrumentation._feedback import record_feedback
    from replaygate.instrumentation._frozen import fast_init
    from replaygate.instrumentation._normalize import (
        AgentRun,
        NormalizedSpan,
        Retrieval,
        is_content_attribute,
        jsonable,
        normalize_span,
        span_record,
        span_to_record,
    )
    from replaygate.instrumentation._prices import call_cost, load_prices
    from replaygate.instrumentation._reasons import FAILURE_REASONS, ordered_reasons
    from replaygate.instrumentation._records import (
        Chunk,
        LlmCall,
        SpanRecord,
        ToolCall,
        TraceRecord,
        TraceSummary,
    )
    from replaygate.instrumentation._routing import RoutingClient, Variant, choose_variant, configure_routing
    from replaygate.instrumentation._settings import ConfigureOptions, resolve_settings
    from replaygate.instrumentation._store import StoreSpanExporter, TraceStore
    from replaygate.instrumentation._store_db import (
        DEFAULT_STORE,
        TRACE_MIGRATIONS,
        TRACE_SCHEMA_VERSION,
        connect_store_db,
        resolve_store_url,
    )
    from replaygate.instrumentation._store_reads import TraceQuery, TraceReader, read_records
    from replaygate.instrumentation._store_rows import (
        TRACE_COLUMNS,
        BatchRows,
        Execute,
        batch_trace_rows,
        build_records,
        feedback_value,
        id_chunks,
        normalize_trace_id,
        read_feedback,
        read_spans,
        record_from_row,
        record_to_row,
        trace_id_range,
    )
    from replaygate.instrumentation._summary import summarize_spans
    from replaygate.instrumentation._trace_capture import CaptureResult, capture, watch, watch_known_providers
    from replaygate.instrumentation._trace_routes import close_route, open_route

#: Public names whose modules load on first use, so importing the package (and decorating a function)
#: costs little more than the OpenTelemetry SDK: name -> private module.
_LAZY = {
    "SpanCollector": "_collector",
    "Instrumentation": "_configure",
    "configure": "_configure",
    "health": "_configure",
    "shutdown": "_configure",
    "absolute_store": "_destinations",
    "describe_destinations": "_destinations",
    "record_feedback": "_feedback",
    "fast_init": "_frozen",
    "AgentRun": "_normalize",
    "NormalizedSpan": "_normalize",
    "Retrieval": "_normalize",
    "is_content_attribute": "_normalize",
    "jsonable": "_normalize",
    "normalize_span": "_normalize",
    "span_record": "_normalize",
    "span_to_record": "_normalize",
    "call_cost": "_prices",
    "load_prices": "_prices",
    "Chunk": "_records",
    "FAILURE_REASONS": "_reasons",
    "LlmCall": "_records",
    "SpanRecord": "_records",
    "ToolCall": "_records",
    "TraceRecord": "_records",
    "TraceSummary": "_records",
    "ordered_reasons": "_reasons",
    "RoutingClient": "_routing",
    "Variant": "_routing",
    "choose_variant": "_routing",
    "configure_routing": "_routing",
    "ConfigureOptions": "_settings",
    "resolve_settings": "_settings",
    "StoreSpanExporter": "_store",
    "TraceStore": "_store",
    "DEFAULT_STORE": "_store_db",
    "TRACE_MIGRATIONS": "_store_db",
    "TRACE_SCHEMA_VERSION": "_store_db",
    "connect_store_db": "_store_db",
    "resolve_store_url": "_store_db",
    "TraceQuery": "_store_reads",
    "TraceReader": "_store_reads",
    "read_records": "_store_reads",
    "BatchRows": "_store_rows",
    "Execute": "_store_rows",
    "TRACE_COLUMNS": "_store_rows",
    "batch_trace_rows": "_store_rows",
    "build_records": "_store_rows",
    "feedback_value": "_store_rows",
    "id_chunks": "_store_rows",
    "normalize_trace_id": "_store_rows",
    "read_feedback": "_store_rows",
    "read_spans": "_store_rows",
    "record_from_row": "_store_rows",
    "record_to_row": "_store_rows",
    "trace_id_range": "_store_rows",
    "summarize_spans": "_summary",
    "CaptureResult": "_trace_capture",
    "capture": "_trace_capture",
    "watch": "_trace_capture",
    "watch_known_providers": "_trace_capture",
    "close_route": "_trace_routes",
    "open_route": "_trace_routes",
}

__all__ = [
    "AgentRun",
    "CaptureResult",
    "Chunk",
    "DEFAULT_STORE",
    "Execute",
    "FAILURE_REASONS",
    "ConfigureOptions",
    "Instrumentation",
    "InstrumentationError",
    "LlmCall",
    "NormalizedSpan",
    "ReplaygateError",
    "Retrieval",
    "RoutingClient",
    "SpanCollector",
    "SpanRecord",
    "StoreError",
    "StoreSpanExporter",
    "TRACE_COLUMNS",
    "TRACE_MIGRATIONS",
    "TRACE_SCHEMA_VERSION",
    "ToolCall",
    "TraceQuery",
    "TraceReader",
    "TraceRecord",
    "TraceStore",
    "TraceSummary",
    "Variant",
    "__version__",
    "absolute_store",
    "annotate_agent",
    "BatchRows",
    "batch_trace_rows",
    "build_records",
    "call_cost",
    "capture",
    "choose_variant",
    "close_route",
    "configure",
    "configure_routing",
    "connect_store_db",
    "current_trace_id",
    "describe_destinations",
    "fast_init",
    "feedback_value",
    "health",
    "id_chunks",
    "is_content_attribute",
    "jsonable",
    "llm_call",
    "load_prices",
    "mark_clarification",
    "mark_escalation",
    "mark_failure",
    "normalize_span",
    "normalize_trace_id",
    "open_route",
    "ordered_reasons",
    "read_feedback",
    "read_records",
    "read_spans",
    "record_feedback",
    "record_from_row",
    "record_retrieval",
    "record_to_row",
    "resolve_settings",
    "resolve_store_url",
    "retrieval",
    "run_in_context",
    "shutdown",
    "span_record",
    "span_to_record",
    "summarize_spans",
    "tool_call",
    "trace_agent",
    "trace_id_range",
    "trace_llm",
    "trace_retriever",
    "trace_tool",
    "watch",
    "watch_known_providers",
    "wrap_for_executor",
]


if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """Load a public name's module on first use (PEP 562) and keep the name in the package."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The package's names, the lazy ones included."""
    return sorted(set(globals()) | set(__all__))
