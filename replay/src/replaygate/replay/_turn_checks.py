"""Checks on one turn or every turn of a conversation (``turn: every`` or ``turn: N``).

The scorer sees the attempt's last answer; checks declared with ``turn: every`` or a turn number are
taken out of its hands (:func:`split_turn_checks`) and run here on each answer of the conversation
(:func:`run_turn_checks`). Each turn's own spans are the agent span of that turn and everything under it,
when the attempt has one agent span per turn; otherwise every turn is checked against the whole attempt's
spans (tool checks then see the whole conversation's calls). A check on a turn that was never reached
fails, saying so. Results are named ``<check>@turn<N>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replaygate.instrumentation import SpanRecord, TraceSummary, summarize_spans
from replaygate.replay._checks import CheckContext, run_check
from replaygate.replay._labels import derive_label
from replaygate.replay._runfile import CheckResult, ConversationTurn
from replaygate.replay._scenario_checks import Check
from replaygate.replay._scenario_model import Scenario
from replaygate.replay._target import TargetOutput

__all__ = ["run_turn_checks", "split_turn_checks", "turn_spans"]


def split_turn_checks(scenario: Scenario) -> tuple[Scenario, list[Check]]:
    """The scenario with only its last-turn checks, and the checks that read other turns."""
    by_turn = [c for c in scenario.checks if c.turn != "last"]
    if not by_turn:
        return scenario, []
    last = [c for c in scenario.checks if c.turn == "last"]
    return scenario.model_copy(update={"checks": last}), by_turn


def turn_spans(spans: Sequence[Any], turns: int) -> list[list[Any]] | None:
    """The spans of each turn (its agent span and descendants), or None when they cannot be told apart."""
    records = [s for s in spans if isinstance(s, SpanRecord)]
    agents = sorted((s for s in records if s.kind == "agent"), key=lambda s: s.start_ns)
    if len(agents) != turns:
        return None
    children: dict[str | None, list[SpanRecord]] = {}
    for span in records:
        children.setdefault(span.parent_id, []).append(span)
    out: list[list[Any]] = []
    for agent in agents:
        group, todo = [], [agent]
        while todo:
            span = todo.pop()
            group.append(span)
            todo.extend(children.get(span.span_id, []))
        out.append(group)
    return out


def _conversation(output: TargetOutput) -> list[ConversationTurn]:
    if output.conversation:
        return list(output.conversation)
    raw = output.raw if isinstance(output.raw, dict) else {}
    answers = raw.get("answers")
    labels = raw.get("labels") or []
    if isinstance(answers, list) and answers and all(isinstance(a, str) for a in answers):
        return [
            ConversationTurn(
                user="",
                answer=a,
                label=labels[i] if i < len(labels) and isinstance(labels[i], str) else None,
            )
            for i, a in enumerate(answers)
        ]
    return [ConversationTurn(user="", answer=output.answer, label=output.label)]


def run_turn_checks(
    scenario: Scenario,
    checks: Sequence[Check],
    output: TargetOutput,
    summary: TraceSummary,
    spans: Sequence[Any],
) -> list[CheckResult]:
    """Run ``checks`` on the turns they name; one result per check and turn."""
    conversation = _conversation(output)
    per_turn = turn_spans(spans, len(conversation))
    summaries: list[TraceSummary] = (
        [summarize_spans(group) for group in per_turn] if per_turn else [summary] * len(conversation)
    )
    results: list[CheckResult] = []
    for check in checks:
        numbers = range(1, len(conversation) + 1) if check.turn == "every" else [int(check.turn)]
        for n in numbers:
            name = f"{check.type}@turn{n}"
            if n > len(conversation):
                results.append(
                    CheckResult(
                        name=name,
                        passed=False,
                        detail=f"the conversation ended after {len(conversation)} turn(s): no turn {n}",
                    )
                )
                continue
            turn = conversation[n - 1]
            try:
                label = derive_label(summaries[n - 1], turn.answer, turn.label)
            except ValueError:
                label = derive_label(summaries[n - 1], turn.answer)
            ctx = CheckContext(
                answer=turn.answer or "",
                label=label,
                summary=summaries[n - 1],
                allow_empty=scenario.allow_empty,
            )
            results.append(run_check(check, ctx, name))
    return results
