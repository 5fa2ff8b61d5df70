"""The ``replaygate collect`` application: the receiver's blueprint on its own Flask app."""

from __future__ import annotations

import os

from flask import Flask

from replaygate.collect._errors import CollectError
from replaygate.collect._receiver import Receiver, collect_blueprint
from replaygate.store import TraceStore

__all__ = ["TOKEN_ENV", "create_collect_app", "receiver_from_env"]

TOKEN_ENV = "REPLAYGATE_COLLECT_TOKEN"


def receiver_from_env(store: str | None = None, token: str | None = None, **bounds: int | float) -> Receiver:
    """A receiver on ``store`` (None: ``REPLAYGATE_STORE``) with ``token`` (None: the environment).

    Raises:
        CollectError: no token is configured.
    """
    token = token or os.environ.get(TOKEN_ENV) or ""
    if not token:
        raise CollectError(
            f"replaygate collect needs a bearer token: set {TOKEN_ENV} (agents send it as "
            "OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer <token>')"
        )
    return Receiver(TraceStore(store), token=token, **bounds)  # type: ignore[arg-type]


def create_collect_app(receiver: Receiver) -> Flask:
    """A Flask app serving only the receiver (``/v1/traces``, ``/v1/feedback``, ``/v1/collect/health``)."""
    app = Flask("replaygate.collect")
    app.config["MAX_CONTENT_LENGTH"] = receiver.max_body_bytes
    app.register_blueprint(collect_blueprint(receiver))
    return app
