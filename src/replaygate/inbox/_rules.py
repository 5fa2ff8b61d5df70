"""The rule layer of the failure classes: known kinds of failure, recognised from one trace (pure).

Each rule reads one trace (its turns, answers, retrieved chunks, tool calls and failure signals) and says
whether the trace is a member of its class. The first rule that matches wins, in :data:`RULES` order:

- ``exception``: the agent raised.
- ``empty_answer``: the answer is empty or blank.
- ``wrong_shape``: the answer looks like structured output (a JSON object or array, or a fenced JSON
  block) but does not parse.
- ``refusal_without_tools``: refusal phrasing ("I can't help with that") and no tool call and no
  retrieval in the trace: the agent refused without trying.
- ``missed_escalation``: the user threatened legal action, a chargeback or a formal complaint, or asked
  for a person, or the answer states a limit ("up to $200") that an amount in a tool result exceeds,
  and the trace did not escalate.
- ``ignored_correction``: an earlier user turn corrected a value ("no, it's ORD-10052, not ORD-10025")
  and a later answer still uses the wrong one.
- ``over_formatting``: a short question (at most 12 words) answered with markdown structure (headings,
  bullet lists, tables).
- ``ungrounded_claim``: the offline groundedness judge (claims mode) finds a claim that neither a
  retrieved chunk nor a tool result of the trace supports (answers, not escalations or clarifications).

Traces that match no rule but carry a failure signal (negative feedback, an escalation, an explicit
mark) are grouped by content instead (:mod:`._clusters`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from replaygate.instrumentation import Chunk, TraceSummary
from replaygate.replay import OfflineGroundednessJudge

__all__ = [
    "ESCALATION_REQUEST",
    "REFUSAL",
    "RULES",
    "Rule",
    "RuleMatch",
    "in_conversation",
    "match_rules",
]

#: Refusal phrasing (an apology plus "can't / unable / not able to help or assist").
REFUSAL = re.compile(
    r"(?i)\b(?:i(?:'m| am) sorry,? but i can(?:no|')t|i can(?:no|')t help|i(?:'m| am) (?:not able|unable) "
    r"to (?:help|assist)|(?:not|un)able to assist|i(?:'m| am) afraid i can(?:no|')t|i can(?:no|')t assist|"
    r"i won't be able to help)"
)
#: A user message that policy says goes to a human.
ESCALATION_REQUEST = re.compile(
    r"(?i)\b(?:lawyer|attorney|sue|suing|lawsuit|legal action|court|chargeback|charge back|formal complaint|"
    r"real person|human agent|(?:talk|speak) to (?:a human|someone|a person)|"
    r"(?:a|your) (?:manager|supervisor)|"
    r"furious|unacceptable|outrageous|useless|third time|fed up)\b"
)
_VALUE = r"(?:[A-Z]{2,}[-#]?\d{3,}|\$?\d[\d,.]*\d|\$?\d)"
#: "X, not Y" (right X, wrong Y) and "not Y but X" (wrong Y, right X).
_RIGHT_NOT_WRONG = re.compile(rf"({_VALUE})\s*,?\s+not\s+(?:the\s+)?({_VALUE})")
_NOT_WRONG_BUT_RIGHT = re.compile(rf"(?i)\bnot\s+({_VALUE})\s*(?:,|but|,\s*but|;)\s*(?:it'?s\s+)?({_VALUE})")
_LIMIT = re.compile(r"(?i)\b(?:up to|limit of|maximum of|at most)\s+\$(\d[\d,]*(?:\.\d+)?)")
_MONEY_KEY = re.compile(r"(?i)amount|total|price|value")
_MARKDOWN = re.compile(r"(?m)^\s{0,3}(?:#{1,6}\s|[-*+]\s+\S|\d+[.)]\s+\S|\|.*\|\s*$)")
_JSONISH = re.compile(r"^\s*(?:```(?:json)?\s*)?[\[{]")
_SHORT_QUESTION_WORDS = 12

_judge = OfflineGroundednessJudge()


@dataclass(frozen=True)
class RuleMatch:
    """Why a trace is a member of a rule's class (shown beside the example)."""

    rule: str
    evidence: str


@dataclass(frozen=True)
class Rule:
    """One known class: its name, a title for people, and the test on one trace."""

    name: str
    title: str
    test: Callable[[TraceSummary], str | None]


def _answer(s: TraceSummary) -> str:
    return s.output or ""


def _exception(s: TraceSummary) -> str | None:
    return f"the agent raised: {s.error}" if s.error else None


def _empty(s: TraceSummary) -> str | None:
    return "the answer is empty" if not _answer(s).strip() and not s.error else None


def _wrong_shape(s: TraceSummary) -> str | None:
    text = _answer(s).strip()
    if not _JSONISH.match(text):
        return None
    body = text.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError as exc:
        return f"structured output that does not parse ({exc.args[0][:60]})"
    return None


