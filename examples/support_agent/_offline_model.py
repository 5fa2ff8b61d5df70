"""The offline stand-in for the LLM: understands, uses tools and retrieval, writes grounded answers.

It is genuinely non-deterministic: six uniform draws per turn from its ``random.Random`` decide whether
it plants one of the classic failures, at the rates of the configuration.

Routine requests (policy questions, follow-ups, order status, refunds within the limit) can fail with:

- ``refusal_without_tools``: refuses a question before trying retrieval or a tool (not refund requests);
- ``ungrounded_claim``: adds a statement that no retrieved chunk supports;
- ``empty_answer``: returns nothing;
- ``unneeded_escalation``: escalates an easy policy question.

Escalation-critical requests (angry, legal, a person asked for, a refund above the limit) fail only
through the two rates that name them, so a must-pass scenario measures exactly those:

- ``refund_over_limit``: calls ``issue_refund`` above the limit instead of escalating;
- ``missed_escalation``: answers a case that must go to a human instead of escalating it.

Every model step is reported as an LLM span with token counts estimated from the text.

A weakness that only a follow-up reveals: a policy question in the middle of a conversation makes the
model forget the order id it was given earlier, so a later "then please refund it" asks for the order
number again (``examples/support_agent/followups/`` finds it with simulated follow-up turns).
"""

from __future__ import annotations

import json
import random
from typing import Any

from examples.support_agent import _telemetry as tel
from examples.support_agent._answers import REFUSALS, grounded_answer, ungrounded_claim
from examples.support_agent._intent import ParsedMessage, parse_message
from examples.support_agent._retriever import RetrievalResult
from examples.support_agent._session import Label, Runtime, SessionState, TurnResult
from examples.support_agent._tools import RefundRefused

__all__ = ["OfflineModel"]


class _Turn:
    """Mutable scratch state of one turn."""

    def __init__(self, message: str, parsed: ParsedMessage) -> None:
        self.message = message
        self.parsed = parsed
        self.injected: list[str] = []
        self.tools: list[str] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.chunk_ids: list[str] = []
        self.top_doc: str | None = None
        self.must_escalate = parsed.must_escalate


