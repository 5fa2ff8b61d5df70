"""Child spans under an agent: retrieval, tool calls and LLM calls, as context managers.

Each helper starts its span as the current span, records an exception raised inside it (and lets it
propagate unchanged), and yields a handle whose methods never raise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Generic, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._agent import record_error
from replaygate.instrumentation._encoding import limit_text, mapping_get, message_json, text_of, to_json
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._state import STATE

__all__ = [
    "LlmHandle",
    "RetrievalHandle",
    "SpanScope",
    "ToolHandle",
    "llm_call",
    "normalize_documents",
    "record_retrieval",
    "retrieval",
    "tool_call",
]


class _Handle:
    __slots__ = ("span",)

    def __init__(self, span: trace.Span | None) -> None:
        self.span = span

    def _set(self, attrs: Mapping[str, Any]) -> None:
        if self.span is None:
            return
        try:
            self.span.set_attributes({k: v for k, v in attrs.items() if v is not None})
        except Exception as exc:  # noqa: BLE001
            fault(f"setting attributes on {type(self).__name__}", exc)


H = TypeVar("H", bound=_Handle)


class SpanScope(Generic[H]):
    """Context manager for one child span; ``attributes`` is only called when tracing is on."""

    def __init__(
        self,
        name: str,
        attributes: Callable[[], dict[str, Any]],
        handle: Callable[[trace.Span | None], H],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> None:
        self._name = name
        self._attributes = attributes
        self._make_handle = handle
        self._kind = kind
        self._span: trace.Span | None = None
        self._token: object | None = None
        self._context: otel_context.Context | None = None

    def __enter__(self) -> H:
        try:
            tracer = STATE.active_tracer()
            if tracer is not None:
                attrs = {k: v for k, v in self._attributes().items() if v is not None}
                self._span = tracer.start_span(self._name, kind=self._kind, attributes=attrs)
                self._context = trace.set_span_in_context(self._span)
                self._token = otel_context.attach(self._context)
        except Exception as exc:  # noqa: BLE001
            fault(f"starting span {self._name!r}", exc)
        return self._make_handle(self._span)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        span, token = self._span, self._token
        self._span = self._token = None
        try:
            # Held across a ``yield`` and closed from another task, the context cannot be restored (and
            # OTel would log "Failed to detach context"): detach only when ours is still the current one.
            if token is not None and otel_context.get_current() is self._context:
                otel_context.detach(token)  # type: ignore[arg-type]
            if span is not None:
                if exc is not None:
                    record_error(span, exc)
                span.end()
        except Exception as fault_exc:  # noqa: BLE001
            fault(f"ending span {self._name!r}", fault_exc)


def _float_or_none(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _count_or_none(value: Any, where: str) -> int | None:
    """A count the agent reported (tokens, filtered chunks) as an int; one that is not a count is a fault.

    The attribute is left out (None: not reported) and the fault counted in ``health()``: an agent's bad
    value never reaches the agent as an exception, and no made-up number is recorded.
    """
    if value is None:
        return None
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("not a whole number")
        count = int(value)
        if count < 0:
            raise ValueError("negative")
    except Exception as exc:  # noqa: BLE001 - whatever the value's __int__ raises stays here
        fault(where, exc)
        return None
    return count


def normalize_documents(documents: Iterable[Any], max_chars: int) -> list[dict[str, Any]]:
    """Documents as dicts ``{id, score, content, metadata, rank}`` (rank from 1), from dicts or objects."""
    out: list[dict[str, Any]] = []
    for rank, doc in enumerate(documents, start=1):
        metadata = mapping_get(doc, "metadata")
        metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
        doc_id = mapping_get(doc, "id", "doc_id", "document_id", "chunk_id")
        if doc_id is None:
            doc_id = metadata.get("id", f"rank-{rank}")
        text = mapping_get(doc, "text", "content", "page_content")
        entry: dict[str, Any] = {"id": str(doc_id), "rank": rank}
        score = _float_or_none(mapping_get(doc, "score", "similarity", "relevance_score"))
        if score is not None:
            entry["score"] = score
        if text is not None:
            entry["content"] = text_of(text, max_chars)
        if metadata:
            entry["metadata"] = json.loads(to_json(metadata))
        out.append(entry)
    return out


def _document_attributes(documents: Iterable[Any], filtered: int | None) -> dict[str, Any]:
    docs = normalize_documents(documents, STATE.max_chars)
    text = to_json(docs)
    attrs: dict[str, Any] = {
        sc.RETRIEVAL_DOCUMENTS: text,
        sc.OI_OUTPUT_VALUE: text,
    }  # output: Langfuse shows it
    for i, doc in enumerate(docs):
        attrs[sc.oi_document(i, sc.OI_DOCUMENT_ID)] = doc["id"]
        if "score" in doc:
            attrs[sc.oi_document(i, sc.OI_DOCUMENT_SCORE)] = doc["score"]
        if "content" in doc:
            attrs[sc.oi_document(i, sc.OI_DOCUMENT_CONTENT)] = doc["content"]
        if "metadata" in doc:
            attrs[sc.oi_document(i, sc.OI_DOCUMENT_METADATA)] = to_json(doc["metadata"])
    if filtered is not None:
        count = _count_or_none(filtered, "the retrieval's filtered count")
        if count is not None:
            attrs[sc.RG_RETRIEVAL_FILTERED] = count
    return attrs


class RetrievalHandle(_Handle):
    """Handle of a retrieval span: ``record(documents, filtered=None)``."""

    __slots__ = ()

    def record(self, documents: Iterable[Any], filtered: int | None = None) -> None:
        """Record the retrieved chunks in rank order, and how many the threshold filtered out."""
        if self.span is None:
            return
        try:
            self._set(_document_attributes(list(documents), filtered))
        except Exception as exc:  # noqa: BLE001
            fault("recording retrieved documents", exc)


def _retrieval_attributes(query: Any, data_source: str | None, threshold: float | None) -> dict[str, Any]:
    text = text_of(query, STATE.max_chars) if query is not None else None
    return {
        sc.OPERATION_NAME: "retrieval",
        sc.OI_SPAN_KIND: "RETRIEVER",
        sc.DATA_SOURCE_ID: data_source,
        sc.RG_RETRIEVAL_QUERY: text,
        sc.RETRIEVAL_QUERY_TEXT: text,
        sc.OI_INPUT_VALUE: text,
        sc.RG_RETRIEVAL_THRESHOLD: _float_or_none(threshold),
    }


def retrieval(
    query: Any, data_source: str | None = None, threshold: float | None = None
) -> SpanScope[RetrievalHandle]:
    """A ``retrieval {data_source}`` span around a search; call ``.record(documents)`` on what it yields.

    Args:
        query: the search query.
        data_source: the index or collection searched (``gen_ai.data_source.id``).
        threshold: the similarity threshold applied, if any.
    """
    name = f"retrieval {data_source}" if data_source else "retrieval"
    return SpanScope(
        name, lambda: _retrieval_attributes(query, data_source, threshold), RetrievalHandle, SpanKind.CLIENT
    )


def record_retrieval(
    query: Any,
    documents: Iterable[Any],
    *,
    data_source: str | None = None,
    threshold: float | None = None,
    filtered: int | None = None,
) -> None:
    """Record a finished retrieval as one span: the query and the chunks (dicts or objects) in rank order.

    Args:
        query: the search query.
        documents: chunks with ``id``, ``score``, ``text`` and optional ``metadata`` (keys or attributes).
        data_source: the index or collection searched.
        threshold: the similarity threshold applied, if any.
        filtered: how many chunks the threshold removed.
    """
    with retrieval(query, data_source=data_source, threshold=threshold) as handle:
        handle.record(documents, filtered=filtered)


class ToolHandle(_Handle):
    """Handle of a tool span: ``set_result(value)``."""

    __slots__ = ()

    def set_result(self, value: Any) -> None:
        """Record the tool's result (JSON unless a string)."""
        if self.span is None:
            return
        text = text_of(value, STATE.max_chars)
        self._set({sc.TOOL_CALL_RESULT: text, sc.OI_OUTPUT_VALUE: text})


