"""Decorator forms of the child spans: ``@trace_tool``, ``@trace_llm``, ``@trace_retriever``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from replaygate.instrumentation._encoding import mapping_get
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._spans import (
    LlmHandle,
    RetrievalHandle,
    SpanScope,
    ToolHandle,
    llm_call,
    retrieval,
    tool_call,
)

__all__ = ["trace_llm", "trace_retriever", "trace_tool"]

F = TypeVar("F", bound=Callable[..., Any])
Opener = Callable[[Any, tuple[Any, ...], dict[str, Any]], SpanScope[Any]]
OnResult = Callable[[Any, Any], None]


class _Params:
    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        self.names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def bind(self, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        names = self.names[1:] if instance is not None else self.names
        bound = {names[i] if i < len(names) else f"arg{i}": v for i, v in enumerate(args)}
        bound.update(kwargs)
        return bound


def _target(func: Callable[..., Any]) -> Callable[..., Any]:
    return func.__func__ if isinstance(func, staticmethod | classmethod) else func


def _wrap(func: F, opener: Opener, on_result: OnResult) -> F:
    import wrapt  # noqa: PLC0415 - lazy (wrapt 2 imports asyncio): loaded when a function is decorated

    def open_scope(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpanScope[Any] | None:
        try:
            return opener(instance, args, kwargs)
        except Exception as exc:  # noqa: BLE001
            fault("preparing a span", exc)
            return None

    def finish(handle: Any, result: Any) -> None:
        try:
            on_result(handle, result)
        except Exception as exc:  # noqa: BLE001
            fault("recording a result", exc)

    if inspect.iscoroutinefunction(_target(func)):

        async def call(
            wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            scope = open_scope(instance, args, kwargs)
            if scope is None:
                return await wrapped(*args, **kwargs)
            with scope as handle:
                result = await wrapped(*args, **kwargs)
                finish(handle, result)
            return result

        def async_wrapper(
            wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            return call(wrapped, instance, args, kwargs)

        return cast(F, wrapt.FunctionWrapper(func, async_wrapper))

    def wrapper(
        wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        scope = open_scope(instance, args, kwargs)
        if scope is None:
            return wrapped(*args, **kwargs)
        with scope as handle:
            result = wrapped(*args, **kwargs)
            finish(handle, result)
        return result

    return cast(F, wrapt.FunctionWrapper(func, wrapper))


def trace_tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None) -> Any:
    """Trace each call of a tool function as an ``execute_tool {name}`` span (arguments and result as JSON).

    Args:
        fn: the function (when used bare).
        name: the tool name (default: the function name).
    """

    def decorate(func: F) -> F:
        params = _Params(_target(func))
        tool_name = str(name or getattr(_target(func), "__name__", "tool"))

        def opener(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpanScope[Any]:
            return tool_call(tool_name, params.bind(instance, args, kwargs))

        def on_result(handle: ToolHandle, result: Any) -> None:
            handle.set_result(result)

        return _wrap(func, opener, on_result)

    return decorate(fn) if fn is not None else decorate


def _response_text(result: Any) -> Any:
    if isinstance(result, str):
        return result
    choices = mapping_get(result, "choices")
    if isinstance(choices, list | tuple) and choices:
        message = mapping_get(choices[0], "message")
        content = mapping_get(message, "content") if message is not None else mapping_get(choices[0], "text")
        if content is not None:
            return content
    content = mapping_get(result, "content", "output_text", "text")
    if isinstance(content, list | tuple):
        parts = [mapping_get(p, "text") for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return content


def trace_llm(
    fn: Callable[..., Any] | None = None, /, *, model: str | None = None, provider: str | None = None
) -> Any:
    """Trace each call of a model-calling function as a ``chat {model}`` span.

    Token usage, response model and output text are read from OpenAI- or Anthropic-shaped responses
    (``usage.prompt_tokens``/``input_tokens``, ``choices[0].message.content``, ``content[].text``).

    Args:
        fn: the function (when used bare).
        model: the model (default: the call's ``model`` argument).
        provider: ``gen_ai.provider.name``.
    """

    def decorate(func: F) -> F:
        params = _Params(_target(func))

        def opener(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpanScope[Any]:
            bound = params.bind(instance, args, kwargs)
            call_model = model or bound.get("model")
            messages = bound.get("messages", bound.get("prompt"))
            return llm_call(
                str(call_model) if call_model is not None else None, provider, input_messages=messages
            )

        def on_result(handle: LlmHandle, result: Any) -> None:
            usage = mapping_get(result, "usage")
            if usage is not None:
                handle.set_usage(
                    mapping_get(usage, "input_tokens", "prompt_tokens"),
                    mapping_get(usage, "output_tokens", "completion_tokens"),
                )
            response_model = mapping_get(result, "model") if not isinstance(result, str) else None
            if isinstance(response_model, str):
                handle.set_response_model(response_model)
            text = _response_text(result)
            if text is not None:
                handle.set_output(text)

        return _wrap(func, opener, on_result)

    return decorate(fn) if fn is not None else decorate


def trace_retriever(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    data_source: str | None = None,
    threshold: float | None = None,
    query_arg: str | None = None,
) -> Any:
    """Trace a function that returns retrieved chunks as a ``retrieval {data_source}`` span.

    Args:
        fn: the function (when used bare).
        data_source: the index or collection searched.
        threshold: the similarity threshold it applies, if any.
        query_arg: the parameter holding the query (default ``query``, else the first string argument).
    """

    def decorate(func: F) -> F:
        params = _Params(_target(func))

        def opener(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> SpanScope[Any]:
            bound = params.bind(instance, args, kwargs)
            query = bound.get(query_arg or "query")
            if query is None:
                query = next((v for v in bound.values() if isinstance(v, str)), None)
            return retrieval(query, data_source=data_source, threshold=threshold)

        def on_result(handle: RetrievalHandle, result: Any) -> None:
            # Only materialized sequences: consuming an iterator would take it from the caller.
            if isinstance(result, list | tuple):
                handle.record(result)

        return _wrap(func, opener, on_result)

    return decorate(fn) if fn is not None else decorate
