import pytest
from replaygate.replay import content_hash

from replaygate.gate import (
    GateError,
    Policy,
    PolicyError,
    PolicyWidenedError,
    check_policy_against_runs,
    compare_runs,
    evaluate_gate,
    gate_runs,
    is_wider,
    load_policy,
    policy_from_mapping,
    policy_hash,
)

EXAMPLE = "examples/gate-policy.yaml"


def test_seed_case_blocks(f) -> None:
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.HEAD, run_id="h"))
    assert report.outcome == "block"
    overall = [x for x in report.findings if x.rule == "rule-2" and x.subject == "overall"]
    assert len(overall) == 1 and overall[0].signable and "sign" in overall[0].fix
    assert report.newly_failing == ["s01", "s02", "s03"]
    assert [x.subject for x in report.findings if x.rule == "rule-4"] == ["s01", "s02", "s03"]
    assert not report.rule1_fired


def test_newly_failing_must_pass_fires_rule_1(f) -> None:
    # The worked example: the suite improves, but a must-pass scenario fails 1 of 5.
    base = f.run([5, 5, 5, 3, 3, 3, 3, 3, 3, 3, 3, 3], run_id="b", must_pass=[0])
    head = f.run([4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5], run_id="h", must_pass=[0])
    report = evaluate_gate(compare_runs(base, head), Policy())
    assert report.comparison.overall.delta is not None and report.comparison.overall.delta > 0
    assert report.outcome == "block" and report.rule1_fired
    r1 = [x for x in report.findings if x.rule == "rule-1"]
    assert [x.subject for x in r1] == ["s01"] and not r1[0].signable


def test_identical_runs_pass_and_say_cant_tell(f) -> None:
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.BASE, run_id="h"))
    assert report.outcome == "pass" and not report.findings
    assert report.can_tell is False  # 12 x 5 cannot see a 5-point drop
    assert report.notes[0].startswith("can't tell")


def test_large_suite_can_tell(f) -> None:
    passes = [5] * 150 + [4] * 50
    report = gate_runs(
        Policy(tolerance={"overall": 0.1}, n_resamples=1000),
        f.run(passes, run_id="b"),
        f.run(passes, run_id="h"),
    )
    assert report.outcome == "pass" and report.can_tell


def test_non_must_pass_newly_failing_needs_review(f) -> None:
    # threshold 0.5 can be confirmed at k=5: s12 goes from a confirmed pass (5/5) to a confirmed fail (0/5)
    plain = {"threshold": 0.5, "tags": lambda _: {}}
    base = f.run([5] * 12, run_id="b", **plain)
    head = f.run([5] * 11 + [0], run_id="h", **plain)
    report = gate_runs(Policy(tolerance={"overall": 0.1}), base, head)
    assert report.newly_failing == ["s12"]
    assert report.outcome == "needs-sign-off"
    assert [x.rule for x in report.findings] == ["rule-4"]
    assert "confirmed pass became a confirmed fail" in report.findings[0].message


def test_inconclusive_to_fail_is_worse_not_confirmed_and_needs_no_signature(f) -> None:
    # The case: 3/5 -> 2/5 against 0.8 moves inconclusive -> fail; at k=5 0.8 cannot be confirmed.
    base = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 3, 0], run_id="b")
    head = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 2, 0], run_id="h")
    report = gate_runs(Policy(tolerance={"overall": 0.1}), base, head)
    s11 = next(s for s in report.comparison.scenarios if s.id == "s11")
    assert (s11.base.verdict, s11.head.verdict, s11.change) == ("inconclusive", "fail", "worse_unconfirmed")
    assert report.outcome == "pass" and report.newly_failing == [] and report.worse_unconfirmed == ["s11"]
    assert "1 worse, not confirmed at k=5" in report.headline
    assert s11.cant_tell == (
        "threshold 0.8 needs at least 16 repeats to be confirmed at 95%; at 5 it can only be inconclusive "
        "or fail"
    )
    assert any(n.startswith("can't tell for 12 scenario(s)") for n in report.notes)


