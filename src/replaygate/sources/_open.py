"""``--source``: where ``failures``, ``traces``, ``trace`` and ``promote`` read traces.

``store`` (the default; ``--store``/``REPLAYGATE_STORE``), ``phoenix`` or ``langfuse`` (their own
environment variables), ``phoenix:URL`` / ``langfuse:URL`` to name the server, or a store URL/path
(``sqlite:///…``). A bare ``http(s)://`` URL is refused: say which tool it is.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from replaygate.instrumentation import TraceRecord, TraceStore

from replaygate.sources._errors import SourceError
from replaygate.sources._langfuse import LangfuseSource
from replaygate.sources._phoenix import PhoenixSource

__all__ = ["SOURCE_KINDS", "TraceSource", "open_source", "source_kind"]

SOURCE_KINDS = ("store", "phoenix", "langfuse")


class TraceSource(Protocol):
    """What the inbox, the trace view and promotion read: the embedded store, Phoenix or Langfuse."""

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]: ...

    def failures(
        self, reasons: Any = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]: ...

    def session_traces(self, session_id: str) -> list[TraceRecord]: ...

    def get_trace(self, trace_id: str) -> TraceRecord: ...

    def resolve_trace_id(self, prefix: str) -> str: ...

    def close(self) -> None: ...


def source_kind(spec: str | None) -> str:
    """``store``, ``phoenix`` or ``langfuse`` for a ``--source`` value (None is the store)."""
    if spec is None:
        return "store"
    head = spec.split(":", 1)[0].strip().lower()
    if head in SOURCE_KINDS:
        return head
    if head in ("http", "https"):
        raise SourceError(
            f"--source {spec!r}: say which tool serves that URL: phoenix:{spec} or langfuse:{spec}"
        )
    return "store"


def open_source(spec: str | None, *, store: str | os.PathLike[str] | None = None) -> TraceSource:
    """Open the trace source a ``--source`` value names (the caller closes it).

    Raises:
        SourceError: an unknown kind, a bare URL, or missing credentials.
        StoreError: the embedded store cannot be opened.
    """
    kind = source_kind(spec)
    rest = spec.split(":", 1)[1] if spec and ":" in spec and kind != "store" else None
    if kind == "phoenix":
        return PhoenixSource(rest or None)
    if kind == "langfuse":
        return LangfuseSource(rest or None)
    target: str | os.PathLike[str] | None = store
    if spec and spec.strip().lower() != "store":
        target = spec.split(":", 1)[1] if spec.lower().startswith("store:") else spec
    return TraceStore(target, create=False)
