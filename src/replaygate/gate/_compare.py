"""Compare a baseline run with a candidate run (and optionally a second baseline run for the noise floor).

Pure: takes :class:`RunFile` objects, returns a :class:`Comparison`. Errors are counted apart from
failures; a scenario missing from a run or with fewer attempts than k is a blocking problem, never
dropped. Each scenario's change (newly failing, worse but not confirmed, ...) and flakiness are decided in
``_scenario_change``; the suite and its categories are tested here, each with the smallest drop it can
detect.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from replaygate.replay import MeasureColumns, RunFile, ScenarioEntry, guardrail_measures_columns

from replaygate.gate._comparison_model import (
    Comparison,
    ErrorSummary,
    GradedComparison,
    GuardrailComparison,
    NoiseInfo,
    RateComparison,
    RunRef,
    ScenarioComparison,
    SideStats,
    constructed,
)
from replaygate.gate._errors import ComparisonError
from replaygate.gate._guardrails import compare_guardrail_columns, with_noise
from replaygate.gate._policy import Policy
from replaygate.gate._run_data import RunData, ScenarioData, as_run_data
from replaygate.gate._scenario_change import classify_scenarios, mark_flaky
from replaygate.stats import (
    SCENARIO_TEST,
    holm_adjust,
    minimum_detectable_drop,
    minimum_detectable_drops,
    noise_floor,
    paired_permutation_test,
    paired_permutation_test_values,
    scenario_verdict,
    wilson_interval,
)

__all__ = ["check_comparable", "compare_runs"]

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


def _side_problems(label: str, run_id: str, sid: str, attempts: int, scored: int, required: int) -> list[str]:
    if attempts < required:
        return [
            f"scenario {sid}: the {label} run {run_id} has {attempts} of {required} attempts "
            "(resume or re-run it)"
        ]
    if scored == 0:
        return [f"scenario {sid}: every attempt of the {label} run {run_id} errored; nothing to compare"]
    return []


def _stats(entry: ScenarioEntry, data: ScenarioData, confidence: float) -> SideStats:
    passed, failed = data.passed, data.failed
    scored = passed + failed
    rate = low = high = None
    verdict = None
    if scored:
        rate = passed / scored
        low, high = wilson_interval(passed, scored, confidence)
        verdict = scenario_verdict(passed, scored, entry.must_pass, entry.threshold, confidence)
    # built from counted values of the right types: constructed, not validated (20,000 of them)
    return constructed(
        SideStats,
        {
            "attempts": data.attempts,
            "passed": passed,
            "failed": failed,
            "errors": data.errors,
            "rate": rate,
            "low": low,
            "high": high,
            "verdict": verdict,
            "error_messages": data.error_messages,
            "failure_details": data.failure_details,
            "sample_answer": data.sample_answer,
        },
    )


_NONE = ScenarioData()


@dataclass
class _Side:
    """One run of a comparison (baseline, candidate or second baseline) and what was measured of it.

    ``stats`` and ``problems`` hold each scenario the run has; ``metrics`` and ``counts`` (passes and
    scored attempts, where any attempt was scored) the graded and pass/fail data the tests read.
    """

    label: str
    run: RunData
    path: str | None
    entries: dict[str, ScenarioEntry]
    stats: dict[str, SideStats] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)
    metrics: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    counts: dict[str, Counts] = field(default_factory=dict)

    @classmethod
    def of(cls, run: RunData, label: str, path: str | None) -> _Side:
        """The side of ``run``, nothing measured yet."""
        return cls(label, run, path, {e.id: e for e in run.entries})

    def measure(self, sid: str, required: int, confidence: float) -> None:
        """Measure scenario ``sid``: a scenario the run lacks is a problem and has no attempts."""
        entry = self.entries.get(sid)
        if entry is None:
            self.stats[sid] = SideStats(present=False)
            self.problems[sid] = [f"scenario {sid} is missing from the {self.label} run {self.run.run_id}"]
            self.metrics[sid] = {}
            return
        data = self.run.scenarios.get(sid, _NONE)
        stats = _stats(entry, data, confidence)
        self.stats[sid] = stats
        self.problems[sid] = _side_problems(
            self.label, self.run.run_id, sid, data.attempts, stats.scored, required
        )
        self.metrics[sid] = data.metrics
        if stats.scored:
            self.counts[sid] = (stats.passed, stats.scored)

    def ref(self) -> RunRef:
        """Which run this side is, for the comparison's record."""
        return RunRef(run_id=self.run.run_id, fingerprint=self.run.head.fingerprint, path=self.path)


