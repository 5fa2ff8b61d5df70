"""The shared case for the instrumentor tests: a real ``openai`` client agent, in production and in replay.

The agent calls a local OpenAI-compatible server (``examples.openai_agents.local_server``) twice: the model
asks for ``lookup_order``, the agent runs it, the model answers. Its LLM spans come from the instrumentor
under test (OpenInference, OpenLLMetry, the contrib openai-v2); ``@trace_agent`` wraps the call. The same
model, provider, token counts, cost and tool calls must be read from the store, from ``replaygate trace``
and from ``replaygate run``; with capture off, nothing the user, the model or the tool said leaves over
OTLP in clear text.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import replaygate.instrumentation as ri
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from replaygate.instrumentation import TraceStore, trace_agent, trace_tool
from replaygate.instrumentation._state import STATE
from replaygate.instrumentation._trace_capture import global_provider
from replaygate.replay import Scenario, call_cost, load_run, save_scenario

from examples.openai_agents.local_server import MODEL, LocalOpenAI
from tests.conftest import run_main

QUESTION = "Where is my order ORD-4242?"
TOOL_RESULT = "parcel handed to courier Zebediah"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]
SETTINGS: dict[str, Any] = {"base_url": "", "traced_tools": False}


def _lookup_order(order_id: str) -> str:
    return f"{order_id}: {TOOL_RESULT}"


@trace_tool(name="lookup_order")
def _traced_lookup_order(order_id: str) -> str:
    return _lookup_order(order_id)


@trace_agent(name="openai-sdk-agent", version="1.0")
def agent(message: str) -> str:
    """The agent as a team writes it with the openai SDK (tools run as plain functions, or traced)."""
    client = openai.OpenAI(base_url=SETTINGS["base_url"], api_key="sk-test-not-a-real-key", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": message}]
    for _ in range(4):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        choice = reply.choices[0].message
        if not choice.tool_calls:
            return choice.content or ""
        messages.append(choice.model_dump(exclude_none=True))
        for call in choice.tool_calls:
            args = json.loads(call.function.arguments)  # type: ignore[union-attr]
            run = _traced_lookup_order if SETTINGS["traced_tools"] else _lookup_order
            messages.append({"role": "tool", "tool_call_id": call.id, "content": run(**args)})
    return ""


def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The replay target: one agent call per turn."""
    answer = ""
    for turn in turns:
        answer = agent(turn)
    return {"answer": answer}


@contextmanager
def local_openai() -> Iterator[LocalOpenAI]:
    with LocalOpenAI() as server:
        SETTINGS["base_url"] = server.base_url
        yield server


def cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = run_main(argv)
    return code, out.getvalue()


class OtlpReceiver:
    """A loopback OTLP/HTTP receiver keeping every request body (protobuf)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                receiver.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def span_names_and_values(self) -> tuple[set[str], list[str]]:
        names: set[str] = set()
        values: list[str] = []
        for body in self.bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        names.add(span.name)
                        values.append(span.status.message)
                        values += [str(a.value) for a in span.attributes]
                        values += [str(a.value) for e in span.events for a in e.attributes]
        return names, values

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def check_production_and_replay(tmp_path: Path, *, expect_requested_tools: bool) -> None:
    """Production (store, ``replaygate trace``) and replay (``replaygate run``) record the same calls."""
    provider = global_provider()
    assert provider is not None
    store_path = tmp_path / "traces.db"
    ri.configure(store=str(store_path), otlp_endpoint=False, langfuse=False, schedule_delay_s=0.02)
    try:
        answer = agent(QUESTION)
        assert TOOL_RESULT in answer
        assert STATE.pipeline is not None and STATE.pipeline.force_flush(10_000)
        [record] = TraceStore(store_path).list_traces(limit=5)
        summary = record.summary
        # production: what the store read from the instrumentor's spans
        assert [(c.model, c.provider) for c in summary.llm_calls] == [(MODEL, "openai")] * 2, (
            summary.llm_calls
        )
        assert all(c.input_tokens and c.output_tokens for c in summary.llm_calls)
        assert summary.input_tokens == sum(c.input_tokens or 0 for c in summary.llm_calls)
        names = [t.name for t in summary.tool_calls]
        assert names == ["lookup_order"]
        assert summary.tool_calls[0].arguments == {"order_id": "ORD-4242"}
        production_cost = sum(call_cost(c) or 0.0 for c in summary.llm_calls)
        assert production_cost > 0

        # replaygate trace --json shows the same
        code, out = cli(["trace", summary.trace_id, "--store", str(store_path), "--json"])
        assert code == 0, out
        shown = json.loads(out)["trace"]
        assert [(c["model"], c["provider"]) for c in shown["llm_calls"]] == [(MODEL, "openai")] * 2
        assert (shown["input_tokens"], shown["output_tokens"]) == (
            summary.input_tokens,
            summary.output_tokens,
        )
        assert [t["name"] for t in shown["tool_calls"]] == ["lookup_order"]

        # replay: replaygate run captures the same spans, while production export keeps running
        golden = tmp_path / "golden"
        golden.mkdir()
        save_scenario(
            Scenario.model_validate(
                {
                    "id": "order-status-001",
                    "title": "order status",
                    "owner": "qa",
                    "origin": "production-incident",
                    "added": dt.date(2026, 12, 1),
                    "turns": [QUESTION],
                    "repeats": 2,
                    "checks": [{"type": "expected_tools", "tools": ["lookup_order"]}],
                }
            ),
            golden / "order-status-001.yaml",
        )
        (tmp_path / "config.yaml").write_text("name: prod\n")
        out_path = tmp_path / "run.json"
        code, out = cli(
            [
                "run", "--target", "tests.instrumentation.instrumentor_case:target",
                "--config", str(tmp_path / "config.yaml"), "--golden", str(golden), "--out", str(out_path),
                "--quiet",
            ]
        )  # fmt: skip
        assert code == 0, out
        run = load_run(out_path)
        assert [a.status for a in run.attempts] == ["pass", "pass"], [a.checks for a in run.attempts]
        for attempt in run.attempts:
            m = attempt.measures
            assert (m.input_tokens, m.output_tokens) == (summary.input_tokens, summary.output_tokens)
            assert m.llm_calls == 2
            assert m.cost_usd is not None and abs(m.cost_usd - production_cost) < 1e-12
        # production export was not detached by the run
        agent(QUESTION)
        assert STATE.pipeline is not None and STATE.pipeline.force_flush(10_000)
        assert len(TraceStore(store_path).list_traces(limit=10)) == 2  # the replayed attempts are not in it
    finally:
        ri.shutdown(timeout=2)
    del expect_requested_tools


def check_no_clear_text_over_otlp(
    secret_words: tuple[str, ...] = ("ORD-4242", "Zebediah", "my order"),
) -> None:
    """With capture off, OTLP export carries no content of any dialect in clear text."""
    receiver = OtlpReceiver()
    try:
        ri.configure(
            store=None, otlp_endpoint=receiver.url, schedule_delay_s=0.02, otlp_capture_content=False
        )
        agent(QUESTION)
        ri.shutdown(timeout=5)
        names, values = receiver.span_names_and_values()
        assert "invoke_agent openai-sdk-agent" in names and len(names) >= 2, names
        raw = b"".join(receiver.bodies)
        for word in secret_words:
            assert word.encode() not in raw, (word, [v for v in values if word in v][:3])
        assert b"sha256:" in raw
    finally:
        ri.shutdown(timeout=1)
        receiver.close()


Instrument = Callable[[], Callable[[], None]]
