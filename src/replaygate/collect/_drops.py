"""Agents' drop counts that arrive on their spans, for the store's ``trace_drops`` (``replaygate traces``).

An agent whose OTLP export queue overflowed puts its running total on the first span of its next batch
(``replaygate.export.dropped_spans``, ``replaygate.export.source``: see ``replaygate.instrumentation``'s
export); the receiver takes both attributes off the span and records the total under that source, as
the embedded store records its own agents' drops. The values are untrusted: a source is bounded text, a
total a non-negative integer, anything else is ignored (the span itself is stored either way).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from replaygate.instrumentation import SpanRecord, semconv

__all__ = ["MAX_SOURCE_CHARS", "take_drop_reports"]

MAX_SOURCE_CHARS = 200
_KEYS = (semconv.RG_EXPORT_DROPPED, semconv.RG_EXPORT_SOURCE)


def take_drop_reports(records: Sequence[SpanRecord]) -> tuple[list[SpanRecord], dict[str, int]]:
    """The records without the drop attributes, and the highest total each source reported in them."""
    out: list[SpanRecord] = []
    totals: dict[str, int] = {}
    for record in records:
        attributes = record.attributes
        if semconv.RG_EXPORT_DROPPED not in attributes and semconv.RG_EXPORT_SOURCE not in attributes:
            out.append(record)
            continue
        total, source = (attributes.get(k) for k in _KEYS)
        if isinstance(source, str) and source.strip() and type(total) is int and total >= 0:
            name = source.strip()[:MAX_SOURCE_CHARS]
            totals[name] = max(totals.get(name, 0), total)
        kept = {k: v for k, v in attributes.items() if k not in _KEYS}
        out.append(dataclasses.replace(record, attributes=kept))
    return out, totals
