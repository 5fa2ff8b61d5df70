"""The run summary: errors first, then fails and passes, per-scenario counts, attribution, guardrails.

Pure functions over the run file's records: :func:`summarize_attempts` builds the typed
:class:`~replaygate.replay.RunSummary` stored in ``RunFile.summary`` (its guardrails from
:func:`~replaygate.replay.guardrail_measures`); :func:`summary_lines` renders it for a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replaygate.replay._measures import GuardrailMeasures, guardrail_measures
from replaygate.replay._retrieval_metrics import retrieval_summary
from replaygate.replay._run_summary_model import (
    ErrorAttempt,
    FailingAttempt,
    FailureAttribution,
    GuardrailSummary,
    RunSummary,
    ScenarioCounts,
)
from replaygate.replay._runfile import Attempt, ScenarioEntry

__all__ = ["error_lines", "guardrail_summary", "summarize_attempts", "summary_headline", "summary_lines"]


def _failed_parts(a: Attempt) -> list[str]:
    return [c.name for c in a.checks if not c.passed] + [j.name for j in a.judges if not j.passed]


def guardrail_summary(g: GuardrailMeasures) -> GuardrailSummary:
    """The guardrail part of the run summary, from the one definition of each measure."""
    return GuardrailSummary(
        latency_mean_s=g.latency_mean_s,
        latency_p50_s=g.latency_p50_s,
        latency_p95_s=g.latency_p95_s,
        input_tokens=g.input_tokens,
        output_tokens=g.output_tokens,
        # None (never 0) when any attempt's cost is unknown; the known part is reported beside it.
        cost_usd=g.cost_usd_total,
        cost_usd_known=g.cost_usd_known,
        cost_usd_mean=g.cost_usd_mean,
        cost_unknown_attempts=g.cost_unknown_attempts,
        cost_note=g.cost_note,
        escalation_rate=g.escalation_rate,
        empty_rate=g.empty_rate,
        error_rate=g.error_rate,
    )


def summarize_attempts(
    attempts: Sequence[Attempt],
    scenarios: Sequence[ScenarioEntry],
    *,
    run_id: str = "",
    capture_warnings: Sequence[str] = (),
) -> RunSummary:
    """Summarize a run's attempts (errors listed first, then fails); ``capture_warnings`` are kept as is."""
    ordered = sorted(attempts, key=lambda a: (a.scenario_id, a.index))
    errors = [a for a in ordered if a.status == "error"]
    fails = [a for a in ordered if a.status == "fail"]
    counts: dict[str, dict[str, Any]] = {
        s.id: {"attempts": 0, "errors": 0, "fails": 0, "passes": 0, "k": s.repeats, "must_pass": s.must_pass}
        for s in scenarios
    }
    for a in ordered:
        row = counts.setdefault(
            a.scenario_id,
            {"attempts": 0, "errors": 0, "fails": 0, "passes": 0, "k": None, "must_pass": False},
        )
        row["attempts"] += 1
        row[{"error": "errors", "fail": "fails", "pass": "passes"}[a.status]] += 1
    attribution = {"retrieval": 0, "generation": 0, "unattributed": 0}
    for a in fails:
        attribution[a.attribution or "unattributed"] += 1
    n = len(ordered)
    return RunSummary(
        run_id=run_id,
        attempts=n,
        errors=len(errors),
        fails=len(fails),
        passes=n - len(errors) - len(fails),
        error_attempts=[
            ErrorAttempt(scenario_id=a.scenario_id, index=a.index, error=a.error) for a in errors
        ],
        failing_attempts=[
            FailingAttempt(
                scenario_id=a.scenario_id, index=a.index, failed=_failed_parts(a), attribution=a.attribution
            )
            for a in fails
        ],
        scenarios={sid: ScenarioCounts(**row) for sid, row in counts.items()},
        attribution=FailureAttribution(**attribution),
        # the same definitions the gate and the canary use
        guardrails=guardrail_summary(guardrail_measures(ordered)),
        # retrieval metrics per scenario and overall, and whether the similarity threshold was a no-op
        retrieval=retrieval_summary(ordered),
        capture_warnings=list(capture_warnings),
    )


def summary_headline(summary: RunSummary) -> str:
    """One line: the counts, errors first."""
    run = f"run {summary.run_id}: " if summary.run_id else ""
    return (
        f"{run}{summary.attempts} attempts: {summary.errors} errors, "
        f"{summary.fails} fails, {summary.passes} passes"
    )


def _fmt(value: Any, spec: str = ".3g") -> str:
    return "n/a" if value is None else format(value, spec)


def error_lines(summary: RunSummary, *, max_listed: int = 20) -> list[str]:
    """The errored attempts, one line each (at most ``max_listed``); nothing when none errored."""
    errs = summary.error_attempts
    if not errs:
        return []
    lines = [f"ERRORS ({len(errs)}): these attempts did not produce a scored answer"]
    lines += [f"  {e.scenario_id}#{e.index}: {e.error}" for e in errs[:max_listed]]
    if len(errs) > max_listed:
        lines.append(f"  ... and {len(errs) - max_listed} more (see the run file)")
    return lines


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}s"


def summary_lines(summary: RunSummary, *, max_listed: int = 20) -> list[str]:
    """Render the summary as plain text lines (errors first, then fails, then per-scenario passes)."""
    lines = [summary_headline(summary), *error_lines(summary, max_listed=max_listed)]
    fails = summary.failing_attempts
    if fails:
        lines.append(f"FAILS ({len(fails)}):")
        for f in fails[:max_listed]:
            why = ", ".join(f.failed) or "failed"
            attributed = f" [{f.attribution} failure]" if f.attribution else ""
            lines.append(f"  {f.scenario_id}#{f.index}: {why}{attributed}")
        if len(fails) > max_listed:
            lines.append(f"  ... and {len(fails) - max_listed} more (see the run file)")
    lines.append("per scenario (passes/attempts, errors, fails):")
    for sid, row in sorted(summary.scenarios.items()):
        mark = " must-pass" if row.must_pass else ""
        lines.append(
            f"  {sid}: {row.passes}/{row.attempts} pass, {row.errors} errors, {row.fails} fails{mark}"
        )
    att = summary.attribution
    if summary.fails:
        lines.append(
            f"failure attribution: retrieval {att.retrieval}, generation {att.generation}, "
            f"unattributed {att.unattributed}"
        )
    g = summary.guardrails
    cost = _fmt(g.cost_usd, ".4f")
    if g.cost_usd is None and g.cost_unknown_attempts:
        known = _fmt(g.cost_usd_known, ".4f")
        cost = f"unknown for {g.cost_unknown_attempts} attempts (known part {known})"
        if g.cost_note:
            cost += f" - {g.cost_note}"
    lines.append(
        f"guardrails: latency mean {_seconds(g.latency_mean_s)} p95 {_seconds(g.latency_p95_s)}; "
        f"tokens in {_fmt(g.input_tokens, 'd')} out {_fmt(g.output_tokens, 'd')}; cost ${cost}; "
        f"escalation {_fmt(g.escalation_rate, '.1%')}; empty {_fmt(g.empty_rate, '.1%')}; "
        f"errors {_fmt(g.error_rate, '.1%')}"
    )
    lines += [f"WARNING: {w}" for w in summary.capture_warnings]
    return lines
