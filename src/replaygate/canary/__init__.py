"""replaygate.canary: a signed candidate on a share of live traffic, widened on evidence, rolled back.

::

    from replaygate.canary import CanaryController

    canary = CanaryController.open(".replaygate/replaygate.db", policy="examples/gate-policy.yaml")
    canary.start(decision_id, actor="ana", reason="gate passed")   # 1% of users, sticky
    result = canary.check()               # live measures; confidently worse than a tolerance rolls back
    canary.widen(actor="ana")             # refused until every measure is confidently within tolerance
    canary.rollback(actor="ana", reason="refund complaints")       # one action, idempotent, audited

The state lives in the shared store (``canary_state``, ``canary_audit``); production agents route with
``replaygate.instrumentation.choose_variant(user_id)``, which reads it every few seconds.
Command line: ``replaygate canary start|status|widen|promote|rollback|check|simulate`` and
``replaygate serve`` (the release page).
"""

from typing import TYPE_CHECKING, Any

from replaygate.canary._calibration import Arm, Tally, simulate_rollouts, step_arms
from replaygate.canary._control import (
    CanaryCheck,
    CanaryController,
    CanarySettings,
    CanaryStatus,
    DecisionSource,
    LiveTraces,
    decision_config_ids,
)
from replaygate.canary._errors import CanaryError, ConflictError
from replaygate.canary._evidence import (
    DEFAULT_TOLERANCES,
    METHOD,
    WORDS,
    ArmSummary,
    Evidence,
    EvidenceSettings,
    Limit,
    MeanSummary,
    MeasureEvidence,
    evaluate_evidence,
    requests_needed,
    tolerances_from_policy,
)
from replaygate.canary._machine import DEFAULT_PLAN, RolloutState, Transition, parse_plan, state_json
from replaygate.canary._machine import rollback as rollback_rollout
from replaygate.canary._machine import start as start_rollout
from replaygate.canary._measures import (
    MEASURES,
    ArmMeasures,
    LiveMeasures,
    MeasureDiff,
    RequestSample,
    SeriesPoint,
    arm_measures,
    compute_live_measures,
)
from replaygate.canary._outlook import StepOutlook, step_outlook
from replaygate.canary._samples import sample_from_trace
from replaygate.canary._store import AuditEntry, CanaryStore
from replaygate.canary._tolerances import BUILT_IN, CanaryPolicy

if TYPE_CHECKING:
    from replaygate.canary._simulate import SimulationReport, TrafficProfile, simulate_live_traffic

_LAZY = {"SimulationReport", "TrafficProfile", "simulate_live_traffic"}  # the simulation imports the OTel SDK


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from replaygate.canary import _simulate

        return getattr(_simulate, name)
    raise AttributeError(f"module 'replaygate.canary' has no attribute {name!r}")


__all__ = [
    "Arm",
    "ArmMeasures",
    "ArmSummary",
    "AuditEntry",
    "CanaryController",
    "CanaryError",
    "CanarySettings",
    "CanaryStatus",
    "CanaryStore",
    "CanaryCheck",
    "ConflictError",
    "DEFAULT_PLAN",
    "DEFAULT_TOLERANCES",
    "DecisionSource",
    "Evidence",
    "EvidenceSettings",
    "Limit",
    "BUILT_IN",
    "CanaryPolicy",
    "LiveMeasures",
    "MEASURES",
    "METHOD",
    "MeanSummary",
    "MeasureDiff",
    "MeasureEvidence",
    "RequestSample",
    "RolloutState",
    "SeriesPoint",
    "SimulationReport",
    "StepOutlook",
    "Tally",
    "LiveTraces",
    "TrafficProfile",
    "Transition",
    "WORDS",
    "arm_measures",
    "compute_live_measures",
    "decision_config_ids",
    "evaluate_evidence",
    "parse_plan",
    "requests_needed",
    "sample_from_trace",
    "simulate_live_traffic",
    "simulate_rollouts",
    "rollback_rollout",
    "start_rollout",
    "state_json",
    "step_arms",
    "step_outlook",
    "tolerances_from_policy",
]
