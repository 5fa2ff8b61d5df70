"""Guardrail measures of one attempt: latency, tokens, cost, escalation, empty answer, steps.

Cost comes from `genai-prices <https://github.com/pydantic/genai-prices>`_ (``calc_price``) for the model
and provider of every LLM call the attempt made. An unknown price is ``None``, never 0: the cost is None
when any call's model is unknown to genai-prices, has no model name, or lacks a token count. An attempt
that made no LLM call at all costs 0.0 (that is what the trace says it spent).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from replaygate.instrumentation._records import LlmCall, TraceSummary
from replaygate.replay._runfile import Measures

__all__ = ["call_cost", "compute_measures", "is_empty_answer", "is_escalated", "total_cost"]


def is_empty_answer(answer: str | None) -> bool:
    """Whether an answer is missing or only whitespace."""
    return answer is None or not answer.strip()


def is_escalated(summary: TraceSummary) -> bool:
    """Whether the attempt escalated: the escalation signal, or a call to a tool named ``*escalat*``."""
    return summary.escalated or any("escalat" in call.name.lower() for call in summary.tool_calls)


def load_prices() -> None:
    """Import genai-prices, which loads its price data at import (a large share of a second).

    :func:`call_cost` imports it on first use, so the commands that only read run files never pay for it;
    the runner calls this before its first attempt, so no attempt pays for it mid-run.
    """
    importlib.import_module("genai_prices")


def call_cost(call: LlmCall) -> float | None:
    """The price in USD of one LLM call, or None when it cannot be known."""
    if not call.model or call.input_tokens is None or call.output_tokens is None:
        return None
    from genai_prices import Usage, calc_price  # see load_prices

    usage = Usage(input_tokens=call.input_tokens, output_tokens=call.output_tokens)
    attempts: list[str | None] = [call.provider, None] if call.provider else [None]
    for provider in attempts:
        try:
            price = calc_price(usage, call.model, provider_id=provider)
        except LookupError:
            continue  # unknown provider id: retry by model name alone; unknown model: None
        return float(price.total_price)
    return None


def total_cost(calls: Sequence[LlmCall]) -> float | None:
    """The summed price of LLM calls; None when any call's price is unknown (never 0 for unknown)."""
    total = 0.0
    for call in calls:
        cost = call_cost(call)
        if cost is None:
            return None
        total += cost
    return total


def _tokens(reported: int | None, per_call: list[int | None]) -> int | None:
    if reported is not None:
        return reported
    if not per_call or any(t is None for t in per_call):
        return None
    return sum(t for t in per_call if t is not None)


def compute_measures(summary: TraceSummary, *, answer: str | None, latency_s: float) -> Measures:
    """Measure one attempt from its trace summary, its final answer and its wall-clock latency."""
    return Measures(
        latency_s=latency_s,
        input_tokens=_tokens(summary.input_tokens, [c.input_tokens for c in summary.llm_calls]),
        output_tokens=_tokens(summary.output_tokens, [c.output_tokens for c in summary.llm_calls]),
        cost_usd=total_cost(summary.llm_calls),
        escalated=is_escalated(summary),
        empty=is_empty_answer(answer),
        steps=len(summary.llm_calls) + len(summary.tool_calls),
    )
