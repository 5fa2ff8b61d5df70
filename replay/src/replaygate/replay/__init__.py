"""replaygate.replay: scenarios, targets, the replay runner, scoring and run files.

Replay the golden set against a candidate (a target plus its configuration) and write a run file::

    from replaygate.replay import Candidate, create_judges, load_scenarios, run_suite, select_scenarios

    scenarios = select_scenarios(load_scenarios("golden"), tier="release")
    candidate = Candidate.load("examples.support_agent.target:run_session", "configs/candidate.yaml")
    run = run_suite(scenarios, candidate.target, candidate.config, repeats=5, concurrency=8,
                    timeout_s=60, judges=create_judges("offline"), out_path="runs/candidate.json")
    print(run.summary.errors, run.summary.fails, run.summary.passes)  # a typed RunSummary

A target is ``module:function`` (sync or async, called as ``fn(turns, context, config)`` or
``fn(turns, context)``; it returns a str or ``{"answer", "label"?, "messages"?}``) or an ``http(s)://``
URL (POST ``{turns, context, config, session_id}``, answer ``{answer, label?}``; retries with backoff on
429/5xx honouring ``Retry-After``; a W3C ``traceparent`` joins the remote agent's spans to the attempt).
Each attempt's own spans are captured in-process and scored; an attempt is ``pass``, ``fail`` or
``error`` (target raised, timed out, bad output, judge failed: never a pass, never skipped). The run is
journaled beside the run file (``<out>.journal``, fsynced in groups; removed once the run file is saved)
and resumes with ``resume=True``
without losing or repeating finished attempts; ``shard="i/n"`` runs one shard, :func:`merge_runs`
combines them. Progress is a bar in a terminal and plain lines otherwise (:class:`ProgressLines`).
:func:`summarize_attempts` builds the run's typed :class:`RunSummary` (``RunFile.summary``: counts,
errors first, attribution, and the guardrails of :func:`guardrail_measures`); :func:`summary_lines`
prints it. :func:`retrieval_summary` aggregates a run's retrieval metrics (per scenario, overall, and
whether the similarity threshold ever filtered anything); :func:`judges_from_fingerprint` rebuilds the
judges a run was recorded with. A scenario with ``followups`` is a conversation: after each answer a
simulated user (:class:`ScriptedSimulator`, offline, or :class:`LlmSimulator` over an OpenAI-compatible
endpoint) writes the next turn, every turn goes through the session, and the attempt records them in
``conversation``; checks may read the last turn, ``every`` turn or turn N. The CLI is
``replaygate run | merge | fingerprint``.
"""

from replaygate.replay._artifacts import read_artifacts
from replaygate.replay._candidate import Candidate, declared_versions
from replaygate.replay._errors import (
    JudgeError,
    ReplayError,
    RunFileError,
    ScenarioError,
    TargetError,
)
from replaygate.replay._fingerprint import build_fingerprint, fingerprint_differences, git_commit
from replaygate.replay._http_target import HttpTarget
from replaygate.replay._journal import journal_path, read_journal
from replaygate.replay._judges import (
    Judge,
    JudgeVerdict,
    create_judge,
    create_judges,
    judges_from_fingerprint,
    register_judge,
)
from replaygate.replay._llm_judge import LlmJudge
from replaygate.replay._measures import (
    NO_LLM_CALL,
    GuardrailMeasures,
    call_cost,
    compute_measures,
    guardrail_measures,
    percentile,
    scored_attempts,
)
from replaygate.replay._merge import merge_runs
from replaygate.replay._offline_judge import OfflineContextRelevanceJudge, OfflineGroundednessJudge
from replaygate.replay._progress import ProgressLines
from replaygate.replay._retrieval_metrics import retrieval_metrics, retrieval_summary
from replaygate.replay._run_summary import (
    error_lines,
    guardrail_summary,
    summarize_attempts,
    summary_headline,
    summary_lines,
)
from replaygate.replay._run_summary_model import GuardrailSummary, RunSummary
from replaygate.replay._runfile import (
    RUN_FORMAT_VERSION,
    Attempt,
    AttemptStatus,
    CheckResult,
    ConversationTurn,
    Fingerprint,
    JudgeResult,
    Measures,
    RetrievalScores,
    RunFile,
    ScenarioEntry,
    content_hash,
    load_run,
    save_run,
)
from replaygate.replay._runner import run_suite, run_suite_async
from replaygate.replay._scenario import (
    Check,
    ContainsCheck,
    ContextRelevanceJudgeSpec,
    ExpectedLabelCheck,
    ExpectedToolsCheck,
    Followups,
    ForbiddenOutputRegexCheck,
    ForbiddenToolsCheck,
    GroundednessJudgeSpec,
    JsonSchemaCheck,
    JudgeSpec,
    MaxCharsCheck,
    MaxStepsCheck,
    NotContainsCheck,
    OutputRegexCheck,
    RetrievalLabels,
    Scenario,
    ScriptRule,
    StopWhen,
    ToolArgsCheck,
    ValuesFromToolsCheck,
    dump_scenario,
    load_scenario,
    load_scenarios,
    parse_scenario,
    save_scenario,
    scenario_content_hash,
    scenario_json_schema,
    suite_hash,
)
from replaygate.replay._scoring import ScoreOutcome, score_attempt
from replaygate.replay._selection import counts_in_gate, select_scenarios
from replaygate.replay._shard import in_shard, parse_shard
from replaygate.replay._simulator import (
    LlmSimulator,
    ScriptedSimulator,
    Simulator,
    SimulatorError,
    create_simulator,
)
from replaygate.replay._target import CallableTarget, Target, TargetOutput, load_target
from replaygate.replay.version import __version__

