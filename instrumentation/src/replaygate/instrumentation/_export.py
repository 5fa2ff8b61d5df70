"""Bounded, asynchronous export: one span processor fanning out to one worker thread per exporter.

Sampling (``sample_ratio`` < 1) is a tail decision per trace: spans of a trace the ratio does not keep
are held until the trace's local root span ends, and sent only when one of its spans carries a failure
signal (error status, ``replaygate.failure.reasons``, an escalation, ``mark_failure``): every failing
trace reaches the store and OTLP whatever the ratio. Held spans are bounded (the oldest held trace is let
go first). Negative feedback arriving later cannot bring back a trace that was sampled away.

The agent's thread only appends the finished span to each exporter's bounded queue (or counts it as
dropped when the queue is full: ``health()``, a warning at most once a minute with the running total,
and the store's ``trace_drops`` that ``replaygate traces`` shows; an OTLP exporter's drops travel on the
first span of its next batch as ``replaygate.export.dropped_spans`` / ``replaygate.export.source``, which
``replaygate collect`` records in its store the same way). Each worker redacts its batch (and hashes
content when that exporter's capture is off) and exports it, so a dead collector slows nothing but its
own worker. Shutdown flushes with a deadline and then abandons what is left, counting it as dropped (a
count no later batch carries: it stays in ``health()`` and the log).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import StatusCode
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._health import HEALTH, fault, logger
from replaygate.instrumentation._redaction import Redactor
from replaygate.instrumentation._spancopy import transform_row, transform_span, with_attributes
from replaygate.instrumentation._store import StoreSpanExporter
from replaygate.instrumentation._trace_routes import is_captured, route_end, route_start

__all__ = ["MAX_HELD_TRACES", "ExportSink", "Pipeline", "Slot", "failure_signal", "sample_bound"]

_MASK64 = (1 << 64) - 1
#: Traces whose spans are held at once for the tail decision (the oldest is let go beyond it).
MAX_HELD_TRACES = 4096
_MAX_HELD_SPANS = 512
WARN_EVERY_S = 60.0


def _source_name() -> str:
    """This process's name among the agents that report drops: ``host:pid:start_ns``."""
    return f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"


def failure_signal(span: ReadableSpan) -> bool:
    """Whether a finished span marks its trace as a failure (kept by tail sampling)."""
    if span.status is not None and span.status.status_code is StatusCode.ERROR:
        return True
    attributes = span.attributes or {}
    return bool(
        attributes.get(sc.RG_FAILURE_REASONS)
        or attributes.get(sc.RG_ESCALATION)
        or attributes.get(sc.RG_FAILURE_REASON)
    )


def sample_bound(ratio: float) -> int | None:
    """Upper bound on the low 64 bits of a trace id for it to be kept (None keeps everything)."""
    if ratio >= 1.0:
        return None
    return round(max(ratio, 0.0) * (1 << 64))


