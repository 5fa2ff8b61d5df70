"""``replaygate doctor``: the resolved settings, each checked (a real store, a real listening socket)."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from replaygate.instrumentation import TraceStore
from sqlalchemy import text

from replaygate.cli import main
from replaygate.store import TraceStore as DatabaseTraceStore
from tests.conftest import Postgres

ROOT = Path(__file__).resolve().parents[1]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().out


@pytest.fixture
def collector() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 standing in for an OTLP collector (doctor only connects)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_doctor_prints_every_setting_and_passes_when_each_is_reachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], collector: int
) -> None:
    for var in ("REPLAYGATE_STORE", "REPLAYGATE_GOLDEN", "REPLAYGATE_CANARY_SOURCE", "LANGFUSE_PUBLIC_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    with TraceStore("traces.db"):
        pass
    shutil.copytree(ROOT / "examples" / "support_agent" / "golden", tmp_path / "golden")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector}")
    code, out = run(capsys, "doctor", "--store", "traces.db", "--golden", "golden", "--json")
    assert code == 0, out
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    store = str((tmp_path / "traces.db").resolve())
    assert checks["store"]["value"] == store and checks["store"]["detail"] == "opens; 0 traces"
    assert checks["exporter otlp"]["value"] == f"http://127.0.0.1:{collector}/v1/traces"
    assert checks["exporter otlp"]["ok"] and checks["exporter store"]["value"] == store
    assert checks["canary source"]["value"] == store and "canary idle" in checks["canary source"]["detail"]
    assert checks["golden set"]["detail"] == "12 scenarios load (with golden.lock)"
    assert all(c["ok"] for c in checks.values())


def test_doctor_exits_1_and_says_what_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("REPLAYGATE_CANARY_SOURCE", raising=False)
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "bad-001.yaml").write_text("id: bad-001\nassert: []\n")
    code, out = run(capsys, "doctor", "--store", "missing.db", "--golden", "golden")
    assert code == 1
    assert "FAIL  store" in out and "no store there yet" in out
    assert f"FAIL  exporter otlp    http://127.0.0.1:{port}/v1/traces" in out and "cannot connect" in out
    assert "FAIL  canary source" in out and "the agents serve the baseline" in out
    assert "FAIL  golden set" in out and "replaygate calls these `checks:`" in out
    assert out.splitlines()[-1].startswith("0 of 5 ok; failing: store, exporter store, exporter otlp")


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("REPLAYGATE_STORE", "REPLAYGATE_GOLDEN", "REPLAYGATE_CANARY_SOURCE", "LANGFUSE_PUBLIC_KEY"):
        monkeypatch.delenv(var, raising=False)
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


def test_doctor_checks_a_postgresql_store_and_says_what_agents_do_instead(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    postgres: Postgres,
) -> None:
    _clean_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "examples" / "support_agent" / "golden", tmp_path / "golden")
    empty = postgres.new_database().replace("://postgres@", "://postgres:s3cret@")  # the server trusts
    monkeypatch.setenv("REPLAYGATE_STORE", empty)
    code, out = run(capsys, "doctor", "--golden", "golden")
    assert code == 1 and "s3cret" not in out
    assert "FAIL  store            " + empty.replace(":s3cret@", ":***@") in out
    assert "no replaygate tables there yet" in out and "no store there yet" not in out
    with DatabaseTraceStore(empty) as store:  # doctor wrote nothing: the tables are made only now
        with store.store.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM trace_schema")).scalar_one() == 1

    url = postgres.new_database().replace("://postgres@", "://postgres:s3cret@")
    with DatabaseTraceStore(url):
        pass  # the schema, as `replaygate collect` makes it
    monkeypatch.setenv("REPLAYGATE_STORE", url)
    code, out = run(capsys, "doctor", "--golden", "golden", "--json")
    assert code == 0, out
    assert "s3cret" not in out
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["store"] == {
        "name": "store",
        "value": url.replace(":s3cret@", ":***@"),
        "ok": True,
        "detail": "opens (PostgreSQL); 0 traces",
    }
    assert checks["exporter store"]["ok"] and "replaygate collect" in checks["exporter store"]["detail"]
    assert "REPLAYGATE_STORE=off" in checks["exporter store"]["detail"]
    assert checks["canary source"]["ok"] and "REPLAYGATE_CANARY_SOURCE" in checks["canary source"]["detail"]
    assert "not SQLite" not in out and "the environment is invalid" not in out


def test_doctor_with_the_store_off_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], collector: int
) -> None:
    _clean_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "examples" / "support_agent" / "golden", tmp_path / "golden")
    monkeypatch.setenv("REPLAYGATE_STORE", "off")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector}")
    code, out = run(capsys, "doctor", "--golden", "golden", "--json")
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["store"]["value"] == "off" and checks["store"]["ok"]
    assert "no embedded store" in checks["store"]["detail"]
    assert checks["exporter otlp"]["ok"] and "exporter store" not in checks
    canary = checks["canary source"]
    assert canary["ok"] and canary["value"] == "none"  # canaries are optional: said, not failed
    assert (
        "no canary source is configured" in canary["detail"]
        and "REPLAYGATE_CANARY_SOURCE" in canary["detail"]
    )
    assert str(tmp_path / "off") not in out and "FileNotFoundError" not in out
    assert code == 0, out
    monkeypatch.setenv("REPLAYGATE_CANARY_SOURCE", str(tmp_path / "canary.db"))
    with TraceStore(tmp_path / "canary.db"):
        pass
    code, out = run(capsys, "doctor", "--golden", "golden")
    assert code == 0, out
