"""Guardrail measures: one definition of each, for one attempt and for a set of attempts.

:func:`compute_measures` measures one attempt; :func:`guardrail_measures` a set of them, used alike by the
run summary, the gate, the canary and the reports.

Cost comes from the span when the instrumentor recorded one (``gen_ai.usage.cost``, OpenInference's
``llm.cost.total``), else from `genai-prices <https://github.com/pydantic/genai-prices>`_ (``calc_price``)
for the model and provider of every LLM call the attempt made. An unknown price is ``None``, never 0: the
cost is None when any call's model is unknown to genai-prices, has no model name, or lacks a token count.
An attempt in which no LLM call was captured has cost and tokens None ("no LLM call was captured": its
spans may have gone to a provider replaygate cannot see), unless the scenario or the target declares that
the agent makes none (the scenario tag ``llm_calls: none``, or ``llm_calls: none`` in the candidate's
configuration: :func:`declares_no_llm_calls`); then it costs 0.0.

Over a set of attempts (:func:`guardrail_measures`): latency, escalation and empty answers are measured
on the scored attempts (an errored attempt's latency is its timeout, and it has no answer); the error
rate on every attempt; cost per attempt is the mean over the scored attempts, None when any of them is
unknown; the total cost is over every attempt, None when any is unknown. Percentiles interpolate
linearly between ranks (numpy's default). :func:`guardrail_measures_columns` gives the same measures of
attempts held as arrays (:class:`MeasureColumns`, what the gate reads of 50,000 attempts), summing the
same values in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from replaygate.instrumentation import LlmCall, TraceSummary, call_cost
from replaygate.replay._runfile import Measures

if TYPE_CHECKING:  # numpy loads with the columns (the gate's), not with the scoring of a run
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "LLM_CALLS_KEY",
    "NO_LLM_CALL",
    "NO_LLM_CALLS",
    "GuardrailMeasures",
    "MeasureColumns",
    "call_cost",
    "measure_columns",
    "compute_measures",
    "cost_note",
    "declares_no_llm_calls",
    "guardrail_measures",
    "guardrail_measures_columns",
    "is_empty_answer",
    "is_escalated",
    "percentile",
    "scored_attempts",
    "total_cost",
]


class _MeasuresLike(Protocol):
    """What a set's measures read of one attempt's :class:`Measures`."""

    @property
    def latency_s(self) -> float: ...
    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cost_usd(self) -> float | None: ...
    @property
    def escalated(self) -> bool: ...
    @property
    def empty(self) -> bool: ...
    @property
    def llm_calls(self) -> int | None: ...


class _Measured(Protocol):
    """An attempt as a set's measures read it (an :class:`Attempt`, or a reader's lighter record of one)."""

    @property
    def status(self) -> str: ...
    @property
    def measures(self) -> _MeasuresLike: ...


_A = TypeVar("_A", bound=_Measured)

#: What an unknown cost means when the attempt's trace had no LLM call in it.
NO_LLM_CALL = "no LLM call was captured"
#: The key (scenario tag or configuration key) and value declaring that the agent makes no LLM call.
LLM_CALLS_KEY, NO_LLM_CALLS = "llm_calls", "none"


def declares_no_llm_calls(declared: Mapping[str, Any], *, where: str | None = None) -> bool:
    """Whether scenario tags or a target configuration declare ``llm_calls: none``.

    Args:
        declared: the scenario's tags or the candidate's configuration.
        where: for a configuration, what to name in the error; then a value other than ``none`` is an
            error (a tag may hold any text, and only ``none`` means anything).

    Raises:
        ValueError: ``where`` is given and ``llm_calls`` holds something other than ``none``.
    """
    value = declared.get(LLM_CALLS_KEY)
    if value is None:
        return False
    if where is not None and value != NO_LLM_CALLS:
        raise ValueError(
            f"{where}: llm_calls is {value!r}; the only value is 'none' (the agent makes no LLM call, so "
            "an attempt without LLM spans costs 0.0); remove the key otherwise"
        )
    return bool(value == NO_LLM_CALLS)


def is_empty_answer(answer: str | None) -> bool:
    """Whether an answer is missing or only whitespace."""
    return answer is None or not answer.strip()


def is_escalated(summary: TraceSummary) -> bool:
    """Whether the attempt escalated: the escalation signal, or a call to a tool named ``*escalat*``."""
    return summary.escalated or any("escalat" in call.name.lower() for call in summary.tool_calls)


def total_cost(calls: Sequence[LlmCall]) -> float | None:
    """The summed price of LLM calls; None when any call's price is unknown (never 0 for unknown)."""
    total = 0.0
    for call in calls:
        cost = call_cost(call)
        if cost is None:
            return None
        total += cost
    return total


