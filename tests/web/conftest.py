"""The release page on a real store (SQLite, then PostgreSQL): real spans (one with a hostile answer), fake
signed decisions, users."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import _semconv as sc
from replaygate.instrumentation import span_to_record
from werkzeug.security import generate_password_hash
from werkzeug.serving import make_server

from replaygate.canary import CanaryController, CanarySettings, CanaryStore, EvidenceSettings
from replaygate.gate import SignedDecision
from replaygate.store import TraceStore
from replaygate.web import User, WebConfig, create_app

XSS = "<script>alert(1)</script>"
PASSWORD = "correct horse battery"
API_TOKEN = "test-token-123"


def _decision(decision_id: str, outcome: str) -> SignedDecision:
    return SignedDecision(
        id=decision_id,
        report_id=f"rep-{decision_id}",
        outcome=outcome,  # type: ignore[arg-type]
        signed_by="ana",
        reason="gate passed <b>bold</b>",
        signed_at=datetime(2026, 11, 29, tzinfo=UTC),
        baseline_fingerprint={
            "agent_config_hash": "h-base",
            "declared_versions": {"config_id": "production"},
        },
        candidate_fingerprint={
            "agent_config_hash": "h-cand",
            "declared_versions": {"config_id": "candidate-fixed"},
        },
        candidate_target="examples.support_agent:target",
        candidate_config_id="candidate-fixed",
    )


class Decisions:
    def __init__(self) -> None:
        self.by_id = {d.id: d for d in (_decision("dec-pass", "pass"), _decision("dec-block", "block"))}

    def get(self, decision_id: str) -> SignedDecision | None:
        return self.by_id.get(decision_id)

    def list_decisions(self, outcomes: list[str] | tuple[str, ...] | None = None) -> list[SignedDecision]:
        return [d for d in self.by_id.values() if outcomes is None or d.outcome in outcomes]


def _write(url: str, memory: InMemorySpanExporter) -> None:
    with TraceStore(url) as store:
        store.write_spans([span_to_record(s) for s in memory.get_finished_spans()])


def write_traces(url: str) -> str:
    """Write a few real traces to the store; return the id of the one whose answer is hostile."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    hostile = ""
    for i, (answer, escalate) in enumerate([(XSS, True), ("Fine.", False), ("", False)]):
        with tracer.start_as_current_span("invoke_agent support") as span:
            span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
            span.set_attribute(sc.OI_INPUT_VALUE, f"question {i} <img src=x onerror=alert(2)>")
            span.set_attribute(sc.OI_OUTPUT_VALUE, answer)
            span.set_attribute(sc.RG_VARIANT, "baseline")
            if escalate:
                span.set_attribute(sc.RG_ESCALATION, True)
            if i == 0:
                hostile = format(span.get_span_context().trace_id, "032x")
    provider.shutdown()
    _write(url, memory)
    return hostile


def write_variant_traces(url: str, variant: str, n: int, *, escalate_every: int = 0) -> None:
    """Write ``n`` answered requests served by ``variant`` (real spans, written to the store)."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for i in range(n):
        with tracer.start_as_current_span("invoke_agent support") as span:
            span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
            span.set_attribute(sc.OI_INPUT_VALUE, "Where is my order?")
            span.set_attribute(sc.OI_OUTPUT_VALUE, "It ships tomorrow.")
            span.set_attribute(sc.RG_VARIANT, variant)
            if escalate_every and i % escalate_every == 0:
                span.set_attribute(sc.RG_ESCALATION, True)
    provider.shutdown()
    _write(url, memory)


@dataclass
class Env:
    app: Flask
    controller: CanaryController
    hostile_trace: str
    path: str  # the store URL


@pytest.fixture
def env(store_url: str) -> Iterator[Env]:
    path = store_url
    hostile = write_traces(path)
    store = CanaryStore(path)
    traces = TraceStore(store.store)
    ctl = CanaryController(
        store,
        traces,
        Decisions(),
        settings=CanarySettings(
            evidence=EvidenceSettings(min_count=20, min_breach_count=20), groundedness_sample=0
        ),
    )
    cheap = "pbkdf2:sha256:1000"  # fast hashes: the tests log in many times
    users = {
        "rita": User("rita", generate_password_hash(PASSWORD, method=cheap), "releaser"),
        "vic": User("vic", generate_password_hash(PASSWORD, method=cheap), "viewer"),
    }
    config = WebConfig(
        users=users,
        controller=ctl,
        secure_cookies=False,
        api_token=API_TOKEN,
        secret_key="test-secret-key",
        auto_check=False,
    )
    yield Env(create_app(config), ctl, hostile, path)
    traces.close()
    store.close()


def csrf_from(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF token on the page"
    return match.group(1)


def login(client: FlaskClient, user: str, password: str = PASSWORD) -> Any:
    token = csrf_from(client.get("/login").get_data(as_text=True))
    return client.post("/login", data={"username": user, "password": password, "csrf_token": token})


@dataclass
class Served:
    url: str
    env: Env


@pytest.fixture
def served(env: Env) -> Iterator[Served]:
    server = make_server("127.0.0.1", 0, env.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{server.server_port}", env)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def helpers() -> Any:
    class H:
        csrf = staticmethod(csrf_from)
        login = staticmethod(login)
        xss = XSS
        write = staticmethod(write_variant_traces)
        password = PASSWORD
        token = API_TOKEN

    return H
