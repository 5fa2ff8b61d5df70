"""Conversations with simulated follow-up turns: the scenario's turns, then the simulated user's.

For a scenario with ``followups``, an attempt is a conversation: the scenario's own turns are sent one by
one, and after each answer from then on the simulator (:mod:`._simulator`) writes the next user turn,
until ``max_turns`` generated turns, ``stop_when`` matches the answer, or the simulated user is done.
Every turn is really sent to the agent; nothing is fabricated inside a prompt.

How a turn reaches the agent:

- A callable target that carries ``fn.open_session(context, config)`` (returning an object with
  ``send(turn)``, returning what a target returns, and optionally ``close()``; either may be async)
  talks to that one live session, turn by turn.
- Any other target (a plain callable, an HTTP endpoint) is called with the conversation so far, each
  step under the attempt's session id; the last call's session holds every turn.

The attempt's output is the last answer; its ``conversation`` holds every turn (user message,
``generated`` or not, answer, label). A simulator that fails raises :class:`SimulatorError`: the attempt
is an ``error``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from replaygate.replay._errors import TargetError
from replaygate.replay._runfile import ConversationTurn
from replaygate.replay._scenario_model import Followups, Scenario
from replaygate.replay._simulator import Simulator, SimulatorError
from replaygate.replay._target import CallableTarget, Target, TargetOutput, parse_target_output

__all__ = ["converse", "converse_blocking"]

BlockingSend = Callable[[Sequence[str]], TargetOutput]


def _stopped(followups: Followups, output: TargetOutput) -> bool:
    stop = followups.stop_when
    if stop is None:
        return False
    if stop.answer_regex is not None and re.search(stop.answer_regex, output.answer):
        return True
    return output.label is not None and output.label in stop.labels


def _needs_simulator(scenario: Scenario, simulator: Simulator | None) -> Simulator:
    if simulator is None:
        raise SimulatorError(f"scenario {scenario.id} declares followups but the run has no simulator")
    return simulator


async def _next(
    simulator: Simulator, scenario: Scenario, conv: list[ConversationTurn], attempt: int
) -> str | None:
    try:
        turn = await simulator.next_turn(scenario, conv, attempt=attempt)
    except SimulatorError:
        raise
    except Exception as exc:
        raise SimulatorError(f"{type(exc).__name__}: {exc}") from exc
    if turn is not None and not isinstance(turn, str):
        raise SimulatorError(f"returned {type(turn).__name__}, expected a str or None")
    return turn


def _record(conv: list[ConversationTurn], user: str, output: TargetOutput, generated: bool) -> None:
    conv.append(ConversationTurn(user=user, answer=output.answer, label=output.label, generated=generated))


def _finish(last: TargetOutput, conv: list[ConversationTurn]) -> TargetOutput:
    return replace(last, conversation=tuple(conv))


def _opener(target: Target) -> Callable[..., Any] | None:
    if isinstance(target, CallableTarget):
        opener = getattr(target.fn, "open_session", None)
        return opener if callable(opener) else None
    return None


async def converse(
    target: Target,
    scenario: Scenario,
    config: Mapping[str, Any],
    *,
    session_id: str,
    simulator: Simulator | None,
    attempt: int,
) -> TargetOutput:
    """Run one conversation with follow-ups on the event loop (async targets and HTTP endpoints)."""
    sim = _needs_simulator(scenario, simulator)
    followups = scenario.followups
    assert followups is not None
    opener = _opener(target)
    session: Any = None
    sent: list[str] = []

    async def send(turn: str) -> TargetOutput:
        nonlocal session
        sent.append(turn)
        if opener is None:
            return await target.call(list(sent), scenario.context, config, session_id=session_id)
        if session is None:
            session = opener(dict(scenario.context), dict(config))
            if inspect.isawaitable(session):
                session = await session
        if inspect.iscoroutinefunction(session.send):
            result = await session.send(turn)
        else:
            result = await asyncio.to_thread(contextvars.copy_context().run, session.send, turn)
        return parse_target_output(await result if inspect.isawaitable(result) else result)

    try:
        return await _conversation(scenario, followups, sim, attempt, send)
    finally:
        close = getattr(session, "close", None)
        if callable(close):
            done = close()
            if inspect.isawaitable(done):
                await done


async def _conversation(
    scenario: Scenario,
    followups: Followups,
    sim: Simulator,
    attempt: int,
    send: Callable[[str], Awaitable[TargetOutput]],
) -> TargetOutput:
    conv: list[ConversationTurn] = []
    last: TargetOutput | None = None
    for turn in scenario.turns:
        last = await send(turn)
        _record(conv, turn, last, False)
    assert last is not None
    for _ in range(followups.max_turns):
        if _stopped(followups, last):
            break
        user = await _next(sim, scenario, conv, attempt)
        if user is None:
            break
        last = await send(user)
        _record(conv, user, last, True)
    return _finish(last, conv)


def converse_blocking(
    target: Target,
    call: Callable[..., TargetOutput],
    scenario: Scenario,
    config: Mapping[str, Any],
    *,
    session_id: str,
    simulator: Simulator | None,
    attempt: int,
) -> TargetOutput:
    """Run one conversation with follow-ups in a runner thread (sync callable targets).

    ``call`` is the thread's blocking target call (``fn(turns, context, config, session_id=...)``); the
    simulator runs on a private event loop of this thread.
    """
    sim = _needs_simulator(scenario, simulator)
    followups = scenario.followups
    assert followups is not None
    opener = _opener(target)
    session: Any = None
    sent: list[str] = []

    def send(turn: str) -> TargetOutput:
        nonlocal session
        sent.append(turn)
        if opener is None:
            return call(list(sent), scenario.context, config, session_id=session_id)
        if session is None:
            session = opener(dict(scenario.context), dict(config))
            if inspect.isawaitable(session):
                raise TargetError("open_session returned an awaitable for a sync target; make it sync")
        return parse_target_output(session.send(turn))

    conv: list[ConversationTurn] = []
    try:
        last: TargetOutput | None = None
        for turn in scenario.turns:
            last = send(turn)
            _record(conv, turn, last, False)
        assert last is not None
        for _ in range(followups.max_turns):
            if _stopped(followups, last):
                break
            user = asyncio.run(_next(sim, scenario, conv, attempt))
            if user is None:
                break
            last = send(user)
            _record(conv, user, last, True)
        return _finish(last, conv)
    finally:
        close = getattr(session, "close", None)
        if callable(close):
            close()
