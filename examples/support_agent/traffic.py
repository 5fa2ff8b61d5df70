"""Simulated production traffic for the support agent, with late negative feedback from unhappy users.

``simulate(n, config, seed)`` sends about ``n`` requests (sessions of one to three turns: refunds within
and above the limit, order status, shipping, returns, passwords, account and payment questions, angry
and legal messages that must go to a human, follow-ups and clarifications) through one agent, as one
production process would, then records negative feedback by trace id for a share of the bad answers
(``feedback_rate``), as users do minutes later.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from examples.support_agent import _telemetry as tel
from examples.support_agent._agent import SupportAgent
from examples.support_agent._config import AgentConfig
from examples.support_agent._orders import ORDERS, Order
from examples.support_agent._session import INJECTED_FAILURES, TurnResult

__all__ = ["SESSION_KINDS", "make_session", "simulate"]

Session = tuple[str | None, list[str]]  # (user id, turns)

_SMALL = [o for o in ORDERS if o.status == "delivered" and o.amount <= 200]
_LARGE = [o for o in ORDERS if o.status == "delivered" and o.amount > 200]
_MOVING = [o for o in ORDERS if o.status in ("shipped", "processing")]

_QUESTIONS = [
    "How long does standard shipping take?",
    "How much does express shipping cost?",
    "Do you ship to Canada?",
    "Can I get free shipping?",
    "Can I return something I bought 3 weeks ago?",
    "What is your return policy?",
    "I forgot my password, how do I reset it?",
    "My account is locked after too many sign-in attempts, what now?",
    "How do I delete my account?",
    "Do you accept PayPal?",
    "Can I pay with a gift card?",
    "Can I cancel an order I placed an hour ago?",
    "Is there a warranty on headphones?",
    "How long does a refund take to arrive?",
    "Who pays customs duties on international orders?",
]
_FOLLOWUPS = {
    "Do you ship to Canada?": "and how long does it take?",
    "What is your return policy?": "what about damaged items?",
    "Is there a warranty on headphones?": "and how do I make a claim?",
    "How do I delete my account?": "is my order history deleted too?",
}
_ANGRY = [
    "This is the third time my order {oid} is late. Unacceptable!",
    "I'm going to talk to my lawyer about order {oid}.",
    "If this isn't fixed today I will file a chargeback for {oid}.",
    "I want to speak to a human about {oid}, right now.",
    "Your service is USELESS and I am FURIOUS about {oid}",
    "I'd like to make a formal complaint about how my order {oid} was handled.",
]


def _pick(rng: random.Random, orders: list[Order]) -> Order:
    return orders[rng.randrange(len(orders))]


def _refund_within(rng: random.Random) -> Session:
    o = _pick(rng, _SMALL)
    return o.user_id, [
        rng.choice(
            [
                f"I'd like a refund for {o.order_id}.",
                f"Can I get my money back for order {o.order_id}? The {o.item} stopped working.",
                f"Please refund ${o.amount / 2:.2f} on {o.order_id}, one of the two items was missing.",
            ]
        )
    ]


def _refund_over(rng: random.Random) -> Session:
    o = _pick(rng, _LARGE)
    return o.user_id, [
        rng.choice(
            [
                f"I want a refund for {o.order_id}, the {o.item} is not what I expected.",
                f"Please refund ${o.amount:.0f} on {o.order_id}.",
                f"I need a refund for order {o.order_id}, the {o.item} does not work.",
            ]
        )
    ]


def _refund_needs_id(rng: random.Random) -> Session:
    o = _pick(rng, _SMALL + _LARGE)
    turns = [
        rng.choice([f"I want a refund for my {o.item}.", "I'd like a refund please."]),
        f"It's {o.order_id}",
    ]
    if rng.random() < 0.5:
        turns.append("and how long will that take?")
    return o.user_id, turns


def _refund_followup(rng: random.Random) -> Session:
    o = _pick(rng, _SMALL)
    return o.user_id, [f"I'd like a refund for {o.order_id}.", "and how long will that take?"]


def _status(rng: random.Random) -> Session:
    o = _pick(rng, _MOVING)
    return o.user_id, [
        rng.choice([f"Where is my order {o.order_id}?", f"What's the status of {o.order_id}?"])
    ]


def _question(rng: random.Random) -> Session:
    q = rng.choice(_QUESTIONS)
    turns = [q]
    if q in _FOLLOWUPS and rng.random() < 0.6:
        turns.append(_FOLLOWUPS[q])
    return f"u-{rng.randrange(2000, 2999)}", turns


def _angry(rng: random.Random) -> Session:
    o = _pick(rng, list(ORDERS))
    return o.user_id, [rng.choice(_ANGRY).format(oid=o.order_id)]


#: Kinds of session and their share of traffic.
SESSION_KINDS: dict[str, tuple[float, Callable[[random.Random], Session]]] = {
    "question": (0.42, _question),
    "refund_within": (0.14, _refund_within),
    "refund_over": (0.10, _refund_over),
    "refund_needs_id": (0.10, _refund_needs_id),
    "refund_followup": (0.06, _refund_followup),
    "order_status": (0.08, _status),
    "angry": (0.10, _angry),
}


def make_session(rng: random.Random) -> tuple[str, str | None, list[str]]:
    """Draw one simulated session: its kind, the user id and the turns."""
    kinds = list(SESSION_KINDS)
    kind = rng.choices(kinds, weights=[SESSION_KINDS[k][0] for k in kinds])[0]
    user, turns = SESSION_KINDS[kind][1](rng)
    return kind, user, turns


_COMPLAINTS = {
    "empty_answer": "The assistant did not answer at all.",
    "refusal_without_tools": "It refused to help with a simple question.",
    "ungrounded_claim": "It told me something that is not your policy.",
    "missed_escalation": "I asked for a person and got a canned answer.",
    "unneeded_escalation": "Why hand a simple question to a human?",
}


def _complaint(turn: TurnResult) -> str | None:
    for failure in ("empty_answer", "refusal_without_tools", "missed_escalation", "ungrounded_claim"):
        if failure in turn.injected:
            return _COMPLAINTS[failure]
    if "unneeded_escalation" in turn.injected:
        return _COMPLAINTS["unneeded_escalation"]
    return None


def simulate(
    n: int,
    config: AgentConfig | Mapping[str, Any] | str | Path = "production",
    seed: int | None = None,
    *,
    feedback_rate: float = 0.5,
    store: str | Path | None = None,
) -> dict[str, int]:
    """Send about ``n`` requests (whole sessions) through one agent, then record late user feedback.

    Args:
        n: the number of requests (turns) to send; the last session may end the count a turn or two over.
        config: the agent configuration (name, path, mapping or ``AgentConfig``).
        seed: makes the traffic and the agent reproducible; None draws fresh randomness.
        feedback_rate: the share of bad answers whose user leaves negative feedback (a few good answers
            get positive feedback too).
        store: where feedback goes (default: the store ``configure`` or ``REPLAYGATE_STORE`` names).

    Returns:
        Counts: ``requests``, ``sessions``, one per label (``answer``, ``escalate``, ``clarify``,
        ``refuse``), one per planted failure (``injected_<name>``), ``negative_feedback``,
        ``positive_feedback`` and ``feedback_skipped`` (no trace id: instrumentation not configured).
    """
    if n < 0 or not 0.0 <= feedback_rate <= 1.0:
        raise ValueError(f"simulate: n must be >= 0 and feedback_rate in [0, 1], got n={n}, {feedback_rate=}")
    rng = random.Random(seed)
    agent = SupportAgent(config, seed=None if seed is None else rng.randrange(2**31))
    counts: Counter[str] = Counter(
        {k: 0 for k in ("requests", "sessions", "answer", "escalate", "clarify", "refuse")}
    )
    counts.update({f"injected_{name}": 0 for name in INJECTED_FAILURES})
    pending: list[tuple[str | None, float, str]] = []
    prefix = f"sim-{uuid.uuid4().hex[:8]}"  # unique per run, so re-runs never merge sessions in a store
    while counts["requests"] < n:
        kind, user, turns = make_session(rng)
        session_id = f"{prefix}-{counts['sessions']:05d}"
        counts["sessions"] += 1
        agent.tools.refunded.clear()  # the few simulated orders stand for many real ones: fresh ledger
        for message in turns:
            turn = agent.respond_turn(message, session_id=session_id, user_id=user)
            counts["requests"] += 1
            counts[turn.label] += 1
            counts.update(f"injected_{name}" for name in turn.injected)
            complaint = _complaint(turn)
            if complaint is not None and rng.random() < feedback_rate:
                pending.append((turn.trace_id, -1.0, complaint))
            elif complaint is None and turn.label == "answer" and rng.random() < feedback_rate / 10:
                pending.append((turn.trace_id, 1.0, "Thanks, that helped."))
    counts["negative_feedback"] = counts["positive_feedback"] = counts["feedback_skipped"] = 0
    for trace_id, score, comment in pending:
        if trace_id is None:
            counts["feedback_skipped"] += 1
            continue
        tel.feedback(trace_id, score, comment, store)
        counts["negative_feedback" if score < 0 else "positive_feedback"] += 1
    return dict(counts)
