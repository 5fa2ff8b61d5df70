"""Which traces are being captured, and the spans each capture has received so far.

A registry keyed by trace id (open captures, and recently closed ones whose late spans stay out of
production export). The span processor that replaygate attaches to a provider (``_export.Slot``) calls
:func:`route_start` / :func:`route_end` for every span; see ``_trace_capture`` for the public ``capture``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from opentelemetry.sdk.trace import ReadableSpan, Span
from replaygate.instrumentation._health import fault
from replaygate.instrumentation._normalize import span_to_record
from replaygate.instrumentation._records import SpanRecord
from replaygate.instrumentation._spancopy import derived_attributes

__all__ = ["Route", "close_route", "is_captured", "open_route", "route_end", "route_start"]

_LOCK = threading.Lock()
_ROUTES: dict[int, Route] = {}
_CLOSED: OrderedDict[int, None] = OrderedDict()  # recently closed captures: their late spans stay out
_MAX_CLOSED = 100_000


class Route:
    """The spans of one captured trace, as they finish; ``root_span_id`` is the capture's root."""

    __slots__ = ("child_started", "root_span_id", "spans", "trace_id")

    def __init__(self, trace_id: int, root_span_id: int) -> None:
        self.trace_id = trace_id
        self.root_span_id = root_span_id
        self.spans: list[SpanRecord] = []
        self.child_started = False

    def foreign(self, root_asked: bool) -> bool:
        """Spans were started under the root (it was asked for its context) but none reached a router."""
        return root_asked and not self.child_started and not self.spans


def is_captured(trace_id: int) -> bool:
    """Whether a trace belongs to a capture (open now, or closed recently): not production traffic."""
    return trace_id in _ROUTES or trace_id in _CLOSED


def open_route(trace_id: int, root_span_id: int) -> Route:
    """Start routing the spans of ``trace_id`` to a new :class:`Route`."""
    route = Route(trace_id, root_span_id)
    with _LOCK:
        _ROUTES[trace_id] = route
    return route


def close_route(trace_id: int) -> Route | None:
    """Stop routing ``trace_id`` and return its route (spans ending later are dropped)."""
    with _LOCK:
        route = _ROUTES.pop(trace_id, None)
        _CLOSED[trace_id] = None
        while len(_CLOSED) > _MAX_CLOSED:
            _CLOSED.popitem(last=False)
    return route


def route_start(span: Span) -> None:
    """Note a span starting in a captured trace (a child of the capture's root shows spans arrive)."""
    route = _ROUTES.get(span.context.trace_id)
    if route is not None and not route.child_started:
        parent = span.parent
        if parent is not None and parent.span_id == route.root_span_id:
            route.child_started = True


def route_end(span: ReadableSpan) -> None:
    """Hand a finished span to the capture of its trace, if any (others cost one dict lookup)."""
    context = span.context
    route = _ROUTES.get(context.trace_id) if context is not None else None
    if route is None:
        return
    try:
        record = span_to_record(span)
        derived = derived_attributes(record.attributes)
        if derived:
            record.attributes.update(derived)
    except Exception as exc:  # noqa: BLE001 - never reach the agent
        fault("capture routing", exc)
        return
    route.spans.append(record)
