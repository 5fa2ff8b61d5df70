"""Pin the public names of replaygate.golden."""

import replaygate.golden


def test_golden_all_is_pinned() -> None:
    assert sorted(replaygate.golden.__all__) == sorted(
        [
            "AUTHOR_ENV",
            "CSV_COLUMNS",
            "DEFAULT_GOLDEN_DIR",
            "GOLDEN_ENV",
            "LOCK_NAME",
            "TURN_SEPARATOR",
            "AcceptResult",
            "GoldenError",
            "GoldenSet",
            "LintProblem",
            "Listing",
            "LockEntry",
            "Promotion",
            "PromotionSource",
            "accept_changes",
            "create_scenario_file",
            "default_author",
            "scaffold_scenario",
            "draft_forbidden_pattern",
            "draft_scenario",
            "freeze_conversation",
            "parse_attempt_ref",
            "import_csv",
            "lint",
            "list_golden",
            "list_scenarios",
            "listing_rows",
            "lock_entry",
            "lock_status",
            "mark_known_failure",
            "parse_csv",
            "promote_trace",
            "quarantine",
            "reactivate",
            "read_lock",
            "resolve_golden_dir",
            "retire",
            "session_turns",
            "select_golden",
            "Selection",
        ]
    )
    for name in replaygate.golden.__all__:
        assert hasattr(replaygate.golden, name), name
    assert set(replaygate.golden._MODULES) == set(replaygate.golden.__all__)  # every name loads lazily


def test_golden_error_is_a_replaygate_error() -> None:
    from replaygate.instrumentation import ReplaygateError

    assert issubclass(replaygate.golden.GoldenError, ReplaygateError)
