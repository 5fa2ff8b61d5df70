"""A real ``replaygate collect`` app on 127.0.0.1 (werkzeug server in a thread) over a test store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from werkzeug.serving import make_server

from replaygate.collect import Receiver, create_collect_app
from replaygate.store import TraceStore

TOKEN = "collect-token-123"


@dataclass
class Running:
    url: str
    receiver: Receiver


@pytest.fixture
def serve_receiver() -> Iterator[Callable[..., Running]]:
    stops: list[Callable[[], None]] = []

    def start(store: TraceStore, **bounds: float) -> Running:
        receiver = Receiver(store, token=TOKEN, **bounds)  # type: ignore[arg-type]
        server = make_server("127.0.0.1", 0, create_collect_app(receiver), threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()

        def stop() -> None:
            server.shutdown()
            server.server_close()
            thread.join(10)

        stops.append(stop)
        return Running(f"http://127.0.0.1:{server.server_port}", receiver)

    yield start
    for stop in stops:
        stop()