def _tool_attributes(name: str, arguments: Any, call_id: str | None) -> dict[str, Any]:
    args = limit_text(to_json(arguments if arguments is not None else {}), STATE.max_chars)
    return {
        sc.OPERATION_NAME: "execute_tool",
        sc.OI_SPAN_KIND: "TOOL",
        sc.TOOL_NAME: name,
        sc.OI_TOOL_NAME: name,
        sc.TOOL_CALL_ID: call_id,
        sc.TOOL_CALL_ARGUMENTS: args,
        sc.OI_INPUT_VALUE: args,
    }


def tool_call(name: str, arguments: Any = None, *, call_id: str | None = None) -> SpanScope[ToolHandle]:
    """An ``execute_tool {name}`` span; call ``.set_result(value)`` on what it yields.

    Args:
        name: the tool name.
        arguments: the arguments (recorded as a JSON string).
        call_id: the model's tool-call id, if any.
    """
    return SpanScope(f"execute_tool {name}", lambda: _tool_attributes(name, arguments, call_id), ToolHandle)


class LlmHandle(_Handle):
    """Handle of an LLM span: ``set_usage``, ``set_output``, ``set_response_model``."""

    __slots__ = ()

    def set_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        """Record token counts (None when the provider did not report them)."""
        if self.span is None:
            return
        tokens_in = _count_or_none(input_tokens, "set_usage(input_tokens=...)")
        tokens_out = _count_or_none(output_tokens, "set_usage(output_tokens=...)")
        self._set(
            {
                sc.USAGE_INPUT_TOKENS: tokens_in,
                sc.USAGE_OUTPUT_TOKENS: tokens_out,
                sc.OI_TOKEN_PROMPT: tokens_in,
                sc.OI_TOKEN_COMPLETION: tokens_out,
            }
        )

    def set_output(self, output: Any) -> None:
        """Record the model's output: text, or a message list (JSON)."""
        if self.span is None:
            return
        if isinstance(output, str):
            text = limit_text(output, STATE.max_chars)
            self._set({sc.OI_OUTPUT_VALUE: text, sc.OUTPUT_MESSAGES: message_json("assistant", text)})
        else:
            text = text_of(output, STATE.max_chars)
            self._set({sc.OI_OUTPUT_VALUE: text, sc.OUTPUT_MESSAGES: text})

    def set_response_model(self, model: str) -> None:
        """Record the model that actually answered (``gen_ai.response.model``)."""
        self._set({sc.RESPONSE_MODEL: str(model)})


