import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from replaygate.replay._errors import TargetError
from replaygate.replay._http_target import HttpTarget


class Handler(BaseHTTPRequestHandler):
    server: "Server"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with self.server.lock:
            self.server.requests.append((self.path, dict(self.headers), body, time.monotonic()))
            count = sum(1 for r in self.server.requests if r[0] == self.path)
        if self.path == "/flaky" and count == 1:
            self._send(429, b"slow down", {"retry-after": "0.2"})
        elif self.path == "/down":
            self._send(503 if count % 2 else 500, b"down")
        elif self.path == "/slow":
            time.sleep(1.5)
            self._send(200, b'{"answer": "late"}')
        elif self.path == "/garbage":
            self._send(200, b"<html>not json</html>")
        elif self.path == "/bad-request":
            self._send(400, b"no")
        elif self.path == "/wrong-shape":
            self._send(200, b'{"text": "no answer"}')
        else:
            answer = " / ".join(body["turns"])
            self._send(200, json.dumps({"answer": answer, "label": "answer"}).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[tuple[str, dict[str, str], Any, float]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def post(target: HttpTarget, turns: list[str]) -> Any:
    async def go() -> Any:
        try:
            return await target.call(turns, {"user_id": "u-1"}, {"model": "m"}, session_id="sess-1")
        finally:
            await target.aclose()

    return asyncio.run(go())


def test_posts_the_session_and_reads_the_answer(server: Server) -> None:
    out = post(HttpTarget(server.url + "/echo"), ["first", "second"])
    assert out.answer == "first / second" and out.label == "answer"
    [(path, headers, body, _)] = server.requests
    assert body == {
        "turns": ["first", "second"],
        "context": {"user_id": "u-1"},
        "config": {"model": "m"},
        "session_id": "sess-1",
    }
    assert headers["content-type"] == "application/json"


def test_429_then_200_is_retried_honouring_retry_after(server: Server) -> None:
    out = post(HttpTarget(server.url + "/flaky", backoff_s=0.001), ["q"])
    assert out.answer == "q"
    times = [r[3] for r in server.requests]
    assert len(times) == 2
    assert times[1] - times[0] >= 0.18  # Retry-After: 0.2 beat the 1 ms backoff


def test_5xx_exhausted_is_an_error(server: Server) -> None:
    with pytest.raises(TargetError, match=r"gave up after 3 tries; last: HTTP 5\d\d"):
        post(HttpTarget(server.url + "/down", max_retries=2, backoff_s=0.01), ["q"])
    assert len(server.requests) == 3


def test_timeout_is_an_error(server: Server) -> None:
    t0 = time.monotonic()
    with pytest.raises(TargetError, match="no answer within 0.3s"):
        post(HttpTarget(server.url + "/slow", timeout_s=0.3), ["q"])
    assert time.monotonic() - t0 < 1.4


@pytest.mark.parametrize(
    ("path", "needle", "tries"),
    [("/garbage", "not JSON", 1), ("/bad-request", "HTTP 400", 1), ("/wrong-shape", "bad target output", 1)],
)
def test_bad_answers_are_errors_without_retry(server: Server, path: str, needle: str, tries: int) -> None:
    with pytest.raises(TargetError, match=needle):
        post(HttpTarget(server.url + path, backoff_s=0.01), ["q"])
    assert len(server.requests) == tries


def test_connection_refused_is_retried_then_an_error() -> None:
    srv = Server()
    url = srv.url
    srv.server_close()  # nothing listens there now
    with pytest.raises(TargetError, match="gave up after 2 tries"):
        post(HttpTarget(url + "/x", max_retries=1, backoff_s=0.01), ["q"])


def test_yaml_dates_in_context_travel_as_strings(server: Server) -> None:
    import datetime as dt

    async def go() -> Any:
        target = HttpTarget(server.url + "/echo")
        try:
            return await target.call(["q"], {"since": dt.date(2026, 11, 29)}, {}, session_id="s")
        finally:
            await target.aclose()

    assert asyncio.run(go()).answer == "q"
    assert server.requests[0][2]["context"] == {"since": "2026-11-29"}
