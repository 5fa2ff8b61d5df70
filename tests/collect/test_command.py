"""``replaygate collect`` as a user runs it: gunicorn on 127.0.0.1, clear start-up errors, a graceful stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from replaygate.store import TraceStore
from tests.collect.command import free_port, start_collect

TOKEN = "command-token-42"
SPAN = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "0af7651916cd43dd8448eb211c80319c",
                            "spanId": "b7ad6b7169203331",
                            "name": "support-agent",
                            "kind": 1,
                            "startTimeUnixNano": "1700000000000000000",
                            "endTimeUnixNano": "1700000001000000000",
                            "attributes": [
                                {"key": "openinference.span.kind", "value": {"stringValue": "AGENT"}}
                            ],
                        }
                    ]
                }
            ],
        }
    ]
}


def _replaygate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from replaygate.cli import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_collect_without_a_token_stops_at_start_up_with_what_to_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REPLAYGATE_COLLECT_TOKEN"}
    result = _replaygate("collect", "--store", str(tmp_path / "s.db"), "--port", str(free_port()), env=env)
    assert result.returncode == 3, result.stderr
    assert "set REPLAYGATE_COLLECT_TOKEN" in result.stderr and "Traceback" not in result.stderr


def test_collect_with_an_unreachable_store_stops_before_any_worker_starts() -> None:
    url = "postgresql+psycopg://rg:secret@127.0.0.1:1/nothing"
    env = {**os.environ, "REPLAYGATE_COLLECT_TOKEN": TOKEN}
    result = _replaygate("collect", "--store", url, "--port", str(free_port()), env=env)
    out = result.stdout + result.stderr
    assert result.returncode == 3, out
    assert "error: cannot read store postgresql+psycopg://rg:***@127.0.0.1:1/nothing" in out
    assert "secret" not in out and "Traceback" not in out and "gunicorn" not in out


def test_collect_serves_on_gunicorn_writes_sqlite_and_stops_gracefully(tmp_path: Path) -> None:
    db, port, log = tmp_path / "store.db", free_port(), tmp_path / "collect.log"
    proc = start_collect(
        port, log, "--store", str(db), "--threads", "2", env={"REPLAYGATE_COLLECT_TOKEN": TOKEN}
    )
    base = f"http://127.0.0.1:{port}"
    try:
        refused = httpx.post(f"{base}/v1/traces", json=SPAN, timeout=2)
        assert refused.status_code == 401
        accepted = httpx.post(f"{base}/v1/traces", json=SPAN, headers={"Authorization": f"Bearer {TOKEN}"})
        assert accepted.status_code == 200, accepted.text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    assert proc.returncode == 0, text
    assert f"writing to {db}" in text and "Starting gunicorn" in text, text
    assert "development server" not in text and "POST /v1/traces" not in text, text
    with TraceStore(str(db)) as store:
        assert store.count() == 1
