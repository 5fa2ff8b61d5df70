"""Guardrail measures: tokens, cost with genai-prices (None when unknown, never 0), escalation, steps."""

from __future__ import annotations

import dataclasses
from typing import Any

from replaygate.instrumentation import LlmCall, ToolCall, TraceSummary
from replaygate.replay._measures import call_cost, compute_measures, total_cost


def make_summary(**over: Any) -> TraceSummary:
    base: dict[str, Any] = dict(
        trace_id="t1", session_id=None, user_id=None, agent_name="a", agent_version="1", turns=("q",),
        output=None, outputs=(), error=None, chunks=(), tool_calls=(), llm_calls=(), escalated=False,
        escalation_reason=None, clarification=False, failure_reasons=(), latency_s=0.1,
        input_tokens=None, output_tokens=None,
    )  # fmt: skip
    base.update(over)
    return TraceSummary(**base)


def llm(
    model: str | None, provider: str | None = "openai", tin: int | None = 1000, tout: int | None = 500
) -> LlmCall:
    return LlmCall(model=model, provider=provider, input_tokens=tin, output_tokens=tout, latency_s=0.2)


def test_known_model_has_a_positive_cost() -> None:
    cost = call_cost(llm("gpt-4o-mini"))
    assert cost is not None and cost > 0
    # price scales with tokens
    double = call_cost(llm("gpt-4o-mini", tin=2000, tout=1000))
    assert double is not None and abs(double - 2 * cost) < 1e-9


def test_unknown_model_gives_none_never_zero() -> None:
    assert call_cost(llm("no-such-model-replaygate-test")) is None
    assert total_cost([llm("gpt-4o-mini"), llm("no-such-model-replaygate-test")]) is None


def test_missing_tokens_or_model_gives_none() -> None:
    assert call_cost(llm("gpt-4o-mini", tin=None)) is None
    assert call_cost(llm(None)) is None


def test_unknown_provider_falls_back_to_the_model_name() -> None:
    cost = call_cost(llm("gpt-4o-mini", provider="my-proxy"))
    assert cost is not None and cost == call_cost(llm("gpt-4o-mini"))


def test_no_llm_call_costs_zero() -> None:
    assert total_cost([]) == 0.0


def test_compute_measures() -> None:
    calls = (llm("gpt-4o-mini"), llm("gpt-4o-mini", tin=10, tout=5))
    tools = (ToolCall(name="escalate_to_human", arguments={}, result=None),)
    m = compute_measures(make_summary(llm_calls=calls, tool_calls=tools), answer="  ", latency_s=1.5)
    assert m.latency_s == 1.5
    assert (m.input_tokens, m.output_tokens) == (1010, 505)
    assert m.cost_usd is not None and m.cost_usd > 0
    assert m.escalated and m.empty and m.steps == 3
    unknown = compute_measures(
        make_summary(llm_calls=(llm("gpt-4o-mini", tin=None),)), answer="hi", latency_s=1
    )
    assert unknown.input_tokens is None and unknown.output_tokens == 500 and unknown.cost_usd is None
    assert not unknown.empty and not unknown.escalated
    reported = compute_measures(make_summary(input_tokens=7, output_tokens=3), answer="hi", latency_s=1)
    assert (reported.input_tokens, reported.output_tokens, reported.steps) == (7, 3, 0)
    assert reported.cost_usd is None and reported.llm_calls == 0  # no LLM call was captured: unknown


def test_no_llm_call_is_unknown_cost_unless_declared() -> None:
    none_seen = compute_measures(make_summary(), answer="hi", latency_s=1)
    assert (none_seen.cost_usd, none_seen.input_tokens, none_seen.llm_calls) == (None, None, 0)
    declared = compute_measures(make_summary(), answer="hi", latency_s=1, declares_no_llm=True)
    assert declared.cost_usd == 0.0


def test_span_reported_cost_wins_over_the_price_list() -> None:
    call = llm("no-such-model-anywhere")
    assert compute_measures(make_summary(llm_calls=(call,)), answer="a", latency_s=1).cost_usd is None
    priced = dataclasses.replace(call, cost_usd=0.25)
    assert compute_measures(make_summary(llm_calls=(priced,)), answer="a", latency_s=1).cost_usd == 0.25
