"""``configure``, ``shutdown`` and ``health``: wiring replaygate's processors into a TracerProvider."""

from __future__ import annotations

import atexit
import base64
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from replaygate.instrumentation._destinations import absolute_store, announce, describe_destinations
from replaygate.instrumentation._errors import InstrumentationError
from replaygate.instrumentation._export import ExportSink, Pipeline, Slot
from replaygate.instrumentation._health import HEALTH, fault
from replaygate.instrumentation._redaction import Redactor
from replaygate.instrumentation._settings import (
    ConfigureOptions,
    Settings,
    check_option_names,
    resolve_settings,
)
from replaygate.instrumentation._state import SCOPE, STATE, Instrumentation
from replaygate.instrumentation.semconv import SCHEMA_URL
from replaygate.instrumentation.version import __version__

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Instrumentation", "configure", "health", "shutdown"]

_atexit_registered = False


def _provider(given: Any, settings: Settings) -> TracerProvider:
    if given is not None:
        if not hasattr(given, "add_span_processor") or not hasattr(given, "get_tracer"):
            raise InstrumentationError(
                f"tracer_provider={type(given).__name__} is not an OpenTelemetry SDK TracerProvider "
                "(it has no add_span_processor); pass opentelemetry.sdk.trace.TracerProvider()"
            )
        return given  # type: ignore[no-any-return]
    current = trace.get_tracer_provider()
    if hasattr(current, "add_span_processor"):
        return current  # type: ignore[return-value]
    if isinstance(current, trace.ProxyTracerProvider):
        created = TracerProvider(resource=Resource.create(settings.resource_attributes))
        trace.set_tracer_provider(created)
        return created
    raise InstrumentationError(
        f"the global tracer provider is a {type(current).__name__}, which accepts no span processors; "
        "install the OpenTelemetry SDK provider first or pass configure(tracer_provider=...)"
    )


def _resource_override(provider: TracerProvider, settings: Settings) -> Resource | None:
    """The provider's resource with what ``configure`` was given and it lacks (its own values win)."""
    resource = getattr(provider, "resource", None)
    if not isinstance(resource, Resource):
        return None
    wanted = settings.resource_attributes
    current = str(resource.attributes.get(SERVICE_NAME, ""))
    if current and not current.startswith("unknown_service"):
        wanted.pop(SERVICE_NAME, None)
    missing = {
        k: v
        for k, v in wanted.items()
        if resource.attributes.get(k) != v and (k == SERVICE_NAME or k not in resource.attributes)
    }
    return resource.merge(Resource(missing)) if missing else None


def _otlp_exporter(settings: Settings) -> SpanExporter:
    endpoint = settings.otlp_endpoint
    assert endpoint is not None
    try:
        if settings.otlp_protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcExporter,
            )

            insecure = True if endpoint.startswith("http://") else None
            target = re.sub(r"^https?://", "", endpoint)
            return GrpcExporter(
                endpoint=target,
                insecure=insecure,
                headers=dict(settings.otlp_headers) or None,
                timeout=settings.otlp_timeout_s,
            )
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter(
            endpoint=endpoint, headers=dict(settings.otlp_headers), timeout=settings.otlp_timeout_s
        )
    except ImportError as exc:
        raise InstrumentationError(
            f"OTLP export over {settings.otlp_protocol} needs the exporter package ({exc.name}); "
            "install replaygate-instrumentation[otlp]"
        ) from exc


def _langfuse_exporter(settings: Settings) -> SpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
    except ImportError as exc:
        raise InstrumentationError(
            "Langfuse export uses the OTLP/HTTP exporter; install replaygate-instrumentation[otlp]"
        ) from exc
    token = base64.b64encode(
        f"{settings.langfuse_public_key}:{settings.langfuse_secret_key}".encode()
    ).decode()
    return HttpExporter(
        endpoint=settings.langfuse_endpoint,
        headers={"Authorization": f"Basic {token}"},
        timeout=settings.otlp_timeout_s,
    )