def test_a_significant_drop_is_newly_failing_after_adjustment(f) -> None:
    # the seed collapse: 5/5 -> 0/5 three times in 12 (one-sided Fisher p=1/252 each, BH-adjusted 0.016)
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.HEAD, run_id="h"))
    s1 = report.comparison.scenarios[0]
    assert s1.fisher_p == pytest.approx(1 / 252)
    assert s1.fisher_p_adjusted == pytest.approx(12 / 3 / 252)
    assert s1.evidence == "significant" and "Fisher p=0.004" in report.findings[-3].message
    # one such drop among 30 scenarios is not enough evidence at k=5: worse, not confirmed
    wide = gate_runs(Policy(), f.run([5] * 30, run_id="b"), f.run([0] + [5] * 29, run_id="h"))
    assert wide.newly_failing == [] and wide.worse_unconfirmed == ["s01"]
    assert wide.comparison.scenario_detectable_drop is None
    assert any("no single scenario's drop can be confirmed" in n for n in wide.notes)


def test_flaky_scenarios_come_from_the_two_baselines(f) -> None:
    base = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 0], run_id="b", threshold=0.5)
    base_2 = f.run([5, 5, 5, 5, 5, 5, 5, 5, 0, 4, 5, 0], run_id="b2", threshold=0.5)
    report = gate_runs(Policy(), base, f.run(f.BASE, run_id="h", threshold=0.5), base_2)
    assert report.flaky == ["s09", "s11"]
    by_id = {s.id: s for s in report.comparison.scenarios}
    assert "pass vs fail (5/5 vs 0/5)" in by_id["s09"].flaky_reason
    assert "inconclusive vs pass" in by_id["s11"].flaky_reason
    assert not by_id["s10"].flaky  # 4/5 twice
    # the baselines differ by 1.0 on s09, 0.2 on s11 and nowhere else: the flaky ones carry all the noise
    assert report.flaky_noise_share == pytest.approx(1.0)
    assert report.outcome == "pass" and "2 flaky" in report.headline
    same = f.run([5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 0], run_id="b-again", threshold=0.5)
    alone = gate_runs(Policy(), base, same)  # no second baseline: nothing is known to be flaky
    assert alone.flaky == [] and alone.flaky_noise_share is None


def test_guardrail_worse_beyond_tolerance_blocks_an_improvement(f) -> None:
    base = f.run(f.HEAD, run_id="b", latency=0.5, cost=0.001)
    head = f.run(f.BASE, run_id="h", latency=0.5, cost=0.002, escalated_every=3)
    report = gate_runs(Policy(tolerance={"overall": 0.5}), base, head)
    r3 = {x.subject: x for x in report.findings if x.rule == "rule-3"}
    assert "escalation_rate" in r3 and r3["escalation_rate"].signable
    assert "improved" in r3["escalation_rate"].message
    assert report.outcome == "block"


def test_guardrail_within_the_baselines_run_to_run_noise_does_not_block(f) -> None:
    # latency moves with machine load: two runs of the baseline differ by 30%, the candidate by 24%
    base = f.run(f.BASE, run_id="b", latency=0.5)
    base_2 = f.run(f.BASE, run_id="b2", latency=0.65)
    head = f.run(f.BASE, run_id="h", latency=0.62)
    policy = Policy(guardrails={"latency_p50": {"relative": 0.2}})
    alone = gate_runs(policy, base, head)
    assert [x.subject for x in alone.findings if x.rule == "rule-3"] == ["latency_p50"]
    with_noise = gate_runs(policy, base, head, base_2)
    p50 = next(g for g in with_noise.comparison.guardrails if g.name == "latency_p50")
    assert p50.noise_relative_change == pytest.approx(0.3)
    assert not any(x.rule == "rule-3" for x in with_noise.findings)
    assert any("latency_p50" in n and "run-to-run noise" in n and "30%" in n for n in with_noise.notes)
    # beyond both the tolerance and the noise it still blocks
    slow = f.run(f.BASE, run_id="h2", latency=0.8)
    assert any(
        x.rule == "rule-3" and x.subject == "latency_p50"
        for x in gate_runs(policy, base, slow, base_2).findings
    )


def test_drop_within_noise_floor_does_not_block(f) -> None:
    base = f.run(f.BASE, run_id="b")
    head = f.run([5, 5, 5, 5, 5, 5, 5, 5, 2, 1, 4, 0], run_id="h")
    noisy = f.run([2, 2, 5, 5, 5, 2, 5, 5, 2, 1, 4, 0], run_id="b2")
    c_quiet = compare_runs(base, head, None)
    c_noisy = compare_runs(base, head, noisy)
    assert c_noisy.noise is not None and c_noisy.noise.magnitude > abs(c_quiet.overall.delta or 0)
    assert any(
        x.rule == "rule-2" and x.subject == "overall" for x in evaluate_gate(c_quiet, Policy()).findings
    )
    noisy_report = evaluate_gate(c_noisy, Policy())
    assert not any(x.rule == "rule-2" and x.subject == "overall" for x in noisy_report.findings)
    assert any("within the noise floor" in n for n in noisy_report.notes)


