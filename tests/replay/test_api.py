import replaygate.replay as replay

EXPECTED = {
    # simulated follow-up turns
    "ConversationTurn",
    "Followups",
    "LlmSimulator",
    "ScriptRule",
    "ScriptedSimulator",
    "Simulator",
    "SimulatorError",
    "StopWhen",
    "create_simulator",
    "parse_scenario",
    "read_artifacts",
    "NO_LLM_CALL",
    "GuardrailMeasures",
    "call_cost",
    "compute_measures",
    "guardrail_measures",
    "percentile",
    "scored_attempts",
    # runner, targets, journal, shards, fingerprint, summary
    "run_suite",
    "run_suite_async",
    "load_target",
    "Target",
    "TargetOutput",
    "CallableTarget",
    "HttpTarget",
    "Candidate",
    "declared_versions",
    "build_fingerprint",
    "fingerprint_differences",
    "git_commit",
    "journal_path",
    "read_journal",
    "ProgressLines",
    "merge_runs",
    "in_shard",
    "parse_shard",
    "summarize_attempts",
    "summary_headline",
    "summary_lines",
    "error_lines",
    "guardrail_summary",
    "RunSummary",
    "GuardrailSummary",
    # run file
    "RUN_FORMAT_VERSION",
    "Attempt",
    "AttemptStatus",
    "CheckResult",
    "Fingerprint",
    "JudgeResult",
    "Measures",
    "RetrievalScores",
    "RunFile",
    "ScenarioEntry",
    "content_hash",
    "load_run",
    "save_run",
    # scenarios
    "Scenario",
    "Check",
    "ContainsCheck",
    "ContextRelevanceJudgeSpec",
    "ExpectedLabelCheck",
    "ExpectedToolsCheck",
    "ForbiddenOutputRegexCheck",
    "ForbiddenToolsCheck",
    "GroundednessJudgeSpec",
    "JsonSchemaCheck",
    "JudgeSpec",
    "MaxCharsCheck",
    "MaxStepsCheck",
    "NotContainsCheck",
    "OutputRegexCheck",
    "RetrievalLabels",
    "ToolArgsCheck",
    "ValuesFromToolsCheck",
    "dump_scenario",
    "load_scenario",
    "load_scenarios",
    "save_scenario",
    "scenario_content_hash",
    "scenario_json_schema",
    "suite_hash",
    "select_scenarios",
    "counts_in_gate",
    # scoring
    "score_attempt",
    "ScoreOutcome",
    "Judge",
    "JudgeVerdict",
    "register_judge",
    "create_judge",
    "create_judges",
    "OfflineGroundednessJudge",
    "OfflineContextRelevanceJudge",
    "LlmJudge",
    "retrieval_metrics",
    "retrieval_summary",
    "judges_from_fingerprint",
    # errors, version
    "ReplayError",
    "ScenarioError",
    "TargetError",
    "JudgeError",
    "RunFileError",
    "__version__",
}


def test_public_names_are_pinned() -> None:
    assert set(replay.__all__) == EXPECTED
    assert len(replay.__all__) == len(EXPECTED)
    for name in replay.__all__:
        assert hasattr(replay, name), name


def test_every_private_module_declares_all() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(replay.__path__):
        if info.name.startswith("_"):
            module = importlib.import_module(f"replaygate.replay.{info.name}")
            assert isinstance(getattr(module, "__all__", None), list), info.name
