"""Where the decorators look their tracer up at call time (so ``configure`` may come after import).

The active :class:`Instrumentation` handle is found through a context variable (``with handle.activate():``),
then the default handle (the latest module-level ``configure``), then the global provider.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from replaygate.instrumentation._health import HEALTH, logger
from replaygate.instrumentation.version import __version__

if TYPE_CHECKING:  # the export pipeline is loaded by ``configure``, not by the decorators
    from opentelemetry.sdk.trace import TracerProvider
    from replaygate.instrumentation._export import Pipeline, Slot

__all__ = ["ACTIVE", "SCOPE", "STATE", "Instrumentation", "State"]

SCOPE = "replaygate.instrumentation"

#: Logged once per process, the first time a traced call finds nothing to record it.
NOT_RECORDED = (
    "replaygate: a traced call ran but nothing records it: configure() was not called and this process "
    "has no OpenTelemetry tracer provider. Call replaygate.instrumentation.configure() once at start-up "
    "(the embedded store by default, REPLAYGATE_STORE or an OTLP endpoint). This warning is given once."
)


class Instrumentation:
    """One ``configure`` call's wiring: its provider, tracer, export pipeline and settings.

    ``configure`` returns it; the module-level ``health``/``shutdown`` act on the default one. Decorators
    and span helpers use the handle made active in the current context (``with handle.activate():``,
    asyncio tasks and ``wrap_for_executor`` carry it), else the default one.
    """

    def __init__(
        self, *, provider: TracerProvider, pipeline: Pipeline, tracer: trace.Tracer, settings: Any
    ) -> None:
        self.provider = provider
        self.pipeline: Pipeline | None = pipeline
        self.tracer = tracer
        self.settings = settings
        self.max_chars: int = settings.max_chars
        self.shutdown_timeout_s: float = settings.shutdown_timeout_s

    @contextmanager
    def activate(self) -> Iterator[Instrumentation]:
        """Make this handle the one decorators and span helpers use in the current context."""
        token = ACTIVE.set(self)
        try:
            yield self
        finally:
            ACTIVE.reset(token)

    def health(self) -> dict[str, Any]:
        """The process's counters, with this handle's queue and exporters."""
        snapshot = HEALTH.snapshot()
        pipeline = self.pipeline
        snapshot["queued_spans"] = sum(s.pending() for s in pipeline.sinks) if pipeline else 0
        snapshot["configured"] = pipeline is not None
        snapshot["active_exporters"] = [s.name for s in pipeline.sinks] if pipeline else []
        return snapshot

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Detach this handle's pipeline, flush it within ``timeout`` seconds and stop its exporters."""
        with STATE.lock:
            pipeline, self.pipeline = self.pipeline, None
            if pipeline is not None:
                for slot in STATE.slots.values():
                    slot.remove(pipeline)
            if STATE.default is self:
                STATE.pipeline = None
        return True if pipeline is None else pipeline.shutdown(timeout)


ACTIVE: ContextVar[Instrumentation | None] = ContextVar("replaygate_instrumentation", default=None)


class State:
    """The process-wide instrumentation state; ``configure`` replaces its fields under ``lock``."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        #: The tracer of the latest configure call (a ProxyTracer on the global provider before any).
        self.tracer: trace.Tracer = trace.get_tracer(SCOPE, __version__)
        self.configured = False
        self.provider: TracerProvider | None = None
        self.pipeline: Pipeline | None = None
        self.slots: weakref.WeakKeyDictionary[TracerProvider, Slot] = weakref.WeakKeyDictionary()
        self.default: Instrumentation | None = None
        self._max_chars = 32768
        self.shutdown_timeout_s = 5.0
        #: exporter name -> where it sends spans, and the store's absolute path (for ``health()``)
        self.destinations: dict[str, str] = {}
        self.store_path: str | None = None
        self._global_real = False
        self._warned_unrecorded = False

    @property
    def max_chars(self) -> int:
        """The text bound of the active handle (or of the latest ``configure``)."""
        handle = ACTIVE.get()
        return handle.max_chars if handle is not None else self._max_chars

    @max_chars.setter
    def max_chars(self, value: int) -> None:
        self._max_chars = value

    def active_tracer_and_limit(self) -> tuple[trace.Tracer | None, int]:
        """``active_tracer()`` and ``max_chars`` at once (one context-variable read on the hot path)."""
        handle = ACTIVE.get()
        if handle is not None:
            return handle.tracer, handle.max_chars
        if self.configured or self._global_real:
            return self.tracer, self._max_chars
        return self.active_tracer(), self._max_chars

    def active_tracer(self) -> trace.Tracer | None:
        """The tracer to use now, or None when no SDK provider exists anywhere (then spans cost nothing)."""
        handle = ACTIVE.get()
        if handle is not None:
            return handle.tracer
        if self.configured or self._global_real:
            return self.tracer
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            if not self._warned_unrecorded:  # a silent no-op would look like an agent that never ran
                self._warned_unrecorded = True
                logger.warning(NOT_RECORDED)
            return None
        self._global_real = True  # the global provider can be set only once
        return self.tracer


STATE = State()