def _sinks(
    settings: Settings, redactor: Redactor, extra: Sequence[SpanExporter], resource: Resource | None
) -> list[ExportSink]:
    def sink(name: str, exporter: SpanExporter, capture: bool) -> ExportSink:
        return ExportSink(
            name,
            exporter,
            redactor=redactor,
            capture_content=capture,
            resource=resource,
            max_queue_size=settings.max_queue_size,
            max_batch_size=settings.max_batch_size,
            schedule_delay_s=settings.schedule_delay_s,
        )

    sinks: list[ExportSink] = []
    try:
        if settings.store is not None:
            from replaygate.instrumentation._store import StoreSpanExporter

            try:
                store_exporter = StoreSpanExporter(settings.store)
            except Exception as exc:  # noqa: BLE001 - an unwritable store must not stop the agent
                fault(f"opening the trace store {settings.store}", exc)
            else:
                sinks.append(sink("store", store_exporter, settings.capture_store))
        if settings.otlp_endpoint:
            sinks.append(sink("otlp", _otlp_exporter(settings), settings.capture_otlp))
        if settings.langfuse_enabled:
            sinks.append(sink("langfuse", _langfuse_exporter(settings), settings.capture_langfuse))
        for i, exporter in enumerate(extra):
            sinks.append(sink(f"{type(exporter).__name__}#{i}", exporter, settings.capture_store))
    except BaseException:
        for built in sinks:
            built.shutdown(0.5)
        raise
    return sinks


def configure(
    *,
    tracer_provider: TracerProvider | None = None,
    exporters: Sequence[SpanExporter] = (),
    default: bool = True,
    **options: Unpack[ConfigureOptions],
) -> Instrumentation:
    """Set up where spans go; may be called again (the last call wins).

    Each argument left as None falls back to its environment variable, then to its default (see the
    package docstring). The previous call's processors are detached and shut down.

    Returns the :class:`Instrumentation` handle (its provider, pipeline, settings, ``health()``,
    ``shutdown()``, ``activate()``). With ``default=False`` the handle does not replace the default one:
    its exporters run beside it, and decorators use it only inside ``with handle.activate():``.

    The options (every keyword but ``tracer_provider``, ``exporters`` and ``default``) are declared once,
    in :class:`ConfigureOptions`, which ``resolve_settings`` takes too.

    Args:
        service_name: ``service.name`` of a provider replaygate creates (env ``OTEL_SERVICE_NAME``).
        service_version: ``service.version``, which Langfuse shows as the release version
            (env ``REPLAYGATE_SERVICE_VERSION``).
        environment: ``deployment.environment.name`` (env ``REPLAYGATE_ENVIRONMENT``).
        project: Phoenix's project (``openinference.project.name``; env ``PHOENIX_PROJECT_NAME``).
        store: path or ``sqlite:///`` URL of the embedded store; None or False disables it
            (env ``REPLAYGATE_STORE``, default ``.replaygate/replaygate.db``).
        otlp_endpoint: OTLP collector URL (env ``OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT``); False disables.
        otlp_protocol: ``http/protobuf`` (default) or ``grpc`` (env ``OTEL_EXPORTER_OTLP_PROTOCOL``).
        otlp_headers: headers as a mapping or ``k=v,k2=v2`` (env ``OTEL_EXPORTER_OTLP_HEADERS``).
        otlp_timeout_s: per-export timeout of the OTLP and Langfuse exporters
            (env ``OTEL_EXPORTER_OTLP_TIMEOUT``).
        langfuse: False disables Langfuse export even when the keys are set.
        langfuse_public_key: env ``LANGFUSE_PUBLIC_KEY``.
        langfuse_secret_key: env ``LANGFUSE_SECRET_KEY``.
        langfuse_host: env ``LANGFUSE_HOST`` (default ``https://cloud.langfuse.com``).
        capture_content: keep text in the store and extra exporters (default True); False hashes it.
        otlp_capture_content: keep text in OTLP export (default False: text is hashed).
        langfuse_capture_content: keep text in Langfuse export (default False: text is hashed).
        redact: extra regular expressions whose matches are replaced before export.
        redact_defaults: apply the built-in patterns (keys, tokens, e-mail addresses); default True.
        sample_ratio: share of traces exported, 0..1, by trace id (env ``REPLAYGATE_SAMPLE_RATIO``).
        tracer_provider: an isolated SDK provider to use instead of the global one.
        exporters: extra ``SpanExporter`` objects, each behind its own bounded queue.
        max_queue_size: spans buffered per exporter before dropping (env ``REPLAYGATE_QUEUE_SIZE``).
        max_batch_size: spans per export call (env ``REPLAYGATE_BATCH_SIZE``).
        schedule_delay_s: seconds between exports (env ``REPLAYGATE_SCHEDULE_DELAY``).
        shutdown_timeout_s: flush deadline at exit (env ``REPLAYGATE_SHUTDOWN_TIMEOUT``, default 5).
        default: make this the default handle (module-level ``health``/``shutdown``, decorators anywhere).

    Raises:
        InstrumentationError: an option or environment variable is invalid, or an exporter package is missing.
    """
    global _atexit_registered
    check_option_names("configure", options)
    settings = resolve_settings(env=os.environ, **options)
    if settings.store is not None:  # resolved now: a later chdir does not move the store
        settings = replace(settings, store=absolute_store(settings.store))
    redactor = Redactor(settings.redact, defaults=settings.redact_defaults)
    with STATE.lock:
        provider = _provider(tracer_provider, settings)
        sinks = _sinks(settings, redactor, exporters, _resource_override(provider, settings))
        # On the shared global provider, export only traces replaygate took part in.
        pipeline = Pipeline(
            sinks, sample_ratio=settings.sample_ratio, scope=SCOPE if tracer_provider is None else None
        )
        slot = STATE.slots.get(provider)
        if slot is None:
            slot = Slot()
            provider.add_span_processor(slot)
            STATE.slots[provider] = slot
        handle = Instrumentation(
            provider=provider,
            pipeline=pipeline,
            tracer=provider.get_tracer(SCOPE, __version__, schema_url=SCHEMA_URL),
            settings=settings,
        )
        if not default:
            slot.add(pipeline)  # a handle of its own, used where it is activated
            return handle
        old = STATE.pipeline
        if old is not None:
            for other_slot in STATE.slots.values():
                other_slot.remove(old)
        slot.pipelines = (pipeline, *(p for p in slot.pipelines if p is not pipeline))
        STATE.default = handle
        STATE.pipeline = pipeline
        STATE.provider = provider
        STATE.tracer = handle.tracer
        STATE.max_chars = settings.max_chars
        STATE.shutdown_timeout_s = settings.shutdown_timeout_s
        STATE.configured = True
        STATE.destinations = describe_destinations(
            [s.name for s in sinks],
            store=settings.store,
            otlp=settings.otlp_endpoint,
            langfuse=settings.langfuse_endpoint if settings.langfuse_enabled else None,
        )
        STATE.store_path = settings.store if any(s.name == "store" for s in sinks) else None
        destinations = dict(STATE.destinations)
        if not _atexit_registered:
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
    if old is not None:
        old.shutdown(min(settings.shutdown_timeout_s, 5.0))
    announce(destinations)
    return handle


