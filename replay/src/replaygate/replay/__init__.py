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
combines them. :func:`load_run` reads a run file whole; :func:`scan_run` validates it one attempt at a
time for readers that keep a summary, :func:`scan_run_fields` reads only the :class:`AttemptFields`
of each, and :func:`scan_run_columns` all of them as numpy columns (the gate). Progress is a bar in
a terminal and plain lines otherwise (:class:`ProgressLines`).
:func:`summarize_attempts` builds the run's typed :class:`RunSummary` (``RunFile.summary``: counts,
errors first, attribution, and the guardrails of :func:`guardrail_measures`); :func:`summary_lines`
prints it. :func:`retrieval_summary` aggregates a run's retrieval metrics (per scenario, overall, and
whether the similarity threshold ever filtered anything); :func:`judges_from_fingerprint` rebuilds the
judges a run was recorded with. A scenario with ``followups`` is a conversation: after each answer a
simulated user (:class:`ScriptedSimulator`, offline, or :class:`LlmSimulator` over an OpenAI-compatible
endpoint) writes the next turn, every turn goes through the session, and the attempt records them in
``conversation``; checks may read the last turn, ``every`` turn or turn N. The CLI is
``replaygate run | merge | fingerprint``.
:class:`ScenarioCache` keeps parsed scenarios by their files' bytes (``load_scenarios(dir, cache=...)``;
``replaygate run`` uses ``.replaygate/cache/scenarios-v1.json``), so an unchanged golden set is read
from JSON instead of YAML; errors are those of a parse, since only valid files are ever cached.
"""

import importlib
from typing import TYPE_CHECKING, Any

from replaygate.replay.version import __version__

if TYPE_CHECKING:  # at run time each name loads its module on first use (PEP 562 ``__getattr__``)
    from replaygate.replay._artifacts import read_artifacts
    from replaygate.replay._attempt import Scorer
    from replaygate.replay._attempt_line import AttemptFields, attempt_fields, parse_attempt_line
    from replaygate.replay._bounded import (
        MAX_YAML_BYTES,
        BoundedDictReader,
        check_format_version,
        load_json_bounded,
        load_yaml_bounded,
        read_text_bounded,
        validation_summary,
    )
    from replaygate.replay._calibrate import (
        CALIBRATION_LABELS,
        CalibrationResult,
        calibrate_judge,
        load_labels,
    )
    from replaygate.replay._candidate import Candidate, declared_versions, load_config
    from replaygate.replay._errors import (
        JudgeError,
        ReplayError,
        RunFileError,
        ScenarioError,
        TargetError,
    )
    from replaygate.replay._filelock import LockBusyError, exclusive_lock
    from replaygate.replay._fingerprint import (
        build_fingerprint,
        fingerprint_differences,
        git_commit,
        judge_identity,
    )
    from replaygate.replay._gc import old_objects_frozen
    from replaygate.replay._http_target import HttpTarget
    from replaygate.replay._journal import (
        JournalComparison,
        JournalWriter,
        compare_with_journal,
        journal_path,
        read_journal,
        read_journal_fingerprint,
        restore_journal,
    )
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
        MeasureColumns,
        call_cost,
        compute_measures,
        guardrail_measures,
        guardrail_measures_columns,
        measure_columns,
        percentile,
        scored_attempts,
    )
    from replaygate.replay._merge import merge_runs
    from replaygate.replay._offline_judge import OfflineContextRelevanceJudge, OfflineGroundednessJudge
    from replaygate.replay._progress import ProgressCallback, ProgressLines
    from replaygate.replay._regex import needs_backtracking
    from replaygate.replay._retrieval_metrics import retrieval_metrics, retrieval_summary
    from replaygate.replay._run_summary import (
        error_lines,
        guardrail_summary,
        summarize_attempts,
        summary_headline,
        summary_lines,
    )
    from replaygate.replay._run_summary_model import GuardrailSummary, RetrievalSummary, RunSummary
    from replaygate.replay._runcolumns import RunColumns, scan_run_columns
    from replaygate.replay._runfile import (
        RUN_FORMAT_VERSION,
        Attempt,
        AttemptsEditedError,
        AttemptStatus,
        CheckResult,
        ConversationTurn,
        Fingerprint,
        JudgeResult,
        Measures,
        RetrievalScores,
        RunFile,
        ScenarioEntry,
        attempt_digest,
        attempts_digest,
        content_hash,
        digest_of,
        load_run,
        save_run,
    )
    from replaygate.replay._runner import RunOptions, run_suite, run_suite_async
    from replaygate.replay._runscan import scan_run, scan_run_fields
    from replaygate.replay._scenario import (
        ORIGINS,
        STATES,
        TIERS,
        ActiveStatus,
        ChangelogEntry,
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
        KnownFailureStatus,
        MaxCharsCheck,
        MaxStepsCheck,
        NotContainsCheck,
        OutputRegexCheck,
        QuarantinedStatus,
        RetiredStatus,
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
        scenario_file_names,
        scenario_files,
        scenario_json_schema,
        suite_hash,
    )
    from replaygate.replay._scenario_cache import ScenarioCache
    from replaygate.replay._scenario_io import parse_scenario_file, suite_hash_of, write_atomic
    from replaygate.replay._scenario_model import ID_PATTERN
    from replaygate.replay._scoring import ScoreOutcome, score_attempt
    from replaygate.replay._selection import DEFAULT_STATUSES, HOLDOUT_TIERS, counts_in_gate, select_scenarios
    from replaygate.replay._shard import in_shard, parse_shard
    from replaygate.replay._simulator import (
        LlmSimulator,
        ScriptedSimulator,
        Simulator,
        SimulatorError,
        create_simulator,
    )
    from replaygate.replay._target import CallableTarget, Target, TargetOutput, load_target
    from replaygate.replay._versioned import load_versioned

#: Each public name and the private module that defines it (loaded when the name is first used).
_MODULES: dict[str, str] = {
    "read_artifacts": "_artifacts",
    "Scorer": "_attempt",
    **dict.fromkeys(("AttemptFields", "attempt_fields", "parse_attempt_line"), "_attempt_line"),
    **dict.fromkeys(
        (
            "MAX_YAML_BYTES",
            "BoundedDictReader",
            "check_format_version",
            "load_json_bounded",
            "load_yaml_bounded",
            "read_text_bounded",
            "validation_summary",
        ),
        "_bounded",
    ),
    **dict.fromkeys(
        (
            "CALIBRATION_LABELS",
            "CalibrationResult",
            "calibrate_judge",
            "load_labels",
        ),
        "_calibrate",
    ),
    **dict.fromkeys(("Candidate", "declared_versions", "load_config"), "_candidate"),
    **dict.fromkeys(("JudgeError", "ReplayError", "RunFileError", "ScenarioError", "TargetError"), "_errors"),
    **dict.fromkeys(("LockBusyError", "exclusive_lock"), "_filelock"),
    **dict.fromkeys(
        (
            "build_fingerprint",
            "fingerprint_differences",
            "git_commit",
            "judge_identity",
        ),
        "_fingerprint",
    ),
    "old_objects_frozen": "_gc",
    "HttpTarget": "_http_target",
    **dict.fromkeys(
        (
            "JournalComparison",
            "JournalWriter",
            "compare_with_journal",
            "journal_path",
            "read_journal",
            "read_journal_fingerprint",
            "restore_journal",
        ),
        "_journal",
    ),
    **dict.fromkeys(
        (
            "Judge",
            "JudgeVerdict",
            "create_judge",
            "create_judges",
            "judges_from_fingerprint",
            "register_judge",
        ),
        "_judges",
    ),
    "LlmJudge": "_llm_judge",
    **dict.fromkeys(
        (
            "NO_LLM_CALL",
            "GuardrailMeasures",
            "MeasureColumns",
            "call_cost",
            "compute_measures",
            "guardrail_measures",
            "guardrail_measures_columns",
            "measure_columns",
            "percentile",
            "scored_attempts",
        ),
        "_measures",
    ),
    "merge_runs": "_merge",
    **dict.fromkeys(("OfflineContextRelevanceJudge", "OfflineGroundednessJudge"), "_offline_judge"),
    **dict.fromkeys(("ProgressCallback", "ProgressLines"), "_progress"),
    "needs_backtracking": "_regex",
    **dict.fromkeys(("retrieval_metrics", "retrieval_summary"), "_retrieval_metrics"),
    **dict.fromkeys(
        (
            "error_lines",
            "guardrail_summary",
            "summarize_attempts",
            "summary_headline",
            "summary_lines",
        ),
        "_run_summary",
    ),
    **dict.fromkeys(("GuardrailSummary", "RetrievalSummary", "RunSummary"), "_run_summary_model"),
    **dict.fromkeys(("RunColumns", "scan_run_columns"), "_runcolumns"),
    **dict.fromkeys(
        (
            "RUN_FORMAT_VERSION",
            "Attempt",
            "AttemptsEditedError",
            "AttemptStatus",
            "CheckResult",
            "ConversationTurn",
            "Fingerprint",
            "JudgeResult",
            "Measures",
            "RetrievalScores",
            "RunFile",
            "ScenarioEntry",
            "attempt_digest",
            "attempts_digest",
            "content_hash",
            "digest_of",
            "load_run",
            "save_run",
        ),
        "_runfile",
    ),
    **dict.fromkeys(("RunOptions", "run_suite", "run_suite_async"), "_runner"),
    **dict.fromkeys(("scan_run", "scan_run_fields"), "_runscan"),
    **dict.fromkeys(
        (
            "ORIGINS",
            "STATES",
            "TIERS",
            "ActiveStatus",
            "ChangelogEntry",
            "Check",
            "ContainsCheck",
            "ContextRelevanceJudgeSpec",
            "ExpectedLabelCheck",
            "ExpectedToolsCheck",
            "Followups",
            "ForbiddenOutputRegexCheck",
            "ForbiddenToolsCheck",
            "GroundednessJudgeSpec",
            "JsonSchemaCheck",
            "JudgeSpec",
            "KnownFailureStatus",
            "MaxCharsCheck",
            "MaxStepsCheck",
            "NotContainsCheck",
            "OutputRegexCheck",
            "QuarantinedStatus",
            "RetiredStatus",
            "RetrievalLabels",
            "Scenario",
            "ScriptRule",
            "StopWhen",
            "ToolArgsCheck",
            "ValuesFromToolsCheck",
            "dump_scenario",
            "load_scenario",
            "load_scenarios",
            "parse_scenario",
            "save_scenario",
            "scenario_content_hash",
            "scenario_file_names",
            "scenario_files",
            "scenario_json_schema",
            "suite_hash",
        ),
        "_scenario",
    ),
    "ScenarioCache": "_scenario_cache",
    **dict.fromkeys(("parse_scenario_file", "suite_hash_of", "write_atomic"), "_scenario_io"),
    "ID_PATTERN": "_scenario_model",
    **dict.fromkeys(("ScoreOutcome", "score_attempt"), "_scoring"),
    **dict.fromkeys(
        (
            "DEFAULT_STATUSES",
            "HOLDOUT_TIERS",
            "counts_in_gate",
            "select_scenarios",
        ),
        "_selection",
    ),
    **dict.fromkeys(("in_shard", "parse_shard"), "_shard"),
    **dict.fromkeys(
        (
            "LlmSimulator",
            "ScriptedSimulator",
            "Simulator",
            "SimulatorError",
            "create_simulator",
        ),
        "_simulator",
    ),
    **dict.fromkeys(("CallableTarget", "Target", "TargetOutput", "load_target"), "_target"),
    "load_versioned": "_versioned",
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
    "ActiveStatus",
    "Attempt",
    "AttemptsEditedError",
    "AttemptStatus",
    "AttemptFields",
    "BoundedDictReader",
    "CALIBRATION_LABELS",
    "CalibrationResult",
    "CallableTarget",
    "Candidate",
    "ChangelogEntry",
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
    "GuardrailMeasures",
    "GuardrailSummary",
    "DEFAULT_STATUSES",
    "HOLDOUT_TIERS",
    "HttpTarget",
    "ID_PATTERN",
    "JournalWriter",
    "JsonSchemaCheck",
    "Judge",
    "JudgeError",
    "JudgeResult",
    "JudgeSpec",
    "JudgeVerdict",
    "KnownFailureStatus",
    "LlmJudge",
    "LlmSimulator",
    "LockBusyError",
    "MAX_YAML_BYTES",
    "MaxCharsCheck",
    "MaxStepsCheck",
    "Measures",
    "MeasureColumns",
    "NO_LLM_CALL",
    "NotContainsCheck",
    "ORIGINS",
    "OfflineContextRelevanceJudge",
    "OfflineGroundednessJudge",
    "OutputRegexCheck",
    "ProgressLines",
    "QuarantinedStatus",
    "RUN_FORMAT_VERSION",
    "ReplayError",
    "RetiredStatus",
    "RetrievalLabels",
    "RetrievalScores",
    "RunColumns",
    "RunFile",
    "RunFileError",
    "RunOptions",
    "Scorer",
    "ProgressCallback",
    "RunSummary",
    "RetrievalSummary",
    "STATES",
    "Scenario",
    "ScenarioEntry",
    "ScenarioCache",
    "ScenarioError",
    "ScoreOutcome",
    "ScriptRule",
    "ScriptedSimulator",
    "Simulator",
    "SimulatorError",
    "StopWhen",
    "TIERS",
    "Target",
    "TargetError",
    "TargetOutput",
    "ToolArgsCheck",
    "ValuesFromToolsCheck",
    "__version__",
    "attempt_digest",
    "attempt_fields",
    "attempts_digest",
    "build_fingerprint",
    "calibrate_judge",
    "call_cost",
    "check_format_version",
    "compute_measures",
    "content_hash",
    "counts_in_gate",
    "create_judge",
    "create_judges",
    "create_simulator",
    "declared_versions",
    "digest_of",
    "dump_scenario",
    "error_lines",
    "exclusive_lock",
    "fingerprint_differences",
    "git_commit",
    "guardrail_measures",
    "guardrail_measures_columns",
    "measure_columns",
    "guardrail_summary",
    "in_shard",
    "journal_path",
    "JournalComparison",
    "compare_with_journal",
    "judge_identity",
    "judges_from_fingerprint",
    "load_config",
    "load_json_bounded",
    "load_labels",
    "load_run",
    "load_scenario",
    "load_scenarios",
    "load_target",
    "load_versioned",
    "load_yaml_bounded",
    "merge_runs",
    "needs_backtracking",
    "parse_attempt_line",
    "parse_scenario",
    "parse_scenario_file",
    "parse_shard",
    "percentile",
    "read_artifacts",
    "read_journal",
    "read_journal_fingerprint",
    "read_text_bounded",
    "register_judge",
    "restore_journal",
    "retrieval_metrics",
    "retrieval_summary",
    "run_suite",
    "run_suite_async",
    "save_run",
    "save_scenario",
    "scan_run",
    "scan_run_columns",
    "scan_run_fields",
    "old_objects_frozen",
    "scenario_content_hash",
    "scenario_file_names",
    "scenario_files",
    "scenario_json_schema",
    "score_attempt",
    "scored_attempts",
    "select_scenarios",
    "suite_hash",
    "suite_hash_of",
    "summarize_attempts",
    "summary_headline",
    "summary_lines",
    "validation_summary",
    "write_atomic",
]
