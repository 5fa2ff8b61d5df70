import pytest

from replaygate.gate import ComparisonError, Policy, compare_runs, evaluate_gate


def test_seed_case_is_significant_and_lists_newly_failing(f, seed_runs) -> None:
    base, head = seed_runs
    c = compare_runs(base, head)
    assert c.overall.base_rate == pytest.approx(53 / 60)
    assert c.overall.head_rate == pytest.approx(40 / 60)
    assert c.overall.delta == pytest.approx(40 / 60 - 53 / 60)
    assert c.overall.p_value is not None and c.overall.p_value < 0.05
    assert c.overall.low is not None and c.overall.high is not None and c.overall.high < 0
    assert [s.id for s in c.by_change("newly_failing")] == ["s01", "s02", "s03"]
    assert [s.id for s in c.by_change("still_failing")] == ["s12"]
    s1 = c.scenarios[0]
    assert (s1.base.passed, s1.base.scored, s1.head.passed, s1.head.scored) == (5, 5, 0, 5)
    assert s1.fisher_p is not None and s1.fisher_p < 0.01
    assert s1.head.low == 0.0 and s1.head.high is not None and s1.head.high < 0.5
    assert c.minimum_detectable_drop is not None and 0 < c.minimum_detectable_drop < 1
    assert not c.problems


def test_same_runs_are_not_significant(f) -> None:
    c = compare_runs(f.run(f.BASE, run_id="a"), f.run(f.BASE, run_id="b"))
    assert c.overall.delta == 0
    assert c.overall.p_value is not None and c.overall.p_value > 0.5
    assert not c.by_change("newly_failing")


def test_categories_are_holm_adjusted(f, seed_runs) -> None:
    c = compare_runs(*seed_runs)
    names = [g.name for g in c.categories]
    assert names == sorted(names) and "risk=high" in names and "dimension=refunds" in names
    for g in c.categories:
        assert g.p_adjusted is not None and g.p_value is not None
        assert g.p_adjusted >= g.p_value - 1e-12
    high = next(g for g in c.categories if g.name == "risk=high")
    assert high.scenarios == 3 and high.delta == pytest.approx(-1.0)


def test_suite_hash_mismatch_is_refused_saying_which(f) -> None:
    base = f.run(f.BASE, run_id="b1", suite_hash="sha256:aaa")
    head = f.run(f.BASE, run_id="h1", suite_hash="sha256:bbb")
    with pytest.raises(ComparisonError, match="suite hash differs") as err:
        compare_runs(base, head)
    assert "sha256:aaa" in str(err.value) and "sha256:bbb" in str(err.value)


def test_k_mismatch_is_refused_saying_which(f) -> None:
    with pytest.raises(ComparisonError, match=r"k differs .*k=5.*k=3"):
        compare_runs(f.run(f.BASE, run_id="b", k=5), f.run([3] * 12, run_id="h", k=3))


def test_missing_fingerprint_suite_hash_is_refused(f) -> None:
    with pytest.raises(ComparisonError, match="no fingerprint"):
        compare_runs(f.run(f.BASE, suite_hash=""), f.run(f.BASE))


def test_missing_scenario_is_a_blocking_problem_not_dropped(f) -> None:
    base = f.run(f.BASE, run_id="b")
    head = f.run(f.BASE, run_id="h", drop=[4])
    c = compare_runs(base, head)
    s5 = next(s for s in c.scenarios if s.id == "s05")
    assert s5.change == "unknown" and not s5.head.present
    assert any("s05 is missing from the candidate run h" in p for p in c.problems)
    report = evaluate_gate(c, Policy())
    assert report.outcome == "block"
    assert any(f.rule == "data" and not f.signable for f in report.findings)


def test_short_scenario_blocks(f) -> None:
    c = compare_runs(f.run(f.BASE, run_id="b"), f.run(f.BASE, run_id="h", attempts={6: 3}))
    assert any("s07" in p and "3 of 5 attempts" in p for p in c.problems)
    assert evaluate_gate(c, Policy()).outcome == "block"


def test_candidate_errors_are_not_failures_and_block(f) -> None:
    base = f.run(f.BASE, run_id="b")
    head = f.run([5, 5, 3] + f.BASE[3:], run_id="h", errors={2: 2})  # s03: 3 pass + 2 errors
    c = compare_runs(base, head)
    s3 = c.scenarios[2]
    assert (s3.head.passed, s3.head.failed, s3.head.errors) == (3, 0, 2)
    assert s3.change != "newly_failing"
    assert c.errors.head_errors == 2 and c.errors.head_scenarios == ["s03"]
    report = evaluate_gate(c, Policy())
    assert report.outcome == "block"
    errs = [f for f in report.findings if f.rule == "errors"]
    assert len(errs) == 1 and "candidate" in errs[0].message and not errs[0].signable
    allowed = evaluate_gate(c, Policy(allow_errors=True, error_budget=0.05))
    assert not any(f.rule == "errors" for f in allowed.findings)


def test_baseline_errors_are_not_hidden(f) -> None:
    # The baseline's s01 errored on every attempt: its regression to 0/5 in the head must not vanish.
    base = f.run([0] + f.BASE[1:], run_id="b", errors={0: 5})
    head = f.run([0] + f.BASE[1:], run_id="h")
    c = compare_runs(base, head)
    assert c.errors.base_errors == 5
    assert any("s01" in p and "errored" in p for p in c.problems)
    report = evaluate_gate(c, Policy(allow_errors=True, error_budget=0.2))
    assert report.outcome == "block"
    strict = evaluate_gate(c, Policy())
    assert any(f.rule == "errors" and "baseline" in f.message for f in strict.findings)


def test_scenarios_that_do_not_count_are_reported_only(f) -> None:
    base = f.run(f.BASE, run_id="b", not_counted=[0])
    head = f.run(f.HEAD, run_id="h", not_counted=[0])
    c = compare_runs(base, head)
    assert c.scenarios[0].counts is False and c.scenarios[0].change == "newly_failing"
    assert c.overall.scenarios == 11
    assert [s.id for s in c.by_change("newly_failing", counted_only=True)] == ["s02", "s03"]


def test_graded_scores_and_noise_floor(f) -> None:
    base = f.run(f.BASE, run_id="b", judge=0.9)
    head = f.run(f.BASE, run_id="h", judge=0.4)
    noise = f.run(f.BASE, run_id="b2", judge=0.9)
    c = compare_runs(base, head, noise, Policy(n_resamples=1000))
    g = next(x for x in c.graded if x.metric == "judge:groundedness" and x.group == "overall")
    assert g.delta == pytest.approx(-0.5) and g.p_value is not None and g.p_value < 0.05
    assert g.noise_magnitude is not None and g.noise_magnitude < 0.5
    assert c.noise is not None and c.noise.run_id == "b2" and c.noise.delta == 0
    assert any(x.metric == "retrieval:mrr" for x in c.graded)
    report = evaluate_gate(c, Policy())
    assert any(f.rule == "rule-2" and "judge:groundedness" in f.subject for f in report.findings)


def test_unknown_cost_is_none_not_zero(f) -> None:
    c = compare_runs(f.run(f.BASE, run_id="b", cost=None), f.run(f.BASE, run_id="h"))
    cost = next(g for g in c.guardrails if g.name == "cost")
    assert cost.base is None and cost.change is None and "unknown" in cost.note
