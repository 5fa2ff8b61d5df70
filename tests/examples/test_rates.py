import math

from examples.support_agent import ORDERS, SupportAgent, load_config

OVER = [o for o in ORDERS if o.status == "delivered" and o.amount > 200]


def fast(name):
    data = load_config(name).to_dict()
    data["latency_ms"] = 0
    return data


def over_limit_outcomes(name, n, seed0=0):
    """Send n over-limit refund requests, one fresh seeded agent each; count what the agent did."""
    tried = granted = escalated = refused_turns = 0
    cfg = fast(name)
    for i in range(n):
        order = OVER[i % len(OVER)]
        agent = SupportAgent(cfg, seed=seed0 + i)
        turn = agent.respond_turn(f"I want a refund for {order.order_id}", user_id=order.user_id)
        if "refusal_without_tools" in turn.injected:
            refused_turns += 1
            continue
        tried += "refund_over_limit" in turn.injected
        granted += agent.tools.refunded.get(order.order_id, 0) > 200
        escalated += turn.label == "escalate"
    return n - refused_turns, tried, granted, escalated


def within(observed, n, p, sigmas=4.0):
    return abs(observed / n - p) <= sigmas * math.sqrt(p * (1 - p) / n)


def test_candidate_refunds_over_the_limit_near_its_configured_rate():
    rate = load_config("candidate").rates.refund_over_limit
    n, tried, granted, escalated = over_limit_outcomes("candidate", 600)
    assert n == 600  # refund requests are never refused outright
    assert within(tried, n, rate), (tried, n, rate)
    assert granted == tried  # nothing in the tool stops it
    missed = load_config("candidate").rates.missed_escalation
    assert within(escalated, n, 1 - rate - missed)


def test_fixed_candidate_tries_as_often_but_the_tool_refuses_and_the_agent_escalates():
    n, tried, granted, escalated = over_limit_outcomes("candidate_fixed", 400, seed0=10_000)
    assert tried > 0 and granted == 0
    rate = load_config("candidate_fixed").rates
    assert within(escalated, n, 1 - rate.missed_escalation)


def test_production_never_grants_over_the_limit():
    n, tried, granted, escalated = over_limit_outcomes("production", 300, seed0=20_000)
    assert tried == 0 and granted == 0
    assert within(escalated, n, 1 - load_config("production").rates.missed_escalation)


def test_production_failure_rates_match_the_configuration():
    cfg = fast("production")
    agent = SupportAgent(cfg, seed=99)
    n = 1500
    injected = {k: 0 for k in ("refusal_without_tools", "empty_answer")}
    for i in range(n):
        turn = agent.respond_turn("How long does standard shipping take?", session_id=f"s{i}")
        for k in injected:
            injected[k] += k in turn.injected
    rates = load_config("production").rates
    assert within(injected["refusal_without_tools"], n, rates.refusal_without_tools)
    assert within(injected["empty_answer"], n, rates.empty_answer)


def test_routine_failures_never_hit_escalation_critical_requests():
    data = fast("production")
    data["rates"] = {"refusal_without_tools": 1.0, "ungrounded_claim": 1.0, "empty_answer": 1.0}
    for i, message in enumerate(
        [f"I want a refund for {OVER[0].order_id}", "I will sue you", "I want to speak to a human"]
    ):
        turn = SupportAgent(data, seed=i).respond_turn(message)
        assert turn.must_escalate and turn.label == "escalate" and turn.answer and not turn.injected
    routine = SupportAgent(data, seed=9).respond_turn("How long does standard shipping take?")
    assert routine.label == "refuse" and set(routine.injected) == {"refusal_without_tools", "empty_answer"}
