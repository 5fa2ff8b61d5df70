"""Compare a baseline run with a candidate run (and optionally a second baseline run for the noise floor).

Pure: takes :class:`RunFile` objects, returns a :class:`Comparison`. Errors are counted apart from
failures; a scenario missing from a run or with fewer attempts than k is a blocking problem, never
dropped. Each scenario's change (newly failing, worse but not confirmed, ...) and flakiness are decided in
``_scenario_change``; the suite and its categories are tested here, each with the smallest drop it can
detect.
"""

from __future__ import annotations

from collections.abc import Sequence

from replaygate.replay import Attempt, RunFile, ScenarioEntry

from replaygate.gate._comparison_model import (
    Change,
    Comparison,
    ErrorSummary,
    GradedComparison,
    NoiseInfo,
    RateComparison,
    RunRef,
    ScenarioComparison,
    SideStats,
)
from replaygate.gate._errors import ComparisonError
from replaygate.gate._guardrails import compare_guardrails, with_noise
from replaygate.gate._policy import Policy
from replaygate.gate._scenario_change import classify_scenarios, mark_flaky
from replaygate.stats import (
    SCENARIO_TEST,
    holm_adjust,
    minimum_detectable_drop,
    noise_floor,
    paired_permutation_test,
    paired_permutation_test_values,
    scenario_verdict,
    wilson_interval,
)

__all__ = ["check_comparable", "compare_runs"]

_RETRIEVAL = ("hit_rate", "mrr", "recall", "ndcg")
_ANSWER_CAP = 2000
Counts = tuple[int, int]


def check_comparable(
    base: RunFile, head: RunFile, base_label: str = "baseline", head_label: str = "candidate"
) -> None:
    """Refuse two runs that lack a fingerprint or whose suite hash or k differ (the message says which)."""
    for label, run in ((base_label, base), (head_label, head)):
        fp = getattr(run, "fingerprint", None)
        if fp is None or not fp.suite_hash:
            raise ComparisonError(
                f"{label} run {run.run_id} has no fingerprint (or no suite hash): runs without one cannot be "
                "compared; re-run it with `replaygate run`"
            )
    fb, fh = base.fingerprint, head.fingerprint
    if fb.suite_hash != fh.suite_hash:
        raise ComparisonError(
            f"cannot compare: the suite hash differs ({base_label} run {base.run_id}: {fb.suite_hash}, "
            f"{head_label} run {head.run_id}: {fh.suite_hash}); both runs must replay the same scenarios "
            "(same golden set, tier and filters)"
        )
    if fb.k != fh.k:
        raise ComparisonError(
            f"cannot compare: k differs ({base_label} run {base.run_id}: k={fb.k}, {head_label} run "
            f"{head.run_id}: k={fh.k}); re-run both with the same --repeats"
        )


def _by_scenario(run: RunFile) -> dict[str, list[Attempt]]:
    out: dict[str, list[Attempt]] = {}
    for a in run.attempts:
        out.setdefault(a.scenario_id, []).append(a)
    return {sid: sorted(rows, key=lambda a: a.index) for sid, rows in out.items()}


def _side(
    run: RunFile,
    label: str,
    entry: ScenarioEntry | None,
    sid: str,
    required: int,
    confidence: float,
    attempts: list[Attempt],
) -> tuple[SideStats, list[str], list[Attempt]]:
    if entry is None:
        return SideStats(present=False), [f"scenario {sid} is missing from the {label} run {run.run_id}"], []
    passed = sum(a.status == "pass" for a in attempts)
    failed = sum(a.status == "fail" for a in attempts)
    errors = sum(a.status == "error" for a in attempts)
    problems: list[str] = []
    if len(attempts) < required:
        problems.append(
            f"scenario {sid}: the {label} run {run.run_id} has {len(attempts)} of {required} attempts "
            "(resume or re-run it)"
        )
    elif passed + failed == 0:
        problems.append(
            f"scenario {sid}: every attempt of the {label} run {run.run_id} errored; nothing to compare"
        )
    scored = passed + failed
    low = high = rate = None
    verdict = None
    if scored:
        rate = passed / scored
        low, high = wilson_interval(passed, scored, confidence)
        verdict = scenario_verdict(passed, scored, entry.must_pass, entry.threshold, confidence)
    details: list[str] = []
    for a in attempts:
        if a.status != "fail":
            continue
        for c in a.checks:
            if not c.passed:
                details.append(f"check {c.name}: {c.detail}".rstrip(": "))
        for j in a.judges:
            if not j.passed:
                details.append(f"judge {j.name} ({j.score:.2f}): {j.detail}".rstrip(": "))
    errs = list(dict.fromkeys(a.error or "error (no message)" for a in attempts if a.status == "error"))
    failing = [a for a in attempts if a.status == "fail" and a.answer is not None]
    answered = failing or [a for a in attempts if a.answer is not None]
    sample = answered[0].answer[:_ANSWER_CAP] if answered and answered[0].answer is not None else None
    side = SideStats(
        attempts=len(attempts),
        passed=passed,
        failed=failed,
        errors=errors,
        rate=rate,
        low=low,
        high=high,
        verdict=verdict,
        error_messages=errs[:3],
        failure_details=list(dict.fromkeys(details))[:5],
        sample_answer=sample,
    )
    return side, problems, attempts


