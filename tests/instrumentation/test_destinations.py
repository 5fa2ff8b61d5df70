"""``configure()`` says where spans go (once, INFO; stderr under REPLAYGATE_VERBOSE=1) and ``health()``
shows it, with the store as an absolute path."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def test_configure_logs_the_active_exporters_and_the_absolute_store_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPLAYGATE_VERBOSE", raising=False)
    provider = TracerProvider()
    with caplog.at_level(logging.INFO, logger="replaygate.instrumentation"):
        ri.configure(tracer_provider=provider, store="rel/traces.db", exporters=[InMemorySpanExporter()])
    try:
        store = str((tmp_path / "rel" / "traces.db").resolve())
        lines = [
            r.getMessage() for r in caplog.records if r.getMessage().startswith("replaygate: spans go to")
        ]
        assert lines == [f"replaygate: spans go to store {store}, InMemorySpanExporter#0 in-process exporter"]
        assert capsys.readouterr().err == ""  # not verbose: the log only
        stats = ri.health()
        assert stats["store_path"] == store and os.path.isabs(stats["store_path"])
        assert stats["destinations"] == {"store": store, "InMemorySpanExporter#0": "in-process exporter"}
        monkeypatch.chdir(tmp_path.parent)  # the store stays where configure put it
        assert ri.health()["store_path"] == store
    finally:
        ri.shutdown(timeout=2)
        provider.shutdown()
    assert ri.health()["destinations"] == {} and ri.health()["store_path"] is None


def test_verbose_also_writes_the_line_to_stderr_and_hides_credentials(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPLAYGATE_VERBOSE", "1")
    provider = TracerProvider()
    ri.configure(
        tracer_provider=provider, store=None, otlp_endpoint="http://user:secret@127.0.0.1:9/v1/traces"
    )
    try:
        err = capsys.readouterr().err
        assert "replaygate: spans go to otlp http://127.0.0.1:9/v1/traces" in err and "secret" not in err
        assert ri.health()["active_exporters"] == ["otlp"] and ri.health()["store_path"] is None
    finally:
        ri.shutdown(timeout=1)
        provider.shutdown()