def _tokens(reported: int | None, per_call: list[int | None]) -> int | None:
    if reported is not None:
        return reported
    if not per_call or any(t is None for t in per_call):
        return None
    return sum(t for t in per_call if t is not None)


def compute_measures(
    summary: TraceSummary, *, answer: str | None, latency_s: float, declares_no_llm: bool = False
) -> Measures:
    """Measure one attempt from its trace summary, its final answer and its wall-clock latency.

    Args:
        summary: the attempt's trace summary.
        answer: its final answer.
        latency_s: its wall-clock latency.
        declares_no_llm: the scenario or the target says the agent makes no LLM call: then none costs
            0.0, not None.
    """
    calls = summary.llm_calls
    if not calls and not declares_no_llm:
        in_tokens, out_tokens = summary.input_tokens, summary.output_tokens
        cost: float | None = None  # no LLM call was captured: unknown, not 0
    else:
        in_tokens = _tokens(summary.input_tokens, [c.input_tokens for c in calls])
        out_tokens = _tokens(summary.output_tokens, [c.output_tokens for c in calls])
        cost = total_cost(calls)
    return Measures(
        latency_s=latency_s,
        input_tokens=in_tokens,
        output_tokens=out_tokens,
        cost_usd=cost,
        escalated=is_escalated(summary),
        empty=is_empty_answer(answer),
        steps=len(calls) + len(summary.tool_calls),
        llm_calls=len(calls),
    )


def scored_attempts(attempts: Sequence[_A]) -> list[_A]:
    """The attempts that were scored (pass or fail): the base of latency, escalation, empty and cost."""
    return [a for a in attempts if a.status != "error"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100), interpolated linearly between ranks; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    position = q / 100 * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def cost_note(attempts: Sequence[_Measured]) -> str:
    """Why the cost of these attempts is unknown (empty when it is known)."""
    unknown = [a for a in attempts if a.measures.cost_usd is None]
    no_call = sum(1 for a in unknown if a.measures.llm_calls == 0)
    return _cost_note(len(unknown), no_call, len(attempts))


def _cost_note(unknown: int, no_call: int, attempts: int) -> str:
    """:func:`cost_note` from its counts: attempts of unknown cost, those without an LLM call, all."""
    if not unknown:
        return ""
    parts = []
    if no_call:
        parts.append(f"{NO_LLM_CALL} in {no_call}")
    if unknown - no_call:
        parts.append(f"the price is unknown for {unknown - no_call}")
    return f"cost unknown, not 0: {' and '.join(parts)} of {attempts} attempts"


@dataclass(frozen=True)
class GuardrailMeasures:
    """The guardrail measures of a set of attempts (see the module docstring for each definition)."""

    attempts: int
    scored: int
    latency_mean_s: float | None
    latency_p50_s: float | None
    latency_p95_s: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd_total: float | None
    cost_usd_known: float | None
    cost_usd_mean: float | None
    cost_unknown_attempts: int
    cost_note: str
    escalation_rate: float | None
    empty_rate: float | None
    error_rate: float | None


def guardrail_measures(attempts: Sequence[_Measured]) -> GuardrailMeasures:
    """The one definition of each guardrail measure over a set of attempts.

    One pass over the attempts collects what each measure reads; the sums are ``sum`` over the same
    values in the same order as one list per measure would give, so the results are the same.
    """
    latencies: list[float] = []
    known: list[float] = []  # the known costs of every attempt
    scored_known: list[float] = []  # ... of the scored attempts
    in_tokens: list[int] = []
    out_tokens: list[int] = []
    scored = escalated = empty = errors = scored_unknown = scored_no_call = 0
    for a in attempts:
        m = a.measures
        cost = m.cost_usd
        if cost is not None:
            known.append(cost)
        if m.input_tokens is not None:
            in_tokens.append(m.input_tokens)
        if m.output_tokens is not None:
            out_tokens.append(m.output_tokens)
        if a.status == "error":
            errors += 1
            continue
        scored += 1
        latencies.append(m.latency_s)
        if cost is not None:
            scored_known.append(cost)
        else:
            scored_unknown += 1
            if m.llm_calls == 0:
                scored_no_call += 1
        if m.escalated:
            escalated += 1
        if m.empty:
            empty += 1
    n = len(attempts)
    return GuardrailMeasures(
        attempts=n,
        scored=scored,
        latency_mean_s=sum(latencies) / len(latencies) if latencies else None,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        input_tokens=sum(in_tokens) if in_tokens else None,
        output_tokens=sum(out_tokens) if out_tokens else None,
        cost_usd_total=sum(known) if n and len(known) == n else None,
        cost_usd_known=sum(known) if known else None,
        cost_usd_mean=(
            sum(scored_known) / len(scored_known) if scored_known and len(scored_known) == scored else None
        ),
        cost_unknown_attempts=n - len(known),
        cost_note=_cost_note(scored_unknown, scored_no_call, scored),
        escalation_rate=escalated / scored if scored else None,
        empty_rate=empty / scored if scored else None,
        error_rate=errors / n if n else None,
    )


