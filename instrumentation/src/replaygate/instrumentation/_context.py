"""Carrying the tracing context into threads (``contextvars`` do not follow work into an executor)."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["run_in_context", "wrap_for_executor"]

P = ParamSpec("P")
R = TypeVar("R")


def run_in_context(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Call ``fn`` now in a copy of the current context (``contextvars.copy_context().run``).

    Context changes made by ``fn`` stay inside the copy. To run work on another thread, wrap it with
    :func:`wrap_for_executor` in the submitting thread instead.
    """
    return contextvars.copy_context().run(fn, *args, **kwargs)


def wrap_for_executor(fn: Callable[P, R]) -> Callable[P, R]:
    """Capture the current context now; each call of the result runs ``fn`` in a fresh copy of it.

    Use it when handing work to a thread, e.g. ``pool.submit(wrap_for_executor(fn), x)`` or
    ``loop.run_in_executor(None, wrap_for_executor(fn), x)``: spans started by ``fn`` become children of
    the span current at wrap time, and ``mark_*`` reach the agent that submitted the work.
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return captured.copy().run(fn, *args, **kwargs)

    return run
