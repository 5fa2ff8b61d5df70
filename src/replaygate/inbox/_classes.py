"""Failure classes: the inbox's failure candidates grouped by signal and content (pure).

``classify_failures(records, scenarios=...)`` looks at every trace of a window. A trace that matches a
rule of the rule layer (:mod:`._rules`) joins that rule's class, failure signal or not: a refusal
nobody complained about is still a refusal. A trace that matches no rule but carries a failure signal
(negative feedback, an escalation, an explicit mark) is clustered by content (:mod:`._clusters`).
Each class has its count, up to three examples, its trend (members in the earlier and the later half
of the window), the scenarios that already cover it (promoted from one of its traces, or tagged
``failure_class: <class>``), and the assertion pattern promotion suggests for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from replaygate.instrumentation import TraceRecord
from replaygate.replay import Scenario

from replaygate.inbox._clusters import DISTANCE_THRESHOLD, cluster_documents, trace_document
from replaygate.inbox._patterns import PATTERNS
from replaygate.inbox._rules import RULES, in_conversation, match_rules

__all__ = ["ClassMember", "FailureClass", "classify_failures"]

_TITLES = {rule.name: rule.title for rule in RULES}


@dataclass(frozen=True)
class ClassMember:
    """One trace of a class, with why it belongs there."""

    trace_id: str
    start_ns: int
    question: str
    answer: str
    evidence: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class FailureClass:
    """One class of failures: rule-made (a known kind) or a cluster of similar failure candidates."""

    key: str
    title: str
    kind: Literal["rule", "cluster"]
    members: tuple[ClassMember, ...]
    trend: tuple[int, int]
    covered_by: tuple[str, ...]
    pattern: str
    examples: tuple[ClassMember, ...] = field(default=())

    @property
    def count(self) -> int:
        """How many traces are in the class."""
        return len(self.members)

    def to_json(self) -> dict[str, Any]:
        """The class as plain JSON (``replaygate inbox --json``)."""
        return {
            "key": self.key,
            "title": self.title,
            "kind": self.kind,
            "count": self.count,
            "trend": {"earlier": self.trend[0], "later": self.trend[1]},
            "covered_by": list(self.covered_by),
            "pattern": self.pattern,
            "examples": [_member_json(m) for m in self.examples],
            "trace_ids": [m.trace_id for m in self.members],
        }


def _member_json(m: ClassMember) -> dict[str, Any]:
    return {
        "trace_id": m.trace_id,
        "question": m.question,
        "answer": m.answer,
        "evidence": m.evidence,
        "reasons": list(m.reasons),
    }


def _member(record: TraceRecord, evidence: str) -> ClassMember:
    s = record.summary
    return ClassMember(
        trace_id=s.trace_id,
        start_ns=record.start_ns,
        question=s.turns[-1] if s.turns else "",
        answer=s.output or "",
        evidence=evidence,
        reasons=tuple(s.failure_reasons),
    )


def _trend(members: Sequence[ClassMember], window: tuple[int, int]) -> tuple[int, int]:
    middle = (window[0] + window[1]) / 2
    earlier = sum(1 for m in members if m.start_ns < middle)
    return earlier, len(members) - earlier


def _covered(key: str, members: Sequence[ClassMember], scenarios: Sequence[Scenario]) -> tuple[str, ...]:
    ids = {m.trace_id for m in members}
    return tuple(
        sorted(
            s.id
            for s in scenarios
            if s.state != "retired" and (s.source_trace in ids or s.tags.get("failure_class") == key)
        )
    )


def classify_failures(
    records: Sequence[TraceRecord],
    *,
    scenarios: Sequence[Scenario] = (),
    window: tuple[int, int] | None = None,
    distance_threshold: float = DISTANCE_THRESHOLD,
) -> list[FailureClass]:
    """Group the failures among ``records`` into classes, rule classes first, each largest first.

    Args:
        records: the traces of the window (all of them: the rules find failures nobody flagged).
        scenarios: the golden set, to say which classes a scenario already covers.
        window: (start ns, end ns) for the trend; default the span of ``records``.
        distance_threshold: where the clustering of the rest is cut (cosine distance).
    """
    if not records:
        return []
    if window is None:
        window = (min(r.start_ns for r in records), max(r.start_ns for r in records) + 1)
    by_rule: dict[str, list[ClassMember]] = {}
    rest: list[TraceRecord] = []
    sessions: dict[str, list[TraceRecord]] = {}
    for record in sorted(records, key=lambda r: r.start_ns):
        if record.summary.session_id:
            sessions.setdefault(record.summary.session_id, []).append(record)
    for record in records:
        sid = record.summary.session_id
        earlier = [r.summary for r in sessions.get(sid or "", []) if r.start_ns < record.start_ns]
        match = match_rules(in_conversation(record.summary, earlier))
        if match is not None:
            by_rule.setdefault(match.rule, []).append(_member(record, match.evidence))
        elif record.summary.failure_reasons:
            rest.append(record)
    classes: list[FailureClass] = []
    for rule in RULES:
        members = by_rule.get(rule.name)
        if members:
            classes.append(_make(rule.name, _TITLES[rule.name], "rule", members, window, scenarios))
    clusters = cluster_documents([trace_document(r) for r in rest], distance_threshold=distance_threshold)
    for n, (name, indices) in enumerate(clusters, start=1):
        members = [_member(rest[i], ", ".join(rest[i].summary.failure_reasons)) for i in indices]
        classes.append(_make(f"cluster-{n}", name, "cluster", members, window, scenarios))
    rules = sorted((c for c in classes if c.kind == "rule"), key=lambda c: -c.count)
    return rules + [c for c in classes if c.kind == "cluster"]


def _make(
    key: str,
    title: str,
    kind: Literal["rule", "cluster"],
    members: Sequence[ClassMember],
    window: tuple[int, int],
    scenarios: Sequence[Scenario],
) -> FailureClass:
    ordered = tuple(sorted(members, key=lambda m: -m.start_ns))  # newest first, as the inbox lists
    return FailureClass(
        key=key,
        title=title,
        kind=kind,
        members=ordered,
        trend=_trend(ordered, window),
        covered_by=_covered(key, ordered, scenarios),
        pattern=PATTERNS.get(key, "the default promotion (turns, tools seen, retrieval labels)"),
        examples=ordered[:3],
    )
