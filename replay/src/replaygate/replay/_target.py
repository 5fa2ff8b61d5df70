"""Targets: what runs the agent for one attempt (a Python callable or an HTTP endpoint).

A target receives the turns of one session, the scenario context and the candidate's configuration, and
returns the agent's final answer: a string, or a mapping with ``answer`` (str), optional ``label`` (str)
and optional ``messages`` (a list). Anything else is garbage and makes the attempt an ``error``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from replaygate.replay._daemon_pool import DaemonThreadPool
from replaygate.replay._errors import TargetError
from replaygate.replay._http_target import HttpTarget
from replaygate.replay._target_types import Target, TargetOutput, parse_target_output

__all__ = [
    "CallableTarget",
    "Target",
    "TargetOutput",
    "load_target",
    "parse_target_output",
]


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """Return how many positional parameters ``fn`` takes (None when it takes ``*args``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    count = 0
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


class CallableTarget:
    """A Python callable ``fn(turns, context, config)`` (or ``fn(turns, context)``), sync or async.

    The replay runner calls a sync callable from its own threads (:meth:`call_blocking`, one daemon
    thread per slot of concurrency: see ``replaygate.replay._threaded``); :meth:`call` runs it on eight
    threads of the same kind of pool (``replaygate.replay._daemon_pool``). Either way the caller's
    context is copied, so the agent's spans join the attempt's trace.
    """

    def __init__(self, fn: Callable[..., Any], spec: str) -> None:
        self.fn = fn
        self.spec = spec
        # an object whose class has ``async def __call__`` is async too
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        arity = _positional_arity(fn)
        self.takes_config = arity is None or arity >= 3
        if arity is not None and arity < 2:
            raise TargetError(
                f"target {spec}: takes {arity} positional parameter(s); a target takes "
                "(turns, context) or (turns, context, config)"
            )
        self.pool: DaemonThreadPool | None = None

    def _args(self, turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any]) -> list[Any]:
        args: list[Any] = [list(turns), dict(context)]
        if self.takes_config:
            args.append(dict(config))
        return args

    async def call(
        self, turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any], *, session_id: str
    ) -> TargetOutput:
        args = self._args(turns, context, config)
        if self.is_async:
            result = await self.fn(*args)
        else:
            if self.pool is None:
                self.pool = DaemonThreadPool(8)
            result = await self.pool.run(contextvars.copy_context().run, self.fn, *args)
            if inspect.isawaitable(result):
                result = await result
        return parse_target_output(result)

    def call_blocking(
        self,
        turns: Sequence[str],
        context: Mapping[str, Any],
        config: Mapping[str, Any],
        *,
        session_id: str,
        loop: asyncio.AbstractEventLoop | None = None,
        on_awaitable: Callable[[concurrent.futures.Future[Any]], None] | None = None,
    ) -> TargetOutput:
        """Call a sync callable in the calling thread (the runner's thread for this slot of concurrency).

        A sync callable that returns an awaitable (an object with an ``async def __call__``, a lambda
        around a coroutine function) has it run on ``loop``, in this thread's context, and waits for it;
        ``on_awaitable`` receives the future first, so the runner can cancel it (a timeout, the end of the
        run).
        """
        result = self.fn(*self._args(turns, context, config))
        if type(result) is not str and inspect.isawaitable(result):  # a str answer: the usual, checked fast
            if loop is None:
                raise TargetError(f"target {self.spec}: returned an awaitable where no event loop runs")
            future = asyncio.run_coroutine_threadsafe(_awaited(result), loop)
            if on_awaitable is not None:
                on_awaitable(future)
            result = future.result()
        return parse_target_output(result)

    async def aclose(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _import_callable(spec: str) -> Callable[..., Any]:
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise TargetError(f"target {spec!r}: expected 'module:function' or an http(s):// URL")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # like `python -m`: a project's own modules are importable
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise TargetError(
            f"target {spec}: cannot import module {module_name!r} ({type(exc).__name__}: {exc}); "
            "check the name and that it is importable from the current directory"
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(
                f"target {spec}: module {module_name!r} has no attribute {attr_path!r}"
            ) from None
    if not callable(obj):
        raise TargetError(f"target {spec}: {attr_path!r} is not callable")
    fn: Callable[..., Any] = obj
    return fn


def load_target(
    spec: str | Callable[..., Any] | Target,
    *,
    timeout_s: float = 60.0,
    max_retries: int = 3,
) -> Target:
    """Build a target from ``module:function``, an ``http(s)://`` URL, a callable, or a target.

    Args:
        spec: the target: ``pkg.module:function``, ``http://host/path``, a Python callable or a
            ready :class:`Target`.
        timeout_s: per-request timeout of an HTTP target.
        max_retries: retries of an HTTP target on 429, 5xx and connection errors.

    Raises:
        TargetError: the module or function cannot be found, or the callable has the wrong signature.
    """
    if isinstance(spec, str):
        if spec.startswith(("http://", "https://")):
            return HttpTarget(spec, timeout_s=timeout_s, max_retries=max_retries)
        return CallableTarget(_import_callable(spec), spec)
    if isinstance(spec, Target) and not callable(spec):
        return spec
    if callable(spec):
        name = f"{getattr(spec, '__module__', '?')}:{getattr(spec, '__qualname__', repr(spec))}"
        return CallableTarget(spec, name)
    raise TargetError(f"target {spec!r}: expected 'module:function', an http(s):// URL or a callable")
