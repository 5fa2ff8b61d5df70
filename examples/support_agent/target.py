"""The replay target: one fresh session of the support agent, the turns sent in order.

Used by ``replaygate run --target examples.support_agent.target:run_session --config <yaml>``: the
replay engine passes the scenario's turns, its context and the parsed configuration file.

``context`` may hold ``user_id`` (the customer, so order ownership is checked), ``order_id`` (an order
already selected in the chat widget, so the agent does not need to ask for it) and ``seed``.

Scenarios with simulated follow-up turns talk to one live session instead: ``run_session.open_session``
(:func:`open_session`) returns an :class:`AgentSession` whose ``send(turn)`` answers one turn.

Randomness: without any seed every attempt draws fresh randomness, as repeated calls to a real model
would. ``context["seed"]`` fixes one attempt's randomness (combined with the configuration's seed). With
only a configured ``seed``, the i-th run of the same turns and context in one process uses a seed derived
from (configuration seed, turns, context, i): the k attempts of a scenario are then reproducible as a set
from one run to the next, whatever order a concurrent runner starts them in.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from examples.support_agent._agent import SupportAgent
from examples.support_agent._config import load_config

__all__ = ["AgentSession", "arun_session", "open_session", "run_session"]


_runs: Counter[str] = Counter()
_runs_lock = threading.Lock()


def _seed(turns: Sequence[str], context: Mapping[str, Any], config_seed: int | None) -> int | None:
    ctx_seed = context.get("seed")
    if ctx_seed is not None:
        return int(ctx_seed) if config_seed is None else int(ctx_seed) * 1_000_003 + config_seed
    if config_seed is None:
        return None
    key = json.dumps([config_seed, list(turns), dict(context)], sort_keys=True, default=str)
    with _runs_lock:
        index = _runs[key]
        _runs[key] += 1
    return int(hashlib.sha256(f"{key}|{index}".encode()).hexdigest()[:15], 16)


def run_session(
    turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """Run one fresh session through ``SupportAgent.respond`` and return the answers and the last label.

    Args:
        turns: the user messages, in order.
        context: optional ``user_id``, ``order_id``, ``seed``.
        config: the parsed YAML of one configuration (``configs/*.yaml``).

    Returns:
        ``{"answer", "answers", "label", "labels", "messages", "session_id", "trace_ids"}`` where
        ``label`` is ``answer``, ``escalate``, ``clarify`` or ``refuse`` for the last turn.

    Raises:
        ValueError: no turns were given (``ConfigError``, a ValueError, for a bad configuration).
    """
    if not turns:
        raise ValueError("run_session needs at least one turn (the scenario has no user turns)")
    cfg = load_config(config)
    agent = SupportAgent(cfg, seed=_seed(turns, context, cfg.seed))
    session_id = f"replay-{uuid.uuid4().hex[:16]}"
    user_id = context.get("user_id")
    user = str(user_id) if user_id is not None else None
    state = agent.start_session(session_id, user_id=user, order_id=context.get("order_id"))
    answers = [agent.respond(str(turn), session_id=session_id, user_id=user) for turn in turns]
    return {
        "answer": answers[-1],
        "answers": answers,
        "label": state.turns[-1].label,
        "labels": [t.label for t in state.turns],
        "messages": list(state.history),
        "session_id": session_id,
        "trace_ids": [t.trace_id for t in state.turns],
    }


async def arun_session(
    turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """The same as :func:`run_session`, awaited (the session runs in a worker thread, context copied)."""
    return await asyncio.to_thread(run_session, list(turns), dict(context), dict(config))


class AgentSession:
    """One live session of the agent: ``send(turn)`` answers one turn (for simulated follow-ups)."""

    def __init__(self, context: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        cfg = load_config(config)
        self.agent = SupportAgent(cfg, seed=_seed(["<live session>"], context, cfg.seed))
        self.session_id = f"replay-{uuid.uuid4().hex[:16]}"
        user_id = context.get("user_id")
        self.user = str(user_id) if user_id is not None else None
        self.state = self.agent.start_session(
            self.session_id, user_id=self.user, order_id=context.get("order_id")
        )

    def send(self, turn: str) -> dict[str, Any]:
        """Answer one user turn in this session; returns ``{"answer", "label", "messages", "trace_id"}``."""
        answer = self.agent.respond(str(turn), session_id=self.session_id, user_id=self.user)
        last = self.state.turns[-1]
        return {
            "answer": answer,
            "label": last.label,
            "messages": list(self.state.history),
            "trace_id": last.trace_id,
        }


def open_session(context: Mapping[str, Any], config: Mapping[str, Any]) -> AgentSession:
    """Open one live session of the agent (the replay engine's ``open_session`` hook of a target)."""
    return AgentSession(context, config)


run_session.open_session = open_session  # type: ignore[attr-defined]
