"""From stored traces to the live measures' request samples (cost, failure signals, sampled groundedness).

Cost uses the instrumentation's ``call_cost`` (genai-prices; an unknown price is None, never 0);
groundedness uses the offline groundedness judge on a sample of each arm's answers that retrieved chunks
(a judge failure is reported in the status, never counted as grounded).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from replaygate.instrumentation import LlmCall, TraceRecord, call_cost
from replaygate.replay import OfflineGroundednessJudge

from replaygate.canary._measures import RequestSample

__all__ = ["calls_cost", "groundedness_of", "groundedness_scores", "sample_from_trace"]


@functools.lru_cache(maxsize=4096)
def _price(
    model: str | None, provider: str | None, input_tokens: int | None, output_tokens: int | None
) -> float | None:
    return call_cost(LlmCall(model, provider, input_tokens, output_tokens, 0.0))


def _cached_call_cost(call: LlmCall) -> float | None:
    return _price(call.model, call.provider, call.input_tokens, call.output_tokens)


def _total_cost(calls: Sequence[LlmCall]) -> float | None:
    """The request's price; None when any call's price is unknown (never 0 for unknown)."""
    total = 0.0
    for call in calls:
        cost = _cached_call_cost(call)
        if cost is None:
            return None
        total += cost
    return total


@functools.lru_cache(maxsize=65536)
def calls_cost(llm_calls: str) -> float | None:
    """The price of one request from its stored ``llm_calls`` JSON (``[[model, provider, in, out], ...]``).

    None when any call's price is unknown (never 0 for unknown); a request without LLM calls costs 0.
    """
    total = 0.0
    for model, provider, input_tokens, output_tokens in json.loads(llm_calls):
        cost = _price(model, provider, input_tokens, output_tokens)
        if cost is None:
            return None
        total += cost
    return total


def _negative(feedback: dict[str, Any]) -> bool:
    score = feedback.get("score")
    return isinstance(score, int | float) and not isinstance(score, bool) and score < 0 or score is False


def sample_from_trace(record: TraceRecord) -> RequestSample:
    """The request sample of one stored trace."""
    s = record.summary
    error = s.error is not None or "exception" in s.failure_reasons
    empty = not error and (s.output is None or not s.output.strip() or "empty_answer" in s.failure_reasons)
    escalated = s.escalated or "escalation" in s.failure_reasons
    negative = "negative_feedback" in s.failure_reasons or any(_negative(f) for f in record.feedback)
    cost = _total_cost(s.llm_calls)
    return RequestSample(
        start_ns=record.start_ns,
        error=error,
        empty=empty,
        escalated=escalated,
        negative_feedback=negative,
        latency_s=float(s.latency_s),
        cost_usd=cost,
    )


def _score_arm(
    judge: OfflineGroundednessJudge, records: Sequence[TraceRecord], samples: list[RequestSample], k: int
) -> list[RequestSample]:
    picked = 0
    out = list(samples)
    for i, record in enumerate(records):  # newest first: the most recent k answers with chunks
        if picked >= k:
            break
        s = record.summary
        if s.error is not None or not s.output or not s.output.strip() or not s.chunks:
            continue
        verdict = judge.judge_sync(answer=s.output, chunks=s.chunks)
        out[i] = replace(out[i], groundedness=float(verdict.score))
        picked += 1
    return out


def groundedness_of(records: Sequence[TraceRecord], k: int) -> tuple[tuple[float, ...], str | None]:
    """Score up to ``k`` of these answers (newest first, those with chunks) with the offline judge.

    Returns the scores and a note when groundedness could not be measured (a judge failure is reported,
    never counted as grounded).
    """
    if k <= 0:
        return (), None
    judge = OfflineGroundednessJudge()
    samples = [sample_from_trace(r) for r in records]
    try:
        scored = _score_arm(judge, records, samples, k)
    except Exception as exc:
        return (), f"groundedness not measured: the judge failed ({type(exc).__name__}: {exc})"
    return tuple(s.groundedness for s in scored if s.groundedness is not None), None


def groundedness_scores(
    base_records: Sequence[TraceRecord],
    base: list[RequestSample],
    cand_records: Sequence[TraceRecord],
    cand: list[RequestSample],
    k: int,
) -> tuple[list[RequestSample], list[RequestSample], str | None]:
    """Score up to ``k`` answers per arm with the offline groundedness judge (a note when not measured).

    A judge failure is reported, never counted as grounded.
    """
    if k <= 0:
        return base, cand, None
    judge = OfflineGroundednessJudge()
    try:
        return _score_arm(judge, base_records, base, k), _score_arm(judge, cand_records, cand, k), None
    except Exception as exc:
        return base, cand, f"groundedness not measured: the judge failed ({type(exc).__name__}: {exc})"
