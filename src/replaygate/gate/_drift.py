"""Drift: the latest scheduled run of an unchanged configuration against the previous one.

Providers and data move underneath an unchanged agent; scheduled runs of the production configuration
(same ``agent_config_hash``, tier ``scheduled``) compared with the same statistics catch it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from replaygate.replay import RunFile, RunFileError, load_run

from replaygate.gate._compare import compare_runs
from replaygate.gate._comparison_model import Comparison
from replaygate.gate._errors import GateError
from replaygate.gate._policy import Policy

__all__ = ["DriftReport", "detect_drift", "drift_pair", "load_runs_dir"]


class DriftReport(BaseModel):
    """Whether the latest scheduled run dropped significantly against the previous one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = 1
    config_hash: str
    previous_run: str
    latest_run: str
    significant: bool
    drops: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    comparison: Comparison


def load_runs_dir(directory: str | os.PathLike[str]) -> tuple[list[tuple[str, RunFile]], list[str]]:
    """Read every run file (``*.json``) under a directory; return them and the files skipped (and why)."""
    root = Path(directory)
    if not root.is_dir():
        raise GateError(f"{root}: not a directory of run files")
    runs: list[tuple[str, RunFile]] = []
    skipped: list[str] = []
    for path in sorted(root.rglob("*.json")):
        try:
            runs.append((str(path), load_run(path)))
        except RunFileError as exc:
            skipped.append(str(exc))
    return runs, skipped


def _when(run: RunFile) -> datetime:
    try:
        return datetime.fromisoformat(run.fingerprint.date.replace("Z", "+00:00"))
    except ValueError:
        raise GateError(
            f"run {run.run_id}: fingerprint date {run.fingerprint.date!r} is not ISO 8601"
        ) from None


def drift_pair(
    runs: Sequence[tuple[str, RunFile]], config_hash: str | None = None
) -> tuple[tuple[str, RunFile], tuple[str, RunFile] | None]:
    """Pick the latest scheduled run (of ``config_hash`` if given) and the previous comparable one.

    The previous run has the same configuration hash, suite hash and k; None when there is none yet.
    """
    scheduled = [(p, r) for p, r in runs if r.fingerprint.tier == "scheduled"]
    if config_hash:
        scheduled = [(p, r) for p, r in scheduled if r.fingerprint.agent_config_hash == config_hash]
    if not scheduled:
        which = f" of configuration {config_hash}" if config_hash else ""
        raise GateError(
            f"no scheduled run{which} found (tier `scheduled`); run the suite with --tier scheduled"
        )
    scheduled.sort(key=lambda pr: (_when(pr[1]), pr[1].run_id))
    latest = scheduled[-1]
    fp = latest[1].fingerprint
    earlier = [
        (p, r)
        for p, r in scheduled[:-1]
        if r.fingerprint.agent_config_hash == fp.agent_config_hash
        and r.fingerprint.suite_hash == fp.suite_hash
        and r.fingerprint.k == fp.k
        and r.run_id != latest[1].run_id
    ]
    return latest, (earlier[-1] if earlier else None)


def detect_drift(previous: RunFile, latest: RunFile, policy: Policy | None = None) -> DriftReport:
    """Compare two scheduled runs of one configuration; a significant drop beyond tolerance is drift.

    Drops: the overall or a category pass rate (Holm-adjusted) or an overall graded score fell
    significantly (alpha) by more than the policy tolerance (0 without a policy), or a must-pass scenario
    newly fails.
    """
    pol = policy or Policy()
    tol = pol.tolerance if policy is not None else None
    c = compare_runs(previous, latest, None, pol)
    drops: list[str] = []
    for g in [c.overall, *c.categories]:
        t = 0.0 if tol is None else (tol.overall if g.name == "overall" else tol.for_category(g.name))
        p = g.p_adjusted if g.p_adjusted is not None else g.p_value
        if g.delta is not None and g.delta < -t and p is not None and p < pol.alpha:
            drops.append(
                f"pass rate of {g.name} fell {g.base_rate:.1%} -> {g.head_rate:.1%} (delta {g.delta:+.3f}, "
                f"interval [{g.low:+.3f}, {g.high:+.3f}], p={p:.2g})"
            )
    for gg in c.graded:
        t = 0.0 if tol is None else tol.for_metric(gg.metric)
        if (
            gg.group == "overall"
            and gg.delta is not None
            and gg.delta < -t
            and (gg.p_value or 1.0) < pol.alpha
        ):
            drops.append(f"{gg.metric} fell {gg.base_mean:.3f} -> {gg.head_mean:.3f} (p={gg.p_value:.2g})")
    for s in c.by_change("newly_failing", counted_only=True):
        if s.must_pass:
            drops.append(f"must-pass scenario {s.id} newly fails ({s.head.passed}/{s.head.scored})")
    notes = list(c.problems)
    if c.errors.head_errors or c.errors.base_errors:
        notes.append(
            f"errors (counted apart from failures): previous {c.errors.base_errors}/"
            f"{c.errors.base_attempts}, "
            f"latest {c.errors.head_errors}/{c.errors.head_attempts}"
        )
    return DriftReport(
        config_hash=latest.fingerprint.agent_config_hash,
        previous_run=previous.run_id,
        latest_run=latest.run_id,
        significant=bool(drops),
        drops=drops,
        notes=notes,
        comparison=c,
    )
