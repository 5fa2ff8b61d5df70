import replaygate.gate
import replaygate.report

GATE = {
    "COMPARISON_FORMAT_VERSION",
    "DECISION_OUTCOMES",
    "REPORT_FORMAT_VERSION",
    "RULE_TITLES",
    "Change",
    "Comparison",
    "ComparisonError",
    "DecisionError",
    "DecisionStore",
    "DriftReport",
    "ErrorSummary",
    "Finding",
    "GateError",
    "GateReport",
    "GradedComparison",
    "GuardrailComparison",
    "GuardrailTolerance",
    "GuardrailTolerances",
    "NoiseInfo",
    "Policy",
    "PolicyError",
    "PolicyWidenedError",
    "RateComparison",
    "Review",
    "RunData",
    "RunDigest",
    "RunIntegrityError",
    "RunRef",
    "ScenarioComparison",
    "SideStats",
    "SignedDecision",
    "SimulatedSuite",
    "Tolerance",
    "check_comparable",
    "check_policy_against_runs",
    "check_signable",
    "compare_runs",
    "detect_drift",
    "drift_pair",
    "evaluate_gate",
    "gate_runs",
    "heterogeneous_suite",
    "is_wider",
    "load_policy",
    "load_run_data",
    "load_runs_dir",
    "policy_from_mapping",
    "policy_hash",
    "resolve_store_url",
    "simulate_gate",
    "synthetic_run",
    "unread_scenarios",
    "verify_run",
    "verify_runs",
}
REPORT = {
    "FILE_NAMES",
    "FORMATS",
    "atomic_write",
    "group_tolerances",
    "load_report",
    "render_comparison_markdown",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "report_path",
    "scenario_interval_chart",
    "suite_delta_chart",
    "write_reports",
}


def test_public_names_are_pinned() -> None:
    assert set(replaygate.gate.__all__) == GATE
    assert set(replaygate.report.__all__) == REPORT
    for mod in (replaygate.gate, replaygate.report):
        for name in mod.__all__:
            assert hasattr(mod, name), name


def test_signed_decision_has_the_fields_the_canary_reads() -> None:
    fields = set(replaygate.gate.SignedDecision.model_fields)
    assert fields >= {
        "id",
        "report_id",
        "outcome",
        "signed_by",
        "reason",
        "signed_at",
        "baseline_fingerprint",
        "candidate_fingerprint",
        "candidate_target",
        "candidate_config_id",
        "report_path",
    }


def test_errors_are_replaygate_errors() -> None:
    from replaygate.instrumentation import ReplaygateError

    assert issubclass(replaygate.gate.PolicyWidenedError, replaygate.gate.PolicyError)
    assert issubclass(replaygate.gate.GateError, ReplaygateError)