def _llm_attributes(
    model: str | None, provider: str | None, input_messages: Any, operation: str
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        sc.OPERATION_NAME: operation,
        sc.OI_SPAN_KIND: "LLM",
        sc.REQUEST_MODEL: model,
        sc.OI_LLM_MODEL_NAME: model,
        sc.PROVIDER_NAME: provider,
        sc.OI_LLM_PROVIDER: provider,
    }
    if input_messages is not None:
        if isinstance(input_messages, str):
            text = limit_text(input_messages, STATE.max_chars)
            attrs[sc.INPUT_MESSAGES] = message_json("user", text)
            attrs[sc.OI_INPUT_VALUE] = text
        else:
            text = text_of(input_messages, STATE.max_chars)
            attrs[sc.INPUT_MESSAGES] = text
            attrs[sc.OI_INPUT_VALUE] = text
    return attrs


def llm_call(
    model: str | None,
    provider: str | None = None,
    *,
    input_messages: Any = None,
    operation: str = "chat",
) -> SpanScope[LlmHandle]:
    """A ``chat {model}`` span around one model call; the handle records usage, output, response model.

    Args:
        model: the requested model.
        provider: ``gen_ai.provider.name`` (e.g. ``openai``).
        input_messages: the prompt: a string or a list of messages (recorded as JSON).
        operation: the GenAI operation name (``chat``, ``text_completion``, ``generate_content``).
    """
    name = f"{operation} {model}" if model else operation
    return SpanScope(
        name, lambda: _llm_attributes(model, provider, input_messages, operation), LlmHandle, SpanKind.CLIENT
    )
