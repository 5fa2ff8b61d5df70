import datetime as dt
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import mark_escalation, retrieval, tool_call, trace_agent
from replaygate.replay._artifacts import read_artifacts
from replaygate.replay._runner import run_suite
from replaygate.replay._scenario import Scenario


def scenario(sid: str, **extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": sid,
        "title": sid,
        "owner": "qa",
        "origin": "original-eval",
        "added": dt.date(2026, 11, 29),
        "turns": ["refund ORD-1 please", "how long?"],
        "repeats": 3,
    }
    data.update(extra)
    return Scenario.model_validate(data)


@trace_agent(name="capture-agent", version="0.1")
def respond(message: str, session_id: str | None = None) -> str:
    with retrieval(message, data_source="kb") as r:
        r.record(
            [
                {"id": "refund-policy#0", "score": 0.9, "text": "Refunds up to $200."},
                {"id": "shipping#1", "score": 0.2, "text": "Shipping takes 3 days."},
            ]
        )
    if "refund" in message:
        with tool_call("issue_refund", {"order_id": "ORD-1", "amount": 450}) as t:
            t.set_result({"ok": True})
        return "Refunded $450 for ORD-1."
    mark_escalation("customer asked twice")
    return "It takes 3 days."


def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    answers = [respond(t, session_id="s") for t in turns]
    return {"answer": answers[-1]}


def test_the_attempts_own_spans_are_captured_and_scored(tmp_path: Path) -> None:
    s = scenario(
        "refund-over-limit",
        checks=[
            {"type": "expected_tools", "tools": ["issue_refund"]},
            {"type": "tool_args", "tool": "issue_refund", "arg": "amount", "max": 200},
        ],
        retrieval={"relevant": ["refund-policy"], "k": 5},
    )
    run = run_suite(
        [s], target, {}, out_path=tmp_path / "run.json", progress=False, code_commit=None, concurrency=3
    )
    assert len(run.attempts) == 3
    trace_ids = {a.trace_id for a in run.attempts}
    assert len(trace_ids) == 3 and None not in trace_ids  # one trace per attempt
    for a in run.attempts:
        assert a.status == "fail"
        checks = {c.name: c for c in a.checks}
        assert checks["expected_tools"].passed
        assert not checks["tool_args"].passed and "450" in checks["tool_args"].detail
        assert a.retrieval is not None and a.retrieval.hit_rate == 1.0 and a.retrieval.retrieved == 4
        assert a.measures.escalated  # from the second turn's escalation mark
        assert a.attribution == "generation"
        spans = read_artifacts(a.artifact_path or "")[(a.scenario_id, a.index)]["spans"]
        names = sorted(sp["name"] for sp in spans)
        assert names.count("invoke_agent capture-agent") == 2  # both turns, one trace
        assert {sp["trace_id"] for sp in spans} == {a.trace_id}
    assert run.summary.attribution.generation == 3


class TraceparentServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.seen.append((self.headers.get("traceparent", ""), body["session_id"]))
                data = json.dumps({"answer": "remote answer: " + " | ".join(body["turns"])}).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def remote() -> Iterator[TraceparentServer]:
    srv = TraceparentServer()
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_http_target_joins_the_attempt_trace(tmp_path: Path, remote: TraceparentServer) -> None:
    url = f"http://127.0.0.1:{remote.server_address[1]}/agent"
    s = scenario("remote", checks=[{"type": "contains", "values": ["how long?"]}], repeats=2)
    run = run_suite(
        [s], url, {"model": "m"}, out_path=tmp_path / "run.json", progress=False, code_commit=None
    )
    assert [a.status for a in run.attempts] == ["pass", "pass"]
    assert run.fingerprint.target == url
    sent = {tp.split("-")[1]: session for tp, session in remote.seen}
    assert set(sent) == {a.trace_id for a in run.attempts}  # W3C traceparent carries the attempt's trace id
    assert all(session.startswith(run.run_id + "/remote/") for session in sent.values())


