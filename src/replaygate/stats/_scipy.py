"""``scipy.stats``, imported on first use: a command that only reads a policy or a scenario never loads it.

``replaygate run --policy`` validates the gate policy through :mod:`replaygate.gate`, whose import pulls in
these statistics modules; scipy (a quarter of a second to import) loads only when a test is computed.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["scipy_stats"]


def scipy_stats() -> ModuleType:
    """The ``scipy.stats`` module (imported once, then from ``sys.modules``)."""
    return importlib.import_module("scipy.stats")
