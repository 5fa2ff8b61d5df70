"""The copy of a finished span an exporter sees: redacted, and with content hashed when capture is off.

Runs on the export worker threads, never on the agent's thread. The original span is handed on unchanged
when nothing needs changing (no match, capture on), so the common case costs one scan of the text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._encoding import content_hash, message_json
from replaygate.instrumentation._normalize import (
    attribute_items,
    is_content_attribute,
    is_content_event_attribute,
    jsonable,
    llm_call_of,
    plain_attributes,
    record_of_span,
    span_kind,
    span_to_record,
)
from replaygate.instrumentation._prices import call_cost
from replaygate.instrumentation._records import SpanRecord
from replaygate.instrumentation._redaction import Redactor
from replaygate.instrumentation._store_rows import record_to_row

__all__ = [
    "derived_attributes",
    "is_content_attribute",
    "transform_record",
    "transform_row",
    "transform_span",
    "with_attributes",
]


def derived_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI attributes an agent span implies but the decorator leaves to the exporters to write.

    ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (from ``input.value`` / ``output.value``) and
    ``gen_ai.conversation.id`` (from ``session.id``) and the failure reasons as ``langfuse.trace.tags`` are
    built off the agent's thread, by the export
    workers and the in-process collector, so the decorated call stays cheap.
    """
    if attributes.get(sc.OPERATION_NAME) != "invoke_agent":
        return {}
    out: dict[str, Any] = {}
    value = attributes.get(sc.OI_INPUT_VALUE)
    if isinstance(value, str) and sc.INPUT_MESSAGES not in attributes:
        out[sc.INPUT_MESSAGES] = message_json("user", value)
    value = attributes.get(sc.OI_OUTPUT_VALUE)
    if isinstance(value, str) and sc.OUTPUT_MESSAGES not in attributes:
        out[sc.OUTPUT_MESSAGES] = message_json("assistant", value, "stop")
    for key, mime in ((sc.OI_INPUT_VALUE, "input.mime_type"), (sc.OI_OUTPUT_VALUE, "output.mime_type")):
        if isinstance(attributes.get(key), str) and mime not in attributes:
            out[mime] = "text/plain"  # plain text, so trace viewers show it as text
    value = attributes.get(sc.OI_SESSION_ID)
    if value is not None and sc.CONVERSATION_ID not in attributes:
        out[sc.CONVERSATION_ID] = value
    reasons = attributes.get(sc.RG_FAILURE_REASONS)
    if reasons and sc.LANGFUSE_TRACE_TAGS not in attributes:  # failure signals as Langfuse trace tags
        out[sc.LANGFUSE_TRACE_TAGS] = tuple(str(r) for r in reasons)
    return out


def _hash_documents(value: str) -> str:
    try:
        docs = json.loads(value)
    except ValueError:
        return content_hash(value)
    if not isinstance(docs, list):
        return content_hash(value)
    for doc in docs:
        if isinstance(doc, dict):
            for key in ("content", "text"):
                if isinstance(doc.get(key), str):
                    doc[key] = content_hash(doc[key])
            if "metadata" in doc:
                doc["metadata"] = content_hash(json.dumps(doc["metadata"], sort_keys=True, default=str))
    return json.dumps(docs, ensure_ascii=False, separators=(",", ":"))


def _hash_value(value: Any) -> Any:
    if isinstance(value, str):
        return content_hash(value)
    if isinstance(value, tuple | list):
        return tuple(content_hash(v) if isinstance(v, str) else v for v in value)
    return value


