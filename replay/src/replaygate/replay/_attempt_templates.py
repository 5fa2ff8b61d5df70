"""The JSON of attempts copied from a kept score, and of their artifact lines, made from templates.

An attempt copied from a kept score (``_attempt._copy_kept``) differs from the kept attempt only in its
index, trace id, start, ``artifact_path`` and latency; the artifact line of an attempt whose trace is its
root span alone differs from another of the same scenario and answer only in the index, the trace and
span ids and the span's times. :class:`KeptJson` holds a :class:`~._json_template.JsonTemplate` of each,
made once per kept score from a probe (sentinels in those places) and checked against the kept attempt's
own text, so the journal line and the artifact line of every further copy are a join of strings
instead of a pass through the serializer. Each text is byte for byte what ``Attempt.model_dump_json()``
and ``Artifact.line()`` give (a test compares them on varied attempts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pydantic_core
from replaygate.instrumentation import SpanRecord
from replaygate.replay._artifacts import Artifact
from replaygate.replay._attempt_summary import ROOT_KEYS
from replaygate.replay._json_template import JsonTemplate
from replaygate.replay._model_copy import replaced
from replaygate.replay._runfile import Attempt

__all__ = ["KeptJson", "copy_kept", "root_only_record"]

_SCENARIO_KEY, _INDEX_KEY = "replaygate.scenario.id", "replaygate.attempt.index"
assert frozenset((_SCENARIO_KEY, _INDEX_KEY)) == ROOT_KEYS
#: Where an attempt's own values are in its ``model_dump_json()`` (after each of these, in this order).
_ATTEMPT_PLACES = (
    ',"index":',
    '"measures":{"latency_s":',
    ',"trace_id":',
    ',"artifact_path":',
    ',"started":',
)
#: ... and in an artifact line whose trace is its root span alone.
_ARTIFACT_PLACES = (
    ',"index":',
    ',"trace_id":',
    '[{"trace_id":',
    ',"span_id":',
    ',"start_ns":',
    ',"end_ns":',
    f'"{_INDEX_KEY}":',
)


def _json(value: Any) -> str:
    return pydantic_core.to_json(value).decode("utf-8")


def copy_kept(
    kept: Attempt, index: int, trace_id: str, started: str, artifact_path: str | None, latency_s: float
) -> Attempt:
    """A kept score with this attempt's own index, trace, start, path and latency."""
    return replaced(
        kept,
        {
            "index": index,
            "trace_id": trace_id,
            "started": started,
            "artifact_path": artifact_path,
            "measures": replaced(kept.measures, {"latency_s": latency_s}),
        },
    )


def root_only_record(spans: Sequence[Any], scenario_id: str, index: int) -> SpanRecord | None:
    """The attempt's root record when it is the trace's only span with just the runner's attributes."""
    if len(spans) != 1:
        return None
    root = spans[0]
    if (
        type(root) is not SpanRecord
        or root.parent_id is not None
        or root.events
        or root.attributes != {_SCENARIO_KEY: scenario_id, _INDEX_KEY: index}
        or type(root.attributes[_INDEX_KEY]) is not int
    ):
        return None
    return root


def _attempt_values(a: Attempt) -> list[str]:
    latency, path = a.measures.latency_s, a.artifact_path
    return [str(a.index), _json(latency), _json(a.trace_id), _json(path), _json(a.started)]


def _artifact_values(index: int, record: SpanRecord) -> list[str]:
    i, trace = str(index), _json(record.trace_id)
    return [i, trace, trace, _json(record.span_id), str(record.start_ns), str(record.end_ns), i]


class KeptJson:
    """Templates of one kept score: its copies' JSON (journal, run file) and artifact lines.

    Made at the first copy of the kept score, from that copy; ``first_text`` and ``first_line`` are that
    copy's own JSON and artifact line (serialized to cut the templates from, so not serialized again).
    """

    __slots__ = ("artifact", "attempt", "first_line", "first_text")

    def __init__(self, copy: Attempt, record: SpanRecord | None, output: Any) -> None:
        """Make the templates from a copy of the kept score and its root-only record (None: no artifact)."""
        self.first_text = copy.model_dump_json()
        places = list(zip(_ATTEMPT_PLACES, _attempt_values(copy), strict=True))
        self.attempt = JsonTemplate.cut(self.first_text, places)
        self.artifact: JsonTemplate | None = None
        self.first_line: bytes | None = None
        if record is None or output is None or output.messages or output.conversation:
            return
        self.first_line = Artifact(
            scenario_id=copy.scenario_id,
            index=copy.index,
            trace_id=record.trace_id,
            answer=output.answer,
            label=output.label,
            error=copy.error,
            messages=[],
            spans=[record],
            conversation=[],
        ).line()
        cuts = list(zip(_ARTIFACT_PLACES, _artifact_values(copy.index, record), strict=True))
        self.artifact = JsonTemplate.cut(self.first_line.decode("utf-8"), cuts)

    def attempt_json(self, attempt: Attempt) -> str | None:
        """A copy's ``model_dump_json()`` (None without a template)."""
        return None if self.attempt is None else self.attempt.fill(_attempt_values(attempt))

    def artifact_line(self, index: int, record: SpanRecord) -> bytes | None:
        """A copy's ``Artifact.line()`` from its root-only record (None without a template)."""
        if self.artifact is None:
            return None
        return self.artifact.fill(_artifact_values(index, record)).encode("utf-8")
