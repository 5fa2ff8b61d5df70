"""``AttemptSummaries``: ``summarize_spans`` for the runner, with root-only traces summarized once.

Most attempts of a plain target (one that makes no span of its own) leave a single span: the attempt's
root, carrying only the scenario id and attempt index the runner set on it. What such a trace means does
not depend on those two values, nor on the ids and times, except for the trace id and the latency: so the
summary is made once per (name, status, status message) with :func:`summarize_spans` and copied with the
attempt's trace id and latency. Every other trace (a child span, an event, another attribute) goes to
:func:`summarize_spans` as before; the result is the same either way (a test compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replaygate.instrumentation import SpanRecord, TraceSummary, summarize_spans

__all__ = ["ROOT_KEYS", "AttemptSummaries", "RootKey"]

#: The attributes the runner sets on an attempt's root span.
ROOT_KEYS = frozenset({"replaygate.scenario.id", "replaygate.attempt.index"})


#: What a root-only trace's summary depends on (besides its trace id and latency): see :meth:`key`.
RootKey = tuple[str, str, "str | None"]


class AttemptSummaries:
    """Summarize an attempt's spans (see the module docstring); one per run."""

    def __init__(self) -> None:
        self._memo: dict[RootKey, TraceSummary] = {}

    @staticmethod
    def key(spans: Sequence[Any]) -> RootKey | None:
        """(name, status, status message) of a root-only trace; None for any other trace.

        Two root-only traces with the same key have the same summary but for the trace id and the latency.
        """
        if len(spans) == 1:
            root = spans[0]
            if (
                type(root) is SpanRecord
                and root.parent_id is None
                and root.kind == "other"
                and not root.events
                and root.attributes.keys() == ROOT_KEYS
            ):
                return (root.name, root.status, root.status_message)
        return None

    def __call__(self, spans: Sequence[Any]) -> TraceSummary:
        """The summary of one attempt's spans, as :func:`summarize_spans` makes it."""
        return self.summarize(spans, self.key(spans))

    def summarize(self, spans: Sequence[Any], key: RootKey | None) -> TraceSummary:
        """:meth:`__call__` with the trace's :meth:`key` already known."""
        if key is not None:
            root = spans[0]
            template = self._memo.get(key)
            if template is None:
                template = self._memo[key] = summarize_spans(spans)
                return template
            # dataclasses.replace, without its per-call look at the fields (a frozen dataclass)
            summary: TraceSummary = object.__new__(TraceSummary)
            fields = summary.__dict__
            fields.update(template.__dict__)
            fields["trace_id"] = root.trace_id
            fields["latency_s"] = max(0.0, (root.end_ns - root.start_ns) / 1e9)
            return summary
        return summarize_spans(spans)
