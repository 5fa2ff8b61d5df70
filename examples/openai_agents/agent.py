"""The agent: openai-agents SDK, one function tool, a chat-completions model; ``@trace_agent`` on top.

Adopting replaygate in an agent already traced by an instrumentor (here OpenInference's
``OpenAIAgentsInstrumentor``, writing to the global tracer provider) is one decorator on the entry point
and one ``configure`` call at start-up: the instrumentor's LLM and tool spans nest under the agent span and
are read by the store, ``replaygate trace`` and ``replaygate run`` alike.

``target`` is the replay target (``examples.openai_agents.agent:target``): the base URL comes from the
candidate config (``base_url``) or ``OPENAI_BASE_URL``.
"""

from __future__ import annotations

import os
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from replaygate.instrumentation import trace_agent

from examples.openai_agents.local_server import MODEL

__all__ = ["ORDERS", "build_agent", "respond", "target"]

ORDERS = {"ORD-1001": "shipped on 2026-11-28, arriving in 2 days", "ORD-1002": "waiting for stock"}


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up the status of an order by its id (ORD-…)."""
    return ORDERS.get(order_id, f"no order {order_id}")


def build_agent(base_url: str) -> Agent:
    """The support agent, talking to the OpenAI-compatible endpoint at ``base_url``."""
    client = AsyncOpenAI(
        base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "sk-local"), max_retries=0
    )
    return Agent(
        name="order-agent",
        instructions="Answer order questions; use lookup_order for any order id.",
        tools=[lookup_order],
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
    )


@trace_agent(name="order-agent", version="1.0", provider="openai")
async def respond(message: str, base_url: str, session_id: str | None = None) -> str:
    """One user turn: run the agent to its final output."""
    result = await Runner.run(build_agent(base_url), message)
    return str(result.final_output)


async def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Replay target: every turn of the scenario through the agent, in one session."""
    base_url = str(config.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "")
    answer = ""
    for turn in turns:
        answer = await respond(turn, base_url)
    return {"answer": answer}