def _rate_group(
    name: str,
    ids: Sequence[str],
    base: dict[str, Counts],
    head: dict[str, Counts],
    noise: dict[str, Counts] | None,
    policy: Policy,
    family: int = 1,
    known_noise: float | None = None,
) -> RateComparison:
    """Test one group; ``family`` is how many groups share the Holm adjustment (for its detectable drop)."""
    if not ids:
        return RateComparison(
            name=name,
            scenarios=0,
            base_rate=None,
            head_rate=None,
            delta=None,
            low=None,
            high=None,
            p_value=None,
        )
    b = [base[i] for i in ids]
    h = [head[i] for i in ids]
    res = paired_permutation_test(
        b, h, n_resamples=policy.n_resamples, seed=policy.seed, confidence=policy.confidence
    )
    magnitude = known_noise
    if noise is not None:
        nids = [i for i in ids if i in noise]
        if nids:
            nf = noise_floor(
                [base[i] for i in nids], [noise[i] for i in nids], policy.confidence, policy.seed
            )
            magnitude = nf.magnitude
    tol = policy.tolerance.overall if name == "overall" else policy.tolerance.for_category(name)
    detectable = minimum_detectable_drop(
        b,
        alpha=policy.alpha / family,
        power=policy.power,
        seed=policy.seed,
        beyond=max(tol, magnitude or 0.0),
    )
    return RateComparison(
        name=name,
        scenarios=len(ids),
        base_rate=sum(s / n for s, n in b) / len(b),
        head_rate=sum(s / n for s, n in h) / len(h),
        delta=res.delta,
        low=res.low,
        high=res.high,
        p_value=res.p_value,
        p_adjusted=res.p_value,
        exact=res.exact,
        noise_magnitude=magnitude,
        detectable_drop=detectable,
    )


