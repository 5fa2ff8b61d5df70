import asyncio

import pytest

import examples.support_agent.target as target_module
from examples.support_agent import ORDERS, load_config
from examples.support_agent.target import arun_session, run_session

LARGE = next(o for o in ORDERS if o.status == "delivered" and o.amount > 400)
SMALL = next(o for o in ORDERS if o.status == "delivered" and 50 < o.amount < 150)


def clean(name="production", **changes):
    data = load_config(name).to_dict()
    data.update({"rates": {}, "latency_ms": 0, **changes})
    return data


def test_one_session_returns_answers_and_the_last_label():
    out = run_session(
        ["I want a refund please", SMALL.order_id, "and how long will that take?"],
        {"user_id": SMALL.user_id},
        clean(),
    )
    assert out["labels"] == ["clarify", "answer", "answer"]
    assert out["label"] == "answer" and out["answer"] == out["answers"][-1]
    assert len(out["answers"]) == 3 and "5 to 7 business days" in out["answer"]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"] * 3
    assert out["session_id"].startswith("replay-")


def test_each_call_is_a_fresh_session():
    a = run_session(["I want a refund please"], {}, clean())
    b = run_session([SMALL.order_id], {}, clean())
    assert a["label"] == "clarify"
    assert b["label"] != "clarify" or "refund" not in b["answer"]  # no pending refund carried over
    assert a["session_id"] != b["session_id"]


def test_labels_for_escalation_and_refusal():
    assert run_session([f"Refund {LARGE.order_id}"], {}, clean())["label"] == "escalate"
    refused = run_session(["Do you accept PayPal?"], {}, clean(rates={"refusal_without_tools": 1.0}))
    assert refused["label"] == "refuse"


def test_context_order_id_and_user_id_are_used():
    out = run_session(
        ["I'd like a refund please"], {"order_id": SMALL.order_id, "user_id": SMALL.user_id}, clean()
    )
    assert out["label"] == "answer" and SMALL.order_id in out["answer"]
    other = run_session(["I'd like a refund please"], {"order_id": SMALL.order_id, "user_id": "u-x"}, clean())
    assert other["label"] == "refuse"


def test_candidate_attempts_differ_without_a_seed_and_repeat_with_one():
    cfg = load_config("candidate").to_dict() | {"latency_ms": 0}
    turns = [f"I want a refund for {LARGE.order_id}"]
    labels = {run_session(turns, {"user_id": LARGE.user_id}, cfg)["label"] for _ in range(60)}
    assert {"answer", "escalate"} <= labels  # 1 in 5 grants it, most escalate
    seeded = [run_session(turns, {"seed": 7}, cfg)["answer"] for _ in range(3)]
    assert len(set(a.split("(ticket")[0] for a in seeded)) == 1


def test_async_variant_gives_the_same_shape():
    out = asyncio.run(arun_session(["Do you ship to Canada?", "and how long does it take?"], {}, clean()))
    assert out["labels"] == ["answer", "answer"] and "7 to 14 business days" in out["answer"]


def test_no_turns_and_bad_config_are_errors():
    with pytest.raises(ValueError, match="at least one turn"):
        run_session([], {}, clean())
    with pytest.raises(ValueError, match="invalid support-agent configuration"):
        run_session(["hi"], {}, {"config_id": "x"})


def test_a_seeded_configuration_makes_the_set_of_attempts_reproducible():
    cfg = load_config("candidate").to_dict() | {"latency_ms": 0, "seed": 1234}
    turns = [f"I want a refund for {LARGE.order_id}"]

    def attempts():
        return [run_session(turns, {}, cfg)["label"] for _ in range(40)]

    target_module._runs.clear()  # a fresh process
    first = attempts()
    target_module._runs.clear()
    assert attempts() == first  # the same attempts again
    assert {"answer", "escalate"} <= set(first)  # but attempts differ from each other
