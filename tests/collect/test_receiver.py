import gzip
import json
import threading

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from replaygate.instrumentation import StoreError, span_to_record
from replaygate.instrumentation import semconv as sc

from replaygate.store import TraceStore

from .conftest import TOKEN


def _agent_spans(n: int):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("replaygate")
    for i in range(n):
        with tracer.start_as_current_span("invoke_agent support") as span:
            span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
            span.set_attribute(sc.OI_INPUT_VALUE, f"question {i}")
            span.set_attribute(sc.OI_OUTPUT_VALUE, "answer" if i % 2 else "")
            span.set_attribute(sc.RG_VARIANT, "baseline")
            with tracer.start_as_current_span("retrieval") as child:
                child.set_attribute(sc.OPERATION_NAME, "retrieval")
                child.set_attribute(sc.oi_document(0, sc.OI_DOCUMENT_ID), "doc-1")
                child.set_attribute(sc.oi_document(0, sc.OI_DOCUMENT_SCORE), 0.9)
            if i == 0:
                span.set_status(Status(StatusCode.ERROR, "boom"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def test_real_sdk_exporter_protobuf_gives_the_same_records_as_in_process(store_url, serve_receiver) -> None:
    spans = _agent_spans(5)
    with TraceStore(store_url) as store:
        running = serve_receiver(store)
        exporter = OTLPSpanExporter(
            endpoint=running.url + "/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert store.count() == 5
        for span in spans:
            expected = span_to_record(span)
            stored = next(
                s for s in store.get_trace(expected.trace_id).spans if s.span_id == expected.span_id
            )
            assert stored == expected  # same normalisation path as the in-process store
        assert len(store.failures(reasons=["empty_answer"])) == 2  # the third empty one errored
        assert running.receiver.stats.as_dict()["spans"] == 10


def test_json_and_gzip_bodies(store_url, serve_receiver) -> None:
    trace_id, span_id = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "replaygate"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "name": "invoke_agent support",
                                "kind": 1,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                                "attributes": [
                                    {
                                        "key": "gen_ai.operation.name",
                                        "value": {"stringValue": "invoke_agent"},
                                    },
                                    {"key": "input.value", "value": {"stringValue": "hi"}},
                                    {"key": "output.value", "value": {"stringValue": "hello"}},
                                    {"key": "replaygate.escalation", "value": {"boolValue": True}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    with TraceStore(store_url) as store:
        running = serve_receiver(store)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        r = httpx.post(running.url + "/v1/traces", json=body, headers=auth)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        record = store.get_trace(trace_id)
        assert record.summary.output == "hello" and "escalation" in record.summary.failure_reasons
        assert record.end_ns - record.start_ns == 1_000_000_000
        # the same document gzip'd, with another trace id
        body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "a" * 32
        packed = gzip.compress(json.dumps(body).encode())
        r = httpx.post(
            running.url + "/v1/traces",
            content=packed,
            headers={**auth, "Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert r.status_code == 200 and store.count() == 2


def test_auth_bounds_and_bad_bodies(store_url, serve_receiver) -> None:
    with TraceStore(store_url) as store:
        running = serve_receiver(store, max_body_bytes=2048)
        url = running.url + "/v1/traces"
        proto = {"Content-Type": "application/x-protobuf"}
        assert httpx.post(url, content=b"", headers=proto).status_code == 401
        assert (
            httpx.post(url, content=b"", headers={**proto, "Authorization": "Bearer nope"}).status_code == 401
        )
        auth = {**proto, "Authorization": f"Bearer {TOKEN}"}
        assert httpx.post(url, content=b"x" * 4096, headers=auth).status_code == 413
        bomb = gzip.compress(b"\0" * 100_000)
        assert httpx.post(url, content=bomb, headers={**auth, "Content-Encoding": "gzip"}).status_code == 413
        bad = httpx.post(url, content=b"\xff\xff\xff", headers=auth)
        assert bad.status_code == 400 and "protobuf" in bad.json()["error"]
        wrong = httpx.post(url, content=b"{}", headers={**auth, "Content-Type": "text/plain"})
        assert wrong.status_code == 400 and "content type" in wrong.json()["error"]
        assert store.count() == 0


def test_backpressure_429_and_503_with_retry_after(tmp_path, serve_receiver) -> None:
    spans = _agent_spans(1)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = encode_spans(spans).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}
    with TraceStore(tmp_path / "s.db") as store:
        running = serve_receiver(store, max_inflight=1, queue_wait_s=0.2)
        taken = running.receiver._slots.acquire()  # one write in flight: the next request must wait, then 429
        assert taken
        busy = httpx.post(running.url + "/v1/traces", content=body, headers=headers)
        running.receiver._slots.release()
        assert busy.status_code == 429 and int(busy.headers["Retry-After"]) > 0
        assert store.count() == 0
        ok = httpx.post(running.url + "/v1/traces", content=body, headers=headers)
        assert ok.status_code == 200 and store.count() == 1

    class BrokenStore:
        path = "broken"

        def write_spans(self, records):
            raise StoreError("disk full")

    running = serve_receiver(BrokenStore())
    down = httpx.post(running.url + "/v1/traces", content=body, headers=headers)
    assert down.status_code == 503 and int(down.headers["Retry-After"]) > 0
    assert "disk full" in down.json()["error"]


def test_feedback_endpoint(store_url, serve_receiver) -> None:
    spans = _agent_spans(2)
    with TraceStore(store_url) as store:
        store.write_spans([span_to_record(s) for s in spans])
        running = serve_receiver(store)
        trace_id = format(spans[-1].context.trace_id, "032x")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        ok = httpx.post(
            running.url + "/v1/feedback",
            json={"trace_id": trace_id, "score": -1, "comment": "no"},
            headers=auth,
        )
        assert ok.status_code == 200
        assert "negative_feedback" in store.get_trace(trace_id).summary.failure_reasons
        bad = httpx.post(running.url + "/v1/feedback", json={"trace_id": trace_id, "score": 7}, headers=auth)
        assert bad.status_code == 400 and "must be a number" in bad.json()["error"]
        assert (
            httpx.post(running.url + "/v1/feedback", json={"trace_id": trace_id, "score": 1}).status_code
            == 401
        )


def test_concurrent_batches_of_one_trace_give_the_full_row(store_url, serve_receiver) -> None:
    spans = _agent_spans(1)
    records = [span_to_record(s) for s in spans]
    with TraceStore(store_url) as store:
        threads = [threading.Thread(target=store.write_spans, args=([r],)) for r in records]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        record = store.get_trace(records[0].trace_id)
        assert len(record.spans) == 2 and record.summary.chunks and record.summary.chunks[0].id == "doc-1"


@pytest.mark.parametrize("missing", ["", None])
def test_collect_needs_a_token(missing, monkeypatch, tmp_path) -> None:
    from replaygate.collect import CollectError, receiver_from_env

    monkeypatch.delenv("REPLAYGATE_COLLECT_TOKEN", raising=False)
    with pytest.raises(CollectError, match="REPLAYGATE_COLLECT_TOKEN"):
        receiver_from_env(str(tmp_path / "s.db"), missing)


def test_record_feedback_from_any_machine_over_http(tmp_path, serve_receiver, monkeypatch) -> None:
    from replaygate.instrumentation import record_feedback

    spans = _agent_spans(1)
    trace_id = format(spans[0].context.trace_id, "032x")
    with TraceStore(tmp_path / "s.db") as store:
        store.write_spans([span_to_record(s) for s in spans])
        running = serve_receiver(store)
        monkeypatch.setenv("REPLAYGATE_COLLECT_TOKEN", TOKEN)
        record_feedback(trace_id, False, "thumbs down", store=running.url)
        assert store.get_trace(trace_id).feedback[0]["comment"] == "thumbs down"
        monkeypatch.setenv("REPLAYGATE_COLLECT_TOKEN", "wrong")
        with pytest.raises(StoreError, match="refused by .*401.*COLLECT_TOKEN here differs"):
            record_feedback(trace_id, 1, store=running.url)
        monkeypatch.delenv("REPLAYGATE_COLLECT_TOKEN")
        with pytest.raises(StoreError, match="401.*REPLAYGATE_COLLECT_TOKEN is not set in this process"):
            record_feedback(trace_id, 1, store=running.url)
