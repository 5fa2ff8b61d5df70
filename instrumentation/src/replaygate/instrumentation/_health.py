"""Process-wide health counters of the instrumentation, and the "log a fault once" rule.

Counters survive ``configure`` calls (they describe the process, not one configuration) and are read
with ``health()``: dropped spans, export errors, instrumentation faults, redactions.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

__all__ = ["COUNTER_NAMES", "Health", "HEALTH", "fault", "logger"]

logger = logging.getLogger("replaygate.instrumentation")

#: Every counter ``health()`` reports, always present (zero when nothing happened).
COUNTER_NAMES = (
    "exported_spans",
    "dropped_spans",
    "failed_spans",
    "export_errors",
    "instrumentation_faults",
    "redactions",
    "hashed_spans",
)


class Health:
    """Thread-safe counters, in total and per exporter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total: Counter[str] = Counter()
        self._per_exporter: dict[str, Counter[str]] = {}
        self._logged: set[str] = set()

    def add(self, counter: str, n: int = 1, exporter: str | None = None) -> None:
        if n == 0:
            return
        with self._lock:
            self._total[counter] += n
            if exporter is not None:
                self._per_exporter.setdefault(exporter, Counter())[counter] += n

    def first_time(self, key: str) -> bool:
        """Return True the first time ``key`` is seen (to log a recurring problem once)."""
        with self._lock:
            if key in self._logged:
                return False
            self._logged.add(key)
            return True

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = {name: self._total.get(name, 0) for name in COUNTER_NAMES}
            out["exporters"] = {
                name: {c: counts.get(c, 0) for c in COUNTER_NAMES if c != "instrumentation_faults"}
                for name, counts in sorted(self._per_exporter.items())
            }
        return out


HEALTH = Health()


def fault(where: str, exc: BaseException) -> None:
    """Count an instrumentation fault and log it the first time it happens at ``where``."""
    HEALTH.add("instrumentation_faults")
    try:
        if HEALTH.first_time(f"fault:{where}"):
            logger.warning(
                "replaygate instrumentation fault in %s (the agent is unaffected; further faults here are "
                "counted in health() but not logged): %s: %s",
                where,
                type(exc).__name__,
                exc,
                exc_info=exc,
            )
    except Exception:  # noqa: BLE001 - logging itself must never reach the agent
        pass
