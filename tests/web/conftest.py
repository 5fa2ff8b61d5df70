"""The release page on a real store: real spans (one with a hostile answer), fake signed decisions, users."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation import span_to_record
from werkzeug.security import generate_password_hash
from werkzeug.serving import make_server

from replaygate.canary import CanaryController, CanarySettings, CanaryStore, EvidenceSettings
from replaygate.gate import DecisionStore, GateReport
from replaygate.store import TraceStore
from replaygate.web import User, WebConfig, create_app
from tests.conftest import FakeDecisions, make_decision
from tests.web.gate_fixture import HOSTILE, write_gate_reports

XSS = "<script>alert(1)</script>"
PASSWORD = "correct horse battery"
API_TOKEN = "test-token-123"
READ_TOKEN = "read-token-456"


def _decisions() -> FakeDecisions:
    return FakeDecisions(
        *(
            make_decision(d, outcome, report_id=f"rep-{d}", reason="gate passed <b>bold</b>")
            for d, outcome in (("dec-pass", "pass"), ("dec-block", "block"))
        )
    )


def _write(url: str | Path, memory: InMemorySpanExporter) -> None:
    with TraceStore(url) as store:
        store.write_spans([span_to_record(s) for s in memory.get_finished_spans()])


def write_traces(path: str | Path) -> str:
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
    _write(path, memory)
    return hostile


def write_variant_traces(path: str | Path, variant: str, n: int, *, escalate_every: int = 0) -> None:
    """Write ``n`` answered requests served by ``variant``, each taking exactly 0.2 s (real spans)."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    start = time.time_ns()
    for i in range(n):
        t0 = start + i * 1_000_000
        span = tracer.start_span("invoke_agent support", start_time=t0)
        span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
        span.set_attribute(sc.OI_INPUT_VALUE, "Where is my order?")
        span.set_attribute(sc.OI_OUTPUT_VALUE, "It ships tomorrow.")
        span.set_attribute(sc.RG_VARIANT, variant)
        if escalate_every and i % escalate_every == 0:
            span.set_attribute(sc.RG_ESCALATION, True)
        span.end(end_time=t0 + 200_000_000)
    provider.shutdown()
    _write(path, memory)


@dataclass
class Env:
    app: Flask
    controller: CanaryController
    hostile_trace: str
    path: str  # the store URL (SQLite file or PostgreSQL database)
    tmp: Path


CHEAP = "pbkdf2:sha256:1000"  # fast hashes: the tests log in many times


def _users() -> dict[str, User]:
    def user(name: str, role: str, one_time: bool = False) -> User:
        return User(name, generate_password_hash(PASSWORD, method=CHEAP), role, one_time)  # type: ignore[arg-type]

    return {
        "rita": user("rita", "releaser"),
        "vic": user("vic", "viewer"),
        "rev": user("rev", "reviewer"),
        "res": user("res", "responder"),
        "otto": user("otto", "releaser", one_time=True),
    }


def _make_env(tmp_path: Path, decisions: Any, url: str, widen_alpha: float = 0.10) -> tuple[Env, list[Any]]:
    path = url
    hostile = write_traces(path)
    store = CanaryStore(path)
    traces = TraceStore(store.store)
    ctl = CanaryController(
        store,
        traces,
        decisions(path) if callable(decisions) else decisions,
        settings=CanarySettings(
            evidence=EvidenceSettings(min_count=20, min_breach_count=20, widen_alpha=widen_alpha),
            groundedness_sample=0,
        ),
    )
    config = WebConfig(
        users=_users(),
        controller=ctl,
        secure_cookies=False,
        api_token=API_TOKEN,
        read_token=READ_TOKEN,
        secret_key="test-secret-key",
        reports_dir=str(tmp_path / "reports"),
        golden=str(tmp_path / "golden"),
        auto_check=False,
    )
    app = create_app(config)
    return Env(app, ctl, hostile, path, tmp_path), [traces, store, ctl.decisions]


def _close(made: Env, parts: list[Any]) -> None:
    # the page's own store is opened on first use
    for part in [*parts, made.app.extensions["replaygate.state"].web_store]:
        close = getattr(part, "close", None)
        if callable(close):
            close()


@pytest.fixture
def env(tmp_path: Path, store_url: str) -> Iterator[Env]:
    made, parts = _make_env(tmp_path, _decisions(), store_url)
    yield made
    _close(made, parts)


@dataclass
class Release:
    """A store with real gate reports: one blocked (rule 1), one needing sign-off (a newly failing read)."""

    env: Env
    blocked: GateReport
    signoff: GateReport
    reports_dir: Path


@pytest.fixture
def release(tmp_path: Path, store_url: str) -> Iterator[Release]:
    made, parts = _make_env(tmp_path, DecisionStore, store_url, widen_alpha=0.45)  # widen on small equal arms
    blocked, signoff = write_gate_reports(tmp_path)
    yield Release(made, blocked, signoff, tmp_path / "reports")
    _close(made, parts)


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


@contextmanager
def _serve(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def served(env: Env) -> Iterator[Served]:
    with _serve(env.app) as url:
        yield Served(url, env)


@pytest.fixture
def served_release(release: Release) -> Iterator[tuple[str, Release]]:
    with _serve(release.env.app) as url:
        yield url, release


@pytest.fixture
def helpers() -> Any:
    class H:
        csrf = staticmethod(csrf_from)
        login = staticmethod(login)
        xss = XSS
        hostile = HOSTILE
        write = staticmethod(write_variant_traces)
        password = PASSWORD
        token = API_TOKEN

    return H
