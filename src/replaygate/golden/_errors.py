"""Errors of the golden-set lifecycle."""

from replaygate.instrumentation import ReplaygateError

__all__ = ["GoldenError"]


class GoldenError(ReplaygateError):
    """A golden-set operation was refused or failed; the message says why and what to do."""