def _rate_group(
    name: str,
    ids: Sequence[str],
    base: dict[str, Counts],
    head: dict[str, Counts],
    noise: dict[str, Counts] | None,
    policy: Policy,
    family: int = 1,
    known_noise: float | None = None,
    detectable: tuple[float | None] | None = None,
) -> RateComparison:
    """Test one group; ``family`` is how many groups share the Holm adjustment (for its detectable drop).

    ``detectable``: the group's detectable drop when already simulated (a 1-tuple; None: simulate it).
    """
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
    drop = (
        detectable[0]
        if detectable is not None
        else minimum_detectable_drop(
            b,
            alpha=policy.alpha / family,
            power=policy.power,
            seed=policy.seed,
            beyond=max(tol, magnitude or 0.0),
        )
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
        detectable_drop=drop,
    )


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


def _scenario_rows(
    sides: Sequence[_Side], k: int, confidence: float
) -> tuple[list[ScenarioComparison], list[str]]:
    """Measure every scenario on every side; the rows (change still unknown) and the blocking problems."""
    base, head, *rest = sides
    noise = rest[0] if rest else None
    rows: list[ScenarioComparison] = []
    problems: list[str] = []
    for sid in dict.fromkeys([*base.entries, *head.entries]):
        entry = base.entries.get(sid) or head.entries[sid]
        required = min(entry.repeats, k) if entry.repeats > 0 else k
        base.measure(sid, required, confidence)
        head.measure(sid, required, confidence)
        second = None
        if noise is not None and sid in noise.entries:
            noise.measure(sid, required, confidence)
            second = noise.stats[sid]
        sc_problems = base.problems[sid] + head.problems[sid]
        counts = entry.counts and (head.entries.get(sid) or entry).counts
        if counts:
            problems.extend(sc_problems)
        rows.append(
            constructed(  # every field computed above (see _stats)
                ScenarioComparison,
                {
                    "id": sid,
                    "title": entry.title,
                    "must_pass": entry.must_pass,
                    "threshold": entry.threshold,
                    "counts": counts,
                    "tags": dict(entry.tags),
                    "required_attempts": required,
                    "base": base.stats[sid],
                    "head": head.stats[sid],
                    "change": "unknown",  # decided by classify_scenarios
                    "second": second,
                    "problems": sc_problems,
                },
            )
        )
    return rows, problems


def _noise_info(base: _Side, noise: _Side | None, valid: Sequence[str], policy: Policy) -> NoiseInfo | None:
    """The overall noise floor, measured once: the comparison's noise and the overall magnitude."""
    if noise is None:
        return None
    nids = [i for i in valid if i in noise.counts]
    if not nids:
        return None
    nf = noise_floor(
        [base.counts[i] for i in nids], [noise.counts[i] for i in nids], policy.confidence, policy.seed
    )
    return NoiseInfo(
        run_id=noise.run.run_id, delta=nf.delta, low=nf.low, high=nf.high, p_value=nf.p_value,
        magnitude=nf.magnitude,
    )  # fmt: skip


