"""The store's fast ingest paths give exactly what the full paths give, and every drop reaches the store.

Fast paths: ``call_cost`` from linear rates read once per model (genai-prices in full for tiered models),
``transform_record`` (a span straight to its record), ``row_summary`` (a trace's row without decoding tool
payloads and documents) and ``BatchRows`` (rows built before the write transaction).
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import genai_prices
import pytest
import replaygate.instrumentation as ri
from genai_prices.data_snapshot import get_snapshot
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import LlmCall, SpanRecord, call_cost, span_to_record, summarize_spans
from replaygate.instrumentation._redaction import Redactor
from replaygate.instrumentation._spancopy import transform_record, transform_span
from replaygate.instrumentation._store_rows import BatchRows, trace_row_values
from replaygate.instrumentation._summary import row_summary


def _full_price(model: str, provider: str | None, tokens_in: int, tokens_out: int) -> float | None:
    usage = genai_prices.Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    for candidate in [provider, None] if provider else [None]:
        try:
            return float(genai_prices.calc_price(usage, model, provider_id=candidate).total_price)
        except LookupError:
            continue
    return None


def test_call_cost_equals_a_full_genai_prices_calculation_for_every_known_model() -> None:
    rng = random.Random(7)
    models = [(p.id, m.id) for p in get_snapshot().providers for m in p.models]
    assert len(models) > 500
    tiered = 0
    for provider, model in models:
        for tokens_in, tokens_out in ((rng.randint(0, 400_000), rng.randint(0, 30_000)), (0, 0)):
            expected = _full_price(model, provider, tokens_in, tokens_out)
            assert call_cost(LlmCall(model, provider, tokens_in, tokens_out, 0.1)) == expected, (
                provider,
                model,
            )
        try:
            zero = genai_prices.Usage(input_tokens=0, output_tokens=0)
            price = genai_prices.calc_price(zero, model, provider_id=provider).model_price
        except LookupError:  # a model id its own provider does not match (priced by name above)
            continue
        tiered += any(isinstance(v, genai_prices.types.TieredPrices) for v in vars(price).values())
    assert tiered > 0  # the tiered models (computed in full every time) were among them
    assert call_cost(LlmCall("no-such-model-xyz", "openai", 10, 10, 0.1)) is None
    assert call_cost(LlmCall("gpt-4o-mini", "no-such-provider", 1000, 100, 0.1)) == _full_price(
        "gpt-4o-mini", None, 1000, 100
    )


def _spans() -> list[ReadableSpan]:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ri.configure(store=None, otlp_endpoint=False, langfuse=False, tracer_provider=provider)

    @ri.trace_agent(name="support")
    def answer(i: int) -> str:
        with ri.retrieval("where is my order", data_source="kb") as r:
            r.record(
                [{"id": f"doc-{i}", "score": 0.5, "text": "write to help@example.com", "metadata": {"a": 1}}]
            )
        with ri.tool_call("lookup_order", {"order_id": i}) as t:
            t.set_result({"status": "shipped", "token": "Bearer abcdefghijklmnop" if i % 2 else "none"})
        with ri.llm_call("gpt-4o-mini", provider="openai") as llm:
            llm.set_usage(input_tokens=100 + i, output_tokens=10 + i)
            llm.set_output("ok")
        if i % 3 == 0:
            ri.mark_escalation("needs a person")
        return "" if i % 4 == 0 else "It ships tomorrow."

    for i in range(12):
        answer(i)
    ri.shutdown(5)
    return list(memory.get_finished_spans())


@pytest.mark.parametrize("capture_content", [True, False])
def test_transform_record_is_the_record_of_transform_span(capture_content: bool) -> None:
    for redactor in (Redactor(), Redactor(["ORD-\\d+"]), Redactor(defaults=False)):
        for span in _spans():
            copy, n = transform_span(span, redactor, capture_content=capture_content)
            record, m = transform_record(span, redactor, capture_content=capture_content)
            assert (record, m) == (span_to_record(copy), n)


def _records() -> list[SpanRecord]:
    redactor = Redactor()
    return [transform_record(s, redactor, capture_content=True)[0] for s in _spans()]


def test_row_summary_is_summarize_spans_without_chunks_and_tool_calls() -> None:
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in _records():
        by_trace.setdefault(record.trace_id, []).append(record)
    assert len(by_trace) == 12
    for spans in by_trace.values():
        full, light = summarize_spans(spans), row_summary(spans)
        assert full.chunks and full.tool_calls and not light.chunks and not light.tool_calls
        assert vars(light) == {**vars(full), "chunks": (), "tool_calls": ()}


def _load(stored: dict[str, list[SpanRecord]], ids: list[str]) -> dict[str, list[SpanRecord]]:
    return {t: sorted(stored[t], key=lambda s: (s.start_ns, s.end_ns)) for t in ids}


def test_batch_rows_split_across_batches_equal_the_rows_of_whole_traces() -> None:
    records = _records()
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    scores = {trace_id: [-1.0] for trace_id in list(by_trace)[:3]}
    first, second = records[: len(records) // 2 + 1], records[len(records) // 2 + 1 :]
    stored: dict[str, list[SpanRecord]] = {}
    rows = {}
    for batch in (first, second):
        prepared = BatchRows(batch)  # built before the "transaction"
        prior = {r.trace_id for r in batch if r.trace_id in stored}
        for record in batch:
            stored.setdefault(record.trace_id, []).append(record)
        feedback = {t: [{"score": s} for s in scores.get(t, [])] for t in prepared.trace_ids}
        for row in prepared.rows(prior, lambda ids: _load(stored, ids), feedback):
            rows[row["trace_id"]] = row
    assert set(rows) == set(by_trace)
    for trace_id, spans in by_trace.items():
        expected = trace_row_values(
            sorted(spans, key=lambda s: (s.start_ns, s.end_ns)), scores.get(trace_id, [])
        )
        got = rows[trace_id]
        assert {k: v for k, v in got.items() if k != "updated_ns"} == {
            k: v for k, v in expected.items() if k != "updated_ns"
        }
    assert sum(r["negative_feedback"] for r in rows.values()) == 3


def _drops(db: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute("SELECT source, dropped FROM trace_drops ORDER BY source"))
    finally:
        conn.close()


def test_drops_of_two_handles_in_one_process_are_each_reported_once(tmp_path: Path) -> None:
    """Each store sink reports its own drops (not the process total), so the store's sum is exact."""
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    handles = [
        ri.configure(
            store=db, tracer_provider=TracerProvider(), max_queue_size=4, schedule_delay_s=5, default=False
        )
        for db in (first, second)
    ]

    @ri.trace_agent(name="agent")
    def answer(i: int) -> str:
        return "fine"

    with handles[0].activate():
        for i in range(60):
            answer(i)
    with handles[1].activate():
        for i in range(30):
            answer(i)
    sinks = [h.pipeline.sinks[0] for h in handles]  # type: ignore[union-attr]
    for h in handles:
        h.shutdown(10)
    counts = [s.dropped for s in sinks]
    assert counts[0] > 0 and counts[1] > 0
    assert [sum(n for _, n in _drops(db)) for db in (first, second)] == counts
    with ri.TraceStore(first) as store:
        assert store.count() + counts[0] == 60


def test_spans_abandoned_at_shutdown_are_reported_to_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    handle = ri.configure(store=db, tracer_provider=TracerProvider(), schedule_delay_s=60, default=False)

    @ri.trace_agent(name="agent")
    def answer(i: int) -> str:
        return "fine"

    with handle.activate():
        for i in range(100):
            answer(i)
    sink = handle.pipeline.sinks[0]  # type: ignore[union-attr]
    sink._abandon = True  # the worker takes no more batches: what is queued is left at shutdown
    assert not handle.shutdown(0.05)
    assert sink.dropped == 100
    assert _drops(db) and sum(n for _, n in _drops(db)) == 100
