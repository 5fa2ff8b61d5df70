"""The agent span: what ``@trace_agent`` records, and the marks set on the innermost active agent span.

The run of one agent call lives in the OpenTelemetry context (beside its span) so that ``mark_*`` and
``annotate_agent`` find the innermost agent from any helper, thread (with the executor helper) or task.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import get_current
from opentelemetry.trace import SpanKind, Status, StatusCode
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._encoding import limit_text, text_of, to_json
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._reasons import FAILURE_REASONS
from replaygate.instrumentation._state import STATE

__all__ = [
    "AGENT_KEY",
    "AgentRun",
    "AgentSpec",
    "annotate_agent",
    "current_agent",
    "current_trace_id",
    "mark_clarification",
    "mark_escalation",
    "mark_failure",
    "output_text",
    "record_error",
]

AGENT_KEY = otel_context.create_key("replaygate.agent")
#: The context key the OpenTelemetry API keeps the current span under (read once through its public API).
_SPAN_KEY = next(iter(trace.set_span_in_context(trace.INVALID_SPAN, otel_context.Context())))
_MISSING: Any = object()
_OUTPUT_VALUE = sc.OI_OUTPUT_VALUE
_ENDED_CONTEXT = otel_context.Context()
_INPUT_NAMES = ("message", "question", "input", "turns", "query", "prompt", "user_message", "text")
_SESSION_NAMES = ("session_id", "conversation_id")
_USER_NAMES = ("user_id",)
_AGENT_REASONS = tuple(r for r in FAILURE_REASONS if r != "negative_feedback")


def _cancelled(exc: BaseException | None) -> bool:
    """Whether ``exc`` is asyncio's cancellation (asyncio never imported: nothing was cancelled by it)."""
    asyncio = sys.modules.get("asyncio")
    return exc is not None and asyncio is not None and isinstance(exc, asyncio.CancelledError)


