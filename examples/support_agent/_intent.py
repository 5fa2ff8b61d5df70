"""Reading a customer message: intent, order id, amount, and whether it must go to a human (pure logic).

The offline model uses this as its "understanding" step; the rules are the ones a support lead would
write down: legal threats, chargebacks, formal complaints, a very upset customer or an explicit request
for a person go to a human; refunds and order questions need an order id; short follow-ups ("and how
long will that take?") continue the previous topic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Intent", "ParsedMessage", "find_amount", "find_order_id", "parse_message"]

Intent = Literal["refund", "order_status", "info", "followup", "provide_details"]

_ORDER_ID = re.compile(r"\bORD[-\s#]?(\d{5})\b", re.IGNORECASE)
_AMOUNT = re.compile(
    r"\$\s?(\d{1,6}(?:,\d{3})*(?:\.\d{1,2})?)|\b(\d{1,6}(?:\.\d{1,2})?)\s?(?:dollars|usd)\b", re.I
)
_LEGAL = re.compile(
    r"\b(lawyer|attorney|sue|suing|lawsuit|legal action|court|small claims|chargeback|charge back|"
    r"formal complaint|consumer protection|ombudsman|bbb|trading standards)\b",
    re.IGNORECASE,
)
_UPSET = re.compile(
    r"\b(furious|unacceptable|ridiculous|outrageous|outraged|disgusting|scam|scammed|worst|"
    r"fed up|sick of|third time|fourth time|useless|incompetent|livid)\b",
    re.IGNORECASE,
)
_HUMAN = re.compile(
    r"\b(real person|human agent|talk to a human|speak to a human|speak to someone|talk to someone|"
    r"your manager|a manager|a supervisor)\b",
    re.IGNORECASE,
)
_REFUND_ACTION = re.compile(
    r"\b(refund (?:me|my|it|this|the|for|of)|want (?:a|my) refund|like (?:a|my) refund|need (?:a|my) refund|"
    r"get (?:a|my) refund|money back|please refund|request(?:ing)? a refund|issue (?:a|the) refund)\b",
    re.IGNORECASE,
)
_REFUND_INFO = re.compile(
    r"\b(how long|how do|policy|when will|how many|maximum|limit|can a)\b", re.IGNORECASE
)
_STATUS = re.compile(
    r"\b(where is|where's|status|track(?:ing)?|has(?:n't| not) arrived|not arrived|still waiting|"
    r"when will (?:it|my order|my package) arrive)\b",
    re.IGNORECASE,
)
_FOLLOWUP_START = re.compile(r"^\s*(and|also|so|ok|okay|what about|how about|then)\b", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(that|it|this|they|them)\b", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedMessage:
    """What the model understood from one customer message."""

    intent: Intent
    order_id: str | None
    amount: float | None
    legal: bool
    upset: bool
    wants_human: bool

    @property
    def must_escalate(self) -> bool:
        """True when policy says a human must take over, whatever the request."""
        return self.legal or self.upset or self.wants_human


def find_order_id(text: str) -> str | None:
    """Return the first order id in ``text`` in canonical form (``ORD-10042``), or None."""
    m = _ORDER_ID.search(text)
    return f"ORD-{m.group(1)}" if m else None


def find_amount(text: str) -> float | None:
    """Return the first dollar amount in ``text`` (``$350``, ``350 dollars``), or None."""
    m = _AMOUNT.search(text)
    if not m:
        return None
    return float((m.group(1) or m.group(2)).replace(",", ""))


def parse_message(text: str, *, has_context: bool, pending: bool) -> ParsedMessage:
    """Classify one message: its intent, order id, amount and escalation signals.

    Args:
        text: the customer's message.
        has_context: the session already has a topic a follow-up can refer to.
        pending: the previous turn asked a clarifying question (for an order id).
    """
    order_id = find_order_id(text)
    amount = find_amount(text)
    shouted = sum(1 for w in re.findall(r"\b[A-Z]{4,}\b", text) if not w.startswith("ORD")) >= 2
    upset = bool(_UPSET.search(text)) or shouted or text.count("!") >= 3
    intent: Intent
    if _REFUND_ACTION.search(text) or (re.search(r"\brefund\b", text, re.I) and order_id):
        intent = "refund"
    elif re.search(r"\brefund", text, re.I) and not _REFUND_INFO.search(text):
        intent = "refund"
    elif _STATUS.search(text) and (order_id or re.search(r"\b(my|the) (order|package|parcel)\b", text, re.I)):
        intent = "order_status"
    elif pending and (order_id or amount is not None) and len(text.split()) <= 12:
        intent = "provide_details"
    elif has_context and (_FOLLOWUP_START.search(text) or _PRONOUN.search(text)) and len(text.split()) <= 10:
        intent = "followup"
    else:
        intent = "info"
    return ParsedMessage(
        intent=intent,
        order_id=order_id,
        amount=amount,
        legal=bool(_LEGAL.search(text)),
        upset=upset,
        wants_human=bool(_HUMAN.search(text)),
    )
