"""OTLP/HTTP export to a real receiver on 127.0.0.1, and the Langfuse OTel path with basic auth."""

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import replaygate.instrumentation as ri
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation import semconv as sc


class Receiver:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for _, _, body in self.requests:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        attrs = {a.key: _value(a.value) for a in span.attributes}
                        attrs["__resource__"] = resource
                        attrs["__trace_id__"] = span.trace_id.hex()
                        attrs["__parent__"] = span.parent_span_id.hex()
                        attrs["__span_id__"] = span.span_id.hex()
                        out[span.name] = attrs
        return out


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


@ri.trace_agent(name="support-agent", version="2.0")
def respond(message: str, session_id: str, user_id: str) -> str:
    with ri.retrieval(message, data_source="policies") as r:
        r.record([{"id": "refund-policy", "score": 0.9, "text": "Refunds within 30 days."}])
    with ri.tool_call("lookup_order", {"order_id": "ORD-1"}, call_id="c1") as t:
        t.set_result({"status": "delivered"})
    with ri.llm_call("gpt-4o-mini", provider="openai") as llm:
        llm.set_usage(100, 20)
        llm.set_output("Refunds within 30 days.")
    ri.mark_escalation("policy exception")
    return "Refunds within 30 days. Mail me at bob@example.org"


def test_otlp_http_export(receiver: Receiver) -> None:
    ri.configure(
        tracer_provider=TracerProvider(),
        service_name="support-svc",
        store=None,
        otlp_endpoint=receiver.url,
        otlp_headers="x-team=ml,api-key=s%3Dcret",
        otlp_capture_content=True,
        schedule_delay_s=0.05,
    )
    respond("How do refunds work?", session_id="s-1", user_id="u-1")
    assert ri.shutdown(timeout=10)
    paths = {p for p, _, _ in receiver.requests}
    assert paths == {"/v1/traces"}
    headers = receiver.requests[0][1]
    assert headers["x-team"] == "ml" and headers["api-key"] == "s=cret"
    spans = receiver.spans()
    agent = spans["invoke_agent support-agent"]
    assert agent["__resource__"]["service.name"] == "support-svc"
    assert agent[sc.OPERATION_NAME] == "invoke_agent" and agent[sc.OI_SPAN_KIND] == "AGENT"
    assert agent[sc.AGENT_NAME] == "support-agent" and agent[sc.AGENT_VERSION] == "2.0"
    assert agent[sc.CONVERSATION_ID] == agent[sc.OI_SESSION_ID] == "s-1" and agent[sc.OI_USER_ID] == "u-1"
    assert agent[sc.OI_INPUT_VALUE] == "How do refunds work?"
    assert json.loads(agent[sc.INPUT_MESSAGES])[0]["role"] == "user"
    assert agent[sc.OI_OUTPUT_VALUE] == "Refunds within 30 days. Mail me at [REDACTED:email]"
    assert json.loads(agent[sc.OUTPUT_MESSAGES])[0]["role"] == "assistant"
    assert agent[sc.RG_FAILURE_REASONS] == ("escalation",)
    assert agent[sc.RG_ESCALATION] is True
    ret = spans["retrieval policies"]
    assert ret[sc.OPERATION_NAME] == "retrieval" and ret[sc.OI_SPAN_KIND] == "RETRIEVER"
    assert ret[sc.DATA_SOURCE_ID] == "policies"
    assert json.loads(ret[sc.RETRIEVAL_DOCUMENTS])[0]["id"] == "refund-policy"
    assert ret["retrieval.documents.0.document.id"] == "refund-policy"
    assert ret["retrieval.documents.0.document.score"] == 0.9
    assert ret["retrieval.documents.0.document.content"] == "Refunds within 30 days."
    tool = spans["execute_tool lookup_order"]
    assert tool[sc.OPERATION_NAME] == "execute_tool" and tool[sc.OI_SPAN_KIND] == "TOOL"
    assert tool[sc.TOOL_NAME] == "lookup_order" and tool[sc.TOOL_CALL_ID] == "c1"
    assert json.loads(tool[sc.TOOL_CALL_ARGUMENTS]) == {"order_id": "ORD-1"}
    assert json.loads(tool[sc.TOOL_CALL_RESULT]) == {"status": "delivered"}
    llm = spans["chat gpt-4o-mini"]
    assert llm[sc.OPERATION_NAME] == "chat" and llm[sc.OI_SPAN_KIND] == "LLM"
    assert llm[sc.REQUEST_MODEL] == "gpt-4o-mini" and llm[sc.PROVIDER_NAME] == "openai"
    assert llm[sc.USAGE_INPUT_TOKENS] == 100 and llm[sc.USAGE_OUTPUT_TOKENS] == 20
    for child in (ret, tool, llm):
        assert child["__trace_id__"] == agent["__trace_id__"] and child["__parent__"] == agent["__span_id__"]
    assert all(b"bob@example.org" not in body for _, _, body in receiver.requests)


