"""The export path: redaction, content hashing, broken exporters, full queues, sampling, faults."""

import asyncio
import json
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._encoding import content_hash
from replaygate.instrumentation._state import STATE

EMAIL = "jane.doe@example.com"
KEY = "sk-proj-abcdef1234567890ABCDEF"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"


def _all_text(spans: Sequence[ReadableSpan]) -> str:
    parts: list[str] = []
    for span in spans:
        parts.append(span.name)
        parts.append(span.status.description or "")
        parts.extend(str(v) for v in (span.attributes or {}).values())
        for event in span.events:
            parts.extend(str(v) for v in (event.attributes or {}).values())
    return "\n".join(parts)


@ri.trace_agent(name="leaky")
def leaky(message: str) -> str:
    with ri.tool_call("send_mail", {"to": EMAIL, "auth": BEARER}) as t:
        t.set_result(f"sent with {KEY}")
    ri.record_retrieval(message, [{"id": "d1", "score": 0.8, "text": f"contact {EMAIL}"}])
    return f"I wrote to {EMAIL} using {KEY}"


def _configure(*exporters: SpanExporter, **options: Any) -> TracerProvider:
    provider = TracerProvider()
    ri.configure(
        tracer_provider=provider, store=None, exporters=list(exporters), schedule_delay_s=0.05, **options
    )
    return provider


def test_redaction_before_any_exporter() -> None:
    memory = InMemorySpanExporter()
    before = ri.health()["redactions"]
    _configure(memory, redact=[r"ORD-\d+"])
    leaky(f"my mail is {EMAIL}, key {KEY}, order ORD-10042")
    with pytest.raises(PermissionError):

        @ri.trace_agent
        def failing(message: str) -> str:
            raise PermissionError(f"{EMAIL} may not do this")

        failing("x")
    assert ri.shutdown(timeout=5)
    spans = memory.get_finished_spans()
    text = _all_text(spans)
    assert len(spans) == 4
    for secret in (EMAIL, KEY, "eyJhbGciOiJIUzI1NiJ9", "ORD-10042"):
        assert secret not in text
    assert "[REDACTED:email]" in text and "[REDACTED:api_key]" in text and "[REDACTED:credential]" in text
    assert "[REDACTED]" in text  # the custom pattern
    assert ri.health()["redactions"] - before >= 8


def test_content_capture_off_hashes_text() -> None:
    memory = InMemorySpanExporter()
    _configure(memory, capture_content=False)
    leaky("hello")
    assert ri.shutdown(timeout=5)
    spans = {s.name: s.attributes or {} for s in memory.get_finished_spans()}
    agent = spans["invoke_agent leaky"]
    assert agent[sc.OI_INPUT_VALUE] == content_hash("hello")
    # hashed after redaction: the hash of the redacted text, never of the secret
    assert agent[sc.OI_OUTPUT_VALUE] == content_hash("I wrote to [REDACTED:email] using [REDACTED:api_key]")
    assert agent[sc.AGENT_NAME] == "leaky" and agent[sc.RG_CONTENT_HASHED] is True
    tool = spans["execute_tool send_mail"]
    assert str(tool[sc.TOOL_CALL_ARGUMENTS]).startswith("sha256:")
    assert tool[sc.TOOL_NAME] == "send_mail"
    ret = spans["retrieval"]
    docs = json.loads(str(ret[sc.RETRIEVAL_DOCUMENTS]))
    assert docs[0]["id"] == "d1" and docs[0]["score"] == 0.8 and docs[0]["content"].startswith("sha256:")
    assert str(ret[sc.oi_document(0, sc.OI_DOCUMENT_CONTENT)]).startswith("sha256:")
    assert ret[sc.oi_document(0, sc.OI_DOCUMENT_ID)] == "d1"


class RaisingExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise ConnectionError("collector exploded")

    def shutdown(self) -> None:
        pass


class FailingExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


class BlockedExporter(SpanExporter):
    def __init__(self) -> None:
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(30)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


@ri.trace_agent
def simple(message: str) -> str:
    return message.upper()


def test_broken_exporters_never_reach_the_agent() -> None:
    before = ri.health()
    _configure(RaisingExporter(), FailingExporter())
    assert [simple(f"m{i}") for i in range(20)] == [f"M{i}" for i in range(20)]
    ri.shutdown(timeout=5)
    after = ri.health()
    assert after["export_errors"] - before["export_errors"] >= 2
    assert after["failed_spans"] - before["failed_spans"] == 40
    assert after["instrumentation_faults"] - before["instrumentation_faults"] >= 1
    assert after["exporters"]["FailingExporter#1"]["failed_spans"] >= 20


def test_full_queue_drops_and_counts_and_shutdown_is_prompt() -> None:
    blocked = BlockedExporter()
    before = ri.health()["dropped_spans"]
    _configure(blocked, max_queue_size=10, max_batch_size=5)
    started = time.monotonic()
    for i in range(200):
        assert simple(f"m{i}") == f"M{i}"
    calls = time.monotonic() - started
    assert ri.health()["queued_spans"] <= 10 + 5  # the queue plus the batch stuck in export
    t0 = time.monotonic()
    ri.shutdown(timeout=0.5)
    assert time.monotonic() - t0 < 2.0
    dropped = ri.health()["dropped_spans"] - before
    assert dropped >= 180
    assert dropped + blocked.exported == 200
    assert calls < 5.0