def _metric_values(attempts: Sequence[Attempt]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for a in attempts:
        if a.status == "error":
            continue
        for j in a.judges:
            out.setdefault(f"judge:{j.name}", []).append(j.score)
        if a.retrieval is not None:
            for m in _RETRIEVAL:
                out.setdefault(f"retrieval:{m}", []).append(float(getattr(a.retrieval, m)))
    return out


def _graded_group(
    metric: str,
    group: str,
    ids: Sequence[str],
    base: dict[str, dict[str, list[float]]],
    head: dict[str, dict[str, list[float]]],
    noise: dict[str, dict[str, list[float]]] | None,
    policy: Policy,
) -> GradedComparison | None:
    use = [i for i in ids if base[i].get(metric) and head[i].get(metric)]
    if not use:
        return None
    bv = [base[i][metric] for i in use]
    hv = [head[i][metric] for i in use]
    res = paired_permutation_test_values(
        bv, hv, n_resamples=policy.n_resamples, seed=policy.seed, confidence=policy.confidence
    )
    magnitude = None
    if noise is not None:
        nids = [i for i in use if noise.get(i, {}).get(metric)]
        if nids:
            nres = paired_permutation_test_values(
                [base[i][metric] for i in nids],
                [noise[i][metric] for i in nids],
                n_resamples=policy.n_resamples,
                seed=policy.seed,
                confidence=policy.confidence,
            )
            magnitude = max(abs(nres.low), abs(nres.high), abs(nres.delta))
    return GradedComparison(
        metric=metric,
        group=group,
        scenarios=len(use),
        base_mean=sum(sum(v) / len(v) for v in bv) / len(bv),
        head_mean=sum(sum(v) / len(v) for v in hv) / len(hv),
        delta=res.delta,
        low=res.low,
        high=res.high,
        p_value=res.p_value,
        p_adjusted=res.p_value,
        noise_magnitude=magnitude,
    )


def _categories(scenarios: Sequence[ScenarioComparison], ids: Sequence[str]) -> dict[str, list[str]]:
    by_id = {s.id: s for s in scenarios}
    groups: dict[str, list[str]] = {}
    for i in ids:
        for key, value in sorted(by_id[i].tags.items()):
            groups.setdefault(f"{key}={value}", []).append(i)
    return dict(sorted(groups.items()))


def _holm_rates(groups: list[RateComparison]) -> list[RateComparison]:
    idx = [n for n, g in enumerate(groups) if g.p_value is not None]
    adjusted = holm_adjust([groups[n].p_value or 1.0 for n in idx])
    out = list(groups)
    for n, p in zip(idx, adjusted, strict=True):
        out[n] = groups[n].model_copy(update={"p_adjusted": p})
    return out


def _holm_graded(groups: list[GradedComparison]) -> list[GradedComparison]:
    adjusted = holm_adjust([g.p_value if g.p_value is not None else 1.0 for g in groups])
    return [g.model_copy(update={"p_adjusted": p}) for g, p in zip(groups, adjusted, strict=True)]


def _ref(run: RunFile, path: str | None) -> RunRef:
    return RunRef(run_id=run.run_id, fingerprint=run.fingerprint.model_dump(mode="json"), path=path)


def compare_runs(
    base: RunFile,
    head: RunFile,
    noise: RunFile | None = None,
    policy: Policy | None = None,
    *,
    paths: tuple[str | None, str | None, str | None] = (None, None, None),
) -> Comparison:
    """Compare a baseline run with a candidate run, scenario by scenario, by category and overall.

    Args:
        base: the baseline run.
        head: the candidate run.
        noise: a second run of the baseline configuration, for the noise floor.
        policy: alpha, permutation count and seed (defaults when None).
        paths: where the three runs were read from (recorded in the comparison).

    Raises:
        ComparisonError: a run lacks a fingerprint, or the suite hash or k differ.
    """
    policy = policy or Policy()
    conf = policy.confidence
    check_comparable(base, head)
    if noise is not None:
        check_comparable(base, noise, "baseline", "second baseline")
    k = base.fingerprint.k
    b_entries = {e.id: e for e in base.scenarios}
    h_entries = {e.id: e for e in head.scenarios}
    n_entries = {e.id: e for e in noise.scenarios} if noise is not None else {}
    order = list(dict.fromkeys([*b_entries, *h_entries]))
    b_att, h_att = _by_scenario(base), _by_scenario(head)
    n_att = _by_scenario(noise) if noise is not None else {}

    scenarios: list[ScenarioComparison] = []
    problems: list[str] = []
    b_counted: list[Attempt] = []
    h_counted: list[Attempt] = []
    b_metrics: dict[str, dict[str, list[float]]] = {}
    h_metrics: dict[str, dict[str, list[float]]] = {}
    n_metrics: dict[str, dict[str, list[float]]] = {}
    n_counts: dict[str, Counts] = {}
    for sid in order:
        entry = b_entries.get(sid) or h_entries[sid]
        required = min(entry.repeats, k) if entry.repeats > 0 else k
        bs, bp, ba = _side(base, "baseline", b_entries.get(sid), sid, required, conf, b_att.get(sid, []))
        hs, hp, ha = _side(head, "candidate", h_entries.get(sid), sid, required, conf, h_att.get(sid, []))
        sc_problems = bp + hp
        counts = entry.counts and (h_entries.get(sid) or entry).counts
        if counts:
            problems.extend(sc_problems)
            b_counted.extend(ba)
            h_counted.extend(ha)
        second = None
        if noise is not None and sid in n_entries:
            na = n_att.get(sid, [])
            second, _, _ = _side(noise, "second baseline", n_entries[sid], sid, required, conf, na)
        change: Change = "unknown"  # decided by classify_scenarios below
        scenarios.append(
            ScenarioComparison(
                id=sid,
                title=entry.title,
                must_pass=entry.must_pass,
                threshold=entry.threshold,
                counts=counts,
                tags=dict(entry.tags),
                required_attempts=required,
                base=bs,
                head=hs,
                change=change,
                second=second,
                problems=sc_problems,
            )
        )
        b_metrics[sid] = _metric_values(ba)
        h_metrics[sid] = _metric_values(ha)
        if noise is not None and sid in n_entries:
            na = n_att.get(sid, [])
            np_, nf_ = sum(a.status == "pass" for a in na), sum(a.status == "fail" for a in na)
            if np_ + nf_:
                n_counts[sid] = (np_, np_ + nf_)
            n_metrics[sid] = _metric_values(na)

    scenarios, family, scenario_drop = classify_scenarios(scenarios, policy)
    scenarios, flaky_share = mark_flaky(scenarios, policy) if noise is not None else (scenarios, None)

    counted = [s for s in scenarios if s.counts and not s.problems]
    valid = [s.id for s in counted]
    b_counts = {s.id: (s.base.passed, s.base.scored) for s in counted}
    h_counts = {s.id: (s.head.passed, s.head.scored) for s in counted}
    nc = n_counts if noise is not None else None
    # The overall noise floor is measured once: it is both the comparison's noise and the overall magnitude.
    noise_info = None
    if noise is not None:
        nids = [i for i in valid if i in n_counts]
        if nids:
            nf = noise_floor([b_counts[i] for i in nids], [n_counts[i] for i in nids], conf, policy.seed)
            noise_info = NoiseInfo(
                run_id=noise.run_id,
                delta=nf.delta,
                low=nf.low,
                high=nf.high,
                p_value=nf.p_value,
                magnitude=nf.magnitude,
            )
    known = noise_info.magnitude if noise_info is not None else None
    overall = _rate_group("overall", valid, b_counts, h_counts, None, policy, known_noise=known)
    cats = _categories(scenarios, valid)
    categories = _holm_rates(
        [_rate_group(n, ids, b_counts, h_counts, nc, policy, len(cats)) for n, ids in cats.items()]
    )

    nm = n_metrics if noise is not None else None
    metrics = sorted({m for i in valid for m in b_metrics[i]} & {m for i in valid for m in h_metrics[i]})
    graded: list[GradedComparison] = []
    for metric in metrics:
        top = _graded_group(metric, "overall", valid, b_metrics, h_metrics, nm, policy)
        if top is not None:
            graded.append(top)
        per_cat = [_graded_group(metric, n, ids, b_metrics, h_metrics, nm, policy) for n, ids in cats.items()]
        graded.extend(_holm_graded([g for g in per_cat if g is not None]))

    # significance only: compared with the tolerance for "can't tell" (``overall.detectable_drop`` adds
    # the tolerance and the noise floor, as rule 2 does)
    mdd = (
        minimum_detectable_drop(
            [b_counts[i] for i in valid], alpha=policy.alpha, power=policy.power, seed=policy.seed
        )
        if valid
        else None
    )
    guardrails = compare_guardrails(b_counted, h_counted, conf)
    if noise is not None:
        n_counted = [a for s in scenarios if s.counts for a in n_att.get(s.id, [])]
        guardrails = with_noise(guardrails, compare_guardrails(b_counted, n_counted, conf))
    errors = ErrorSummary(
        base_errors=sum(a.status == "error" for a in b_counted),
        base_attempts=len(b_counted),
        head_errors=sum(a.status == "error" for a in h_counted),
        head_attempts=len(h_counted),
        base_scenarios=[s.id for s in scenarios if s.counts and s.base.errors],
        head_scenarios=[s.id for s in scenarios if s.counts and s.head.errors],
    )
    return Comparison(
        baseline=_ref(base, paths[0]),
        candidate=_ref(head, paths[1]),
        noise_run=_ref(noise, paths[2]) if noise is not None else None,
        suite_hash=base.fingerprint.suite_hash,
        k=k,
        confidence=conf,
        noise=noise_info,
        minimum_detectable_drop=mdd,
        scenario_test=SCENARIO_TEST,
        scenario_family=family,
        scenario_detectable_drop=scenario_drop,
        flaky_noise_share=flaky_share,
        overall=overall,
        categories=categories,
        graded=graded,
        guardrails=guardrails,
        errors=errors,
        scenarios=scenarios,
        problems=problems,
    )
