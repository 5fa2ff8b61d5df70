"""Score one attempt: deterministic checks, then judges, retrieval metrics, measures and attribution.

Order and rules:

1. Deterministic checks (:mod:`._checks`), with an explicit ``non_empty`` result unless the scenario
   declares ``allow_empty``. Never ask a judge what a string comparison answers.
2. The label: the target's own label when it reported one, else derived from the trace (:mod:`._labels`).
3. The judges the scenario declares, and only those. Groundedness judges never receive the question.
   Per-chunk context-relevance verdicts are stored in the ``claims`` field of the judge's result.
   A judge that raises (:class:`JudgeError` or anything else), returns a verdict without a score in
   [0, 1] (NaN included), or is declared but not configured, makes the attempt ``error`` - never a pass,
   never skipped.
4. Retrieval metrics against the scenario's *confirmed* labels (labels suggested by promotion and not yet
   confirmed are not scored: they are the documents the failing trace happened to retrieve).
5. Guardrail measures (:mod:`._measures`).
6. Status: ``error`` when a judge failed or the target reported an invalid label, ``fail`` when any check
   or judge failed, else ``pass``. A failing attempt with retrieval labels is attributed to
   ``retrieval`` when no relevant chunk is in the top k, else to ``generation``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from replaygate.instrumentation import TraceSummary
from replaygate.replay._checks import CheckContext, run_checks
from replaygate.replay._judges import Judge, JudgeVerdict
from replaygate.replay._labels import derive_label
from replaygate.replay._measures import compute_measures, declares_no_llm_calls
from replaygate.replay._retrieval_metrics import ranked_chunk_ids, relevant_in_top_k, retrieval_metrics
from replaygate.replay._runfile import AttemptStatus, CheckResult, JudgeResult, Measures, RetrievalScores
from replaygate.replay._scenario_checks import GroundednessJudgeSpec, JudgeSpec
from replaygate.replay._scenario_model import Scenario

__all__ = ["ScoreOutcome", "score_attempt"]


@dataclass(frozen=True)
class ScoreOutcome:
    """The scores of one attempt, ready to be copied into an ``Attempt`` of the run file."""

    status: AttemptStatus
    error: str | None
    checks: list[CheckResult]
    judges: list[JudgeResult]
    retrieval: RetrievalScores | None
    measures: Measures
    attribution: Literal["retrieval", "generation"] | None
    label: str | None = None
    errors: list[str] = field(default_factory=list)


def _judge_names(specs: list[JudgeSpec]) -> list[str]:
    seen: dict[str, int] = {}
    names: list[str] = []
    for spec in specs:
        seen[spec.type] = seen.get(spec.type, 0) + 1
        names.append(spec.type if seen[spec.type] == 1 else f"{spec.type}#{seen[spec.type]}")
    return names


async def _run_judge(
    spec: JudgeSpec, judge: Judge, *, answer: str, summary: TraceSummary, question: str
) -> JudgeVerdict:
    mode = spec.mode if isinstance(spec, GroundednessJudgeSpec) else "answer"
    return await judge.judge(
        answer=answer,
        chunks=summary.chunks,
        question=question if judge.needs_question else None,
        mode=mode,
    )


def _verdict_problem(result: object) -> str | None:
    score = getattr(result, "score", None)
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
        return (
            f"returned {type(result).__name__} with score {score!r}; a verdict's score is a number in [0, 1]"
        )
    if getattr(result, "verdict", None) not in (True, False, None):
        return f"returned verdict {result.verdict!r}; a verdict is true, false or none"  # type: ignore[attr-defined]
    return None


async def _run_judges(
    scenario: Scenario,
    text: str,
    summary: TraceSummary,
    judges: Mapping[str, Judge],
    results: list[JudgeResult],
    errors: list[str],
) -> None:
    """Run the scenario's declared judges concurrently; verdicts go to ``results``, failures to ``errors``."""
    pending: list[tuple[str, JudgeSpec, Judge]] = []
    for name, spec in zip(_judge_names(scenario.judges), scenario.judges, strict=True):
        judge = judges.get(spec.type)
        if judge is None:
            errors.append(f"scenario {scenario.id}: judge {spec.type!r} is declared but not configured")
        else:
            pending.append((name, spec, judge))
    question = "\n".join(scenario.turns)
    outcomes = await asyncio.gather(
        *(_run_judge(s, j, answer=text, summary=summary, question=question) for _, s, j in pending),
        return_exceptions=True,
    )
    for (name, spec, judge), result in zip(pending, outcomes, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancellation and interrupts propagate
            errors.append(
                f"scenario {scenario.id}: judge {name} ({judge.model}) failed: "
                f"{type(result).__name__}: {result}"
            )
            continue
        problem = _verdict_problem(result)
        if problem is not None:
            errors.append(f"scenario {scenario.id}: judge {name} ({judge.model}) {problem}")
            continue
        passed = result.score >= spec.min_score and result.verdict is not False
        results.append(
            JudgeResult(
                name=name,
                score=result.score,
                passed=passed,
                detail=f"{result.detail} (min score {spec.min_score:g})",
                claims=[dict(c) for c in (result.claims or result.chunks)],
            )
        )


async def score_attempt(
    scenario: Scenario,
    *,
    answer: str | None,
    label: str | None,
    summary: TraceSummary,
    latency_s: float,
    judges: Mapping[str, Judge],
) -> ScoreOutcome:
    """Score one attempt of a scenario (see the module docstring for the order and the status rules).

    Args:
        scenario: the scenario as loaded.
        answer: the attempt's final answer (None when the target returned none).
        label: the label the target reported, or None to derive it from the trace.
        summary: the trace summary of the attempt's own spans.
        latency_s: the attempt's wall-clock latency.
        judges: the configured judges keyed by type (``groundedness``, ``context_relevance``).

    Returns:
        The outcome; judge failures are reported in it (status ``error``), never raised.
    """
    text = answer or ""
    errors: list[str] = []
    try:
        derived = derive_label(summary, answer, label)
    except ValueError as exc:
        errors.append(f"scenario {scenario.id}: {exc}")
        derived = derive_label(summary, answer)
    ctx = CheckContext(answer=text, label=derived, summary=summary, allow_empty=scenario.allow_empty)
    checks = run_checks(scenario.checks, ctx)

    judge_results: list[JudgeResult] = []
    if scenario.judges:  # most scenarios declare none: no gather, no tasks
        await _run_judges(scenario, text, summary, judges, judge_results, errors)

    retrieval: RetrievalScores | None = None
    labels = scenario.retrieval
    scored_labels = labels is not None and labels.confirmed and bool(labels.relevant)
    ranked = ranked_chunk_ids(summary.chunks) if scored_labels else []
    if labels is not None and scored_labels:
        retrieval = retrieval_metrics(
            ranked,
            labels.relevant,
            labels.k,
            threshold=summary.retrieval_threshold,
            filtered=summary.retrieval_filtered,
        )

    measures = compute_measures(
        summary, answer=answer, latency_s=latency_s, declares_no_llm=declares_no_llm_calls(scenario.tags)
    )
    failed = not all([c.passed for c in checks]) or not all([j.passed for j in judge_results])
    status: AttemptStatus = "error" if errors else "fail" if failed else "pass"
    attribution: Literal["retrieval", "generation"] | None = None
    if status == "fail" and labels is not None and scored_labels:
        attribution = "generation" if relevant_in_top_k(ranked, labels.relevant, labels.k) else "retrieval"
    return ScoreOutcome(
        status=status,
        error="; ".join(errors) if errors else None,
        checks=checks,
        judges=judge_results,
        retrieval=retrieval,
        measures=measures,
        attribution=attribution,
        label=derived,
        errors=errors,
    )
