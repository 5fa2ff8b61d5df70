"""An OTLP agent's queue drops reach the receiver's store, where ``replaygate traces`` shows them."""

import time

import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation import SpanRecord
from replaygate.instrumentation import semconv as sc

from replaygate.collect._drops import MAX_SOURCE_CHARS, take_drop_reports
from replaygate.store import TraceStore

from .conftest import TOKEN


def _record(attributes: dict) -> SpanRecord:
    return SpanRecord("a" * 32, "b" * 16, None, "s", "other", 1, 2, "unset", None, attributes)


def test_drop_reports_are_taken_off_the_spans_and_checked() -> None:
    records = [
        _record({"x": 1}),
        _record({"x": 2, sc.RG_EXPORT_DROPPED: 7, sc.RG_EXPORT_SOURCE: "host:1:2"}),
        _record({sc.RG_EXPORT_DROPPED: 9, sc.RG_EXPORT_SOURCE: "host:1:2"}),
        _record({sc.RG_EXPORT_DROPPED: 3, sc.RG_EXPORT_SOURCE: "other:5:6"}),
        _record({sc.RG_EXPORT_DROPPED: -1, sc.RG_EXPORT_SOURCE: "bad"}),  # ignored: negative
        _record({sc.RG_EXPORT_DROPPED: True, sc.RG_EXPORT_SOURCE: "bad"}),  # ignored: not an int
        _record({sc.RG_EXPORT_DROPPED: "4", sc.RG_EXPORT_SOURCE: "bad"}),  # ignored: text
        _record({sc.RG_EXPORT_DROPPED: 1, sc.RG_EXPORT_SOURCE: "x" * 5000}),  # bounded name
    ]
    spans, totals = take_drop_reports(records)
    assert totals == {"host:1:2": 9, "other:5:6": 3, "x" * MAX_SOURCE_CHARS: 1}
    assert len(spans) == len(records) and spans[0] is records[0]
    assert all(
        sc.RG_EXPORT_DROPPED not in s.attributes and sc.RG_EXPORT_SOURCE not in s.attributes for s in spans
    )
    assert spans[1].attributes == {"x": 2}


def test_an_otlp_agent_s_drops_are_counted_in_the_collector_s_store(store_url, serve_receiver) -> None:
    with TraceStore(store_url) as store:
        running = serve_receiver(store)
        provider = TracerProvider()
        ri.configure(
            tracer_provider=provider,
            store=None,
            langfuse=False,
            otlp_endpoint=running.url + "/v1/traces",
            otlp_headers={"Authorization": f"Bearer {TOKEN}"},
            max_queue_size=8,
            schedule_delay_s=0.05,
        )
        before = ri.health()["exporters"].get("otlp", {}).get("dropped_spans", 0)  # health() is per process
        try:
            agent = ri.trace_agent(name="burst")(lambda i: f"answer {i}")
            for i in range(300):  # far faster than one HTTP export per batch of 8: the queue overflows
                agent(i)
            assert provider.force_flush(20_000)
            dropped = ri.health()["exporters"]["otlp"]["dropped_spans"] - before
            assert dropped > 0
            agent(-1)  # the next batch carries the running total
            assert provider.force_flush(20_000)
            deadline = time.monotonic() + 10
            while store.drops().total < dropped and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (
                store.drops().total == dropped == ri.health()["exporters"]["otlp"]["dropped_spans"] - before
            )
            stored = store.list_traces(limit=1000)
            assert len(stored) == 301 - dropped  # one span per call: every span not dropped is stored
            for trace in stored[:20]:
                for span in trace.spans:
                    assert sc.RG_EXPORT_DROPPED not in span.attributes
        finally:
            ri.shutdown(timeout=5)
            provider.shutdown()


def test_the_drop_warning_advises_only_what_applies(store_url) -> None:
    from tests.conftest import invoke_cli

    with TraceStore(store_url) as store:
        store.record_drops("host-a:12:1", 40)
        store.record_drops("host-b:7:1", 2)
    result = invoke_cli("traces", "--store", store_url)
    assert result.exit_code == 0, result.output
    warning = " ".join(result.output.split())  # the console wraps long lines
    assert "agents dropped 42 spans before they reached this store" in warning and "2 processes" in warning
    assert "raise REPLAYGATE_QUEUE_SIZE in the agents" in warning
    assert "export through" not in warning  # never tell collect's agents to use collect
    postgres = store_url.startswith("postgresql")
    assert ("collector's capacity (`replaygate collect --workers`)" in warning) is postgres
