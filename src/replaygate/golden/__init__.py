"""replaygate.golden: the golden set's lifecycle, integrity lock, listings, promotion and CSV import.

A golden set is a directory of scenario YAML files (default ``golden/``, else ``$REPLAYGATE_GOLDEN`` or
``--golden DIR``) with ``golden.lock`` beside them::

    from replaygate.golden import GoldenSet, lint, promote_trace, retire
    from replaygate.instrumentation import TraceStore

    golden = GoldenSet("golden")
    promotion = promote_trace(TraceStore(), "4bf92f35...", golden, owner="alice",
                              origin="production-incident", must_pass=True, forbid_answer=True)
    retire(golden, "old-scenario", reason="feature removed")
    for problem in lint(golden):
        print(problem)            # file:line: error|warning: what, and what to do

Every write is atomic and updates the lock in the same step; lifecycle commands never delete a file.
The public names are loaded on first use (``from replaygate.golden import GoldenSet`` imports only the
golden-set module, not promotion and its failure classes).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replaygate.golden._csv_import import CSV_COLUMNS, TURN_SEPARATOR, import_csv, parse_csv
    from replaygate.golden._errors import GoldenError
    from replaygate.golden._freeze import freeze_conversation, parse_attempt_ref
    from replaygate.golden._goldenset import DEFAULT_GOLDEN_DIR, GOLDEN_ENV, GoldenSet, resolve_golden_dir
    from replaygate.golden._lifecycle import (
        AUTHOR_ENV,
        AcceptResult,
        accept_changes,
        default_author,
        lock_status,
        mark_known_failure,
        quarantine,
        reactivate,
        retire,
    )
    from replaygate.golden._lint import LintProblem, lint
    from replaygate.golden._listing import Listing, list_golden, list_scenarios, listing_rows
    from replaygate.golden._lock import LOCK_NAME, LockEntry, lock_entry, read_lock
    from replaygate.golden._promote import (
        Promotion,
        PromotionSource,
        draft_forbidden_pattern,
        draft_scenario,
        promote_trace,
        session_turns,
    )
    from replaygate.golden._scaffold import create_scenario_file, scaffold_scenario
    from replaygate.golden._select import Selection, select_golden

#: Where each public name lives: a command imports only the modules it uses (``run`` needs no promotion,
#: whose failure classes import numpy).
_MODULES: dict[str, str] = {
    **dict.fromkeys(("CSV_COLUMNS", "TURN_SEPARATOR", "import_csv", "parse_csv"), "_csv_import"),
    "GoldenError": "_errors",
    **dict.fromkeys(("freeze_conversation", "parse_attempt_ref"), "_freeze"),
    **dict.fromkeys(("DEFAULT_GOLDEN_DIR", "GOLDEN_ENV", "GoldenSet", "resolve_golden_dir"), "_goldenset"),
    **dict.fromkeys(
        (
            "AUTHOR_ENV",
            "AcceptResult",
            "accept_changes",
            "default_author",
            "lock_status",
            "mark_known_failure",
            "quarantine",
            "reactivate",
            "retire",
        ),
        "_lifecycle",
    ),
    **dict.fromkeys(("LintProblem", "lint"), "_lint"),
    **dict.fromkeys(("Listing", "list_golden", "list_scenarios", "listing_rows"), "_listing"),
    **dict.fromkeys(("LOCK_NAME", "LockEntry", "lock_entry", "read_lock"), "_lock"),
    **dict.fromkeys(
        (
            "Promotion",
            "PromotionSource",
            "draft_forbidden_pattern",
            "draft_scenario",
            "promote_trace",
            "session_turns",
        ),
        "_promote",
    ),
    **dict.fromkeys(("create_scenario_file", "scaffold_scenario"), "_scaffold"),
    **dict.fromkeys(("Selection", "select_golden"), "_select"),
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'replaygate.golden' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"replaygate.golden.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AUTHOR_ENV",
    "AcceptResult",
    "CSV_COLUMNS",
    "DEFAULT_GOLDEN_DIR",
    "GOLDEN_ENV",
    "GoldenError",
    "GoldenSet",
    "LOCK_NAME",
    "LintProblem",
    "Listing",
    "LockEntry",
    "Promotion",
    "TURN_SEPARATOR",
    "PromotionSource",
    "accept_changes",
    "create_scenario_file",
    "default_author",
    "draft_forbidden_pattern",
    "draft_scenario",
    "freeze_conversation",
    "import_csv",
    "lint",
    "list_golden",
    "list_scenarios",
    "listing_rows",
    "lock_entry",
    "lock_status",
    "mark_known_failure",
    "parse_attempt_ref",
    "parse_csv",
    "promote_trace",
    "quarantine",
    "reactivate",
    "read_lock",
    "resolve_golden_dir",
    "retire",
    "scaffold_scenario",
    "select_golden",
    "Selection",
    "session_turns",
]
