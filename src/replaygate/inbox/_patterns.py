"""The assertion pattern of each failure class, and the test that drafted checks do not contradict.

``suggest_checks(match, summary, similar)`` drafts the checks that catch one member of a class again:

=======================  ==========================================================================
class                    checks
=======================  ==========================================================================
refusal_without_tools    ``forbidden_output_regex`` on refusal phrasing, and ``expected_tools`` from
                         similar traces that did not fail (else ``expected_label: answer``)
wrong_shape              an ``output_regex`` (the answer is one JSON object or array) and a
                         ``forbidden_output_regex`` (no code fence, no trailing text)
ignored_correction       ``output_regex`` on the corrected value, ``forbidden_output_regex`` on the wrong one
over_formatting          ``max_chars`` and ``not_contains: ["##"]``
missed_escalation        ``expected_label: escalate`` (and the escalation tool similar traces called)
ungrounded_claim         ``forbidden_output_regex`` on the unsupported claim
=======================  ==========================================================================

``contradictions(checks)`` lists pairs of checks that no answer can satisfy together (a tool expected and
forbidden, a required value that a forbidden pattern or ``not_contains`` rejects, two expected labels, a
``max_chars`` shorter than a required value); promotion refuses a draft with any.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from replaygate.instrumentation import TraceRecord, TraceSummary
from replaygate.replay import (
    Check,
    ContainsCheck,
    ExpectedLabelCheck,
    ExpectedToolsCheck,
    ForbiddenOutputRegexCheck,
    ForbiddenToolsCheck,
    MaxCharsCheck,
    NotContainsCheck,
    OutputRegexCheck,
)

from replaygate.inbox._rules import RuleMatch, match_rules

__all__ = ["PATTERNS", "contradictions", "similar_good_traces", "suggest_checks"]

#: What each class's suggested checks are, for people (the inbox prints it beside the class).
PATTERNS: dict[str, str] = {
    "refusal_without_tools": "forbidden_output_regex (refusal phrasing) + expected_tools",
    "wrong_shape": "output_regex (one JSON value) + forbidden_output_regex (fences, trailing text)",
    "ignored_correction": "output_regex (corrected value) + forbidden_output_regex (wrong value)",
    "over_formatting": 'max_chars + not_contains: "##"',
    "missed_escalation": "expected_label: escalate (+ the escalation tool)",
    "ungrounded_claim": "forbidden_output_regex (the unsupported claim)",
    "empty_answer": "the default non-empty check",
    "exception": "none: an exception is an error attempt",
}
_REFUSAL_PATTERN = (
    r"(?i)(I'?m sorry,? but I can(no|')t|I can(no|')t help|(not|un)able to (help|assist)|"
    r"I'?m afraid I can(no|')t)"
)
_MIN_SIMILARITY = 0.5


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{3,}", text.lower())}


def similar_good_traces(
    summary: TraceSummary, population: Sequence[TraceRecord], *, limit: int = 20
) -> list[TraceSummary]:
    """Traces of ``population`` that asked about the same thing (Jaccard >= 0.5) and look right.

    Right: no failure signal, and no rule of the rule layer matches (an unflagged refusal is no model).
    """
    question = _words(summary.turns[-1] if summary.turns else "")
    if not question:
        return []
    scored: list[tuple[float, int, TraceSummary]] = []
    for i, record in enumerate(population):
        other = record.summary
        if other.trace_id == summary.trace_id or other.failure_reasons or not other.turns:
            continue
        words = _words(other.turns[-1])
        similarity = len(question & words) / len(question | words) if words else 0.0
        if similarity >= _MIN_SIMILARITY:
            scored.append((similarity, i, other))
    scored.sort(key=lambda t: (-t[0], t[1]))
    good = (s for _, _, s in scored if match_rules(s) is None)
    return [s for _, s in zip(range(limit), good, strict=False)]


def _majority_tools(similar: Sequence[TraceSummary]) -> list[str]:
    if not similar:
        return []
    counts = Counter(name for s in similar for name in dict.fromkeys(c.name for c in s.tool_calls))
    return [name for name, n in counts.most_common() if n * 2 > len(similar)]


def _literal(value: str) -> str:
    return r"(?<![\w-])" + re.escape(value) + r"(?![\w-])"


def _claim_pattern(claim: str) -> str:
    words = claim.strip().rstrip(".!?").split()[:10]
    return "(?i)" + r"\s+".join(re.escape(w) for w in words)


def suggest_checks(
    match: RuleMatch, summary: TraceSummary, similar: Sequence[TraceSummary] = ()
) -> list[Check]:
    """The checks of ``match``'s class for this trace (empty for classes without a pattern)."""
    checks: list[Any] = []
    rule = match.rule
    if rule == "refusal_without_tools":
        checks.append(ForbiddenOutputRegexCheck(pattern=_REFUSAL_PATTERN))
        tools = _majority_tools(similar)
        checks.append(ExpectedToolsCheck(tools=tools) if tools else ExpectedLabelCheck(label="answer"))
    elif rule == "wrong_shape":
        checks.append(OutputRegexCheck(pattern=r"^\s*[\[{][\s\S]*[\]}]\s*$"))
        checks.append(ForbiddenOutputRegexCheck(pattern=r"```"))
    elif rule == "ignored_correction":
        found = re.search(r"corrected (\S+) to (\S+);", match.evidence)
        if found:
            wrong, right = found.group(1), found.group(2)
            checks.append(OutputRegexCheck(pattern=_literal(right)))
            checks.append(ForbiddenOutputRegexCheck(pattern=_literal(wrong)))
    elif rule == "over_formatting":
        checks.append(MaxCharsCheck(limit=max(200, min(600, len(summary.output or "") // 2))))
        checks.append(NotContainsCheck(values=["##"]))
    elif rule == "missed_escalation":
        checks.append(ExpectedLabelCheck(label="escalate"))
        escalators = [s for s in similar if s.escalated]
        tools = _majority_tools(escalators)
        if tools:
            checks.append(ExpectedToolsCheck(tools=tools))
    elif rule == "ungrounded_claim":
        claims = match.evidence.removeprefix("unsupported: ").split(" | ")
        checks.extend(ForbiddenOutputRegexCheck(pattern=_claim_pattern(c)) for c in claims[:2] if c.strip())
    return list(checks)


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def contradictions(checks: Sequence[Check]) -> list[str]:
    """Pairs of checks no answer can pass together, each as one sentence (empty: consistent)."""
    problems: list[str] = []
    expected = {t for c in checks if isinstance(c, ExpectedToolsCheck) for t in c.tools}
    forbidden = {t for c in checks if isinstance(c, ForbiddenToolsCheck) for t in c.tools}
    for tool in sorted(expected & forbidden):
        problems.append(f"tool {tool!r} is both expected and forbidden")
    labels = {c.label for c in checks if isinstance(c, ExpectedLabelCheck)}
    if len(labels) > 1:
        problems.append(f"two expected labels: {', '.join(sorted(labels))}")
    required = [v for c in checks if isinstance(c, ContainsCheck) for v in c.values]
    for value in required:
        for c in checks:
            if isinstance(c, ForbiddenOutputRegexCheck) and _matches(c.pattern, value):
                problems.append(f"required value {value!r} matches forbidden pattern {c.pattern!r}")
            if isinstance(c, NotContainsCheck) and any(v.lower() in value.lower() for v in c.values):
                problems.append(f"required value {value!r} is also in not_contains")
            if isinstance(c, MaxCharsCheck) and len(value) > c.limit:
                problems.append(f"required value {value!r} is longer than max_chars {c.limit}")
    wanted = [c.pattern for c in checks if isinstance(c, OutputRegexCheck)]
    for c in checks:
        if isinstance(c, ForbiddenOutputRegexCheck) and c.pattern in wanted:
            problems.append(f"pattern {c.pattern!r} is both required and forbidden")
    return problems
