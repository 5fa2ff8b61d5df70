"""How each scenario moved, beyond noise: newly failing, worse but not confirmed, flaky.

Pure. A scenario is **newly failing** when it passed before and fails now: a must-pass scenario passed
every baseline attempt and not every candidate attempt (pass^k; a flaky must-pass scenario still blocks);
any other scenario went from a confirmed pass (Wilson lower bound >= threshold) to a confirmed fail
(upper bound < threshold), or fell significantly by the one-sided Fisher exact test,
Benjamini-Hochberg-adjusted over the suite's scenarios that are not must-pass. A verdict that got worse
without that evidence (``inconclusive`` -> ``fail`` at a k that cannot confirm the threshold) is
**worse, not confirmed**.

With a second baseline run, a scenario is **flaky** when its two baseline runs disagree: their verdicts
differ, or their counts differ beyond chance (two-sided Fisher exact, twice the smaller one-sided p,
below alpha).
"""

from __future__ import annotations

from collections.abc import Sequence

from replaygate.gate._comparison_model import Change, ScenarioComparison, SideStats
from replaygate.gate._policy import Policy
from replaygate.stats import (
    bh_adjust,
    fisher_worse_p,
    scenario_detectable_drop,
    threshold_note,
)

__all__ = ["classify_scenarios", "mark_flaky"]

_RANK = {"fail": 0, "inconclusive": 1, "pass": 2}


def _counts(side: SideStats) -> str:
    return f"{side.passed}/{side.scored}"


def _rate_estimate(passed: int, scored: int) -> float:
    """The pass rate to plan from: (passed + 1/2) / (scored + 1), so 5 of 5 is not taken for certain."""
    return (passed + 0.5) / (scored + 1)


def _change(s: ScenarioComparison, significant: bool, raw_worse: bool) -> tuple[Change, str]:
    b, h = s.base.verdict, s.head.verdict
    if s.problems or b is None or h is None:
        return "unknown", ""
    if s.must_pass:
        if b == "pass" and h == "fail":
            return "newly_failing", "pass^k"
    elif b != "fail" and h != "pass":
        if b == "pass" and h == "fail":
            return "newly_failing", "confirmed"
        if significant:
            return "newly_failing", "significant"
    if b != "fail" and (_RANK[h] < _RANK[b] or (raw_worse and not s.must_pass)):
        return "worse_unconfirmed", ""
    if h == "fail":
        return "still_failing", ""
    if h == "pass":
        return {"fail": "newly_passing", "pass": "still_passing"}.get(b, "inconclusive"), ""  # type: ignore[return-value]
    return "inconclusive", ""


def classify_scenarios(
    scenarios: Sequence[ScenarioComparison], policy: Policy
) -> tuple[list[ScenarioComparison], int, float | None]:
    """Test each scenario for a drop, classify its change, and say what it can and cannot show.

    Returns the scenarios (with ``fisher_p``, ``fisher_p_adjusted``, ``change``, ``evidence``,
    ``detectable_drop`` and ``cant_tell`` set), the size of the family the p-values are adjusted over,
    and the smallest drop the test can flag at this k from a scenario that passed every attempt (None:
    none can be).
    """
    tested = [s for s in scenarios if s.base.scored and s.head.scored and not s.problems]
    raw = dict(
        zip(
            [s.id for s in tested],
            fisher_worse_p(
                [(s.base.passed, s.base.scored) for s in tested],
                [(s.head.passed, s.head.scored) for s in tested],
            ),
            strict=True,
        )
    )
    family = [s for s in tested if not s.must_pass]
    adjusted = dict(zip([s.id for s in family], bh_adjust([raw[s.id] for s in family]), strict=True))
    m = len(family)
    k = max((s.required_attempts for s in scenarios), default=0)
    out: list[ScenarioComparison] = []
    for s in scenarios:
        p, p_adj = raw.get(s.id), adjusted.get(s.id)
        significant = p_adj is not None and p_adj < policy.alpha
        change, evidence = _change(s, significant, p is not None and p < policy.alpha)
        drop = None
        if p_adj is not None:
            rate = _rate_estimate(s.base.passed, s.base.scored)
            drop = scenario_detectable_drop(rate, s.required_attempts, m, policy.alpha, policy.power)
        note = "" if s.must_pass else threshold_note(s.threshold, s.required_attempts, policy.confidence)
        out.append(
            s.model_copy(
                update={
                    "fisher_p": p,
                    "fisher_p_adjusted": p_adj,
                    "change": change,
                    "evidence": evidence,
                    "detectable_drop": drop,
                    "cant_tell": note,
                }
            )
        )
    suite_drop = (
        scenario_detectable_drop(_rate_estimate(k, k), k, m, policy.alpha, policy.power) if m and k else None
    )
    return out, m, suite_drop


def mark_flaky(
    scenarios: Sequence[ScenarioComparison], policy: Policy
) -> tuple[list[ScenarioComparison], float | None]:
    """Mark the scenarios whose two baseline runs disagree; return them and the share of noise they carry.

    The noise is the sum over scenarios of the absolute difference of the two baseline runs' pass rates;
    the share is the flaky scenarios' part of it (None without a second baseline or without any noise).
    """
    both = [
        (s, s.second)
        for s in scenarios
        if s.second is not None and s.base.scored and s.second.scored and not s.problems
    ]
    if not both:
        return list(scenarios), None
    first = [(s.base.passed, s.base.scored) for s, _ in both]
    second_ = [(b.passed, b.scored) for _, b in both]
    # two-sided: twice the smaller one-sided Fisher exact p
    ps = [
        min(1.0, 2 * min(a, b))
        for a, b in zip(fisher_worse_p(first, second_), fisher_worse_p(second_, first), strict=True)
    ]
    reasons: dict[str, str] = {}
    gaps: dict[str, float] = {}
    for (s, second), p in zip(both, ps, strict=True):
        gaps[s.id] = abs(second.passed / second.scored - s.base.passed / s.base.scored)
        pair = f"{_counts(s.base)} vs {_counts(second)}"
        if s.base.verdict != second.verdict:
            reasons[s.id] = f"the two baseline runs disagree: {s.base.verdict} vs {second.verdict} ({pair})"
        elif p < policy.alpha:
            reasons[s.id] = f"the two baseline runs differ beyond chance ({pair}, Fisher p={p:.2g})"
    total = sum(gaps.values())
    share = sum(gaps[i] for i in reasons) / total if total > 0 else None
    out = [
        s.model_copy(update={"flaky": True, "flaky_reason": reasons[s.id]}) if s.id in reasons else s
        for s in scenarios
    ]
    return out, share
