"""The agent's tools: ``lookup_order``, ``issue_refund``, ``escalate_to_human``, each traced as a tool span.

``issue_refund`` refuses amounts above the refund limit only when the configuration says
``enforce_refund_limit: true``; otherwise the limit is left to the model, which is the planted weakness
of the candidate configuration. A refusal raises ``RefundRefused``, so the tool span ends in error
(``ToolCall.error`` in the trace summary) and the agent decides what to do next.
"""

from __future__ import annotations

import hashlib
from typing import Any

from examples.support_agent import _telemetry as tel
from examples.support_agent._orders import find_order

__all__ = ["TOOL_SCHEMAS", "RefundRefused", "SupportTools"]


class RefundRefused(Exception):
    """``issue_refund`` refused: the tool span records it as an error, and ``result`` says why."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(f"refund refused for {result.get('order_id')}: {result.get('reason')}")
        self.result = result


#: OpenAI-style function definitions, used by the real-model path.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up by its id (like ORD-10042): owner, amount, status, dates.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Refund an amount in USD for an order. Refunds above the limit need a human.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "escalate_to_human",
            "description": "Hand the conversation to a human agent, with the reason.",
            "parameters": {
                "type": "object",
                "properties": {"reason": {"type": "string"}},
                "required": ["reason"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ask_clarifying_question",
            "description": "Ask the customer for missing information (such as the order number).",
            "parameters": {
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
            },
        },
    },
]


class SupportTools:
    """The tools of one agent instance, with its refund ledger (refunds issued so far, per order)."""

    def __init__(self, refund_limit: float, enforce_refund_limit: bool) -> None:
        self.refund_limit = refund_limit
        self.enforce_refund_limit = enforce_refund_limit
        self.refunded: dict[str, float] = {}
        self.escalations: list[str] = []

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        """Return the order's record, or ``found: false`` when there is no such order."""
        with tel.tool_span("lookup_order", {"order_id": order_id}) as span:
            order = find_order(order_id)
            result: dict[str, Any] = (
                {"found": True, **order.as_dict()} if order else {"found": False, "order_id": order_id}
            )
            span.set_result(result)
            return result

    def issue_refund(self, order_id: str, amount: float) -> dict[str, Any]:
        """Refund ``amount`` on the order (never more than was paid).

        Raises:
            RefundRefused: the refund was refused (no such order, a bad amount, more than was paid, or
                above the limit when it is enforced); ``result`` holds the reason. Like a payments API
                answering 4xx, the refusal is an error of the tool call, recorded on its span.
        """
        with tel.tool_span("issue_refund", {"order_id": order_id, "amount": amount}) as span:
            result = self._refund(order_id, amount)
            span.set_result(result)
            if result["status"] != "refunded":
                raise RefundRefused(result)
            return result

    def _refund(self, order_id: str, amount: float) -> dict[str, Any]:
        order = find_order(order_id)
        amount = round(float(amount), 2)
        if order is None:
            return {"status": "refused", "order_id": order_id, "reason": "no such order"}
        if amount <= 0:
            return {"status": "refused", "order_id": order.order_id, "reason": "amount must be positive"}
        if self.enforce_refund_limit and amount > self.refund_limit:
            return {
                "status": "refused",
                "order_id": order.order_id,
                "amount": amount,
                "reason": f"amount above the ${self.refund_limit:.0f} limit: a supervisor must approve it",
            }
        already = self.refunded.get(order.order_id, 0.0)
        if already + amount > order.amount + 1e-9:
            return {
                "status": "refused",
                "order_id": order.order_id,
                "amount": amount,
                "reason": f"refunds would exceed the ${order.amount:.2f} paid for the order",
            }
        self.refunded[order.order_id] = already + amount
        refund_id = "RF-" + hashlib.sha256(f"{order.order_id}:{already}:{amount}".encode()).hexdigest()[:8]
        return {"status": "refunded", "order_id": order.order_id, "amount": amount, "refund_id": refund_id}

    def escalate_to_human(self, reason: str) -> dict[str, Any]:
        """Hand the conversation to a human (marks the trace as escalated) and return the ticket."""
        with tel.tool_span("escalate_to_human", {"reason": reason}) as span:
            tel.escalation(reason)
            self.escalations.append(reason)
            ticket = "ESC-" + hashlib.sha256(f"{reason}:{len(self.escalations)}".encode()).hexdigest()[:6]
            result = {"status": "escalated", "ticket_id": ticket, "reply_within": "1 business day"}
            span.set_result(result)
            return result
