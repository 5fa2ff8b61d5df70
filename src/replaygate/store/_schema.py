"""Every table of the shared store, declared once (SQLAlchemy Core).

The trace tables (``trace_*``) are also written by the agents' embedded SQLite writer
(``replaygate.instrumentation``, stdlib ``sqlite3``), which creates them with the same columns on SQLite;
a test keeps the two declarations equal. The control-plane tables are the canary's state and append-only
audit log and the gate's reviews and signed decisions.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "APPEND_ONLY_TABLES",
    "CONTROL_TABLES",
    "TRACE_TABLES",
    "canary_audit",
    "canary_state",
    "gate_decisions",
    "gate_reviews",
    "gate_supersessions",
    "metadata",
    "store_schema",
    "trace_drops",
    "trace_feedback",
    "trace_schema",
    "trace_spans",
    "trace_traces",
]

metadata = MetaData()

trace_schema = Table(
    "trace_schema", metadata, Column("id", Integer, primary_key=True), Column("version", Integer)
)
trace_spans = Table(
    "trace_spans",
    metadata,
    Column("trace_id", Text, primary_key=True),
    Column("span_id", Text, primary_key=True),
    Column("parent_id", Text),
    Column("name", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("status", Text, nullable=False),
    Column("status_message", Text),
    Column("attributes", Text, nullable=False),
    Column("events", Text, nullable=False),
)
trace_traces = Table(
    "trace_traces",
    metadata,
    Column("trace_id", Text, primary_key=True),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("session_id", Text),
    Column("user_id", Text),
    Column("agent_name", Text),
    Column("variant", Text),
    Column("config_id", Text),
    Column("input_preview", Text),
    Column("output_preview", Text),
    Column("failure", Integer, nullable=False, server_default="0"),
    Column("failure_reasons", Text, nullable=False, server_default="[]"),
    Column("updated_ns", BigInteger, nullable=False),
    Column("error", Integer, nullable=False, server_default="0"),
    Column("empty", Integer, nullable=False, server_default="0"),
    Column("escalated", Integer, nullable=False, server_default="0"),
    Column("negative_feedback", Integer, nullable=False, server_default="0"),
    Column("latency_s", Float),
    Column("llm_calls", Text, nullable=False, server_default="[]"),
    Index("trace_traces_by_start", "start_ns"),
    Index("trace_traces_by_session", "session_id", "start_ns"),
    Index("trace_traces_by_failure", "failure", "start_ns"),
    # covering the canary's per-arm aggregates (SQLite and PostgreSQL read only the index)
    Index(
        "trace_traces_by_arm",
        "variant",
        "start_ns",
        "error",
        "empty",
        "escalated",
        "negative_feedback",
        "latency_s",
        "trace_id",
    ),
)
trace_feedback = Table(
    "trace_feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("trace_id", Text, nullable=False, index=True),
    Column("score", Float, nullable=False),
    Column("comment", Text),
    Column("created_ns", BigInteger, nullable=False),
)
trace_drops = Table(
    "trace_drops",
    metadata,
    Column("source", Text, primary_key=True),
    Column("dropped", BigInteger, nullable=False),
    Column("first_ns", BigInteger, nullable=False),
    Column("updated_ns", BigInteger, nullable=False),
)

store_schema = Table(
    "store_schema", metadata, Column("id", Integer, primary_key=True), Column("version", Integer)
)
canary_state = Table(
    "canary_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("rollout_id", String(64)),
    Column("status", String(16), nullable=False),
    Column("step_index", Integer, nullable=False, default=0),
    Column("plan", Text, nullable=False),
    Column("share", Float, nullable=False),
    Column("salt", String(64), nullable=False, default=""),
    Column("decision_id", String(128)),
    Column("baseline_config_id", String(256)),
    Column("candidate_config_id", String(256)),
    Column("started_ns", BigInteger),
    Column("step_started_ns", BigInteger),
    Column("updated_ns", BigInteger),
    Column("auto_rollback", Boolean, nullable=False, default=True),
    Column("reason", Text),
    Column("version", Integer, nullable=False),
    # the tolerances and max_hold the rollout started with (JSON; store schema 3)
    Column("policy", Text),
)
canary_audit = Table(
    "canary_audit",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_ns", BigInteger, nullable=False, index=True),
    Column("rollout_id", String(64)),
    Column("actor", String(256), nullable=False),
    Column("action", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("from_state", String(64), nullable=False),
    Column("to_state", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("details", Text),
)
gate_reviews = Table(
    "gate_reviews",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("report_id", String(64), nullable=False, index=True),
    Column("scenario_id", String(256), nullable=False),
    Column("reviewed_by", String(256), nullable=False),
    Column("note", Text, nullable=False),
    Column("reviewed_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("report_id", "scenario_id", "reviewed_by"),
)
gate_decisions = Table(
    "gate_decisions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("report_id", String(64), nullable=False, index=True),
    Column("outcome", String(32), nullable=False),
    Column("signed_by", String(256), nullable=False),
    Column("reason", Text, nullable=False),
    Column("signed_at", DateTime(timezone=True), nullable=False),
    Column("baseline_fingerprint", JSON, nullable=False),
    Column("candidate_fingerprint", JSON, nullable=False),
    Column("candidate_target", Text, nullable=False),
    Column("candidate_config_id", String(256), nullable=False),
    Column("report_path", Text, nullable=True),
)
gate_supersessions = Table(
    "gate_supersessions",
    metadata,
    Column("superseded_id", String(64), primary_key=True),
    Column("by_id", String(64), nullable=False, index=True),
    Column("report_id", String(64), nullable=False, index=True),
    Column("signed_by", String(256), nullable=False),
    Column("reason", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
)

TRACE_TABLES = (trace_schema, trace_spans, trace_traces, trace_feedback, trace_drops)
CONTROL_TABLES = (store_schema, canary_state, canary_audit, gate_reviews, gate_decisions, gate_supersessions)
#: Tables that refuse UPDATE and DELETE (triggers on SQLite and PostgreSQL).
APPEND_ONLY_TABLES = ("canary_audit",)
