"""Canary routing: sticky buckets, widening keeps the canary, safe fallbacks, ETag, cross-process rollback."""

from __future__ import annotations

import http.server
import inspect
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import _routing
from replaygate.instrumentation._routing import (
    BUCKETS,
    RoutingClient,
    RoutingState,
    Variant,
    bucket,
    choose_variant,
    variant_for,
)
from replaygate.instrumentation.semconv import RG_CONFIG_ID, RG_VARIANT

from tests.conftest import free_port


def _state(share: float, status: str = "canary", salt: str = "s4lt") -> RoutingState:
    return RoutingState(status, share, salt, "base-1", "cand-2", "r1", 3)


def test_routing_all_pinned() -> None:
    assert sorted(_routing.__all__) == sorted(
        [
            "BUCKETS",
            "RoutingClient",
            "RoutingState",
            "Variant",
            "bucket",
            "choose_variant",
            "configure_routing",
            "routing_client",
            "variant_for",
        ]
    )


def test_same_key_same_variant() -> None:
    state = _state(0.3)
    for i in range(500):
        key = f"user-{i}"
        first = variant_for(state, key)
        assert all(variant_for(state, key) == first for _ in range(3))
    assert 0 <= bucket("s4lt", "user-1") < BUCKETS
    assert bucket("s4lt", "user-1") == bucket("s4lt", "user-1")
    assert bucket("s4lt", "user-1") != bucket("other-salt", "user-1") or bucket("s4lt", "u2") != bucket(
        "x", "u2"
    )


def test_widening_keeps_every_canary_key() -> None:
    keys = [f"session-{i}" for i in range(20_000)]
    at5 = {k for k in keys if variant_for(_state(0.05), k).is_candidate}
    at25 = {k for k in keys if variant_for(_state(0.25), k).is_candidate}
    assert at5 and at5 <= at25
    assert len(at25) > 3 * len(at5)


def _check_boundary(choose: Callable[[RoutingState, str], Variant], key: str) -> None:
    """A share of b/BUCKETS serves buckets 0..b-1: the key in bucket b stays on the baseline."""
    b = bucket("s4lt", key)
    assert not choose(_state(b / BUCKETS), key).is_candidate  # bucket == threshold: baseline
    assert choose(_state((b + 1) / BUCKETS), key).is_candidate  # one bucket more: candidate
    assert choose(_state((b + 1) / BUCKETS), key).bucket == b


@pytest.mark.parametrize("key", ["user-1", "session-42", "k7"])
def test_the_share_boundary_is_exact(key: str) -> None:
    _check_boundary(variant_for, key)


def test_a_share_serves_exactly_that_many_buckets() -> None:
    keys: dict[int, str] = {}
    i = 0
    while len(keys) < 40:  # keys in the first 40 buckets
        b = bucket("s4lt", f"u{i}")
        if b < 40:
            keys.setdefault(b, f"u{i}")
        i += 1
    served = {b for b, key in keys.items() if variant_for(_state(20 / BUCKETS), key).is_candidate}
    assert served == set(range(20))


