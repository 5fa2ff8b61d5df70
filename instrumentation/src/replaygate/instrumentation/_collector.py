"""``SpanCollector``: finished spans kept in memory per trace, for the replay engine."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._normalize import span_to_record
from replaygate.instrumentation._records import SpanRecord
from replaygate.instrumentation._spancopy import derived_attributes

__all__ = ["SpanCollector"]


class SpanCollector(SpanProcessor):
    """A thread-safe span processor keeping finished spans as ``SpanRecord`` per trace id.

    Add it to an (isolated) SDK TracerProvider, run the agent, then ``pop(trace_id)`` its spans. At most
    ``max_traces`` traces are kept; the oldest are forgotten first (so nothing grows without bound).
    """

    def __init__(self, max_traces: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, list[SpanRecord]] = OrderedDict()
        self._max = max(1, max_traces)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        try:
            record = span_to_record(span)
            derived = derived_attributes(record.attributes)
            if derived:
                record = dataclasses.replace(record, attributes={**record.attributes, **derived})
        except Exception as exc:  # noqa: BLE001 - never reach the agent
            fault("SpanCollector", exc)
            return
        with self._lock:
            spans = self._traces.get(record.trace_id)
            if spans is None:
                spans = self._traces[record.trace_id] = []
                while len(self._traces) > self._max:
                    self._traces.popitem(last=False)
            spans.append(record)

    def pop(self, trace_id: str | int) -> list[SpanRecord]:
        """Remove and return the spans of one trace (hex id or int), ordered by start time."""
        key = format(trace_id, "032x") if isinstance(trace_id, int) else trace_id.lower()
        with self._lock:
            spans = self._traces.pop(key, [])
        return sorted(spans, key=lambda s: (s.start_ns, s.end_ns))

    def trace_ids(self) -> list[str]:
        """The trace ids currently held, oldest first."""
        with self._lock:
            return list(self._traces)

    def clear(self) -> None:
        """Forget every collected span."""
        with self._lock:
            self._traces.clear()

    def shutdown(self) -> None:
        self.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