def _refusal(s: TraceSummary) -> str | None:
    match = REFUSAL.search(_answer(s))
    if match is None or s.tool_calls or s.chunks or s.escalated:
        return None
    return f"refused ({match.group(0)!r}) with no tool call and no retrieval"


def _amounts(value: Any) -> list[float]:
    """Money amounts in a tool result: numbers under keys such as amount, total or price."""
    found: list[float] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, int | float) and not isinstance(item, bool) and _MONEY_KEY.search(str(key)):
                found.append(float(item))
            else:
                found += _amounts(item)
    elif isinstance(value, list):
        for item in value:
            found += _amounts(item)
    return found


def _missed_escalation(s: TraceSummary) -> str | None:
    if s.escalated or not s.turns:
        return None
    match = ESCALATION_REQUEST.search(s.turns[-1])
    if match:
        return f"the user wrote {match.group(0)!r} and the agent did not escalate"
    limits = [float(m.replace(",", "")) for m in _LIMIT.findall(_answer(s))]
    amounts = [a for call in s.tool_calls for a in _amounts(call.result)]
    if limits and amounts and max(amounts) > min(limits):
        return (
            f"the answer states a limit of ${min(limits):g}, the order is ${max(amounts):g}, "
            "and the agent neither acted nor escalated"
        )
    return None


def _correction(turn: str) -> tuple[str, str] | None:
    """(right, wrong) when the turn corrects a value, else None."""
    match = _RIGHT_NOT_WRONG.search(turn)
    if match:
        return match.group(1), match.group(2)
    match = _NOT_WRONG_BUT_RIGHT.search(turn)
    return (match.group(2), match.group(1)) if match else None


def _ignored_correction(s: TraceSummary) -> str | None:
    for i, turn in enumerate(s.turns[:-1]):
        found = _correction(turn)
        if found is None:
            continue
        right, wrong = found
        for later in s.outputs[i + 1 :]:
            if later and wrong in later and right not in later:
                return f"turn {i + 1} corrected {wrong} to {right}; a later answer still says {wrong}"
    return None


def _over_formatting(s: TraceSummary) -> str | None:
    question = s.turns[-1] if s.turns else ""
    if len(question.split()) > _SHORT_QUESTION_WORDS:
        return None
    lines = _MARKDOWN.findall(_answer(s))
    return f"{len(lines)} markdown structure line(s) for a short question" if len(lines) >= 2 else None


def _tool_chunks(s: TraceSummary) -> list[Chunk]:
    return [
        Chunk(
            id=f"tool:{call.name}:{i}",
            score=None,
            rank=1000 + i,
            text=json.dumps({"arguments": call.arguments, "result": call.result}, default=str),
        )
        for i, call in enumerate(s.tool_calls)
    ]


def _ungrounded(s: TraceSummary) -> str | None:
    answer = _answer(s)
    if not s.chunks or s.escalated or s.clarification or not answer.strip():
        return None
    verdict = _judge.judge_sync(answer=answer, chunks=[*s.chunks, *_tool_chunks(s)], mode="claims")
    if verdict.verdict is not False:
        return None
    unsupported = [str(c.get("claim", "")) for c in verdict.claims if not c.get("supported")]
    return "unsupported: " + " | ".join(unsupported)[:200]


#: The known classes, in the order they are tried.
RULES: tuple[Rule, ...] = (
    Rule("exception", "the agent raised", _exception),
    Rule("empty_answer", "empty answer", _empty),
    Rule("wrong_shape", "unparseable structured output", _wrong_shape),
    Rule("refusal_without_tools", "refusal without trying the tools", _refusal),
    Rule("missed_escalation", "missed escalation", _missed_escalation),
    Rule("ignored_correction", "correction ignored later", _ignored_correction),
    Rule("over_formatting", "markdown structure on a short question", _over_formatting),
    Rule("ungrounded_claim", "claim no chunk or tool result supports", _ungrounded),
)


def in_conversation(summary: TraceSummary, earlier: Sequence[TraceSummary]) -> TraceSummary:
    """The trace with the turns and answers of the earlier traces of its session before its own.

    A correction is often made in one trace and contradicted in the next: the rules read the whole
    conversation up to this trace (its own turn stays the last one).
    """
    if not earlier:
        return summary
    turns = tuple(t for e in earlier for t in e.turns) + summary.turns
    outputs = tuple(o for e in earlier for o in e.outputs) + summary.outputs
    return dataclasses.replace(summary, turns=turns, outputs=outputs)


def match_rules(summary: TraceSummary, rules: Sequence[Rule] = RULES) -> RuleMatch | None:
    """The first rule the trace matches, with its evidence, or None."""
    for rule in rules:
        evidence = rule.test(summary)
        if evidence is not None:
            return RuleMatch(rule.name, evidence)
    return None
