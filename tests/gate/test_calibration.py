"""The gate stays quiet on noise and speaks on a real drop (simulated suites, fixed seeds)."""

import numpy as np

from replaygate.gate import Policy, compare_runs, evaluate_gate

POLICY = Policy(n_resamples=1000, tolerance={"overall": 0.0})


def _suite_pair(f, rng, base_rates, head_rates, i):
    def draw(rates, run_id):
        return f.run([int(rng.binomial(5, p)) for p in rates], run_id=run_id, tags=lambda _: {})

    return draw(base_rates, f"b{i}"), draw(head_rates, f"h{i}")


def _blocks_on_drop(f, base, head) -> bool:
    report = evaluate_gate(compare_runs(base, head, None, POLICY), POLICY)
    return any(x.rule == "rule-2" and x.subject == "overall" for x in report.findings)


def test_no_block_under_the_null(f) -> None:
    rng = np.random.default_rng(7)
    rates = rng.uniform(0.5, 1.0, size=12)
    sims = 40
    fired = sum(_blocks_on_drop(f, *_suite_pair(f, rng, rates, rates, i)) for i in range(sims))
    # one-sided test at alpha 0.05, so roughly half of the two-sided rate; allow Monte-Carlo error
    assert fired / sims <= 0.05 + 2 * (0.05 * 0.95 / sims) ** 0.5


def test_a_real_drop_blocks(f) -> None:
    rng = np.random.default_rng(11)
    sims = 20
    fired = sum(_blocks_on_drop(f, *_suite_pair(f, rng, [0.9] * 12, [0.4] * 12, i)) for i in range(sims))
    assert fired / sims >= 0.95