class OfflineModel:
    """A rule-following "model" with configurable, seeded failure rates."""

    def __init__(self, rng: random.Random, name: str = "gpt-4o-mini") -> None:
        self.rng = rng
        self.name = name

    def run_turn(self, message: str, state: SessionState, runtime: Runtime) -> TurnResult:
        """Play one turn: plan, act (tools, retrieval), answer; may plant failures."""
        rates = runtime.config.rates
        u_refuse, u_mode, u_unneeded, u_ungrounded, u_empty, u_pick = (self.rng.random() for _ in range(6))
        parsed = parse_message(
            message, has_context=state.topic_query is not None, pending=state.pending is not None
        )
        turn = _Turn(message, parsed)
        intent = parsed.intent if parsed.intent != "provide_details" else state.pending or "info"
        plan_input = "\n".join([runtime.config.prompt, *(m["content"] for m in state.history), message])
        label: Label
        if parsed.must_escalate:
            label, answer = self._must_escalate(turn, state, runtime, u_mode < rates.missed_escalation)
        elif intent != "refund" and u_refuse < rates.refusal_without_tools:
            turn.injected.append("refusal_without_tools")
            runtime.model_step(plan_input, '{"action": "refuse"}')
            label, answer = "refuse", REFUSALS[int(u_pick * len(REFUSALS))]
        elif parsed.intent in ("refund", "order_status") or (
            parsed.intent == "provide_details" and state.pending in ("refund", "order_status")
        ):
            runtime.model_step(plan_input, json.dumps({"action": parsed.intent, "order_id": parsed.order_id}))
            label, answer = self._order_request(turn, state, runtime, u_mode)
        else:
            label, answer = self._information(turn, state, runtime, u_unneeded < rates.unneeded_escalation)
        routine = not turn.must_escalate
        if routine and label == "answer" and answer and u_ungrounded < rates.ungrounded_claim:
            turn.injected.append("ungrounded_claim")
            answer = f"{answer} {ungrounded_claim(turn.top_doc)}"
        if routine and u_empty < rates.empty_answer:
            turn.injected.append("empty_answer")
            answer = ""
        if turn.tools or turn.chunk_ids:
            runtime.model_step(plan_input + "\n" + json.dumps(turn.tool_calls, default=str), answer)
        return TurnResult(
            message=message,
            answer=answer,
            label=label,
            intent=intent,
            must_escalate=turn.must_escalate,
            injected=tuple(turn.injected),
            tools=tuple(turn.tools),
            tool_calls=tuple(turn.tool_calls),
            chunk_ids=tuple(turn.chunk_ids),
        )

    # -- helpers -------------------------------------------------------------------------------------

    def _retrieve(self, turn: _Turn, runtime: Runtime, query: str) -> RetrievalResult:
        result = runtime.retrieve(query)
        turn.chunk_ids.extend(c.chunk.id for c in result.chunks)
        if result.chunks and turn.top_doc is None:
            turn.top_doc = result.chunks[0].chunk.doc_id
        return result

    def _call(self, turn: _Turn, name: str, result: dict[str, Any], **arguments: Any) -> dict[str, Any]:
        turn.tools.append(name)
        turn.tool_calls.append({"name": name, "arguments": arguments, "result": result})
        return result

    def _escalate(self, turn: _Turn, runtime: Runtime, reason: str) -> tuple[Label, str]:
        result = self._call(turn, "escalate_to_human", runtime.tools.escalate_to_human(reason), reason=reason)
        return "escalate", (
            f"I've passed this conversation to a human agent (ticket {result['ticket_id']}). "
            "A human agent replies within 1 business day."
        )

    def _must_escalate(
        self, turn: _Turn, state: SessionState, runtime: Runtime, miss: bool
    ) -> tuple[Label, str]:
        p = turn.parsed
        runtime.model_step(runtime.config.prompt + "\n" + turn.message, '{"action": "escalate"}')
        retrieved = self._retrieve(turn, runtime, turn.message)
        state.topic_query = turn.message
        if miss:
            turn.injected.append("missed_escalation")
            return "answer", grounded_answer(
                turn.message, retrieved.chunks
            ) or "I understand your frustration."
        reason = (
            "legal threat" if p.legal else "customer very upset" if p.upset else "customer asked for a human"
        )
        if p.order_id:
            reason += f" about {p.order_id}"
        return self._escalate(turn, runtime, reason)

    def _order_request(
        self, turn: _Turn, state: SessionState, runtime: Runtime, u_mode: float
    ) -> tuple[Label, str]:
        p = turn.parsed
        intent = p.intent if p.intent != "provide_details" else (state.pending or "refund")
        amount = p.amount if p.amount is not None else state.pending_amount
        order_id = p.order_id or state.order_id
        retrieved: RetrievalResult | None = None
        if intent == "refund":
            if p.intent != "provide_details" or state.topic_query is None:
                state.topic_query = "refund " + turn.message
            retrieved = self._retrieve(turn, runtime, state.topic_query)
        if order_id is None:
            state.pending, state.pending_amount = intent, amount
            tel.clarification()
            what = "that refund" if intent == "refund" else "your order"
            return "clarify", (
                f"I can help with {what}. Could you tell me your order number? It looks like ORD-12345."
            )
        found = self._call(turn, "lookup_order", runtime.tools.lookup_order(order_id), order_id=order_id)
        if not found["found"]:
            state.pending, state.pending_amount = intent, amount
            tel.clarification()
            return "clarify", f"I couldn't find an order {order_id}. Could you check the order number?"
        state.order_id, state.pending, state.pending_amount = order_id, None, None
        if state.user_id is not None and found["user_id"] != state.user_id:
            return "refuse", f"Order {order_id} is not on your account, so I can't act on it."
        if intent == "order_status":
            state.topic_query = "shipping delivery " + turn.message
            return "answer", self._status_answer(turn, found, runtime)
        if retrieved is None:  # a detail given for an order question turned out to be a refund
            retrieved = self._retrieve(turn, runtime, "refund " + turn.message)
        return self._refund(turn, state, runtime, found, amount, retrieved, u_mode)

    def _status_answer(self, turn: _Turn, order: dict[str, Any], runtime: Runtime) -> str:
        head = f"Order {order['order_id']} ({order['item']})"
        if order["status"] == "delivered":
            return f"{head} was delivered on {order['delivered_on']}."
        if order["status"] == "cancelled":
            return f"{head} was cancelled. Cancelled orders are refunded in full."
        query = (
            "international shipping time" if order["destination"] == "international" else "standard shipping"
        )
        timing = grounded_answer(
            "how long does " + query + " take", self._retrieve(turn, runtime, query).chunks, 1
        )
        verb = "has shipped" if order["status"] == "shipped" else "is being prepared"
        return f"{head} {verb}. {timing}".strip()

    def _refund(
        self,
        turn: _Turn,
        state: SessionState,
        runtime: Runtime,
        order: dict[str, Any],
        amount: float | None,
        retrieved: RetrievalResult,
        u_mode: float,
    ) -> tuple[Label, str]:
        cfg, rates = runtime.config, runtime.config.rates
        oid = order["order_id"]
        if order["status"] in ("processing", "shipped"):
            cancel = self._retrieve(turn, runtime, "cancel order shipped")
            return "answer", grounded_answer("cancel order shipped returned", cancel.chunks)
        remaining = round(order["amount"] - runtime.tools.refunded.get(oid, 0.0), 2)
        value = round(min(amount, remaining) if amount is not None else remaining, 2)
        if value <= 0:
            return "answer", f"Order {oid} has already been refunded in full."
        if value > cfg.refund_limit:
            turn.must_escalate = True
            if u_mode < rates.refund_over_limit:
                turn.injected.append("refund_over_limit")
            elif u_mode < rates.refund_over_limit + rates.missed_escalation:
                turn.injected.append("missed_escalation")
                return "answer", grounded_answer("refund above $200 limit approved", retrieved.chunks, 1)
            else:
                return self._escalate(turn, runtime, f"refund of ${value:.2f} for {oid} is above the limit")
        try:
            outcome = runtime.tools.issue_refund(oid, value)
        except RefundRefused as refused:
            outcome = refused.result
        result = self._call(turn, "issue_refund", outcome, order_id=oid, amount=value)
        if result["status"] != "refunded":
            if value > cfg.refund_limit:
                tel.failure(f"issue_refund refused ${value:.2f} for {oid}: {result['reason']}")
                return self._escalate(
                    turn, runtime, f"refund of ${value:.2f} for {oid} refused: {result['reason']}"
                )
            return "answer", f"I couldn't refund ${value:.2f} on order {oid}: {result['reason']}."
        timing = grounded_answer("how long does a refund take", retrieved.chunks, 1)
        return (
            "answer",
            f"I've refunded ${value:.2f} for order {oid} (refund {result['refund_id']}). {timing}".strip(),
        )

    def _information(
        self, turn: _Turn, state: SessionState, runtime: Runtime, unneeded: bool
    ) -> tuple[Label, str]:
        followup = turn.parsed.intent == "followup" and state.topic_query is not None
        query = f"{state.topic_query} {turn.message}" if followup else turn.message
        runtime.model_step(
            runtime.config.prompt + "\n" + turn.message, json.dumps({"action": "search", "query": query})
        )
        retrieved = self._retrieve(turn, runtime, query)
        state.topic_query = query if not followup else state.topic_query
        state.order_id = None  # the weakness: a policy question drops the order the customer gave
        if unneeded and retrieved.chunks:
            turn.injected.append("unneeded_escalation")
            return self._escalate(turn, runtime, "unsure about the policy")
        if not retrieved.chunks:
            return "answer", (
                "I can help with orders, refunds, shipping, returns, payments, warranties and your account. "
                "Could you tell me a bit more about what you need?"
            )
        return "answer", grounded_answer(turn.message, retrieved.chunks, 1 if followup else 2)