def test_agent_calls_after_the_run_are_not_kept(tmp_path: Path) -> None:
    from replaygate.replay import _capture

    captures: list[Any] = []
    real_open = _capture.open_capture

    def spy() -> Any:
        captures.append(real_open())
        return captures[-1]

    import replaygate.replay._runner as runner

    original = runner.open_capture
    runner.open_capture = spy
    try:
        run_suite(
            [scenario("after", repeats=1)],
            target,
            {},
            out_path=tmp_path / "r.json",
            progress=False,
            code_commit=None,
        )
    finally:
        runner.open_capture = original
    [capture] = captures
    from replaygate.instrumentation import _trace_routes

    for _ in range(5):
        respond("refund ORD-1 please")  # the agent used again, outside any run
    assert capture._open == set()
    assert _trace_routes._ROUTES == {}  # nothing is routed (kept) for calls outside a run


def test_what_a_target_sets_on_the_attempt_span_is_recorded(tmp_path: Path) -> None:
    from opentelemetry import trace
    from replaygate.instrumentation import semconv as sc

    late = threading.Event()

    def target(turns: list[str], context: dict[str, Any]) -> str:
        span = trace.get_current_span()  # the attempt's root span: no agent span is open here
        assert span.is_recording()
        span.set_attribute(sc.RG_VARIANT, "blue")
        span.record_exception(ValueError("handled"))
        if context.get("slow"):
            late.wait(2)
        return "answer"

    scenarios = [scenario("plain", repeats=1), scenario("slow", repeats=1, context={"slow": True})]
    run = run_suite(
        scenarios, target, {}, out_path=tmp_path / "run.json", progress=False, code_commit=None, timeout_s=0.3
    )
    late.set()
    plain, slow = run.attempts
    assert plain.status == "pass" and slow.status == "error" and "timed out" in (slow.error or "")
    artifacts = read_artifacts(plain.artifact_path or "")
    for attempt in (plain, slow):
        [root] = [s for s in artifacts[(attempt.scenario_id, 0)]["spans"] if s["name"] == "replay attempt"]
        assert root["trace_id"] == attempt.trace_id and root["attributes"][sc.RG_VARIANT] == "blue"
        assert [e["attributes"]["exception.type"] for e in root["events"]] == ["ValueError"]
    assert root["status"] == "error" and root["status_message"] == "timed out after 0.3s"


def test_attempt_span_is_current_inside_and_records_plain_values_until_it_ends() -> None:
    from opentelemetry import trace
    from opentelemetry.trace import StatusCode
    from replaygate.replay._capture import AttemptSpan

    outside = trace.get_current_span()
    with AttemptSpan({"replaygate.attempt.index": 2}) as root:
        assert trace.get_current_span() is root
        root.set_attributes({"tags": ("a", "b"), "n": 1.5})
        root.add_event("note", {"k": [1, 2]})
        root.update_name("renamed")
        root.set_status(StatusCode.OK, "ignored description")
    assert trace.get_current_span() is outside and not root.is_recording()
    root.set_attribute("late", 1)  # after the end: ignored, like an SDK span
    root.set_status(StatusCode.ERROR, "late")
    record = root.to_record()
    assert record.name == "renamed" and record.parent_id is None and record.kind == "other"
    assert record.attributes == {"replaygate.attempt.index": 2, "tags": ["a", "b"], "n": 1.5}
    assert record.events[0]["name"] == "note" and record.events[0]["attributes"] == {"k": [1, 2]}
    assert (record.status, record.status_message) == ("ok", None)
    assert record.trace_id == root.trace_id == format(root.get_span_context().trace_id, "032x")
    assert record.start_ns <= record.end_ns and len(record.span_id) == 16


def test_root_span_ids_are_nonzero_and_their_hex_is_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """One draw makes both ids; a draw with a zero id (the invalid id) is drawn again."""
    import random

    from replaygate.instrumentation import close_route
    from replaygate.replay import _capture

    roots = [_capture.AttemptSpan({}) for _ in range(500)]
    for r in roots:
        close_route(r.trace_number)  # each opened its route
    assert len({r.trace_id for r in roots}) == 500
    for r in roots:
        assert r.trace_id == format(r.trace_number, "032x") and r.span_id == format(r._span_number, "016x")
        assert r.trace_number and r._span_number
    draws = iter([5, 7 << 64, (3 << 64) | 9])  # span id zero, then trace id zero, then both set
    monkeypatch.setattr(random, "getrandbits", lambda bits: next(draws))
    assert _capture._new_ids() == (3, 9, format(3, "032x") + format(9, "016x"))