def test_otlp_content_is_hashed_by_default(receiver: Receiver) -> None:
    ri.configure(
        tracer_provider=TracerProvider(), store=None, otlp_endpoint=receiver.url, schedule_delay_s=0.05
    )
    respond("How do refunds work?", session_id="s-1", user_id="u-1")
    assert ri.shutdown(timeout=10)
    agent = receiver.spans()["invoke_agent support-agent"]
    assert agent[sc.OI_INPUT_VALUE].startswith("sha256:") and agent[sc.RG_CONTENT_HASHED] is True
    assert all(b"How do refunds work?" not in body for _, _, body in receiver.requests)


def test_langfuse_otel_endpoint_with_basic_auth(receiver: Receiver) -> None:
    ri.configure(
        tracer_provider=TracerProvider(),
        store=None,
        langfuse_public_key="pk-lf-public",
        langfuse_secret_key="sk-lf-secret",
        langfuse_host=receiver.url,
        langfuse_capture_content=True,
        schedule_delay_s=0.05,
    )
    respond("Can I return shoes?", session_id="s-2", user_id="u-2")
    assert ri.shutdown(timeout=10)
    assert {p for p, _, _ in receiver.requests} == {"/api/public/otel/v1/traces"}
    expected = "Basic " + base64.b64encode(b"pk-lf-public:sk-lf-secret").decode()
    assert all(h["authorization"] == expected for _, h, _ in receiver.requests)
    spans = receiver.spans()
    assert spans["invoke_agent support-agent"][sc.OI_INPUT_VALUE] == "Can I return shoes?"
    assert spans["retrieval policies"][sc.OI_SPAN_KIND] == "RETRIEVER"


def test_env_configures_otlp(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url + "/base")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Token%20abc")
    monkeypatch.setenv("REPLAYGATE_STORE", "off")
    ri.configure(tracer_provider=TracerProvider(), schedule_delay_s=0.05)
    respond("q", session_id="s", user_id="u")
    assert ri.shutdown(timeout=10)
    assert {p for p, _, _ in receiver.requests} == {"/base/v1/traces"}
    assert receiver.requests[0][1]["authorization"] == "Token abc"
    assert ri.health()["active_exporters"] == []


def test_grpc_exporter_to_a_dead_port_costs_nothing() -> None:
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    before = ri.health()["exporters"].get(
        "otlp", {"exported_spans": 0, "failed_spans": 0, "dropped_spans": 0}
    )
    ri.configure(
        tracer_provider=TracerProvider(),
        store=None,
        otlp_endpoint=f"http://127.0.0.1:{port}",
        otlp_protocol="grpc",
        schedule_delay_s=0.05,
    )
    assert ri.health()["active_exporters"] == ["otlp"]
    for i in range(50):
        assert respond(f"q{i}", session_id="s", user_id="u").startswith("Refunds")
    started = time.monotonic()
    assert ri.shutdown(timeout=1.0) is False
    assert time.monotonic() - started < 3.0
    otlp = {k: v - before[k] for k, v in ri.health()["exporters"]["otlp"].items() if k in before}
    assert otlp["exported_spans"] == 0 and otlp["failed_spans"] + otlp["dropped_spans"] == 200