__all__ = [
    "NO_LLM_CALL",
    "RUN_FORMAT_VERSION",
    "GuardrailMeasures",
    "GuardrailSummary",
    "call_cost",
    "compute_measures",
    "guardrail_measures",
    "guardrail_summary",
    "percentile",
    "scored_attempts",
    "Attempt",
    "AttemptStatus",
    "CallableTarget",
    "Candidate",
    "Check",
    "CheckResult",
    "ContainsCheck",
    "ContextRelevanceJudgeSpec",
    "ConversationTurn",
    "ExpectedLabelCheck",
    "ExpectedToolsCheck",
    "Fingerprint",
    "Followups",
    "ForbiddenOutputRegexCheck",
    "ForbiddenToolsCheck",
    "GroundednessJudgeSpec",
    "HttpTarget",
    "JsonSchemaCheck",
    "Judge",
    "JudgeError",
    "JudgeResult",
    "JudgeSpec",
    "JudgeVerdict",
    "LlmJudge",
    "LlmSimulator",
    "MaxCharsCheck",
    "MaxStepsCheck",
    "Measures",
    "NotContainsCheck",
    "OfflineContextRelevanceJudge",
    "OfflineGroundednessJudge",
    "OutputRegexCheck",
    "ProgressLines",
    "ReplayError",
    "RetrievalLabels",
    "RetrievalScores",
    "RunFile",
    "RunFileError",
    "RunSummary",
    "Scenario",
    "ScenarioEntry",
    "ScenarioError",
    "ScoreOutcome",
    "ScriptRule",
    "ScriptedSimulator",
    "Simulator",
    "SimulatorError",
    "StopWhen",
    "Target",
    "TargetError",
    "TargetOutput",
    "ToolArgsCheck",
    "ValuesFromToolsCheck",
    "__version__",
    "build_fingerprint",
    "content_hash",
    "counts_in_gate",
    "create_judge",
    "create_judges",
    "create_simulator",
    "declared_versions",
    "dump_scenario",
    "error_lines",
    "fingerprint_differences",
    "git_commit",
    "in_shard",
    "journal_path",
    "judges_from_fingerprint",
    "load_run",
    "read_artifacts",
    "load_scenario",
    "load_scenarios",
    "load_target",
    "merge_runs",
    "parse_scenario",
    "parse_shard",
    "read_journal",
    "register_judge",
    "retrieval_metrics",
    "retrieval_summary",
    "run_suite",
    "run_suite_async",
    "save_run",
    "save_scenario",
    "scenario_content_hash",
    "scenario_json_schema",
    "score_attempt",
    "select_scenarios",
    "suite_hash",
    "summarize_attempts",
    "summary_headline",
    "summary_lines",
]
