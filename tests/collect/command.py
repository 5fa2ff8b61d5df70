"""Start the real ``replaygate collect`` command in a subprocess and wait until it answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_collect(port: int, log: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``replaygate collect --port PORT ARGS...`` with ``env`` over the environment, output in ``log``.

    Returns once ``POST /v1/traces`` gets an HTTP answer (any status); fails with the log if it exits or
    does not answer within 60 s.
    """
    command = [
        sys.executable,
        "-c",
        "from replaygate.cli import main; main()",
        "collect",
        "--port",
        str(port),
    ]
    with log.open("wb") as out:  # the child keeps its own handle
        proc = subprocess.Popen(
            [*command, *args], env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=b"", timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("replaygate collect did not start: " + log.read_text())