def _graded(
    base: _Side, head: _Side, noise: _Side | None, valid: Sequence[str], cats: dict[str, list[str]],
    policy: Policy,
) -> list[GradedComparison]:  # fmt: skip
    """Each judge score and retrieval metric both runs have: overall, then per category (Holm-adjusted)."""
    nm = noise.metrics if noise is not None else None
    metrics = sorted(
        {m for i in valid for m in base.metrics[i]} & {m for i in valid for m in head.metrics[i]}
    )
    graded: list[GradedComparison] = []
    for metric in metrics:
        top = _graded_group(metric, "overall", valid, base.metrics, head.metrics, nm, policy)
        if top is not None:
            graded.append(top)
        per_cat = [
            _graded_group(metric, n, ids, base.metrics, head.metrics, nm, policy) for n, ids in cats.items()
        ]
        graded.extend(_holm_graded([g for g in per_cat if g is not None]))
    return graded


def _counted(side: _Side, scenarios: Sequence[ScenarioComparison]) -> MeasureColumns:
    return side.run.measure_columns(s.id for s in scenarios if s.counts and s.id in side.entries)


def _guardrails(
    base: _Side, head: _Side, noise: _Side | None, scenarios: Sequence[ScenarioComparison], confidence: float
) -> tuple[list[GuardrailComparison], ErrorSummary]:
    """The guardrails (with the noise between the two baselines) and the errors, over counted scenarios."""
    b_counted, h_counted = _counted(base, scenarios), _counted(head, scenarios)
    b_measures = guardrail_measures_columns(b_counted)
    guardrails = compare_guardrail_columns(b_counted, h_counted, confidence, base_measures=b_measures)
    if noise is not None:
        n_counted = noise.run.measure_columns(s.id for s in scenarios if s.counts)
        noise_rails = compare_guardrail_columns(b_counted, n_counted, confidence, base_measures=b_measures)
        guardrails = with_noise(guardrails, noise_rails)
    errors = ErrorSummary(
        base_errors=len(b_counted) - int(b_counted.scored.sum()),
        base_attempts=len(b_counted),
        head_errors=len(h_counted) - int(h_counted.scored.sum()),
        head_attempts=len(h_counted),
        base_scenarios=[s.id for s in scenarios if s.counts and s.base.errors],
        head_scenarios=[s.id for s in scenarios if s.counts and s.head.errors],
    )
    return guardrails, errors


