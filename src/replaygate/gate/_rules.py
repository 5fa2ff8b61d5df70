"""The gate: turn a comparison and a policy into an outcome, each finding with its rule and its fix.

Pure logic, no I/O; one function per rule, each returning structured findings. Rules: (1) a newly
failing must-pass scenario blocks and cannot be signed away; (2) a graded drop beyond tolerance that is
significant and above the noise floor blocks unless signed; (3) an improvement does not count if a
guardrail worsens beyond tolerance (blocks unless signed); (4) every newly failing scenario must be marked
read before signing. Errors block unless the policy's error budget allows them; a scenario missing from
a run, or run fewer than k times, blocks.

"Newly failing" means passed before, fails now, beyond noise (see ``_scenario_change``). A scenario that
only looks worse (``inconclusive`` -> ``fail`` at a k too small to confirm its threshold) is listed as
"worse, not confirmed" and flaky scenarios (their two baseline runs disagree) are listed too; neither
asks for a signature by itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from replaygate.replay import RunFile, content_hash

from replaygate.gate._compare import compare_runs
from replaygate.gate._comparison_model import (
    Comparison,
    GradedComparison,
    GuardrailComparison,
    RateComparison,
    ScenarioComparison,
)
from replaygate.gate._errors import PolicyError, PolicyWidenedError
from replaygate.gate._gate_model import Finding, GateOutcome, GateReport
from replaygate.gate._integrity import verify_runs
from replaygate.gate._policy import GuardrailTolerance, Policy, is_wider, policy_from_mapping, policy_hash
from replaygate.gate._run_data import RunData, as_run_data

__all__ = ["check_policy_against_runs", "evaluate_gate", "gate_runs", "make_report_id"]

_EPS = 1e-12
_SIGN = "or have a named person sign the trade-off (replaygate sign REPORT --outcome pass-with-sign-off)"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _p(x: float | None) -> str:
    """``=0.012`` or ``<0.001`` (written right after ``p``)."""
    return "=n/a" if x is None else (f"={x:.2g}" if x >= 0.001 else "<0.001")


def make_report_id(comparison: Comparison, policy_digest: str) -> str:
    """A stable id for a gate report: the same runs and policy give the same id (reviews carry over)."""
    key = {
        "baseline": comparison.baseline.run_id,
        "candidate": comparison.candidate.run_id,
        "noise": comparison.noise_run.run_id if comparison.noise_run else None,
        "policy": policy_digest,
    }
    return "rpt-" + content_hash(key).split(":", 1)[1][:16]


def check_policy_against_runs(policy: Policy, runs: Sequence[tuple[str, RunFile]]) -> list[str]:
    """Refuse a policy wider than the one recorded in any run; return notes on other differences.

    Raises:
        PolicyWidenedError: "tolerance widened after the run: ..." with every widening listed.
        PolicyError: a run's recorded policy is invalid, does not match its hash, or is missing while a
            different policy hash was recorded.
    """
    notes: list[str] = []
    digest = policy_hash(policy)
    for label, run in runs:
        recorded, fp_hash = run.policy, run.fingerprint.policy_hash
        where = f"the {label} run {run.run_id}"
        if recorded is None:
            if fp_hash is None:
                notes.append(
                    f"no gate policy was recorded when {where} started: its tolerances were not fixed"
                )
            elif fp_hash != digest:
                raise PolicyError(
                    f"{where} recorded policy hash {fp_hash} but not the policy itself, and the given policy "
                    f"hashes to {digest}: cannot check it is not wider; gate with the policy the run used"
                )
            continue
        recorded_hash = content_hash(recorded)
        if fp_hash is not None and recorded_hash != fp_hash:
            raise PolicyError(
                f"{where}: the recorded policy does not match the recorded policy hash {fp_hash} "
                "(was the run file edited?); re-run it"
            )
        rec = policy_from_mapping(recorded, f"policy recorded in {where}")
        widened = is_wider(policy, rec)
        if widened:
            raise PolicyWidenedError(
                f"tolerance widened after the run: {'; '.join(widened)} (compared with the policy recorded "
                f"when {where} started); gate with that policy, or re-run with the new one"
            )
        if recorded_hash != digest:
            notes.append(f"the policy differs from the one recorded in {where} but is not wider")
    return list(dict.fromkeys(notes))


def _rate_drop(
    g: RateComparison, tol: float, policy: Policy, noise: float | None
) -> tuple[Finding | None, str]:
    if g.delta is None or -g.delta <= tol + _EPS:
        return None, ""
    drop, p = -g.delta, g.p_adjusted if g.p_adjusted is not None else g.p_value
    what = f"pass rate of {g.name} fell {_pct(g.base_rate)} -> {_pct(g.head_rate)} (delta {g.delta:+.3f})"
    if p is None or p >= policy.alpha:
        return (
            None,
            f"{what}: beyond tolerance {tol:g} but not significant (p{_p(p)}, alpha {policy.alpha:g})",
        )
    if noise is not None and drop <= noise + _EPS:
        return None, f"{what}: significant but within the noise floor ({noise:.3f})"
    msg = (
        f"{what}, {policy.confidence:.0%} interval [{g.low:+.3f}, {g.high:+.3f}], p{_p(p)}"
        + (" (Holm-adjusted)" if g.name != "overall" else "")
        + f": beyond tolerance {tol:g}"
        + (f" and above the noise floor {noise:.3f}" if noise is not None else "")
    )
    fix = f"recover the {g.name} pass rate to within {tol:g} of the baseline, {_SIGN}"
    return Finding(rule="rule-2", severity="block", signable=True, subject=g.name, message=msg, fix=fix), ""


def _graded_drop(g: GradedComparison, tol: float, policy: Policy) -> tuple[Finding | None, str]:
    if g.delta is None or -g.delta <= tol + _EPS:
        return None, ""
    p = g.p_adjusted if g.p_adjusted is not None else g.p_value
    what = f"{g.metric} ({g.group}) fell {g.base_mean:.3f} -> {g.head_mean:.3f} (delta {g.delta:+.3f})"
    if p is None or p >= policy.alpha:
        return None, f"{what}: beyond tolerance {tol:g} but not significant (p{_p(p)})"
    if g.noise_magnitude is not None and -g.delta <= g.noise_magnitude + _EPS:
        return None, f"{what}: significant but within the noise floor ({g.noise_magnitude:.3f})"
    msg = f"{what}, interval [{g.low:+.3f}, {g.high:+.3f}], p{_p(p)}: beyond tolerance {tol:g}"
    fix = f"recover {g.metric} to within {tol:g} of the baseline, {_SIGN}"
    return Finding(
        rule="rule-2", severity="block", signable=True, subject=f"{g.metric} {g.group}", message=msg, fix=fix
    ), ""


def _worsening(g: GuardrailComparison, tol: GuardrailTolerance) -> float | None:
    if g.base is None or g.head is None:
        return None
    if tol.kind == "absolute":
        return g.head - g.base
    if g.base == 0:
        return math.inf if g.head > 0 else 0.0
    return (g.head - g.base) / g.base


def _guardrail(g: GuardrailComparison, policy: Policy, improved: bool) -> tuple[Finding | None, str]:
    tol = policy.guardrails.get(g.name)
    if tol is None:
        return None, ""
    worse = _worsening(g, tol)
    if worse is None:
        return None, f"guardrail {g.name} could not be compared: {g.note or 'no measurements'}"
    if worse <= tol.value + _EPS:
        return None, ""
    shown = f"{worse:+.0%}" if tol.kind == "relative" and math.isfinite(worse) else f"{g.change:+.4g}"
    what = f"guardrail {g.name} worsened {g.base:.4g} -> {g.head:.4g} {g.unit}"
    what += f" ({shown}, tolerance {tol.describe()})"
    if g.p_value is not None and g.p_value >= policy.alpha:
        return None, f"{what} but not significantly (p{_p(g.p_value)})"
    noise = g.noise_change if tol.kind == "absolute" else g.noise_relative_change
    if noise is not None and worse <= abs(noise) + _EPS:
        shown_noise = f"{abs(noise):.0%}" if tol.kind == "relative" else f"{abs(noise):.4g}"
        return None, (
            f"{what}: within the run-to-run noise of the baseline (its two runs differ by {shown_noise}); "
            "compare on a quieter machine or widen the tolerance before the next run"
        )
    lead = "the pass rate improved but " if improved else ""
    msg = f"{lead}{what}" + (f", p{_p(g.p_value)}" if g.p_value is not None else "")
    fix = f"bring {g.name} back within {tol.describe()} of the baseline, {_SIGN}"
    return Finding(rule="rule-3", severity="block", signable=True, subject=g.name, message=msg, fix=fix), ""


def _errors(c: Comparison, policy: Policy) -> list[Finding]:
    out = []
    allowed = policy.error_allowance()
    e = c.errors
    sides = (
        (
            "candidate",
            e.head_errors,
            e.head_attempts,
            e.head_rate,
            e.head_scenarios,
            "pass as (or look like) a regression",
        ),
        ("baseline", e.base_errors, e.base_attempts, e.base_rate, e.base_scenarios, "hide a regression"),
    )
    for label, n, total, rate, ids, risk in sides:
        if n and rate > allowed + _EPS:
            budget = f"the error budget is {allowed:.1%}" if allowed else "the policy allows no errors"
            msg = (
                f"{n} of {total} {label} attempts errored ({_pct(rate)}; scenarios {', '.join(ids)}); "
                f"{budget}. "
                f"Errors are counted apart from failures: an outage must not {risk}"
            )
            fix = (
                f"fix the cause of the errors and re-run the {label}, "
                "or set allow_errors/error_budget before the run"
            )
            out.append(
                Finding(
                    rule="errors",
                    severity="block",
                    signable=False,
                    subject=f"{label} errors",
                    message=msg,
                    fix=fix,
                )
            )
    return out


def _headline(outcome: GateOutcome, c: Comparison, newly: int, must: int, can_tell: bool) -> str:
    o = c.overall
    rate = f"pass rate {_pct(o.base_rate)} -> {_pct(o.head_rate)}"
    if o.delta is not None:
        rate += f" (delta {o.delta:+.3f}, p{_p(o.p_value)})"
    parts = [outcome.upper(), rate]
    if newly:
        parts.append(f"{newly} newly failing" + (f" ({must} must-pass)" if must else ""))
    worse = len(c.by_change("worse_unconfirmed", counted_only=True))
    if worse:
        parts.append(f"{worse} worse, not confirmed at k={c.k}")
    if c.flaky:
        parts.append(f"{len(c.flaky)} flaky")
    if not can_tell:
        parts.append("can't tell small drops: the suite is too small")
    return "; ".join(parts)


def _data_findings(c: Comparison) -> list[Finding]:
    """A scenario missing from a run, short of attempts or with nothing scored blocks (never dropped)."""
    return [
        Finding(
            rule="data",
            severity="block",
            signable=False,
            subject=s.id,
            message=problem + " (a scenario is never dropped from the comparison)",
            fix="run every scenario k times in both runs (replaygate run --resume, or re-run)",
        )
        for s in c.scenarios
        if s.counts
        for problem in s.problems
    ]


def _counts(s: ScenarioComparison) -> str:
    return f"baseline {s.base.passed}/{s.base.scored}, candidate {s.head.passed}/{s.head.scored}"


def _rule1(newly: Sequence[ScenarioComparison]) -> list[Finding]:
    """Rule 1: a newly failing must-pass scenario blocks, and nobody may sign it away."""
    return [
        Finding(
            rule="rule-1",
            severity="block",
            signable=False,
            subject=s.id,
            message=f"must-pass scenario {s.id} newly fails ({_counts(s)}; every attempt must pass)",
            fix=f"make {s.id} pass all {s.required_attempts} attempts again (cannot be signed away)",
        )
        for s in newly
        if s.must_pass
    ]


def _rule2(c: Comparison, policy: Policy) -> tuple[list[Finding], list[str]]:
    """Rule 2: a significant drop beyond tolerance and above the noise floor blocks unless signed."""
    findings: list[Finding] = []
    notes: list[str] = []
    noise_overall = c.noise.magnitude if c.noise is not None else None
    for g in [c.overall, *c.categories]:
        tol = policy.tolerance.overall if g.name == "overall" else policy.tolerance.for_category(g.name)
        noise = noise_overall if g.name == "overall" else g.noise_magnitude
        f, note = _rate_drop(g, tol, policy, noise)
        findings.extend([f] if f else [])
        notes.extend([note] if note else [])
    for gg in c.graded:
        tol = policy.tolerance.for_metric(gg.metric)
        if gg.group != "overall":
            tol = min(tol, policy.tolerance.for_category(gg.group))
        f, note = _graded_drop(gg, tol, policy)
        findings.extend([f] if f else [])
        notes.extend([note] if note else [])
    return findings, notes


def _rule3(c: Comparison, policy: Policy, error_blocked: bool) -> tuple[list[Finding], list[str]]:
    """Rule 3: an improvement does not count if a guardrail worsens beyond tolerance."""
    findings: list[Finding] = []
    notes: list[str] = []
    improved = c.overall.delta is not None and c.overall.delta > 0
    for gr in c.guardrails:
        if gr.name == "error_rate" and error_blocked:
            continue
        f, note = _guardrail(gr, policy, improved)
        findings.extend([f] if f else [])
        notes.extend([note] if note else [])
    return findings, notes


def _evidence(s: ScenarioComparison) -> str:
    if s.evidence == "confirmed":
        return "a confirmed pass became a confirmed fail"
    if s.evidence == "significant":
        return f"one-sided Fisher p{_p(s.fisher_p)}, Holm-adjusted p{_p(s.fisher_p_adjusted)}"
    return "every baseline attempt passed, not every candidate attempt"


def _rule4(newly: Sequence[ScenarioComparison]) -> list[Finding]:
    """Rule 4: a person reads every newly failing scenario (passed before, fails now) before signing."""
    return [
        Finding(
            rule="rule-4",
            severity="review",
            signable=True,
            subject=s.id,
            message=f"scenario {s.id} newly fails ({_counts(s)}; {_evidence(s)}): a person must read it",
            fix=f"replaygate review REPORT {s.id} --by NAME --note '...'",
        )
        for s in newly
    ]


def _cant_tell(c: Comparison, policy: Policy) -> str | None:
    """The "can't tell" note: the suite cannot detect a drop as small as the tolerance."""
    mdd = c.minimum_detectable_drop
    if mdd is not None and mdd <= policy.tolerance.overall + _EPS:
        return None
    size = f"{c.overall.scenarios} scenarios x k={c.k}"
    detects = f"detects only drops of {mdd:.2f} or more" if mdd is not None else "cannot detect any drop"
    return (
        f"can't tell: this suite ({size}) {detects} (power {policy.power:g}, alpha {policy.alpha:g}) but "
        f"the tolerance is {policy.tolerance.overall:g}; a pass means no large regression, "
        "not no regression. Add scenarios or raise k"
    )


def _scenario_notes(c: Comparison, policy: Policy) -> list[str]:
    """What the per-scenario test can show at this k, and the scenarios it cannot confirm."""
    notes = []
    m = c.scenario_family
    if m:
        if c.scenario_detectable_drop is None:
            notes.append(
                f"per scenario ({c.scenario_test}, over {m}): at k={c.k} no single scenario's drop can be "
                "confirmed, not even from every attempt passing to none; a confirmed pass -> fail "
                "or a must-pass failure still counts. Raise k to confirm single scenarios"
            )
        else:
            notes.append(
                f"per scenario ({c.scenario_test}, over {m}): a scenario that passed every attempt is "
                f"confirmed newly failing when its pass rate falls by {c.scenario_detectable_drop:.2f} or "
                f"more (power {policy.power:g})"
            )
    unconfirmable = [s for s in c.scenarios if s.cant_tell]
    if unconfirmable:
        ids = ", ".join(s.id for s in unconfirmable[:10]) + (" ..." if len(unconfirmable) > 10 else "")
        notes.append(f"can't tell for {len(unconfirmable)} scenario(s) ({ids}): {unconfirmable[0].cant_tell}")
    return notes


def evaluate_gate(
    comparison: Comparison, policy: Policy, *, policy_notes: Sequence[str] = (), created_at: str | None = None
) -> GateReport:
    """Apply the gate rules to a comparison; return the outcome with every finding, its rule and its fix."""
    c = comparison
    newly = c.by_change("newly_failing", counted_only=True)
    findings = [*_data_findings(c), *_errors(c, policy), *_rule1(newly)]
    r2, notes = _rule2(c, policy)
    r3, notes3 = _rule3(c, policy, any(f.rule == "errors" for f in findings))
    findings += [*r2, *r3, *_rule4(newly)]
    notes += notes3
    cant_tell = _cant_tell(c, policy)
    if cant_tell is not None:
        notes.insert(0, cant_tell)
    notes += _scenario_notes(c, policy)
    if c.noise is None:
        notes.append("no second baseline run: the noise floor is unknown (pass --baseline-2)")
    outcome: GateOutcome = (
        "block" if any(f.severity == "block" for f in findings) else "needs-sign-off" if newly else "pass"
    )
    digest = policy_hash(policy)
    return GateReport(
        report_id=make_report_id(c, digest),
        created_at=created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        outcome=outcome,
        headline=_headline(outcome, c, len(newly), sum(s.must_pass for s in newly), cant_tell is None),
        findings=findings,
        notes=notes,
        can_tell=cant_tell is None,
        newly_failing=[s.id for s in newly],
        worse_unconfirmed=[s.id for s in c.by_change("worse_unconfirmed", counted_only=True)],
        flaky=[s.id for s in c.flaky],
        flaky_noise_share=c.flaky_noise_share,
        policy=policy.model_dump(mode="json"),
        policy_hash=digest,
        policy_notes=list(policy_notes),
        comparison=c,
    )


def gate_runs(
    policy: Policy,
    baseline: RunFile | RunData,
    candidate: RunFile | RunData,
    baseline_2: RunFile | RunData | None = None,
    *,
    paths: tuple[str | None, str | None, str | None] = (None, None, None),
) -> GateReport:
    """Check the runs' integrity and the policy against them, compare, apply the gate (``replaygate gate``).

    Each run is a :class:`RunFile` or what :func:`load_run_data` read of a run file (the same report).

    Raises:
        RunIntegrityError: a run is not the plan it records (see :mod:`._integrity`).
    """
    base, head = as_run_data(baseline), as_run_data(candidate)
    noise = as_run_data(baseline_2) if baseline_2 is not None else None
    runs = [("candidate", head), ("baseline", base)]
    if noise is not None:
        runs.append(("second baseline", noise))
    digests = verify_runs(runs, (paths[1], paths[0], paths[2]))  # integrity first: RunIntegrityError
    notes = check_policy_against_runs(policy, [(label, run.head) for label, run in runs])
    comparison = compare_runs(base, head, noise, policy, paths=paths)
    report = evaluate_gate(comparison, policy, policy_notes=notes)
    return report.model_copy(update={"run_digests": digests})