class AgentSpec:
    """What ``@trace_agent`` knows about the function it wraps, computed once at decoration time."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        version: str | None,
        session_id_arg: str | None,
        user_id_arg: str | None,
        input_arg: str | None,
        provider: str | None = None,
    ) -> None:
        self.name = name or getattr(fn, "__name__", "agent")
        self.span_name = f"invoke_agent {self.name}"
        self.static: dict[str, Any] = {
            sc.OPERATION_NAME: "invoke_agent",
            sc.AGENT_NAME: self.name,
            sc.OI_SPAN_KIND: "AGENT",
            # No failure seen yet; finish() overwrites it only when there is one (one attribute less to
            # set on the common path, where the SDK's per-attribute cleaning is the main cost).
            sc.RG_FAILURE_REASONS: (),
        }
        if version is not None:
            self.static[sc.AGENT_VERSION] = str(version)
        if provider is not None:
            self.static[sc.PROVIDER_NAME] = str(provider)  # semconv: required on invoke_agent spans
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        self.positions = {n: i for i, n in enumerate(positional)}
        self.method_positions = {n: i - 1 for i, n in enumerate(positional) if i > 0}
        self.method_names = positional[1:]
        self.plain_names = positional
        self.input_name = input_arg or next((n for n in _INPUT_NAMES if n in self.names), None)
        self.session_names = (session_id_arg,) if session_id_arg else _SESSION_NAMES
        self.user_names = (user_id_arg,) if user_id_arg else _USER_NAMES
        self._ids = ((sc.OI_SESSION_ID, self.session_names), (sc.OI_USER_ID, self.user_names))

    def lookup(self, name: str, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        if name in kwargs:
            return kwargs[name]
        index = (self.positions if instance is None else self.method_positions).get(name)
        if index is not None and index < len(args):
            return args[index]
        return _MISSING

    def start_attributes(
        self, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], max_chars: int | None = None
    ) -> dict[str, Any]:
        """The span's attributes at start: the static ones, input text, session and user ids."""
        # Runs on every call: the argument lookups are inlined (lookup() is the same rule for one name).
        if max_chars is None:
            max_chars = STATE.max_chars
        attrs = self.static.copy()
        positions = self.positions if instance is None else self.method_positions
        count = len(args)
        text: str | None = None
        name = self.input_name
        if name is not None:
            if name in kwargs:
                value = kwargs[name]
            else:
                index = positions.get(name)
                value = args[index] if index is not None and index < count else _MISSING
            if value is _MISSING:
                text = self.input_text(instance, args, kwargs)
            elif type(value) is str and len(value) <= max_chars:
                text = value
            else:
                text = text_of(value, max_chars)
        else:
            text = self.input_text(instance, args, kwargs)
        if text is not None:
            attrs[sc.OI_INPUT_VALUE] = text  # gen_ai.input.messages is derived at export (_spancopy)
        for key, names in self._ids:
            for name in names:  # the first given, non-None one (session.id is gen_ai.conversation.id too)
                if name in kwargs:
                    value = kwargs[name]
                else:
                    index = positions.get(name)
                    if index is None or index >= count:
                        continue
                    value = args[index]
                if value is not None:
                    attrs[key] = value if type(value) is str else str(value)
                    break
        return attrs

    def input_text(self, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
        max_chars = STATE.max_chars
        if self.input_name is not None:
            value = self.lookup(self.input_name, instance, args, kwargs)
            if value is not _MISSING:
                if type(value) is str and len(value) <= max_chars:
                    return value
                return text_of(value, max_chars)
        skip = set(self.session_names) | set(self.user_names)
        names = self.plain_names if instance is None else self.method_names
        for i, value in enumerate(args):
            if isinstance(value, str) and (i >= len(names) or names[i] not in skip):
                return limit_text(value, max_chars)
        for key, value in kwargs.items():
            if isinstance(value, str) and key not in skip:
                return limit_text(value, max_chars)
        if not args and not kwargs:
            return None
        named: dict[str, Any] = {}
        for i, value in enumerate(args):
            named[names[i] if i < len(names) else f"arg{i}"] = value
        named.update(kwargs)
        return limit_text(to_json(named), max_chars)


def output_text(result: Any) -> str | None:
    """The answer as text: a string as is, a mapping's ``answer``, anything else as JSON; None stays None."""
    if result is None:
        return None
    if isinstance(result, str):
        return limit_text(result, STATE.max_chars)
    if isinstance(result, Mapping) and isinstance(result.get("answer"), str):
        return limit_text(result["answer"], STATE.max_chars)
    return text_of(result, STATE.max_chars)


def record_error(span: trace.Span, exc: BaseException) -> None:
    """Record an exception on a span and set its status to error (never raises)."""
    try:
        span.record_exception(exc)
        kind = type(exc)
        error_type = (
            kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        )
        span.set_attribute(sc.ERROR_TYPE, error_type)  # semconv: error.type on failed spans
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    except Exception as fault_exc:  # noqa: BLE001
        fault("recording an exception", fault_exc)


class AgentRun:
    """One agent call in progress: its span, its context, and the failure signals seen so far."""

    __slots__ = ("context", "ended", "escalated", "explicit", "max_chars", "span")

    def __init__(
        self, span: trace.Span, parent: otel_context.Context | None, max_chars: int | None = None
    ) -> None:
        self.span = span
        #: The text bound in force when the call started.
        self.max_chars = STATE.max_chars if max_chars is None else max_chars
        self.escalated = False
        self.explicit = False
        self.ended = False
        # One context holding both the span and this run (what set_span_in_context + set_value give).
        values = dict(get_current() if parent is None else parent)
        values[_SPAN_KEY] = span
        values[AGENT_KEY] = self
        self.context = otel_context.Context(values)

    @classmethod
    def start(
        cls,
        spec: AgentSpec,
        instance: Any,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        parent: otel_context.Context | None = None,
    ) -> AgentRun | None:
        """Start the agent span, or return None when tracing is off (no SDK provider anywhere)."""
        tracer, max_chars = STATE.active_tracer_and_limit()
        if tracer is None:
            return None
        attrs = spec.start_attributes(instance, args, kwargs, max_chars)
        span = tracer.start_span(spec.span_name, parent, SpanKind.INTERNAL, attrs)
        return cls(span, parent, max_chars)

    def finish(
        self, output: str | None, exc: BaseException | None = None, *, closed_early: bool = False
    ) -> None:
        """Record the outcome and end the span (once; never raises)."""
        if self.ended:
            return
        self.ended = True
        # The context holds this run: drop it so the pair is freed now, not by the cycle collector
        # (a cycle per call made the collector run often and keep every span alive until it did).
        self.context = _ENDED_CONTEXT
        if (
            exc is None
            and output
            and not closed_early
            and not self.escalated
            and not self.explicit
            and not output.isspace()
        ):
            # The common path: an answer, no failure signal (the reasons stay the () set at start).
            span = self.span
            try:
                span.set_attribute(_OUTPUT_VALUE, output)
            except Exception as fault_exc:  # noqa: BLE001
                fault("finishing the agent span", fault_exc)
            try:
                span.end()
            except Exception as fault_exc:  # noqa: BLE001
                fault("ending the agent span", fault_exc)
            return
        try:
            reasons: set[str] = set()
            attrs: dict[str, Any] = {}
            if _cancelled(exc):
                # Cancelled from outside (client gone, timeout, shutdown): not the agent's failure.
                attrs[sc.RG_CANCELLED] = True
                closed_early = True
                exc = None
            if exc is not None:
                record_error(self.span, exc)
                reasons.add("exception")
            if output is not None:
                attrs[sc.OI_OUTPUT_VALUE] = output  # gen_ai.output.messages is derived at export
            if exc is None and not closed_early and (output is None or not output.strip()):
                reasons.add("empty_answer")
            if closed_early:
                attrs[sc.RG_STREAM_CLOSED_EARLY] = True
            if self.escalated:
                reasons.add("escalation")
            if self.explicit:
                reasons.add("explicit")
            if reasons:  # else the () set at start stands
                attrs[sc.RG_FAILURE_REASONS] = tuple(r for r in _AGENT_REASONS if r in reasons)
            self.span.set_attributes(attrs)
        except Exception as fault_exc:  # noqa: BLE001
            fault("finishing the agent span", fault_exc)
        finally:
            self._end()

    def _end(self) -> None:
        try:
            self.span.end()
        except Exception as fault_exc:  # noqa: BLE001
            fault("ending the agent span", fault_exc)


def current_agent() -> AgentRun | None:
    """The innermost agent call running in this context, if any."""
    run = otel_context.get_value(AGENT_KEY)
    return run if isinstance(run, AgentRun) and not run.ended else None


def annotate_agent(attributes: Mapping[str, Any]) -> bool:
    """Set ``attributes`` on the innermost active agent span; never raises.

    Returns:
        True when an agent span was there to receive them.
    """
    try:
        run = current_agent()
        if run is None:
            return False
        run.span.set_attributes(dict(attributes))
        return True
    except Exception as exc:  # noqa: BLE001
        fault("annotate_agent", exc)
        return False


def mark_escalation(reason: str | None = None) -> None:
    """Mark the current agent call as escalated to a human (a failure-candidate signal)."""
    run = current_agent()
    if run is not None:
        run.escalated = True
        attrs: dict[str, Any] = {sc.RG_ESCALATION: True}
        if reason:
            attrs[sc.RG_ESCALATION_REASON] = str(reason)
        annotate_agent(attrs)


def mark_clarification() -> None:
    """Mark that the agent asked the user a clarifying question."""
    annotate_agent({sc.RG_CLARIFICATION: True})


def mark_failure(reason: str | None = None) -> None:
    """Mark the current agent call as failed (reason ``explicit`` in the failure inbox)."""
    run = current_agent()
    if run is not None:
        run.explicit = True
        annotate_agent({sc.RG_FAILURE_REASON: str(reason)} if reason else {})


def current_trace_id() -> str | None:
    """The current trace id as 32 lowercase hex digits, or None outside a (recording or sampled) span."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x")