def test_instrumentation_fault_is_counted_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    class BrokenTracer:
        def start_span(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("tracer bug")

    _configure()
    before = ri.health()["instrumentation_faults"]
    monkeypatch.setattr(STATE, "tracer", BrokenTracer())
    assert simple("ok") == "OK"
    with ri.tool_call("t") as handle:
        handle.set_result(1)
    assert ri.health()["instrumentation_faults"] - before == 2
    ri.shutdown(timeout=1)


class _BadInt:
    def __int__(self) -> int:
        raise RuntimeError("no int here")


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out"),
    [("many", -1), (1.5, float("nan")), (object(), "2 tokens"), (_BadInt(), -3), (True, float("inf"))],
)
def test_bad_counts_are_faults_never_the_agents_error(tokens_in: Any, tokens_out: Any) -> None:
    memory = InMemorySpanExporter()
    _configure(memory)
    before = ri.health()["instrumentation_faults"]

    @ri.trace_agent
    def agent(message: str) -> str:
        with ri.llm_call("gpt-4o-mini", provider="openai") as llm:
            llm.set_usage(input_tokens=tokens_in, output_tokens=tokens_out)
            llm.set_usage(input_tokens="812", output_tokens=None)  # a numeric string is a count
        with ri.retrieval("q") as r:
            r.record([{"id": "d1", "text": "x"}], filtered=tokens_in)
        return "ok"

    assert agent("hi") == "ok"
    ri.shutdown(timeout=2)
    assert ri.health()["instrumentation_faults"] - before == 3  # input, output, filtered
    (llm,) = [s for s in memory.get_finished_spans() if s.name.startswith("chat")]
    assert (llm.attributes or {})[sc.USAGE_INPUT_TOKENS] == 812  # no made-up number from the bad values
    assert sc.USAGE_OUTPUT_TOKENS not in (llm.attributes or {})
    (ret,) = [s for s in memory.get_finished_spans() if s.name.startswith("retrieval")]
    assert sc.RG_RETRIEVAL_FILTERED not in (ret.attributes or {})


def test_cancelled_agent_is_not_a_failure() -> None:
    memory = InMemorySpanExporter()
    _configure(memory)

    @ri.trace_agent
    async def slow(message: str) -> str:
        await asyncio.sleep(10)
        return "late"

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(slow("q"), timeout=0.01)

    asyncio.run(main())
    ri.shutdown(timeout=5)
    (agent,) = memory.get_finished_spans()
    attrs = agent.attributes or {}
    assert attrs[sc.RG_CANCELLED] is True and tuple(attrs[sc.RG_FAILURE_REASONS]) == ()  # type: ignore[arg-type]


def test_sampling_by_trace_id() -> None:
    memory = InMemorySpanExporter()
    _configure(memory, sample_ratio=0.5)
    for i in range(400):
        simple(str(i))
    ri.shutdown(timeout=5)
    kept = len(memory.get_finished_spans())
    assert 120 < kept < 280
    memory2 = InMemorySpanExporter()
    _configure(memory2, sample_ratio=0.0)
    simple("x")
    ri.shutdown(timeout=5)
    assert memory2.get_finished_spans() == ()


def test_reconfigure_last_call_wins() -> None:
    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    provider = _configure(first)
    simple("one")
    ri.configure(tracer_provider=provider, store=None, exporters=[second], schedule_delay_s=0.05)
    simple("two")
    ri.shutdown(timeout=5)
    assert [s.attributes[sc.OI_INPUT_VALUE] for s in first.get_finished_spans()] == ["one"]  # type: ignore[index]
    assert [s.attributes[sc.OI_INPUT_VALUE] for s in second.get_finished_spans()] == ["two"]  # type: ignore[index]
    assert len(provider._active_span_processor._span_processors) == 1  # one slot, reused


def test_decorators_follow_the_latest_configure() -> None:
    a, b = InMemorySpanExporter(), InMemorySpanExporter()
    _configure(a)
    simple("to a")
    _configure(b)  # a different isolated provider: the already-decorated function follows it
    simple("to b")
    ri.shutdown(timeout=5)
    assert len(a.get_finished_spans()) == 1 and len(b.get_finished_spans()) == 1


def test_forked_child_exports_with_a_fresh_worker(tmp_path: Any) -> None:
    import os

    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    memory = InMemorySpanExporter()
    _configure(memory)
    simple("parent")
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: its spans must still be exported by a worker of its own
        try:
            simple("child")
            ok = ri.shutdown(timeout=5)
            names = [s.attributes.get(sc.OI_INPUT_VALUE) for s in memory.get_finished_spans()]  # type: ignore[union-attr]
            os.write(write, json.dumps({"ok": ok, "inputs": names}).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = json.loads(os.read(read, 65536).decode())
    os.close(read)
    assert status == 0
    assert child["ok"] is True and "child" in child["inputs"]
    ri.shutdown(timeout=5)
    assert [s.attributes.get(sc.OI_INPUT_VALUE) for s in memory.get_finished_spans()] == ["parent"]  # type: ignore[union-attr]


def test_unwritable_store_never_reaches_the_agent(tmp_path: Any) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the store's folder should be")
    before = ri.health()
    ri.configure(
        tracer_provider=TracerProvider(), store=str(blocker / "replaygate.db"), schedule_delay_s=0.05
    )
    assert [simple(f"m{i}") for i in range(5)] == [f"M{i}" for i in range(5)]
    ri.shutdown(timeout=5)
    after = ri.health()
    # the store opens lazily: every export fails, and each failure is counted
    assert after["failed_spans"] - before["failed_spans"] == 5
    assert after["export_errors"] - before["export_errors"] >= 1
