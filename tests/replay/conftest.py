"""Helpers of the replay tests: ``cli`` (the CLI's exit code) and an OpenAI-compatible chat endpoint on
127.0.0.1 for the LLM judge (fixture ``openai_server``). Test modules import them from
``tests.replay.conftest``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.conftest import run_main

Reply = tuple[int, Any, float]  # status, body (dict = chat completion content object, str = raw), delay


cli = run_main  # ``replaygate ARGV`` in-process: its exit code


def completion(content: Any) -> dict[str, Any]:
    """A chat completion whose message content is ``content`` (JSON-encoded unless a str)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


@dataclass
class FakeOpenAI:
    """A tiny OpenAI-compatible chat endpoint: replies come from ``respond(request_body)``."""

    respond: Callable[[dict[str, Any]], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    """Start the fake endpoint; ``.url`` is its base URL (``.../v1``), ``.respond`` decides the replies."""
    fake = FakeOpenAI(respond=lambda body: (200, completion({}), 0.0))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            status, reply, delay = fake.respond(body)
            if delay:
                time.sleep(delay)
            data = (reply if isinstance(reply, str) else json.dumps(reply)).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
