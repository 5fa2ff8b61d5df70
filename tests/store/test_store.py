import re
import sqlite3

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from replaygate.instrumentation import StoreError, span_to_record
from replaygate.instrumentation import TraceStore as SqliteTraceStore
from replaygate.instrumentation import semconv as sc
from sqlalchemy import inspect, text
from sqlalchemy.exc import SQLAlchemyError

from replaygate.store import Store, TraceStore, versions
from replaygate.store._schema import TRACE_TABLES


def _spans(n: int, *, fail_every: int = 0):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    for i in range(n):
        with tracer.start_as_current_span("invoke_agent support") as span:
            span.set_attribute(sc.OPERATION_NAME, "invoke_agent")
            span.set_attribute(sc.OI_INPUT_VALUE, f"question {i}")
            span.set_attribute(sc.OI_OUTPUT_VALUE, "" if fail_every and i % fail_every == 0 else "answer")
            span.set_attribute(sc.OI_SESSION_ID, f"s{i % 3}")
            span.set_attribute(sc.RG_VARIANT, "candidate" if i % 2 else "baseline")
            with tracer.start_as_current_span("chat") as child:
                child.set_attribute(sc.OPERATION_NAME, "chat")
                child.set_attribute(sc.REQUEST_MODEL, "gpt-4o-mini")
                child.set_attribute(sc.USAGE_INPUT_TOKENS, 100)
    provider.shutdown()
    return [span_to_record(s) for s in exporter.get_finished_spans()]


def test_write_read_failures_feedback(store_url) -> None:
    records = _spans(6, fail_every=3)
    with TraceStore(store_url) as store:
        children = [r for r in records if r.kind != "agent"]
        agents = [r for r in records if r.kind == "agent"]
        store.write_spans(children)  # children first, parents later: the trace row appears with the parent
        assert store.count() == 0
        store.write_spans(agents)
        assert store.count() == 6
        listed = store.list_traces(limit=10)
        assert len(listed) == 6 and all(len(r.spans) == 2 for r in listed)
        assert [r.start_ns for r in listed] == sorted((r.start_ns for r in listed), reverse=True)
        failures = store.failures(reasons=["empty_answer"])
        assert len(failures) == 2 and all("empty_answer" in r.summary.failure_reasons for r in failures)
        assert store.failures(reasons=["exception"]) == []
        ok = next(r for r in listed if not r.summary.failure_reasons)
        store.record_feedback(ok.summary.trace_id, -1, "wrong")
        again = store.get_trace(ok.summary.trace_id)
        assert "negative_feedback" in again.summary.failure_reasons
        assert again.feedback[0]["comment"] == "wrong"
        assert len(store.failures(reasons=["negative_feedback"])) == 1
        assert store.resolve_trace_id(ok.summary.trace_id[:10]) == ok.summary.trace_id
        assert [r.summary.session_id for r in store.session_traces("s0")] == ["s0", "s0"]
        assert len(store.list_traces(variant="candidate")) == 3
        with pytest.raises(StoreError, match="not found"):
            store.get_trace("f" * 32)
        with pytest.raises(StoreError, match="must be a number"):
            store.record_feedback(ok.summary.trace_id, 3)


def test_rows_hold_the_canary_measures(store_url) -> None:
    records = _spans(4, fail_every=2)
    with TraceStore(store_url) as store:
        store.write_spans(records)
        with store.store.read() as conn:
            rows = conn.execute(
                text(
                    "SELECT empty, error, escalated, latency_s, llm_calls FROM trace_traces ORDER BY start_ns"
                )
            ).all()
    assert [r[0] for r in rows] == [1, 0, 1, 0]
    assert all(r[1] == 0 and r[2] == 0 and r[3] is not None and r[3] >= 0 for r in rows)
    assert '"gpt-4o-mini"' in rows[0][4]


def test_audit_is_append_only(store_url) -> None:
    store = Store(store_url)
    try:
        with store.write() as conn:
            conn.execute(
                text(
                    "INSERT INTO canary_audit (at_ns, actor, action, outcome, from_state, to_state, reason) "
                    "VALUES (1, 'ana', 'start', 'applied', 'idle', 'canary', 'go')"
                )
            )
        for statement in ("UPDATE canary_audit SET actor = 'mallory'", "DELETE FROM canary_audit"):
            with pytest.raises((SQLAlchemyError, StoreError), match="append-only"):
                with store.write() as conn:
                    conn.execute(text(statement))
        with store.read() as conn:
            assert conn.execute(text("SELECT actor FROM canary_audit")).scalar_one() == "ana"
        if store.dialect == "postgresql":
            with pytest.raises((SQLAlchemyError, StoreError), match="append-only"):
                with store.write() as conn:
                    conn.execute(text("TRUNCATE canary_audit"))
    finally:
        store.close()


def test_schema_versions_and_newer_store_refused(store_url) -> None:
    store = Store(store_url)
    with store.read() as conn:
        assert versions(conn) == (4, 3)
    with store.write() as conn:
        conn.execute(text("UPDATE store_schema SET version = 99"))
    store.close()
    with pytest.raises(StoreError, match="newer than this replaygate"):
        Store(store_url)


def test_both_writers_declare_the_same_trace_tables(tmp_path) -> None:
    path = tmp_path / "s.db"
    SqliteTraceStore(path).close()  # created by the agents' embedded writer (stdlib sqlite3)
    conn = sqlite3.connect(path)
    for table in TRACE_TABLES:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table.name})")]
        assert columns == [c.name for c in table.columns], table.name
    conn.close()