class ExportSink:
    """One exporter behind its own bounded queue and worker thread."""

    def __init__(
        self,
        name: str,
        exporter: SpanExporter,
        *,
        redactor: Redactor,
        capture_content: bool,
        resource: Resource | None = None,
        max_queue_size: int = 50_000,
        max_batch_size: int = 512,
        schedule_delay_s: float = 1.0,
    ) -> None:
        self.name = name
        self.exporter = exporter
        self.capture_content = capture_content
        self._redactor = redactor
        self._resource = resource
        self._max_queue = max(1, max_queue_size)
        self._max_batch = max(1, min(max_batch_size, self._max_queue))
        self._delay = max(0.001, schedule_delay_s)
        self._queue: deque[ReadableSpan] = deque()
        self._wake = threading.Event()
        self._closed = False
        self._abandon = False
        self._busy = 0
        self._warned_at = float("-inf")
        self._drop_lock = threading.Lock()
        self.dropped = 0  # spans this sink dropped (queue full, closed, abandoned at shutdown)
        self._carried = 0  # of those, how many an OTLP receiver has been told of (see _tag_drops)
        self._source = _source_name()
        self._thread = self._start_worker()
        if hasattr(os, "register_at_fork"):
            # A forked child (gunicorn workers, multiprocessing) gets a fresh queue and worker thread.
            ref = weakref.ref(self)

            def after_fork_in_child() -> None:
                sink = ref()
                if sink is not None:
                    sink._after_fork()

            os.register_at_fork(after_in_child=after_fork_in_child)

    def _start_worker(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=f"replaygate-export-{self.name}", daemon=True)
        thread.start()
        return thread

    def _after_fork(self) -> None:
        self._queue = deque()
        self._drop_lock = threading.Lock()
        self.dropped = 0  # the child's own drops from here on
        self._carried = 0
        self._source = _source_name()
        self._wake = threading.Event()
        self._busy = 0
        if not self._closed:
            self._thread = self._start_worker()

    def _count_dropped(self, n: int) -> int:
        """Count ``n`` dropped spans (health and this sink's own total, which the store reports)."""
        HEALTH.add("dropped_spans", n, exporter=self.name)
        with self._drop_lock:
            self.dropped += n
            return self.dropped

    def _tell_dropped(self) -> None:
        if isinstance(self.exporter, StoreSpanExporter) and self.dropped:
            self.exporter.note_dropped(self.dropped)

    def offer(self, span: ReadableSpan) -> None:
        """Queue a finished span; count it as dropped when the queue is full or closed."""
        if self._closed or len(self._queue) >= self._max_queue:
            dropped = self._count_dropped(1)
            now = time.monotonic()
            if now - self._warned_at >= WARN_EVERY_S:  # at most one warning a minute, with the total
                self._warned_at = now
                logger.warning(
                    "replaygate: the %s export queue is full (%d spans) or closed; %d spans dropped so far "
                    "(health()['dropped_spans']; `replaygate traces` shows the store's). Is the %s "
                    "destination reachable? Raise REPLAYGATE_QUEUE_SIZE for bursts.",
                    self.name,
                    self._max_queue,
                    dropped,
                    self.name,
                )
            return
        self._queue.append(span)
        if len(self._queue) >= self._max_batch:
            self._wake.set()

    def pending(self) -> int:
        """Spans queued or being exported right now."""
        return len(self._queue) + self._busy

    def _run(self) -> None:
        while True:
            self._wake.wait(self._delay)
            self._wake.clear()
            self._drain()
            if self._closed and (not self._queue or self._abandon):
                return

    def _drain(self) -> None:
        while self._queue and not self._abandon:
            batch: list[ReadableSpan] = []
            # Counted as busy before leaving the queue, so flush() never sees them nowhere.
            self._busy = min(len(self._queue), self._max_batch)
            try:
                while self._queue and len(batch) < self._max_batch:
                    batch.append(self._queue.popleft())
                self._export(batch)
            finally:
                self._busy = 0

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        # An exporter that takes records (the embedded store) gets them straight from the redaction
        # pass: each span is read once into its record and its SQL row, with no intermediate span copy.
        store = self.exporter if isinstance(self.exporter, StoreSpanExporter) else None
        export_records = store.export_records if store is not None else None
        ready: list[Any] = []
        rows: list[tuple[Any, ...]] = []
        redactions = 0
        for span in batch:
            try:
                copy: Any
                if export_records is not None:
                    copy, row, n = transform_row(span, self._redactor, capture_content=self.capture_content)
                    rows.append(row)
                else:
                    copy, n = transform_span(
                        span, self._redactor, capture_content=self.capture_content, resource=self._resource
                    )
            except Exception as exc:  # noqa: BLE001 - a span that cannot be redacted is never exported
                fault(f"redaction ({self.name})", exc)
                self._count_dropped(1)
                continue
            redactions += n
            ready.append(copy)
        HEALTH.add("redactions", redactions, exporter=self.name)
        if not self.capture_content:
            HEALTH.add("hashed_spans", len(ready), exporter=self.name)
        self._tell_dropped()
        if not ready:
            return
        carried = self._tag_drops(ready) if export_records is None else None
        try:
            if export_records is not None:
                result = export_records(ready, rows)
            else:
                result = self.exporter.export(ready)
        except Exception as exc:  # noqa: BLE001 - exporters must not kill the worker
            fault(f"exporter {self.name}", exc)
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            HEALTH.add("exported_spans", len(ready), exporter=self.name)
            if carried is not None:
                self._carried = max(self._carried, carried)
        else:
            HEALTH.add("export_errors", 1, exporter=self.name)
            HEALTH.add("failed_spans", len(ready), exporter=self.name)
            if HEALTH.first_time(f"export:{self.name}"):
                logger.warning(
                    "replaygate: exporting %d spans to %s failed; failures are counted in "
                    "health()['export_errors'] and not logged again",
                    len(ready),
                    self.name,
                )

    def _tag_drops(self, ready: list[Any]) -> int | None:
        """Put this sink's running drop total on the batch's first span, when a receiver has not seen it.

        Only the OTLP destination's batches carry it (``replaygate collect`` records it in its store, as
        the embedded store records its own drops); returns the total carried, or None.
        """
        total = self.dropped
        if self.name != "otlp" or total <= self._carried:
            return None
        ready[0] = with_attributes(ready[0], {sc.RG_EXPORT_DROPPED: total, sc.RG_EXPORT_SOURCE: self._source})
        return total

    def flush(self, timeout_s: float) -> bool:
        """Export everything queued so far; False when the deadline passed first."""
        deadline = time.monotonic() + timeout_s
        while self.pending():
            if time.monotonic() >= deadline or not self._thread.is_alive():
                return False
            self._wake.set()
            time.sleep(0.005)
        return True

    def shutdown(self, timeout_s: float) -> bool:
        """Flush until the deadline, then stop the exporter; leftover spans count as dropped."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        self._closed = True
        self._wake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        flushed = not self._thread.is_alive()
        if not flushed:
            self._abandon = True
        left = self._take_all()  # abandoned: counted before the exporter's last report
        if left:
            self._count_dropped(left)
        self._tell_dropped()
        try:
            # Interrupts an exporter stuck in retries (the OTLP exporters honour it).
            self.exporter.shutdown()
        except Exception as exc:  # noqa: BLE001
            fault(f"exporter {self.name} shutdown", exc)
        if not flushed:
            self._thread.join(0.2)
        late = self._take_all()
        if late:
            self._count_dropped(late)
        return flushed and left + late == 0

    def _take_all(self) -> int:
        """Empty the queue, returning how many spans it held (each taken by one thread only)."""
        n = 0
        while True:
            try:
                self._queue.popleft()
            except IndexError:
                return n
            n += 1


class Pipeline(SpanProcessor):
    """The span processor of one ``configure`` call: sampling, then fan-out to the export sinks.

    On a shared (global) provider, ``scope`` is replaygate's instrumentation scope and only spans of
    traces that contain a replaygate span are exported, so other tools' traces never leak into the
    store or the collector; spans of other libraries nested under an agent call are kept.
    """

    def __init__(
        self, sinks: Sequence[ExportSink], *, sample_ratio: float = 1.0, scope: str | None = None
    ) -> None:
        self.sinks = tuple(sinks)
        self._bound = sample_bound(sample_ratio)
        self._stopped = False
        self._scope = scope
        self._active: dict[int, int] = {}  # trace id -> replaygate spans open in it
        self._lock = threading.Lock()
        self._held: dict[int, list[ReadableSpan]] = {}  # sampled-out traces waiting for their end
        self._failed: dict[int, None] = {}  # sampled-out traces that failed: their later spans go out

    def _ours(self, span: ReadableSpan | Span) -> bool:
        scope = span.instrumentation_scope
        return scope is not None and scope.name == self._scope

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._scope is None or self._stopped:
            return
        try:
            if self._ours(span) and not is_captured(span.context.trace_id):
                trace_id = span.context.trace_id
                with self._lock:
                    self._active[trace_id] = self._active.get(trace_id, 0) + 1
        except Exception as exc:  # noqa: BLE001 - never reach the agent
            fault("span processor (start)", exc)

    def _keep(self, span: ReadableSpan) -> bool:
        context = span.context
        if context is None or is_captured(context.trace_id):
            return False  # a captured trace (a replay attempt) is not production traffic
        if self._scope is not None:
            trace_id = context.trace_id
            if self._ours(span):
                with self._lock:
                    left = self._active.get(trace_id, 0) - 1
                    if left > 0:
                        self._active[trace_id] = left
                    else:
                        self._active.pop(trace_id, None)
            elif trace_id not in self._active:
                return False
        return True

    def _tail(self, span: ReadableSpan, trace_id: int) -> list[ReadableSpan]:
        """The spans to send now for a trace the ratio did not keep (the tail decision)."""
        root = span.parent is None or span.parent.is_remote
        with self._lock:
            if trace_id in self._failed:
                if root:
                    self._failed.pop(trace_id, None)
                return [span]
            if failure_signal(span):
                held = self._held.pop(trace_id, [])
                if not root:
                    self._failed[trace_id] = None
                    while len(self._failed) > MAX_HELD_TRACES:
                        self._failed.pop(next(iter(self._failed)))
                return [*held, span]
            if root:
                self._held.pop(trace_id, None)  # ended without a failure: sampled out
                return []
            held = self._held.setdefault(trace_id, [])
            if len(held) < _MAX_HELD_SPANS:
                held.append(span)
            while len(self._held) > MAX_HELD_TRACES:
                self._held.pop(next(iter(self._held)))
            return []

    def on_end(self, span: ReadableSpan) -> None:
        if self._stopped:
            return
        try:
            if not self._keep(span):
                return
            trace_id = span.context.trace_id  # _keep checked the context
            ready = (
                [span]
                if self._bound is None or (trace_id & _MASK64) < self._bound
                else self._tail(span, trace_id)
            )
            for item in ready:
                for sink in self.sinks:
                    sink.offer(item)
        except Exception as exc:  # noqa: BLE001 - never reach the agent
            fault("span processor", exc)

    def shutdown(self, timeout_s: float = 5.0) -> bool:  # type: ignore[override]
        if self._stopped:
            return True
        self._stopped = True
        deadline = time.monotonic() + timeout_s
        ok = True
        # Shut sinks down in parallel so one dead collector does not eat the others' time.
        results: dict[str, bool] = {}
        threads = [
            threading.Thread(
                target=lambda s=sink: results.__setitem__(s.name, s.shutdown(deadline - time.monotonic())),
                daemon=True,
            )
            for sink in self.sinks
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()) + 0.5)
        for sink in self.sinks:
            ok = ok and results.get(sink.name, False)
        return ok

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        ok = True
        for sink in self.sinks:
            ok = sink.flush(max(0.0, deadline - time.monotonic())) and ok
        return ok


class Slot(SpanProcessor):
    """Attached once to a TracerProvider; routes captured traces' spans and forwards to its pipelines.

    With no pipeline it exports nothing (the spans of captured traces are still routed to their capture).
    SDK providers cannot remove a processor, so re-configuring changes what the slot forwards to.
    """

    def __init__(self) -> None:
        self.pipelines: tuple[Pipeline, ...] = ()

    @property
    def pipeline(self) -> Pipeline | None:
        """The first pipeline (the default handle's), or None."""
        return self.pipelines[0] if self.pipelines else None

    @pipeline.setter
    def pipeline(self, value: Pipeline | None) -> None:
        self.pipelines = () if value is None else (value,)

    def add(self, pipeline: Pipeline) -> None:
        """Forward to ``pipeline`` too."""
        self.pipelines = (*self.pipelines, pipeline)

    def remove(self, pipeline: Pipeline) -> None:
        """Stop forwarding to ``pipeline``."""
        self.pipelines = tuple(p for p in self.pipelines if p is not pipeline)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        route_start(span)
        for pipeline in self.pipelines:
            pipeline.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        route_end(span)  # a span of a captured trace (replay) goes to its capture
        for pipeline in self.pipelines:
            pipeline.on_end(span)

    def shutdown(self) -> None:
        pipelines, self.pipelines = self.pipelines, ()
        for pipeline in pipelines:
            pipeline.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(pipeline.force_flush(timeout_millis) for pipeline in self.pipelines)