def test_the_boundary_check_catches_an_off_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutant ``<`` -> ``<=`` in ``variant_for`` (it survived every routing and canary test once)."""
    source = inspect.getsource(_routing)
    assert source.count("b < round(state.share * BUCKETS)") == 1
    mutant = types.ModuleType("replaygate_routing_mutant")
    monkeypatch.setitem(sys.modules, mutant.__name__, mutant)  # dataclasses look their module up
    code = compile(source.replace("b < round(", "b <= round(", 1), "<routing mutant>", "exec")
    exec(code, mutant.__dict__)  # noqa: S102 - our own module's source, mutated
    with pytest.raises(AssertionError):
        _check_boundary(mutant.variant_for, "user-1")


@pytest.mark.parametrize("share", [0.01, 0.05, 0.25, 0.5])
def test_observed_share_within_half_a_point(share: float) -> None:
    state = _state(share)
    n = 100_000
    hits = sum(variant_for(state, f"k{i}").is_candidate for i in range(n))
    assert abs(hits / n - share) < 0.005


def test_variant_carries_config_ids() -> None:
    cand = next(
        variant_for(_state(0.5), f"u{i}")
        for i in range(100)
        if variant_for(_state(0.5), f"u{i}").is_candidate
    )
    assert cand == Variant("candidate", "cand-2", "r1", cand.bucket)
    assert variant_for(_state(0.5, status="rolled_back"), "u1") == Variant("baseline", "base-1", "r1")
    assert variant_for(_state(0.0, status="promoted"), "u1").name == "baseline"  # share 0 never serves
    assert all(variant_for(_state(1.0, status="promoted"), f"u{i}").is_candidate for i in range(200))


def test_state_validation() -> None:
    with pytest.raises(ValueError):
        RoutingState.from_mapping({"status": "canary", "share": 1.5, "salt": "x"})
    with pytest.raises(ValueError):
        RoutingState.from_mapping({"status": "canary", "share": 0.5})
    ok = RoutingState.from_mapping({"status": "canary", "share": 0.5, "salt": "x", "version": 2})
    assert ok.share == 0.5 and ok.version == 2


def test_missing_store_serves_baseline_and_counts(tmp_path: Path) -> None:
    client = RoutingClient(tmp_path / "nope.db", refresh_s=0)
    assert {client.choose(f"u{i}").name for i in range(20)} == {"baseline"}
    assert client.wait_ready()
    stats = client.stats()
    assert stats["failures"] >= 1 and "no replaygate store" in stats["last_error"]


def test_store_without_canary_table_is_idle_not_failure(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "store.db"
    sqlite3.connect(db).close()
    client = RoutingClient(db, refresh_s=0)
    assert client.wait_ready() and client.choose("u1").name == "baseline"
    assert client.stats()["failures"] == 0


def test_closed_port_serves_baseline() -> None:
    client = RoutingClient(f"http://127.0.0.1:{free_port()}/api/canary", refresh_s=100, timeout_s=0.5)
    assert client.choose("u1").name == "baseline"
    assert client.wait_ready() and client.stats()["failures"] == 1


class _StateHandler(http.server.BaseHTTPRequestHandler):
    body: dict[str, object] = {}
    etag = '"r1-1"'
    hits: list[str | None] = []
    delay_s = 0.0

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.headers.get("If-None-Match"))
        time.sleep(self.delay_s)
        if self.headers.get("If-None-Match") == self.etag:
            self.send_response(304)
            self.end_headers()
            return
        data = json.dumps(self.body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("ETag", self.etag)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def state_server() -> Iterator[tuple[str, type[_StateHandler]]]:
    handler = type("H", (_StateHandler,), {"hits": [], "body": {}, "delay_s": 0.0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/canary", handler
    finally:
        server.shutdown()
        server.server_close()


def test_url_source_uses_etag(state_server: tuple[str, type[_StateHandler]]) -> None:
    url, handler = state_server
    handler.body = {"status": "promoted", "share": 1.0, "salt": "x", "candidate_config_id": "c", "version": 1}
    client = RoutingClient(url, refresh_s=0, background=False)  # each choose reads, in this thread
    assert client.choose("u1").name == "candidate"
    assert client.choose("u2").name == "candidate"  # second read: 304, state kept
    assert handler.hits[0] is None and handler.hits[1] == '"r1-1"'
    handler.body = "not an object"  # type: ignore[assignment]
    handler.etag = '"r1-2"'
    assert client.choose("u3").name == "baseline"  # malformed → baseline, counted
    assert client.stats()["failures"] == 1


def test_refresh_interval_caches(tmp_path: Path) -> None:
    now = [0.0]
    client = RoutingClient(tmp_path / "none.db", refresh_s=5, clock=lambda: now[0], background=False)
    client.choose("a")
    client.choose("b")
    assert client.stats()["refreshes"] == 1
    now[0] = 5.1
    client.choose("c")
    assert client.stats()["refreshes"] == 2


def test_choose_variant_annotates_current_span(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replaygate.canary import CanaryStore, RolloutState
    from replaygate.canary import start_rollout as start

    db = tmp_path / "s.db"
    store = CanaryStore(db)
    store.apply(
        lambda s: start(
            s, rollout_id="r", decision_id="d", decision_outcome="pass", baseline_config_id="b",
            candidate_config_id="c", salt="x", now_ns=1, plan=(1.0,),
        ),
        actor="t",
    )  # fmt: skip
    assert store.load() != RolloutState()
    monkeypatch.setattr(_routing, "_client", None)
    monkeypatch.setenv("REPLAYGATE_CANARY_SOURCE", str(db))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert _routing.routing_client().wait_ready()
    with provider.get_tracer("t").start_as_current_span("handler"):
        v = choose_variant("user-7")
    provider.shutdown()
    assert v.name == "candidate" and v.config_id == "c"
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes[RG_VARIANT] == "candidate" and span.attributes[RG_CONFIG_ID] == "c"
    monkeypatch.setattr(_routing, "_client", None)


def test_store_off_without_a_canary_source_says_so_and_serves_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)  # a file named "off" here would be read if "off" were taken as a path
    (tmp_path / "off").write_text("not a store")
    monkeypatch.setenv("REPLAYGATE_STORE", "off")
    monkeypatch.delenv("REPLAYGATE_CANARY_SOURCE", raising=False)
    monkeypatch.setattr(_routing, "_client", None)
    with caplog.at_level("WARNING", logger="replaygate.routing"):
        assert {choose_variant(f"u{i}", annotate=False).name for i in range(50)} == {"baseline"}
        assert _routing.routing_client().wait_ready(2)
    warnings = [r.getMessage() for r in caplog.records if r.name == "replaygate.routing"]
    assert len(warnings) == 1, warnings
    assert "no canary source is configured" in warnings[0] and "REPLAYGATE_CANARY_SOURCE" in warnings[0]
    assert "no replaygate store at off" not in warnings[0]
    stats = _routing.routing_client().stats()
    assert (
        stats["source"] is None
        and stats["failures"] == 0
        and "REPLAYGATE_STORE is off" in stats["last_error"]
    )
    monkeypatch.setenv(
        "REPLAYGATE_CANARY_SOURCE", str(tmp_path / "nope.db")
    )  # a source given: read as before
    assert _routing.configure_routing(refresh_s=0).source == str(tmp_path / "nope.db")
    monkeypatch.setattr(_routing, "_client", None)


def test_choose_variant_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def choose(self, key: str) -> Variant:
            raise RuntimeError("boom")

    monkeypatch.setattr(_routing, "_client", Broken())
    assert choose_variant("u", annotate=False).name == "baseline"


_CHILD = textwrap.dedent(
    """
    import sys, time
    from replaygate.instrumentation._routing import configure_routing, choose_variant
    configure_routing(sys.argv[1], refresh_s=float(sys.argv[2])).wait_ready()
    keys = [f"user-{i}" for i in range(200)]
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = {choose_variant(k, annotate=False).name for k in keys}
        state = "candidate" if "candidate" in names else "baseline"
        if state != seen:
            print(state, flush=True)
            seen = state
            if state == "baseline":
                break
        time.sleep(0.02)
    """
)


def test_rollback_reaches_other_process_within_refresh(tmp_path: Path) -> None:
    from replaygate.canary import CanaryStore
    from replaygate.canary import rollback_rollout as rollback
    from replaygate.canary import start_rollout as start

    db = tmp_path / "store.db"
    store = CanaryStore(db)
    store.apply(
        lambda s: start(
            s, rollout_id="r", decision_id="d", decision_outcome="pass", baseline_config_id="b",
            candidate_config_id="c", salt="x", now_ns=1, plan=(0.5, 1.0),
        ),
        actor="t",
    )  # fmt: skip
    refresh_s = 0.5
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(db), str(refresh_s)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "candidate"  # the child routes some users to the canary
        t0 = time.monotonic()
        store.apply(lambda s: rollback(s, now_ns=2, reason="test"), actor="t")
        assert child.stdout.readline().strip() == "baseline"
        elapsed = time.monotonic() - t0
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert elapsed <= refresh_s + 0.5, elapsed


def test_choose_variant_inside_trace_agent_marks_the_agent_span(
    memory: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    import replaygate.instrumentation as ri

    class Fixed:
        def choose(self, key: str) -> Variant:
            return Variant("candidate", "cand-7", "r9")

    monkeypatch.setattr(_routing, "_client", Fixed())

    @ri.trace_agent
    def handle(message: str, user_id: str) -> str:
        variant = ri.choose_variant(user_id)
        return f"{variant.name}: {message}"

    assert handle("hi", user_id="u1") == "candidate: hi"
    agents = [s for s in memory.get_finished_spans() if (s.attributes or {}).get(RG_VARIANT) is not None]
    assert len(agents) == 1
    attributes = agents[0].attributes or {}
    assert attributes[RG_VARIANT] == "candidate" and attributes[RG_CONFIG_ID] == "cand-7"
    assert attributes.get("gen_ai.operation.name") == "invoke_agent"  # the agent span, not a child


def test_choose_never_waits_on_a_slow_read(state_server: tuple[str, type[_StateHandler]]) -> None:
    url, handler = state_server
    handler.body = {"status": "promoted", "share": 1.0, "salt": "x", "candidate_config_id": "c", "version": 1}
    client = RoutingClient(url, refresh_s=0.05)
    assert client.wait_ready() and client.choose("u1").name == "candidate"
    handler.delay_s = 1.0  # every read now takes a second
    time.sleep(0.06)
    worst = 0.0
    for i in range(2000):
        t = time.perf_counter()
        assert client.choose(f"u{i}").name == "candidate"  # the last known state, meanwhile
        worst = max(worst, time.perf_counter() - t)
    assert worst < 0.5  # a blocking read would take the server's full second
    assert client.stats()["refreshes"] <= 3  # one refresh in flight at a time


def test_a_failed_read_keeps_the_last_state_for_a_while_then_serves_the_baseline(
    state_server: tuple[str, type[_StateHandler]],
) -> None:
    url, handler = state_server
    handler.body = {"status": "promoted", "share": 1.0, "salt": "x", "candidate_config_id": "c", "version": 1}
    now = [0.0]
    client = RoutingClient(url, refresh_s=5, clock=lambda: now[0], background=False)
    assert client.choose("u1").name == "candidate"  # read at t=0
    handler.body = "not an object"  # type: ignore[assignment]
    handler.etag = '"r1-2"'
    now[0] = 5.0
    assert client.choose("u2").name == "candidate"  # the read failed: the state of t=0 still serves
    assert client.stats()["failures"] == 1
    now[0] = 5.5
    client.choose("u3")
    assert client.stats()["refreshes"] == 2  # the retry waits a second, not a full refresh interval
    now[0] = 6.0
    assert client.choose("u4").name == "candidate" and client.stats()["refreshes"] == 3
    now[0] = 15.0  # three refresh intervals after the last good read: too old to trust
    assert client.choose("u5").name == "baseline"
    assert client.stats()["failures"] == 3
    handler.body = {"status": "promoted", "share": 1.0, "salt": "x", "candidate_config_id": "c", "version": 2}
    now[0] = 16.0
    assert client.choose("u6").name == "candidate"  # read again: serving again
    assert client.stats()["last_error"] is None