def compare_runs(
    base: RunFile | RunData,
    head: RunFile | RunData,
    noise: RunFile | RunData | None = None,
    policy: Policy | None = None,
    *,
    paths: tuple[str | None, str | None, str | None] = (None, None, None),
) -> Comparison:
    """Compare a baseline run with a candidate run, scenario by scenario, by category and overall.

    Args:
        base: the baseline run (a :class:`RunFile`, or a :class:`RunData` read by ``load_run_data``).
        head: the candidate run.
        noise: a second run of the baseline configuration, for the noise floor.
        policy: alpha, permutation count and seed (defaults when None).
        paths: where the three runs were read from (recorded in the comparison).

    Raises:
        ComparisonError: a run lacks a fingerprint, or the suite hash or k differ.
    """
    policy = policy or Policy()
    conf = policy.confidence
    bd, hd = as_run_data(base), as_run_data(head)
    nd = as_run_data(noise) if noise is not None else None
    check_comparable(bd.head, hd.head)
    if nd is not None:
        check_comparable(bd.head, nd.head, "baseline", "second baseline")
    k = bd.head.fingerprint.k
    b = _Side.of(bd, "baseline", paths[0])
    h = _Side.of(hd, "candidate", paths[1])
    n = _Side.of(nd, "second baseline", paths[2]) if nd is not None else None
    scenarios, problems = _scenario_rows([b, h] if n is None else [b, h, n], k, conf)
    scenarios, family, scenario_drop = classify_scenarios(scenarios, policy)
    scenarios, flaky_share = mark_flaky(scenarios, policy) if n is not None else (scenarios, None)

    valid = [s.id for s in scenarios if s.counts and not s.problems]
    noise_info = _noise_info(b, n, valid, policy)
    known = noise_info.magnitude if noise_info is not None else None
    cats = _categories(scenarios, valid)
    nc = n.counts if n is not None else None
    # the categories' tests and detectable drops, the guardrails and the graded scores: on a second thread
    # from now on, and on this one too once it has tested the overall group (the biggest groups first)
    sizes = [len(ids) for ids in cats.values()]
    later = _Shared(
        [
            *(
                functools.partial(_rate_group, name, ids, b.counts, h.counts, nc, policy, len(cats))
                for name, ids in cats.items()
            ),
            functools.partial(_guardrails, b, h, n, scenarios, conf),
            functools.partial(_graded, b, h, n, valid, cats, policy),
        ],
        first=sorted(range(len(sizes)), key=lambda at: -sizes[at]),
    )
    try:
        # the overall detectable drop beyond the tolerance and the noise floor (rule 2) and the
        # significance-only one (compared with the tolerance for "can't tell"), from one simulation
        drops = (
            minimum_detectable_drops(
                [b.counts[i] for i in valid],
                alpha=policy.alpha,
                power=policy.power,
                seed=policy.seed,
                beyond=(max(policy.tolerance.overall, known or 0.0), 0.0),
            )
            if valid
            else [None, None]
        )
        overall = _rate_group(
            "overall", valid, b.counts, h.counts, None, policy, known_noise=known, detectable=(drops[0],)
        )
    except BaseException:
        later.stop()
        raise
    *rates, (guardrails, errors), graded = later.values()
    categories = _holm_rates(rates)
    mdd = drops[1]
    return Comparison(
        baseline=b.ref(),
        candidate=h.ref(),
        noise_run=n.ref() if n is not None else None,
        suite_hash=bd.head.fingerprint.suite_hash,
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


class _Shared:
    """Tasks done by two threads: a second one, started at once, and the caller's once it calls values().

    Each thread takes the next task not taken (those of ``first`` before the others, then in order) and
    keeps its value in the task's place. The gate's statistics are numpy work that releases the GIL for
    most of its time, so the two threads use two cores. Each group's simulation has a generator of its
    own (seeded by the policy): the values are those computed one after the other, and so is the error
    raised, the first task's (in order) that failed.
    """

    def __init__(self, tasks: Sequence[Callable[[], Any]], first: Sequence[int] = ()) -> None:
        self._tasks = tasks
        taken_first = set(first)
        self._todo = deque([*first, *(at for at in range(len(tasks)) if at not in taken_first)])
        self._done: list[tuple[bool, Any] | None] = [None] * len(tasks)
        self._thread = threading.Thread(target=self._take, name="replaygate-gate", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        while True:
            try:
                at = self._todo.popleft()  # atomic: each task is taken by one thread
            except IndexError:
                return
            try:
                self._done[at] = (True, self._tasks[at]())
            except BaseException as exc:  # noqa: BLE001 - raised by values(), in the tasks' order
                self._done[at] = (False, exc)
                if not isinstance(exc, Exception):  # Ctrl-C or an exit: no further task, and at once
                    self._todo.clear()
                    raise

    def stop(self) -> None:
        """Take no further task (the caller failed) and wait for the one the second thread is doing."""
        self._todo.clear()
        self._thread.join()

    def values(self) -> list[Any]:
        """Every task's value, in order, once both threads are done; raises the first task's error."""
        try:
            self._take()
        finally:
            self._thread.join()
        for done in self._done:  # a Ctrl-C or an exit stopped the work: it comes before any error
            if done is not None and not done[0] and not isinstance(done[1], Exception):
                raise done[1]
        out = []
        for done in self._done:
            assert done is not None  # every task was taken by one of the two threads
            ok, value = done
            if not ok:
                raise value
            out.append(value)
        return out
