"""Every drop of an export queue reaches a person: health(), one warning a minute, and the receiver."""

import logging
import threading
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from replaygate.instrumentation import _export
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._export import ExportSink
from replaygate.instrumentation._redaction import Redactor


class _Gate(SpanExporter):
    """Holds every export until released, so the queue in front of it fills deterministically."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.batches: list[list[ReadableSpan]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        self.batches.append(list(spans))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def _spans(n: int) -> list[ReadableSpan]:
    tracer = TracerProvider().get_tracer("t")
    out = []
    for i in range(n):
        with tracer.start_as_current_span(f"s{i}") as span:
            span.set_attribute("i", i)
        out.append(span)
    return out  # type: ignore[return-value]


def _full_sink(name: str, gate: _Gate, spans: list[ReadableSpan]) -> ExportSink:
    sink = ExportSink(
        name, gate, redactor=Redactor(), capture_content=True, max_queue_size=2, max_batch_size=1
    )
    sink.offer(spans[0])
    assert gate.entered.wait(5)  # the worker holds spans[0]: the queue (2) fills with the next two
    for span in spans[1:]:
        sink.offer(span)
    return sink


def test_a_full_queue_warns_once_a_minute_with_the_running_total(caplog: pytest.LogCaptureFixture) -> None:
    gate = _Gate()
    spans = _spans(8)
    with caplog.at_level(logging.WARNING, logger="replaygate"):
        sink = _full_sink("otlp", gate, spans)
    warnings = [r for r in caplog.records if "export queue is full" in r.getMessage()]
    assert sink.dropped == 5  # 8 offered: one exporting, two queued
    assert len(warnings) == 1 and "1 spans dropped so far" in warnings[0].getMessage()
    gate.release.set()
    sink.shutdown(5)


def test_the_warning_repeats_after_its_interval(caplog: pytest.LogCaptureFixture, monkeypatch) -> None:
    monkeypatch.setattr(_export, "WARN_EVERY_S", 0.0)
    gate = _Gate()
    with caplog.at_level(logging.WARNING, logger="replaygate"):
        sink = _full_sink("otlp", gate, _spans(6))
    warnings = [r.getMessage() for r in caplog.records if "export queue is full" in r.getMessage()]
    assert [w.split("; ")[1].split(" spans")[0] for w in warnings] == ["1", "2", "3"]
    gate.release.set()
    sink.shutdown(5)


def test_the_otlp_sink_carries_its_drop_total_on_its_next_batch() -> None:
    gate = _Gate()
    spans = _spans(6)
    sink = _full_sink("otlp", gate, spans[:5])  # 2 dropped
    gate.release.set()
    assert sink.flush(5)
    sink.offer(spans[5])
    assert sink.flush(5)
    tagged = [s for batch in gate.batches for s in batch if sc.RG_EXPORT_DROPPED in (s.attributes or {})]
    # the batch after the one in flight when the queue overflowed carries the total, and only that one
    assert [s.name for s in tagged] == ["s1"]
    attrs = tagged[0].attributes or {}
    assert attrs[sc.RG_EXPORT_DROPPED] == 2 and str(attrs[sc.RG_EXPORT_SOURCE]).count(":") >= 2
    assert sc.RG_EXPORT_DROPPED not in (spans[1].attributes or {})  # the agent's span is not modified
    sink.shutdown(5)


def test_other_destinations_are_not_tagged() -> None:
    gate = _Gate()
    sink = _full_sink("langfuse", gate, _spans(5))
    gate.release.set()
    assert sink.flush(5)
    assert sink.dropped == 2
    assert not any(sc.RG_EXPORT_DROPPED in (s.attributes or {}) for b in gate.batches for s in b)
    sink.shutdown(5)
