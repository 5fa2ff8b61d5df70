"""replaygate.gate: compare runs, apply the release gate, store signed decisions, watch for drift.

Usage::

    from replaygate.gate import load_policy, gate_runs, DecisionStore
    from replaygate.replay import load_run

    policy = load_policy("gate-policy.yaml")
    report = gate_runs(policy, load_run("base.json"), load_run("head.json"), load_run("base2.json"))
    # or, for big runs, load_run_data(path): what the gate reads of a run file, not its attempt objects
    report.outcome  # "pass" | "needs-sign-off" | "block", with report.findings (rule, message, fix)

    store = DecisionStore()  # REPLAYGATE_STORE (path or URL), default .replaygate/replaygate.db
    store.add_review(report, "refund-over-limit", reviewed_by="ana", note="read the transcript")
    store.sign(report, signed_by="ana", outcome="pass-with-sign-off", reason="latency traded for accuracy")

Rules: (1) a newly failing must-pass scenario blocks and cannot be signed away; (2) a graded drop beyond
tolerance that is significant and above the noise floor blocks unless signed; (3) an improvement does not
count if a guardrail worsens beyond tolerance; (4) every newly failing scenario is read before signing.
Before any of that, each run must be exactly the plan it records (``verify_run``: no duplicate,
missing or unknown attempt, ``counts`` true to the status, the suite hash, the attempts' digest), else
:class:`RunIntegrityError`. Errors block unless the policy's error budget allows them. A policy wider
than the one recorded in the run is refused.
"Newly failing" means passed before, fails now, beyond noise; "worse, not confirmed" and "flaky"
scenarios are listed in the report and ask for no signature by themselves.

Calibration: ``simulate_gate(heterogeneous_suite(30, k=5, rng=rng), policy, rng)`` draws two baseline runs
and a candidate of a simulated suite and gates them with these same rules (``bench/gate_calibration.py``).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time each name loads its module on first use (PEP 562 ``__getattr__``)
    from replaygate.gate._calibration import SimulatedSuite, heterogeneous_suite, simulate_gate, synthetic_run
    from replaygate.gate._compare import check_comparable, compare_runs
    from replaygate.gate._comparison_model import (
        COMPARISON_FORMAT_VERSION,
        Change,
        Comparison,
        ErrorSummary,
        GradedComparison,
        GuardrailComparison,
        NoiseInfo,
        RateComparison,
        RunRef,
        ScenarioComparison,
        SideStats,
    )
    from replaygate.gate._drift import DriftReport, detect_drift, drift_pair, load_runs_dir
    from replaygate.gate._errors import (
        ComparisonError,
        DecisionError,
        GateError,
        PolicyError,
        PolicyWidenedError,
    )
    from replaygate.gate._gate_model import REPORT_FORMAT_VERSION, RULE_TITLES, Finding, GateReport
    from replaygate.gate._integrity import RunDigest, RunIntegrityError, verify_run, verify_runs
    from replaygate.gate._policy import (
        GuardrailTolerance,
        GuardrailTolerances,
        Policy,
        Tolerance,
        is_wider,
        load_policy,
        policy_from_mapping,
        policy_hash,
    )
    from replaygate.gate._rules import check_policy_against_runs, evaluate_gate, gate_runs
    from replaygate.gate._run_data import RunData, load_run_data
    from replaygate.gate._signing import DECISION_OUTCOMES, check_signable, unread_scenarios
    from replaygate.gate._store import DecisionStore, Review, SignedDecision, resolve_store_url

# Each public name's module: ``import replaygate.gate`` loads none of them (the gate command starts
# reading its run files before the statistics, the reports and pydantic's models of them are imported;
# the store imports SQLAlchemy).
_MODULES = {
    **dict.fromkeys(
        ("SimulatedSuite", "heterogeneous_suite", "simulate_gate", "synthetic_run"), "_calibration"
    ),
    **dict.fromkeys(("check_comparable", "compare_runs"), "_compare"),
    **dict.fromkeys(
        (
            "COMPARISON_FORMAT_VERSION",
            "Change",
            "Comparison",
            "ErrorSummary",
            "GradedComparison",
            "GuardrailComparison",
            "NoiseInfo",
            "RateComparison",
            "RunRef",
            "ScenarioComparison",
            "SideStats",
        ),
        "_comparison_model",
    ),
    **dict.fromkeys(("DriftReport", "detect_drift", "drift_pair", "load_runs_dir"), "_drift"),
    **dict.fromkeys(
        ("ComparisonError", "DecisionError", "GateError", "PolicyError", "PolicyWidenedError"), "_errors"
    ),
    **dict.fromkeys(("Finding", "GateReport", "REPORT_FORMAT_VERSION", "RULE_TITLES"), "_gate_model"),
    **dict.fromkeys(("RunDigest", "RunIntegrityError", "verify_run", "verify_runs"), "_integrity"),
    **dict.fromkeys(
        (
            "GuardrailTolerance",
            "GuardrailTolerances",
            "Policy",
            "Tolerance",
            "is_wider",
            "load_policy",
            "policy_from_mapping",
            "policy_hash",
        ),
        "_policy",
    ),
    **dict.fromkeys(("check_policy_against_runs", "evaluate_gate", "gate_runs"), "_rules"),
    **dict.fromkeys(("RunData", "load_run_data"), "_run_data"),
    **dict.fromkeys(("DECISION_OUTCOMES", "check_signable", "unread_scenarios"), "_signing"),
    **dict.fromkeys(("DecisionStore", "Review", "SignedDecision", "resolve_store_url"), "_store"),
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """Load a public name's module on first use (PEP 562) and keep the name in the package."""
        module = _MODULES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "COMPARISON_FORMAT_VERSION",
    "Change",
    "Comparison",
    "ComparisonError",
    "DECISION_OUTCOMES",
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
    "REPORT_FORMAT_VERSION",
    "RULE_TITLES",
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
]