def shutdown(timeout: float = 5.0) -> bool:
    """Flush every exporter within ``timeout`` seconds and stop them; spans not sent count as dropped.

    Decorated agents keep working afterwards; their spans go nowhere until ``configure`` is called again.

    Returns:
        True when everything queued was exported in time.
    """
    with STATE.lock:
        pipeline, STATE.pipeline = STATE.pipeline, None
        if pipeline is not None:
            for slot in STATE.slots.values():
                slot.remove(pipeline)
        if STATE.default is not None:
            STATE.default.pipeline = None
    if pipeline is None:
        return True
    return pipeline.shutdown(timeout)


def _shutdown_at_exit() -> None:
    shutdown(STATE.shutdown_timeout_s)


def health() -> dict[str, Any]:
    """Counters since the process started, as a dict.

    Keys: ``exported_spans``, ``dropped_spans`` (queue full, or left at shutdown), ``failed_spans`` and
    ``export_errors`` (export calls that failed), ``instrumentation_faults`` (bugs or broken exporters
    caught before they reached the agent), ``redactions``, ``hashed_spans``, ``queued_spans`` (waiting
    now), ``exporters`` (the same counters per exporter), ``configured``, ``active_exporters``,
    ``destinations`` (exporter name -> where it sends spans) and ``store_path`` (absolute, or None).
    """
    snapshot = HEALTH.snapshot()
    pipeline = STATE.pipeline
    snapshot["queued_spans"] = sum(s.pending() for s in pipeline.sinks) if pipeline else 0
    snapshot["configured"] = pipeline is not None
    snapshot["active_exporters"] = [s.name for s in pipeline.sinks] if pipeline else []
    snapshot["destinations"] = dict(STATE.destinations) if pipeline else {}
    snapshot["store_path"] = STATE.store_path if pipeline else None
    return snapshot
