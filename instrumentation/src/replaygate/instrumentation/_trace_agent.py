"""``@trace_agent``: one span per agent call, for sync, async, generator and async-generator functions.

Streams never keep the span's context attached across a ``yield`` (opentelemetry-python#2606): the span
starts with an explicit parent (the context at call time) and its context is made current only around
each step of the wrapped generator, so a stream consumed or closed from another task or thread ends its
span cleanly. Agent exceptions propagate unchanged; instrumentation faults are caught and counted.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry.context import attach, detach
from replaygate.instrumentation._agent import AgentRun, AgentSpec, output_text
from replaygate.instrumentation._encoding import to_json
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._state import STATE

__all__ = ["trace_agent"]

F = TypeVar("F", bound=Callable[..., Any])


def _start(
    spec: AgentSpec,
    instance: Any,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    parent: otel_context.Context | None = None,
) -> AgentRun | None:
    try:
        return AgentRun.start(spec, instance, args, kwargs, parent)
    except Exception as exc:  # noqa: BLE001 - never reach the agent
        fault("starting the agent span", exc)
        return None


def _attach(run: AgentRun) -> object | None:
    try:
        return otel_context.attach(run.context)
    except Exception as exc:  # noqa: BLE001
        fault("attaching the agent context", exc)
        return None


def _detach(token: object | None) -> None:
    if token is not None:
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001
            fault("detaching the agent context", exc)


def _output(result: Any) -> str | None:
    try:
        return output_text(result)
    except Exception as exc:  # noqa: BLE001
        fault("recording the agent output", exc)
        return None


class _Collected:
    """The items of a stream, joined when it ends (bounded by the text limit)."""

    __slots__ = ("items", "size", "strings")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.size = 0
        self.strings = True

    def add(self, item: Any) -> None:
        try:
            if self.size > STATE.max_chars:
                return
            self.items.append(item)
            if isinstance(item, str):
                self.size += len(item)
            else:
                self.strings = False
                self.size += 64
        except Exception as exc:  # noqa: BLE001
            fault("collecting the streamed output", exc)

    def text(self) -> str | None:
        try:
            if self.strings:
                return output_text("".join(self.items))
            return output_text(to_json(self.items))
        except Exception as exc:  # noqa: BLE001
            fault("joining the streamed output", exc)
            return None


def _sync_wrapper(spec: AgentSpec) -> Callable[..., Any]:
    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # The hot path of every traced call: helpers inlined, faults still caught and counted.
        try:
            run = AgentRun.start(spec, instance, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - never reach the agent
            fault("starting the agent span", exc)
            run = None
        if run is None:
            return wrapped(*args, **kwargs)
        try:
            token: object | None = attach(run.context)
        except Exception as exc:  # noqa: BLE001
            fault("attaching the agent context", exc)
            token = None
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            _detach(token)
            run.finish(None, exc)
            raise
        if token is not None:
            try:
                detach(token)  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001
                fault("detaching the agent context", exc)
        if type(result) is str and len(result) <= run.max_chars:
            run.finish(result)  # what output_text gives for a short string, without the call
        else:
            run.finish(_output(result))
        return result

    return wrapper


def _async_wrapper(spec: AgentSpec) -> Callable[..., Any]:
    async def call(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        run = _start(spec, instance, args, kwargs)
        if run is None:
            return await wrapped(*args, **kwargs)
        token = _attach(run)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            _detach(token)
            run.finish(None, exc)
            raise
        _detach(token)
        run.finish(_output(result))
        return result

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return call(wrapped, instance, args, kwargs)

    return wrapper


def _generator(
    spec: AgentSpec,
    inner: Generator[Any, Any, Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: otel_context.Context,
) -> Generator[Any, Any, Any]:
    run = _start(spec, instance, args, kwargs, parent)
    if run is None:
        return (yield from inner)
    collected = _Collected()
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        token = _attach(run)
        try:
            if thrown is not None:
                exc_in, thrown = thrown, None
                item = inner.throw(exc_in)
            else:
                item = inner.send(sent)
        except StopIteration as stop:
            _detach(token)
            run.finish(collected.text())
            return stop.value
        except BaseException as exc:
            _detach(token)
            run.finish(collected.text(), exc)
            raise
        _detach(token)
        collected.add(item)
        try:
            sent = yield item
        except GeneratorExit:
            token = _attach(run)
            try:
                inner.close()
            except BaseException as exc:
                _detach(token)
                run.finish(collected.text(), exc)
                raise
            _detach(token)
            run.finish(collected.text(), closed_early=True)
            raise
        except BaseException as exc:
            thrown, sent = exc, None


async def _async_generator(
    spec: AgentSpec,
    inner: AsyncGenerator[Any, Any],
    instance: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    parent: otel_context.Context,
) -> AsyncGenerator[Any, Any]:
    run = _start(spec, instance, args, kwargs, parent)
    collected = _Collected()
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        token = _attach(run) if run is not None else None
        try:
            if thrown is not None:
                exc_in, thrown = thrown, None
                item = await inner.athrow(exc_in)
            else:
                item = await inner.asend(sent)
        except StopAsyncIteration:
            _detach(token)
            if run is not None:
                run.finish(collected.text())
            return
        except BaseException as exc:
            _detach(token)
            if run is not None:
                run.finish(collected.text(), exc)
            raise
        _detach(token)
        if run is not None:
            collected.add(item)
        try:
            sent = yield item
        except GeneratorExit:
            token = _attach(run) if run is not None else None
            try:
                await inner.aclose()
            except BaseException as exc:
                _detach(token)
                if run is not None:
                    run.finish(collected.text(), exc)
                raise
            _detach(token)
            if run is not None:
                run.finish(collected.text(), closed_early=True)
            raise
        except BaseException as exc:
            thrown, sent = exc, None


def _generator_wrapper(spec: AgentSpec, is_async: bool) -> Callable[..., Any]:
    driver: Callable[..., Any] = _async_generator if is_async else _generator

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        # Creating the generator runs none of its body but checks the arguments now, as undecorated.
        inner = wrapped(*args, **kwargs)
        # The parent is the context of the call, not of whoever iterates later.
        return driver(spec, inner, instance, args, kwargs, otel_context.get_current())

    return wrapper


@overload
def trace_agent(fn: F, /) -> F: ...


@overload
def trace_agent(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    version: str | None = None,
    session_id_arg: str | None = None,
    user_id_arg: str | None = None,
    input_arg: str | None = None,
    provider: str | None = None,
) -> Callable[[F], F]: ...


def trace_agent(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    version: str | None = None,
    session_id_arg: str | None = None,
    user_id_arg: str | None = None,
    input_arg: str | None = None,
    provider: str | None = None,
) -> Any:
    """Trace each call of an agent entry point as an ``invoke_agent {name}`` span.

    Works bare (``@trace_agent``) or with options, on functions and methods, sync or async, plain or
    streaming (generators). The function's signature, docstring and ``inspect`` checks are kept.

    Args:
        fn: the function (when used bare).
        name: the agent name (default: the function name).
        version: the agent version recorded as ``gen_ai.agent.version``.
        session_id_arg: parameter holding the session/conversation id (default ``session_id`` or
            ``conversation_id`` when present).
        user_id_arg: parameter holding the user id (default ``user_id`` when present).
        input_arg: parameter holding the user message (default the first of ``message``, ``question``,
            ``input``, ``turns``, ``query``, ``prompt``; else the first string argument).
        provider: the model provider the agent calls, ``gen_ai.provider.name`` on its span (e.g. ``openai``).
    """

    def decorate(func: F) -> F:
        target = func.__func__ if isinstance(func, staticmethod | classmethod) else func
        spec = AgentSpec(
            target,
            name=name,
            version=version,
            session_id_arg=session_id_arg,
            user_id_arg=user_id_arg,
            input_arg=input_arg,
            provider=provider,
        )
        if inspect.isasyncgenfunction(target):
            wrapper = _generator_wrapper(spec, is_async=True)
        elif inspect.isgeneratorfunction(target):
            wrapper = _generator_wrapper(spec, is_async=False)
        elif inspect.iscoroutinefunction(target):
            wrapper = _async_wrapper(spec)
        else:
            wrapper = _sync_wrapper(spec)
        import wrapt  # noqa: PLC0415 - lazy (wrapt 2 imports asyncio): loaded when a function is decorated

        return cast(F, wrapt.FunctionWrapper(func, wrapper))

    if fn is not None:
        return decorate(fn)
    return decorate