_STATUS_CODE = {"pass": 0, "fail": 1, "error": 2}


@dataclass(frozen=True)
class MeasureColumns:
    """The status and measures of a set of attempts as arrays, one entry per attempt, in order.

    ``status``: 0 pass, 1 fail, 2 error. Each optional measure has a ``*_known`` mask (its value is
    ignored where it is not known).
    """

    status: NDArray[np.uint8]
    latency_s: NDArray[np.float64]
    input_tokens: NDArray[np.int64]
    input_tokens_known: NDArray[np.bool_]
    output_tokens: NDArray[np.int64]
    output_tokens_known: NDArray[np.bool_]
    cost_usd: NDArray[np.float64]
    cost_usd_known: NDArray[np.bool_]
    llm_calls: NDArray[np.int64]
    llm_calls_known: NDArray[np.bool_]
    escalated: NDArray[np.bool_]
    empty: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.status.size)

    @property
    def scored(self) -> NDArray[np.bool_]:
        """Where the attempt was scored (pass or fail)."""
        out: NDArray[np.bool_] = self.status != 2
        return out


def _known_sum(values: NDArray[Any], known: NDArray[np.bool_]) -> Any:
    """``sum`` of the known values as Python numbers, in order (None when none is known)."""
    picked = values[known].tolist()
    return sum(picked) if picked else None


def guardrail_measures_columns(c: MeasureColumns) -> GuardrailMeasures:
    """:func:`guardrail_measures` of attempts held as :class:`MeasureColumns` (the same values).

    The sums are Python's ``sum`` over the same values in the same order, so they round alike.
    """
    n = len(c)
    scored = c.scored
    n_scored = int(scored.sum())
    latencies = c.latency_s[scored].tolist()
    known = c.cost_usd[c.cost_usd_known].tolist()
    scored_known = c.cost_usd[scored & c.cost_usd_known].tolist()
    unknown = scored & ~c.cost_usd_known
    no_call = int((unknown & c.llm_calls_known & (c.llm_calls == 0)).sum())
    ordered = sorted(latencies)
    return GuardrailMeasures(
        attempts=n,
        scored=n_scored,
        latency_mean_s=sum(latencies) / len(latencies) if latencies else None,
        latency_p50_s=percentile(ordered, 50),
        latency_p95_s=percentile(ordered, 95),
        input_tokens=_known_sum(c.input_tokens, c.input_tokens_known),
        output_tokens=_known_sum(c.output_tokens, c.output_tokens_known),
        cost_usd_total=sum(known) if n and len(known) == n else None,
        cost_usd_known=sum(known) if known else None,
        cost_usd_mean=(
            sum(scored_known) / len(scored_known) if scored_known and len(scored_known) == n_scored else None
        ),
        cost_unknown_attempts=n - len(known),
        cost_note=_cost_note(int(unknown.sum()), no_call, n_scored),
        escalation_rate=int((c.escalated & scored).sum()) / n_scored if n_scored else None,
        empty_rate=int((c.empty & scored).sum()) / n_scored if n_scored else None,
        error_rate=(n - n_scored) / n if n else None,
    )


def measure_columns(attempts: Sequence[_Measured]) -> MeasureColumns:
    """The :class:`MeasureColumns` of a sequence of attempts (their statuses and measures, in order)."""
    import numpy as np  # here: a run scores and summarizes without numpy

    ms = [a.measures for a in attempts]
    status = np.array([_STATUS_CODE[a.status] for a in attempts], dtype=np.uint8)

    def optional(values: list[Any], dtype: type[np.generic]) -> tuple[NDArray[Any], NDArray[np.bool_]]:
        known = np.array([v is not None for v in values], dtype=bool)
        return np.array([0 if v is None else v for v in values], dtype=dtype), known

    tin, tin_known = optional([m.input_tokens for m in ms], np.int64)
    tout, tout_known = optional([m.output_tokens for m in ms], np.int64)
    cost, cost_known = optional([m.cost_usd for m in ms], np.float64)
    calls, calls_known = optional([m.llm_calls for m in ms], np.int64)
    return MeasureColumns(
        status=status,
        latency_s=np.array([m.latency_s for m in ms], dtype=np.float64),
        input_tokens=tin,
        input_tokens_known=tin_known,
        output_tokens=tout,
        output_tokens_known=tout_known,
        cost_usd=cost,
        cost_usd_known=cost_known,
        llm_calls=calls,
        llm_calls_known=calls_known,
        escalated=np.array([m.escalated for m in ms], dtype=bool),
        empty=np.array([m.empty for m in ms], dtype=bool),
    )
