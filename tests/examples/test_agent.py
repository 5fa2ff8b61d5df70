import pytest

from examples.support_agent import ORDERS, SupportAgent, load_config

LARGE = next(o for o in ORDERS if o.status == "delivered" and o.amount > 400)
SMALL = next(o for o in ORDERS if o.status == "delivered" and 50 < o.amount < 150)


def clean(name="production", **changes):
    """A configuration with every failure rate at zero (the model behaves as the prompt says)."""
    data = load_config(name).to_dict()
    data["rates"] = {}
    data["latency_ms"] = 0
    data.update(changes)
    return data


def test_refund_within_the_limit_is_issued_and_grounded():
    agent = SupportAgent(clean(), seed=1)
    turn = agent.respond_turn(
        f"I'd like a refund for {SMALL.order_id}.", session_id="s", user_id=SMALL.user_id
    )
    assert turn.label == "answer"
    assert turn.tools == ("lookup_order", "issue_refund")
    assert f"${SMALL.amount:.2f}" in turn.answer
    assert "5 to 7 business days" in turn.answer  # quoted from refund-policy
    assert any(c.startswith("refund-") for c in turn.chunk_ids)


def test_refund_over_the_limit_is_escalated_not_granted():
    agent = SupportAgent(clean(), seed=1)
    turn = agent.respond_turn(f"I want a refund for {LARGE.order_id}.", session_id="s")
    assert turn.label == "escalate" and turn.must_escalate
    assert "issue_refund" not in turn.tools and "escalate_to_human" in turn.tools
    assert agent.tools.refunded == {}


def test_multi_turn_follow_up_uses_the_earlier_turn():
    agent = SupportAgent(clean(), seed=2)
    first = agent.respond_turn(f"I'd like a refund for {SMALL.order_id}.", session_id="s1")
    follow = agent.respond_turn("and how long will that take?", session_id="s1")
    assert first.label == "answer" and follow.intent == "followup"
    assert "5 to 7 business days" in follow.answer
    assert any(c.startswith("refund-policy") for c in follow.chunk_ids)
    # the same follow-up in a fresh session has no topic to refer to
    alone = agent.respond_turn("and how long will that take?", session_id="s2")
    assert alone.intent != "followup"
    state = agent.session("s1")
    assert state is not None and [m["role"] for m in state.history] == ["user", "assistant"] * 2


def test_shipping_follow_up_stays_on_international_shipping():
    agent = SupportAgent(clean(), seed=3)
    agent.respond("Do you ship to Germany?", session_id="s")
    follow = agent.respond_turn("and how long does it take?", session_id="s")
    assert "7 to 14 business days" in follow.answer


def test_missing_order_id_gets_a_clarifying_question_then_the_refund_continues():
    agent = SupportAgent(clean(), seed=4)
    ask = agent.respond_turn("I want a refund of $300 please", session_id="s", user_id=LARGE.user_id)
    assert ask.label == "clarify" and ask.tools == () and "order number" in ask.answer
    done = agent.respond_turn(f"It's {LARGE.order_id}", session_id="s")
    assert done.intent == "refund"
    assert done.label == "escalate"  # $300 is above the $200 limit
    assert "lookup_order" in done.tools


def test_unknown_order_gets_a_clarification():
    turn = SupportAgent(clean(), seed=5).respond_turn("Please refund ORD-99999", session_id="s")
    assert turn.label == "clarify" and turn.tools == ("lookup_order",)


def test_someone_elses_order_is_not_refunded():
    agent = SupportAgent(clean(), seed=6)
    turn = agent.respond_turn(f"Refund {SMALL.order_id} please", session_id="s", user_id="u-not-the-owner")
    assert turn.label == "refuse" and "issue_refund" not in turn.tools


@pytest.mark.parametrize(
    "message",
    [
        "This is unacceptable, I will contact my lawyer!",
        "I'll file a chargeback if you don't fix this",
        "I want to speak to a human",
        "I'd like to make a formal complaint",
    ],
)
def test_angry_and_legal_messages_are_escalated(message):
    turn = SupportAgent(clean(), seed=7).respond_turn(message, session_id="s")
    assert turn.must_escalate and turn.label == "escalate" and "escalate_to_human" in turn.tools


def test_context_order_id_means_no_clarification_is_needed():
    agent = SupportAgent(clean(), seed=8)
    agent.start_session("s", user_id=SMALL.user_id, order_id=SMALL.order_id)
    turn = agent.respond_turn("I'd like a refund please", session_id="s")
    assert turn.label == "answer" and "issue_refund" in turn.tools


def test_every_planted_failure_shows_in_the_turn():
    always = {
        "refusal_without_tools": 1.0,
    }
    turn = SupportAgent(clean(rates=always), seed=1).respond_turn(
        "How do I reset my password?", session_id="s"
    )
    assert turn.label == "refuse" and turn.tools == () and turn.chunk_ids == ()
    assert turn.injected == ("refusal_without_tools",)

    turn = SupportAgent(clean(rates={"empty_answer": 1.0}), seed=1).respond_turn("Do you accept PayPal?")
    assert turn.answer == "" and "empty_answer" in turn.injected

    turn = SupportAgent(clean(rates={"ungrounded_claim": 1.0}), seed=1).respond_turn(
        "How long does a refund take?"
    )
    assert "24 hours" in turn.answer and "ungrounded_claim" in turn.injected

    turn = SupportAgent(clean(rates={"unneeded_escalation": 1.0}), seed=1).respond_turn(
        "Do you accept PayPal?"
    )
    assert turn.label == "escalate" and not turn.must_escalate

    angry = "I will sue you over this"
    turn = SupportAgent(clean(rates={"missed_escalation": 1.0}), seed=1).respond_turn(angry)
    assert turn.label == "answer" and turn.must_escalate and "escalate_to_human" not in turn.tools

    agent = SupportAgent(clean(rates={"refund_over_limit": 1.0}), seed=1)
    turn = agent.respond_turn(f"I want a refund for {LARGE.order_id}")
    assert turn.label == "answer" and "refund_over_limit" in turn.injected
    assert agent.tools.refunded[LARGE.order_id] == LARGE.amount  # granted above the limit


def test_enforced_limit_turns_an_over_limit_attempt_into_an_escalation():
    agent = SupportAgent(clean(rates={"refund_over_limit": 1.0}, enforce_refund_limit=True), seed=1)
    turn = agent.respond_turn(f"I want a refund for {LARGE.order_id}")
    assert turn.tools == ("lookup_order", "issue_refund", "escalate_to_human")
    assert turn.tool_calls[1]["result"]["status"] == "refused"
    assert turn.label == "escalate" and agent.tools.refunded == {}


def test_seeded_agents_repeat_themselves_and_unseeded_ones_do_not():
    messages = ["How long does a refund take?", "Do you accept PayPal?", f"Refund {LARGE.order_id}"] * 10

    def run(seed):
        agent = SupportAgent(load_config("candidate").to_dict() | {"latency_ms": 0}, seed=seed)
        return [agent.respond_turn(m).answer for m in messages]

    assert run(11) == run(11)
    assert run(11) != run(12)
    unseeded = {tuple(run(None)) for _ in range(3)}
    assert len(unseeded) > 1
