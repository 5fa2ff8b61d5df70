"""``replaygate inbox`` on a PostgreSQL store, opened as ``traces`` opens it, its password hidden."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import TraceStore as SqliteTraceStore

from replaygate.store import TraceStore
from tests.conftest import Postgres, free_port, run_main


def _with_password(url: str) -> str:
    return url.replace("://postgres@", "://postgres:s3cret@")  # the test server trusts: any password works


def test_inbox_reads_a_postgresql_store_and_hides_its_password(
    postgres: Postgres,
    demo_traffic: tuple[Path, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, counts = demo_traffic
    with SqliteTraceStore(db) as source:
        records = source.list_traces(limit=None)
    url = _with_password(postgres.new_database())
    with TraceStore(url) as target:
        target.write_spans([span for record in records for span in record.spans])
    shown = url.replace(":s3cret@", ":***@")

    for args in (["--store", url], []):  # the option, then REPLAYGATE_STORE
        monkeypatch.setenv("REPLAYGATE_STORE", url)
        assert run_main(["inbox", *args, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["traces"] == counts["requests"] and doc["store"] == shown
        assert {c["key"] for c in doc["classes"]} >= {"refusal_without_tools", "empty_answer"}
    assert run_main(["inbox", "--store", url]) == 0
    out = capsys.readouterr().out
    assert "refusal_without_tools" in out and "postgres:***@" in out and "s3cret" not in out


def test_inbox_on_an_unreachable_postgresql_store_is_a_clear_error_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"postgresql+psycopg://rg:s3cret@127.0.0.1:{free_port()}/replaygate"
    assert run_main(["inbox", "--store", url]) == 3
    err = capsys.readouterr().err
    assert "rg:***@127.0.0.1" in err and "s3cret" not in err and "Traceback" not in err
    assert "not SQLite" not in err