def test_example_policy_loads_and_hashes_its_mapping() -> None:
    import yaml

    policy = load_policy(EXAMPLE)
    with open(EXAMPLE, encoding="utf-8") as fh:
        mapping = yaml.safe_load(fh)
    assert policy_hash(policy) == content_hash(mapping)
    assert policy.tolerance.for_category("risk=high") == 0.0
    assert policy.guardrails.cost is not None and policy.guardrails.cost.relative == 0.10


def test_policy_is_validated(tmp_path) -> None:
    with pytest.raises(PolicyError, match="tolerance.categories"):
        policy_from_mapping({"tolerance": {"categories": {"risk": 0.1}}})
    with pytest.raises(PolicyError, match="alph"):
        policy_from_mapping({"alph": 0.1})
    with pytest.raises(PolicyError, match="exactly one"):
        policy_from_mapping({"guardrails": {"cost": {"relative": 0.1, "absolute": 0.1}}})
    with pytest.raises(PolicyError, match="no such policy"):
        load_policy(tmp_path / "missing.yaml")


def test_is_wider_lists_each_widening() -> None:
    recorded = policy_from_mapping(
        {"alpha": 0.05, "tolerance": {"overall": 0.05, "categories": {"risk=high": 0.0}}}
    )
    same = policy_from_mapping(
        {"alpha": 0.05, "tolerance": {"overall": 0.05, "categories": {"risk=high": 0.0}}}
    )
    assert is_wider(same, recorded) == []
    tighter = policy_from_mapping(
        {"alpha": 0.01, "tolerance": {"overall": 0.02, "categories": {"risk=high": 0.0}}}
    )
    assert is_wider(tighter, recorded) == []
    wider = policy_from_mapping(
        {
            "alpha": 0.1,
            "tolerance": {"overall": 0.05},
            "guardrails": {"cost": None, "latency_p95": {"relative": 0.5}},
            "allow_errors": True,
            "error_budget": 0.1,
        }
    )
    found = " | ".join(is_wider(wider, recorded))
    for piece in ("alpha", "risk=high 0 -> 0.05", "cost switched off", "latency_p95", "error budget"):
        assert piece in found


def test_widened_policy_is_refused_and_narrower_is_reported(f) -> None:
    recorded = {"alpha": 0.05, "tolerance": {"overall": 0.05}}
    head = f.run(f.BASE, run_id="h", policy=recorded)
    base = f.run(f.BASE, run_id="b", policy=recorded)
    with pytest.raises(
        PolicyWidenedError, match="tolerance widened after the run: overall tolerance 0.05 -> 0.2"
    ):
        gate_runs(policy_from_mapping({"alpha": 0.05, "tolerance": {"overall": 0.2}}), base, head)
    notes = check_policy_against_runs(
        policy_from_mapping({"alpha": 0.01, "tolerance": {"overall": 0.05}}), [("candidate", head)]
    )
    assert notes and "not wider" in notes[0]
    assert check_policy_against_runs(policy_from_mapping(recorded), [("candidate", head)]) == []


def test_tampered_recorded_policy_is_refused(f) -> None:
    head = f.run(f.BASE, run_id="h", policy={"alpha": 0.05}, policy_hash="sha256:other")
    with pytest.raises(PolicyError, match="does not match"):
        check_policy_against_runs(Policy(), [("candidate", head)])


def test_one_run_given_twice_is_refused(f) -> None:
    """The same run as both baselines would make a noise floor of 0; as baseline and candidate, no change."""
    base = f.run(f.BASE, run_id="b")
    head = f.run(f.HEAD, run_id="h")
    with pytest.raises(GateError, match=r"second baseline run is the baseline run b again: the noise floor"):
        gate_runs(Policy(), base, head, base)
    with pytest.raises(GateError, match=r"baseline run is the candidate run h again: a run compared with"):
        gate_runs(Policy(), head, head)
    copy = base.model_copy(deep=True)  # a copy of the file is the same run too
    with pytest.raises(GateError, match="the baseline run b again"):
        gate_runs(Policy(), base, head, copy)
