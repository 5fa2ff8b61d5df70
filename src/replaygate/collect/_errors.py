"""The receiver's errors: ``CollectError`` ▸ ``BadRequest`` (the request itself is wrong: 400)."""

from __future__ import annotations

from replaygate.instrumentation import ReplaygateError

__all__ = ["BadRequest", "CollectError"]


class CollectError(ReplaygateError):
    """Something ``replaygate collect`` cannot do (bad settings, a store it cannot open)."""


class BadRequest(CollectError):
    """An OTLP or feedback request that cannot be read: answered with 400 and this message."""
