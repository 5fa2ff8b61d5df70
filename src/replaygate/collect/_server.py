"""``replaygate collect`` served by gunicorn (a production WSGI server), not werkzeug's development server.

Each gunicorn worker process builds its own receiver and store connection after the fork (no database
connection crosses a fork); the store is opened once in the starting process first, so a bad URL, an
unreachable database or a missing token stops the command at start-up with its message instead of
failing every worker's boot. Requests are served by ``threads`` threads per worker (the ``gthread``
worker), and no access line is logged per request (an agent sends several requests a second).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]

from replaygate.collect._app import create_collect_app, receiver_from_env

__all__ = ["serve_collect"]


class _CollectServer(BaseApplication):  # type: ignore[misc]  # gunicorn has no type hints
    def __init__(self, settings: dict[str, Any], make_app: Callable[[], Any]) -> None:
        self._settings = settings
        self._make_app = make_app
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._settings.items():
            if key in self.cfg.settings:  # control_socket_disable is new in gunicorn 25
                self.cfg.set(key, value)

    def load(self) -> Any:
        return self._make_app()


def serve_collect(
    host: str,
    port: int,
    *,
    store: str | None,
    token: str | None,
    workers: int = 1,
    threads: int = 8,
    announce: Callable[[str], object] | None = None,
    **bounds: int | float,
) -> None:
    """Serve the receiver on ``host:port`` until SIGTERM or SIGINT (gunicorn: graceful stop).

    ``announce`` gets one line saying where it listens and which store it writes (once the store opened).

    Raises:
        CollectError: no token is configured.
        StoreError: the store cannot be opened (checked here, before any worker starts).
    """
    checked = receiver_from_env(store, token, **bounds).store  # the token and the store, checked once
    where = checked.path
    checked.close()
    if announce is not None:
        announce(
            f"replaygate collect: OTLP/HTTP on http://{host}:{port}/v1/traces, feedback on /v1/feedback, "
            f"writing to {where} ({workers} worker(s) x {threads} threads)"
        )

    def make_app() -> Any:
        return create_collect_app(receiver_from_env(store, token, **bounds))

    settings: dict[str, Any] = {
        "bind": [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"],
        "workers": workers,
        "threads": threads,
        "worker_class": "gthread",
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "replaygate-collect",
        "control_socket_disable": True,  # no socket in ~/.gunicorn shared by every instance
        # a request waiting for a write slot answers 429 within the receiver's own wait: no worker hangs
        "timeout": 120,
        "graceful_timeout": 30,
    }
    _CollectServer(settings, make_app).run()
