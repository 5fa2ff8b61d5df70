import random

from examples.support_agent import load_config
from examples.support_agent.traffic import SESSION_KINDS, make_session, simulate


def fast(name):
    return load_config(name).to_dict() | {"latency_ms": 0}


def test_sessions_cover_every_kind_with_realistic_turns():
    rng = random.Random(1)
    seen = {}
    for _ in range(400):
        kind, user, turns = make_session(rng)
        seen.setdefault(kind, []).append(turns)
        assert 1 <= len(turns) <= 3 and all(isinstance(t, str) and t for t in turns)
    assert set(seen) == set(SESSION_KINDS)
    assert any(len(t) >= 2 for t in seen["refund_needs_id"])
    assert abs(sum(w for w, _ in SESSION_KINDS.values()) - 1.0) < 1e-9


def test_simulate_counts_add_up():
    counts = simulate(200, fast("production"), seed=5)
    assert 200 <= counts["requests"] <= 202
    assert counts["sessions"] < counts["requests"]  # some sessions have several turns
    assert sum(counts[k] for k in ("answer", "escalate", "clarify", "refuse")) == counts["requests"]
    assert counts["escalate"] > 0 and counts["clarify"] > 0
    assert counts["injected_refund_over_limit"] == 0
    assert counts["injected_refusal_without_tools"] + counts["injected_ungrounded_claim"] > 0
    # without instrumentation there are no trace ids, so feedback cannot be sent and is counted as skipped
    bad = counts["negative_feedback"] + counts["positive_feedback"] + counts["feedback_skipped"]
    assert bad > 0


def test_simulate_is_reproducible_with_a_seed():
    assert simulate(60, fast("candidate"), seed=9) == simulate(60, fast("candidate"), seed=9)
    assert simulate(60, fast("candidate"), seed=9) != simulate(60, fast("candidate"), seed=10)


def test_candidate_grants_over_limit_refunds_in_traffic():
    counts = simulate(250, fast("candidate"), seed=2)
    assert counts["injected_refund_over_limit"] > 0
    assert (
        counts["injected_refusal_without_tools"]
        < simulate(250, fast("production"), seed=2)["injected_refusal_without_tools"]
    )
