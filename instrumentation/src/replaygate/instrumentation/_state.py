"""Where the decorators look their tracer up at call time (so ``configure`` may come after import)."""

from __future__ import annotations

import threading
import weakref

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from replaygate.instrumentation._export import Pipeline, Slot
from replaygate.instrumentation.version import __version__

__all__ = ["SCOPE", "STATE", "State"]

SCOPE = "replaygate.instrumentation"


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
        self.owns_global = False
        self.max_chars = 32768
        self.shutdown_timeout_s = 5.0
        #: exporter name -> where it sends spans, and the store's absolute path (for ``health()``)
        self.destinations: dict[str, str] = {}
        self.store_path: str | None = None
        self._global_real = False

    def active_tracer(self) -> trace.Tracer | None:
        """The tracer to use now, or None when no SDK provider exists anywhere (then spans cost nothing)."""
        if self.configured or self._global_real:
            return self.tracer
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
        self._global_real = True  # the global provider can be set only once
        return self.tracer


STATE = State()
