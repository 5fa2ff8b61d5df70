"""``RunOptions``: the options of one replay run, declared once for ``run_suite`` and ``run_suite_async``.

Both functions take the options as keywords (``run_suite(scenarios, target, out_path=..., k=...)``) or
whole (``run_suite(scenarios, target, options=RunOptions(out_path=..., repeats=5))``), or both (the
keywords then override fields of ``options``); an unknown keyword is a ``TypeError`` as in any call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replaygate.replay._attempt import Scorer
from replaygate.replay._errors import ReplayError
from replaygate.replay._judge_registry import Judge
from replaygate.replay._progress import ProgressCallback, ProgressLines
from replaygate.replay._shard import parse_shard
from replaygate.replay._simulator import Simulator

__all__ = ["RunOptions", "resolve_options"]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How to run a suite (every field but ``out_path`` has a default).

    Attributes:
        out_path: the run file; the journal is ``<out_path>.journal``, the artifacts go to
            ``<out dir>/<run id>/artifacts.jsonl`` (one JSON line per attempt).
        repeats: attempts per scenario (default: each scenario's own ``repeats``).
        concurrency: attempts in flight at once (and threads for a sync target).
        timeout_s: per-attempt timeout of the target call.
        seed: recorded in the fingerprint (resume and comparisons require the same seed).
        judges: judges by name (default: the offline judges).
        policy: the parsed gate policy; its hash goes in the fingerprint, the policy in the run file.
        resume: continue the journal at ``<out_path>.journal`` instead of starting again.
        shard: ``"i/n"``: run only the scenarios of shard i of n (stable by scenario id).
        progress: a bar in a terminal, else plain lines (True); plain lines (:class:`ProgressLines`);
            nothing (False); or call this with each finished attempt.
        tier: the tier the scenarios were selected for (recorded in the fingerprint).
        artifacts: write per-attempt artifacts (best-effort; each attempt's ``artifact_path`` names the
            artifacts file, its line is the one with the attempt's scenario id and index).
        scorer: the scoring function (default ``score_attempt``).
        code_commit: True to read ``git rev-parse HEAD``; a string or None to record that instead.
        simulator: the simulated user of scenarios with ``followups`` (default: the scripted simulator
            seeded with ``seed``); recorded in the fingerprint when the suite has such scenarios.
        content_hashes: scenario id -> content hash already known for that very scenario (the golden
            set's index, for files that still match it); the others are hashed for the suite hash.
    """

    out_path: str | Path
    repeats: int | None = None
    concurrency: int = 8
    timeout_s: float = 60.0
    seed: int = 0
    judges: Mapping[str, Judge] | None = None
    policy: Mapping[str, Any] | None = None
    resume: bool = False
    shard: str | tuple[int, int] | None = None
    progress: bool | ProgressLines | ProgressCallback = True
    tier: str | None = None
    artifacts: bool = True
    scorer: Scorer | None = None
    code_commit: str | None | bool = True
    simulator: Simulator | None = None
    content_hashes: Mapping[str, str] | None = None

    def check(self) -> None:
        """Refuse impossible values.

        Raises:
            ReplayError: a concurrency, timeout or repeats below its least value.
        """
        if self.concurrency < 1:
            raise ReplayError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s <= 0:
            raise ReplayError(f"timeout must be positive, got {self.timeout_s}")
        if self.repeats is not None and self.repeats < 1:
            raise ReplayError(f"repeats must be at least 1, got {self.repeats}")

    def shard_spec(self) -> tuple[int, int] | None:
        """The shard as (i, n), or None.

        Raises:
            ReplayError: a shard that is not ``i/n`` with 1 <= i <= n.
        """
        try:
            return parse_shard(self.shard) if isinstance(self.shard, str) else self.shard
        except ValueError as exc:
            raise ReplayError(str(exc)) from None


def resolve_options(
    options: RunOptions | None, overrides: Mapping[str, Any], *, caller: Callable[..., Any]
) -> RunOptions:
    """``options`` with the keyword ``overrides`` applied (``RunOptions(**overrides)`` without options).

    Raises:
        TypeError: a keyword that is not an option, or no ``out_path`` at all (as a call would).
    """
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(RunOptions)})
    if unknown:
        raise TypeError(f"{caller.__name__}() got an unexpected keyword argument {unknown[0]!r}")
    if options is None:
        if "out_path" not in overrides:
            raise TypeError(f"{caller.__name__}() missing 1 required keyword-only argument: 'out_path'")
        return RunOptions(**overrides)
    return dataclasses.replace(options, **overrides) if overrides else options