def _cost_attributes(span: ReadableSpan, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """``gen_ai.usage.cost`` on an exported LLM span that has none, when genai-prices knows the price."""
    if sc.USAGE_COST in attributes or sc.OI_COST_TOTAL in attributes:
        return {}
    if span_kind(attributes) != "llm":  # classify first: most exported spans are no LLM call
        return {}
    start_ns = int(span.start_time or 0)
    cost = call_cost(llm_call_of(attributes, start_ns, int(span.end_time or start_ns)))
    return {} if cost is None else {sc.USAGE_COST: cost}


_NUMBERS = frozenset({int, float, bool, type(None)})


def _texts(span: ReadableSpan, attributes: Mapping[str, Any]) -> list[str]:
    """Every string of a span that redaction reads: name, attribute values, event values, status."""
    texts = [span.name]
    add = texts.append
    numbers = _NUMBERS
    for value in attributes.values():  # what Redactor.redact_value reads: strings and sequences of them
        kind = type(value)
        if kind is str:
            add(value)
        elif kind in numbers:
            continue
        elif isinstance(value, str):
            add(value)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            texts.extend(v for v in value if isinstance(v, str))
    events = span.events
    if events:
        for event in events:
            texts.extend(_texts_of_values((event.attributes or {}).values()))
    description = span.status.description
    if description:
        add(description)
    return texts


def _texts_of_values(values: Iterable[Any]) -> list[str]:
    texts: list[str] = []
    for value in values:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            texts.extend(v for v in value if isinstance(v, str))
    return texts


def _copy(
    span: ReadableSpan,
    *,
    name: str,
    attributes: dict[str, Any],
    events: Sequence[Event],
    status: Status,
    resource: Resource | None,
) -> ReadableSpan:
    return ReadableSpan(
        name=name,
        context=span.context,
        parent=span.parent,
        resource=resource if resource is not None else span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def with_attributes(span: ReadableSpan, extra: Mapping[str, Any]) -> ReadableSpan:
    """A copy of ``span`` with ``extra`` added to its attributes (the span itself is not modified)."""
    attributes = {**(span.attributes or {}), **extra}
    return _copy(
        span, name=span.name, attributes=attributes, events=span.events, status=span.status, resource=None
    )


def transform_span(
    span: ReadableSpan,
    redactor: Redactor,
    *,
    capture_content: bool,
    resource: Resource | None = None,
) -> tuple[ReadableSpan, int]:
    """Return the span to export and the number of redactions made.

    Args:
        span: the finished span (never modified).
        redactor: the redaction rules.
        capture_content: False replaces text attributes by ``sha256:<hex>`` of their redacted text.
        resource: a resource to report instead of the span's own (service name), or None.
    """
    source: Mapping[str, Any] = span.attributes or {}
    derived = _derived(span, source)
    if derived:
        source = {**source, **derived}
    if capture_content and not redactor.may_change(_texts(span, source)):
        # The common case: nothing to redact or hash, so only the derived attributes make a copy.
        if resource is None and not derived:
            return span, 0
        attrs = dict(source)
        return _copy(
            span, name=span.name, attributes=attrs, events=span.events, status=span.status, resource=resource
        ), 0
    return _transform(span, source, redactor, capture_content, resource, bool(derived))


def transform_record(
    span: ReadableSpan, redactor: Redactor, *, capture_content: bool
) -> tuple[SpanRecord, int]:
    """:func:`transform_span` straight to the store's record, and the number of redactions made.

    The same record as ``span_to_record(transform_span(span, ...)[0])``, without the intermediate span
    copy when nothing needs redacting: the SDK's attribute mapping is read once into a plain dict that
    the derived attributes, the redaction check and the record all use.
    """
    attributes = plain_attributes(span)  # one pass over the SDK's mapping, already as stored
    derived = _derived(span, attributes)
    if derived:
        attributes.update(
            (k, v if type(v) in _NUMBERS or type(v) is str else jsonable(v)) for k, v in derived.items()
        )
    if capture_content and not redactor.may_change(_texts(span, attributes)):
        return record_of_span(span, attributes), 0
    copy, n = _transform(span, attributes, redactor, capture_content, None, bool(derived))
    return span_to_record(copy), n


def transform_row(
    span: ReadableSpan, redactor: Redactor, *, capture_content: bool
) -> tuple[SpanRecord, tuple[Any, ...], int]:
    """:func:`transform_record` and the record's ``trace_spans`` row, reading the span once.

    The same record and count as :func:`transform_record`, and ``record_to_row`` of that record. The
    redaction check reads the row's JSON text itself (:meth:`Redactor.may_change_encoded`) instead of
    gathering the span's strings again; when it cannot rule a change out, the full pass runs as there.
    """
    attributes = dict(attribute_items(span))
    if not set(map(type, attributes.values())) <= _PLAIN:  # in C: most spans hold plain values only
        attributes = {k: v if type(v) in _PLAIN else jsonable(v) for k, v in attributes.items()}
    derived = _derived(span, attributes)
    if derived:
        attributes.update(
            (k, v if type(v) in _NUMBERS or type(v) is str else jsonable(v)) for k, v in derived.items()
        )
    if capture_content:
        record = record_of_span(span, attributes)
        row = record_to_row(record)
        texts = (row[9], row[10], record.name, record.status_message or "")
        if not redactor.may_change_encoded("\n".join(texts), "\n".join(attributes)):
            return record, row, 0
    copy, n = _transform(span, attributes, redactor, capture_content, None, bool(derived))
    record = span_to_record(copy)
    return record, record_to_row(record), n


_PLAIN = frozenset({str, bool, int, float, type(None)})


def _derived(span: ReadableSpan, source: Mapping[str, Any]) -> dict[str, Any]:
    return {**derived_attributes(source), **_cost_attributes(span, source)}


def _transform(
    span: ReadableSpan,
    source: Mapping[str, Any],
    redactor: Redactor,
    capture_content: bool,
    resource: Resource | None,
    derived: bool,
) -> tuple[ReadableSpan, int]:
    """The full pass: redact every text (and hash content when capture is off), copying when changed."""
    changed = resource is not None or derived
    total = 0
    attributes: dict[str, Any] = {}
    hashed = False
    for key, value in source.items():
        new, n = redactor.redact_value(value)
        total += n
        if not capture_content:
            if key == sc.RETRIEVAL_DOCUMENTS and isinstance(new, str):
                new, hashed = _hash_documents(new), True
            elif is_content_attribute(key):
                hashed_value = _hash_value(new)
                hashed = hashed or hashed_value != new
                new = hashed_value
        changed = changed or n > 0
        attributes[key] = new
    events: list[Event] = []
    for event in span.events:
        event_attrs: dict[str, Any] = {}
        event_changed = False
        for key, value in (event.attributes or {}).items():
            new, n = redactor.redact_value(value)
            total += n
            event_changed = event_changed or n > 0
            if not capture_content and is_content_event_attribute(event.name, key):
                hashed_value = _hash_value(new)
                if hashed_value != new:
                    new, hashed, event_changed = hashed_value, True, True
            event_attrs[key] = new
        events.append(Event(event.name, event_attrs, event.timestamp) if event_changed else event)
        changed = changed or event_changed

    status = span.status
    if status.description:
        description, n = redactor.redact(status.description)
        total += n
        if not capture_content:
            description, hashed = content_hash(description), True
        if description != status.description:
            status = Status(status.status_code, description)
            changed = True
    if hashed:
        attributes[sc.RG_CONTENT_HASHED] = True
        changed = True
    name, n = redactor.redact(span.name)
    total += n
    changed = changed or n > 0

    if not changed:
        return span, 0
    copy = _copy(span, name=name, attributes=attributes, events=events, status=status, resource=resource)
    return copy, total
