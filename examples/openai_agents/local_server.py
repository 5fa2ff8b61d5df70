"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, for the example and the tests.

It plays a scripted support model: a question about an order (``ORD-…``) is answered by first asking for
the ``lookup_order`` tool (when the request offers it), then answering from the tool's result; anything
else is answered directly. Every reply reports token usage, as the real API does, so instrumentors record
it. Start it with ``with LocalOpenAI() as server:`` and point a client at ``server.base_url``.

No network beyond loopback; request bodies are bounded (1 MiB) and parsed as JSON, never executed.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["MODEL", "LocalOpenAI", "reply_for"]

MODEL = "gpt-4o-mini"
_ORDER = re.compile(r"\bORD-\d+\b")
_MAX_BODY = 1 << 20


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(messages: list[dict[str, Any]], answer: str) -> dict[str, int]:
    prompt = 10 + sum(len(_text(m.get("content")).split()) for m in messages)
    completion = 5 + len(answer.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion response the scripted model gives to one request body."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    tools = {
        str((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)
    }
    last = messages[-1] if messages else {}
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    order = _ORDER.search(user)
    message: dict[str, Any]
    if last.get("role") == "tool":
        answer = f"Your order status: {_text(last.get('content'))}"
        message, finish = {"role": "assistant", "content": answer}, "stop"
    elif order and "lookup_order" in tools:
        call = {
            "id": f"call_{order.group(0).lower().replace('-', '')}",
            "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": order.group(0)})},
        }
        answer = ""
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    else:
        answer = "Thanks for your message; our standard shipping takes 3 to 5 business days."
        message, finish = {"role": "assistant", "content": answer}, "stop"
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model") or MODEL),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(messages, answer or json.dumps(message.get("tool_calls"))),
    }


class LocalOpenAI:
    """The server, on a free port of 127.0.0.1 in a daemon thread; ``requests`` keeps every body seen."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                if length > _MAX_BODY or not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404 if length <= _MAX_BODY else 413, {"error": {"message": "not here"}})
                    return
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                server.requests.append(body)
                self._send(200, reply_for(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> LocalOpenAI:
        """Serve in the background; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> LocalOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
