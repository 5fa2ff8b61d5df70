"""A trace's stored row straight from its span records: what ``_summarize`` gives the row, without it.

The store builds the ``trace_traces`` row of every trace it writes, on the export thread. Through
:func:`~replaygate.instrumentation._summary.row_summary` that meant a normalised fact object per span, an
agent-run and an LLM-call object each, and a :class:`TraceSummary` per trace, most of whose fields the
row never reads (about 20 us a span). :func:`trace_row_draft` reads only what the row holds, from the
records' attributes, by the same rules and through the same attribute readers (``_normalize``): the top
agent spans (no agent ancestor), their input, output, session, user and name, the LLM calls, the failure
reasons of every agent span and any escalation. ``tests/instrumentation/test_trace_row.py`` holds it equal
to the row built from ``row_summary`` over traces of every dialect and shape. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import json.encoder
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._normalize import (
    AGENT_NAMES,
    INPUT_TOKEN_NAMES,
    LL_ENTITY_NAME,
    LL_SPAN_KIND,
    MODEL_NAMES,
    OUTPUT_TOKEN_NAMES,
    PROVIDER_NAMES,
    SESSION_NAMES,
    USER_NAMES,
    agent_input,
    agent_output,
    as_int,
    attribute_text,
    span_kind,
)
from replaygate.instrumentation._normalize import first_value as _first_attr
from replaygate.instrumentation._records import SpanRecord, ordered_reasons
from replaygate.instrumentation._summary import reason_list, true_value

__all__ = [
    "PREVIEW_CHARS",
    "TRACE_COLUMNS",
    "draft_row",
    "int64",
    "json_list",
    "preview",
    "trace_row_draft",
    "with_scores",
]


def _list_encoder() -> Callable[[list[Any]], str]:
    """``json.dumps`` of a trace row's small lists (LLM calls, failure reasons): the same text, built once."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.dumps

    def refuse(value: Any) -> Any:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    encoder = make(None, refuse, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    join = "".join
    return lambda value: join(encoder(value, 0))


#: ``json.dumps(value)`` of a list of plain values (the same text).
json_list = _list_encoder()

PREVIEW_CHARS = 200
#: The columns of ``trace_traces``, in the order the rows give them.
TRACE_COLUMNS = (
    "trace_id",
    "start_ns",
    "end_ns",
    "session_id",
    "user_id",
    "agent_name",
    "variant",
    "config_id",
    "input_preview",
    "output_preview",
    "failure",
    "failure_reasons",
    "updated_ns",
    "error",
    "empty",
    "escalated",
    "negative_feedback",
    "latency_s",
    "llm_calls",
)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def preview(text: str | None) -> str | None:
    """The first ``PREVIEW_CHARS`` characters of ``text`` (an ellipsis marks a cut)."""
    if text is None:
        return None
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def int64(value: int) -> int:
    """Clamp a time to SQLite's INTEGER range (times after 2262 do not fit in int64 nanoseconds)."""
    return max(_INT64_MIN, min(_INT64_MAX, int(value)))


def _start_end(span: SpanRecord) -> tuple[int, int]:
    return span.start_ns, span.end_ns


def _str_or_none(value: Any) -> str | None:
    """``_summary``'s text of a value: None stays None, anything else ``str``."""
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _first_in(spans: Iterable[SpanRecord], name: str) -> Any:
    """The first non-empty value of attribute ``name`` over ``spans``."""
    for span in spans:
        value = span.attributes.get(name)
        if value is not None and value != "":
            return value
    return None


def _first_text(spans: Iterable[SpanRecord], names: tuple[str, ...]) -> str | None:
    """The first non-empty value of any of ``names`` over ``spans`` (as ``session_of`` / ``user_of``)."""
    for span in spans:
        value = _first_attr(span.attributes, names)
        if value is not None:
            return attribute_text(value)
    return None


class _Agent:
    """What the row reads of one agent span (``_normalize``'s agent run, the fields the row needs)."""

    __slots__ = ("input", "name", "output", "record", "session_id", "user_id")

    def __init__(self, record: SpanRecord) -> None:
        attrs = record.attributes
        self.record = record
        name = _first_attr(attrs, AGENT_NAMES)
        if name is None and LL_SPAN_KIND in attrs:
            name = attrs.get(LL_ENTITY_NAME)
        if name is None:
            name = record.name.removeprefix("invoke_agent").strip() or None
        self.name = attribute_text(name)
        self.input = agent_input(attrs)
        self.output = agent_output(attrs)
        self.session_id = attribute_text(_first_attr(attrs, SESSION_NAMES))
        self.user_id = attribute_text(_first_attr(attrs, USER_NAMES))

    def reasons(self, top_level: bool) -> list[str]:
        """The failure reasons this agent span stands for (``_summary._agent_reasons``)."""
        record = self.record
        attributes = record.attributes
        if sc.RG_FAILURE_REASONS in attributes:
            reasons = reason_list(attributes[sc.RG_FAILURE_REASONS])
        else:
            reasons = []
            if record.status == "error":
                reasons.append("exception")
            else:
                output = self.output
                closed_early = true_value(attributes.get(sc.RG_STREAM_CLOSED_EARLY))
                if not closed_early and (output is None or not output.strip()):
                    reasons.append("empty_answer")
        if not top_level:
            reasons = [r for r in reasons if r not in ("exception", "empty_answer")]
        return reasons


def _llm_call(attrs: Mapping[str, Any]) -> list[Any]:
    """``[model, provider, input tokens, output tokens]`` of an LLM span (as ``llm_call_of`` reads them)."""
    model, provider = _first_attr(attrs, MODEL_NAMES), _first_attr(attrs, PROVIDER_NAMES)
    return [
        str(model) if model is not None else None,
        str(provider).lower() if provider is not None else None,
        as_int(_first_attr(attrs, INPUT_TOKEN_NAMES)),
        as_int(_first_attr(attrs, OUTPUT_TOKEN_NAMES)),
    ]


def trace_row_draft(spans: Sequence[SpanRecord]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A trace's row before its feedback is applied, and its failure reasons (from the spans alone).

    Args:
        spans: every span of one trace (at least one), in any order, of any dialect.
    """
    ordered = sorted(spans, key=_start_end) if len(spans) > 1 else list(spans)
    kinds = [span_kind(s.attributes) if s.kind == "other" else s.kind for s in ordered]
    agents: list[_Agent] = []
    calls: list[list[Any]] = []
    escalated = False
    for span, kind in zip(ordered, kinds, strict=True):
        if kind == "agent":
            agents.append(_Agent(span))
        elif kind == "llm":
            calls.append(_llm_call(span.attributes))
        if not escalated:
            escalated = true_value(span.attributes.get(sc.RG_ESCALATION))
    top: list[_Agent] = []
    if agents:
        kind_of = {s.span_id: k for s, k in zip(ordered, kinds, strict=True)}
        parent_of = {s.span_id: s.parent_id for s in ordered}
        top = [a for a in agents if not _has_agent_ancestor(a.record, kind_of, parent_of)]
    top_ids = {a.record.span_id for a in top}
    reasons = [r for a in agents for r in a.reasons(a.record.span_id in top_ids)]
    if escalated:
        reasons.append("escalation")
    ordered_reasons_ = ordered_reasons(reasons)

    if top:
        latency_s = (max(a.record.end_ns for a in top) - min(a.record.start_ns for a in top)) / 1e9
    else:
        latency_s = (max(s.end_ns for s in ordered) - ordered[0].start_ns) / 1e9
    named = top or agents
    preferred = [a.record for a in top] + [s for s in ordered if s.span_id not in top_ids]
    session_id = next((a.session_id for a in named if a.session_id), None) or _first_text(
        preferred, SESSION_NAMES
    )
    user_id = next((a.user_id for a in named if a.user_id), None) or _first_text(preferred, USER_NAMES)
    turns = [a.input for a in top if a.input is not None]
    output = top[-1].output if top else None
    error = any(a.record.status == "error" for a in top) or "exception" in ordered_reasons_
    empty = not error and (output is None or not output.strip() or "empty_answer" in ordered_reasons_)
    row = draft_row(
        trace_id=ordered[0].trace_id,
        start_ns=int64(min(s.start_ns for s in spans)),
        end_ns=int64(max(s.end_ns for s in spans)),
        session_id=session_id,
        user_id=user_id,
        agent_name=next((a.name for a in named if a.name), None),
        variant=_str_or_none(_first_in(preferred, sc.RG_VARIANT)),
        config_id=_str_or_none(_first_in(preferred, sc.RG_CONFIG_ID)),
        input_preview=preview(turns[-1] if turns else None),
        output_preview=preview(output),
        error=int(error),
        empty=int(empty),
        escalated=int(escalated or "escalation" in ordered_reasons_),
        latency_s=float(max(0.0, latency_s)),
        llm_calls=json_list(calls),
    )
    return row, ordered_reasons_


def _has_agent_ancestor(
    span: SpanRecord, kind_of: Mapping[str, str], parent_of: Mapping[str, str | None]
) -> bool:
    seen: set[str] = set()
    parent_id = span.parent_id
    while parent_id is not None and parent_id in kind_of and parent_id not in seen:
        seen.add(parent_id)
        if kind_of[parent_id] == "agent":
            return True
        parent_id = parent_of[parent_id]
    return False


def draft_row(
    *,
    trace_id: str,
    start_ns: int,
    end_ns: int,
    session_id: str | None,
    user_id: str | None,
    agent_name: str | None,
    variant: str | None,
    config_id: str | None,
    input_preview: str | None,
    output_preview: str | None,
    error: int,
    empty: int,
    escalated: int,
    latency_s: float,
    llm_calls: str,
) -> dict[str, Any]:
    """A trace row before its feedback, its keys in ``TRACE_COLUMNS`` order (the feedback's left at 0)."""
    return {
        "trace_id": trace_id,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "session_id": session_id,
        "user_id": user_id,
        "agent_name": agent_name,
        "variant": variant,
        "config_id": config_id,
        "input_preview": input_preview,
        "output_preview": output_preview,
        "failure": 0,
        "failure_reasons": "[]",
        "updated_ns": 0,
        "error": error,
        "empty": empty,
        "escalated": escalated,
        "negative_feedback": 0,
        "latency_s": latency_s,
        "llm_calls": llm_calls,
    }


def with_scores(row: dict[str, Any], reasons: tuple[str, ...], scores: Iterable[float]) -> dict[str, Any]:
    """The row with its feedback applied (a negative score adds ``negative_feedback``), in column order.

    ``row`` is a :func:`draft_row` (its keys already in column order, which the copy keeps).
    """
    if any(score < 0 for score in scores) and "negative_feedback" not in reasons:
        reasons = ordered_reasons((*reasons, "negative_feedback"))
    full = row.copy()
    full["failure"] = 1 if reasons else 0
    full["failure_reasons"] = json_list(list(reasons))
    full["updated_ns"] = time.time_ns()
    full["negative_feedback"] = int("negative_feedback" in reasons)
    return full
