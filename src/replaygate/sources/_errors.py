"""The trace-source exception: a source that cannot be reached, refused us, or answered garbage."""

from __future__ import annotations

from replaygate.instrumentation import ReplaygateError

__all__ = ["SourceError"]


class SourceError(ReplaygateError):
    """A trace source (Langfuse, Phoenix) failed: unreachable, refused, rate-limited, or answered garbage.

    Also a trace that is not there, or a reply that is not what its API documents.

    The message names the source, its URL and what to do; never an empty inbox instead of an error.
    """