def test_a_version_1_sqlite_store_is_migrated_and_backfilled(tmp_path) -> None:
    from replaygate.instrumentation import TRACE_MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    for statement in TRACE_MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("CREATE TABLE trace_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER)")
    conn.execute("INSERT INTO trace_schema VALUES (1, 1)")
    records = _spans(2, fail_every=2)
    from replaygate.instrumentation import record_to_row

    conn.executemany(
        f"INSERT INTO trace_spans VALUES ({', '.join('?' * 11)})", [record_to_row(r) for r in records]
    )
    for r in records:
        if r.kind == "agent":
            conn.execute(
                "INSERT INTO trace_traces (trace_id, start_ns, end_ns, failure, failure_reasons, updated_ns) "
                "VALUES (?, ?, ?, 0, '[]', 0)",
                (r.trace_id, r.start_ns, r.end_ns),
            )
    conn.commit()
    conn.close()
    with TraceStore(path) as store:
        with store.store.read() as c:
            assert versions(c) == (4, 3)
            assert sorted(c.execute(text("SELECT empty FROM trace_traces")).scalars()) == [0, 1]
        assert len(store.failures(reasons=["empty_answer"])) == 1


def test_unreachable_postgres_and_bad_urls_are_clear_errors() -> None:
    with pytest.raises(StoreError, match="cannot read store"):
        Store("postgresql+psycopg://nobody@127.0.0.1:9/none?connect_timeout=2")
    with pytest.raises(StoreError, match="only SQLite"):
        Store("mysql://x@localhost/db")


def test_missing_sqlite_store_not_created(tmp_path) -> None:
    with pytest.raises(StoreError, match="no trace store at"):
        Store(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_a_version_2_store_gets_the_canary_index(store_url) -> None:
    store = Store(store_url)
    with store.write() as conn:  # back to what a version 2 store looked like
        conn.execute(text("DROP INDEX trace_traces_by_arm"))
        conn.execute(text("CREATE INDEX trace_traces_by_variant ON trace_traces (variant, start_ns)"))
        conn.execute(text("UPDATE trace_schema SET version = 2"))
    store.close()
    store = Store(store_url)
    try:
        with store.read() as conn:
            assert versions(conn) == (4, 3)
            names = {i["name"] for i in inspect(conn).get_indexes("trace_traces")}
        assert "trace_traces_by_arm" in names and "trace_traces_by_variant" not in names
    finally:
        store.close()


def test_both_stores_read_through_one_path(store_url, tmp_path) -> None:
    """The embedded store and the control plane's (SQLite, PostgreSQL) give the same records (issue 16)."""
    from replaygate.instrumentation import TraceQuery, TraceReader

    records = _spans(6, fail_every=3)
    embedded = SqliteTraceStore(tmp_path / "embedded.db")
    with TraceStore(store_url) as store, embedded:
        assert isinstance(store, TraceReader) and isinstance(embedded, TraceReader)
        for s in (store, embedded):
            s.write_spans(records)
            s.record_feedback(records[-1].trace_id, -0.5, "meh")

        def same(read) -> None:  # type: ignore[no-untyped-def]
            a, b = read(store), read(embedded)

            def key(r):  # type: ignore[no-untyped-def]
                feedback = [(f["score"], f["comment"]) for f in r.feedback]  # not created_ns
                return (r.summary, r.spans, feedback, r.start_ns, r.end_ns)

            assert a and [key(r) for r in a] == [key(r) for r in b]

        same(lambda s: s.list_traces(limit=None))
        same(lambda s: s.list_traces(limit=2, variant="candidate"))
        same(lambda s: s.failures(reasons=["empty_answer", "negative_feedback"]))
        same(lambda s: s.session_traces("s1"))
        same(lambda s: s.read(TraceQuery(failures_only=True, newest_first=False)))
        assert len(store.failures(reasons=["empty_answer"])) == 2
        # reasons are matched whole: LIKE's wildcards in a reason match nothing
        for s in (store, embedded):
            assert s.failures(reasons=["empty_answe_"]) == [] and s.failures(reasons=["%"]) == []
            with pytest.raises(StoreError, match="limit must be at least 1"):
                s.list_traces(limit=0)
            with pytest.raises(StoreError, match=re.escape(f"not found in trace store {s.path}")):
                s.get_trace("f" * 32)
        assert store.count() == embedded.count() == 6


def test_a_version_3_sqlite_store_keeps_its_spans_in_the_v4_layout(tmp_path) -> None:
    """v4 moves trace_spans from a WITHOUT ROWID table to a rowid table keyed by an index: same rows."""
    from replaygate.instrumentation import TRACE_MIGRATIONS, record_to_row

    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE trace_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER)")
    for version in (0, 1, 2):
        for step in TRACE_MIGRATIONS[version]:
            if callable(step):
                step(conn)
            else:
                conn.execute(step)
    conn.execute("INSERT INTO trace_schema VALUES (1, 3)")
    records = _spans(3, fail_every=2)
    rows = sorted(record_to_row(r) for r in records)
    conn.executemany(f"INSERT INTO trace_spans VALUES ({', '.join('?' * 11)})", rows)
    layout = "SELECT sql FROM sqlite_master WHERE name = 'trace_spans'"
    assert "WITHOUT ROWID" in conn.execute(layout).fetchone()[0]
    conn.close()
    with TraceStore(path) as store:
        with store.store.read() as c:
            assert versions(c) == (4, 3)
        store.write_spans(records)  # the same spans again: replaced, not duplicated
    conn = sqlite3.connect(path)
    assert "WITHOUT ROWID" not in conn.execute(layout).fetchone()[0]
    assert sorted(conn.execute("SELECT * FROM trace_spans")) == rows
    conn.close()
