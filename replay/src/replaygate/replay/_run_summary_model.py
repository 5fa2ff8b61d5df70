"""The typed run summary stored in ``RunFile.summary``: counts, errors first, attribution, guardrails.

:class:`RunSummary` is what :func:`~replaygate.replay.summarize_attempts` builds (its guardrails from
:func:`~replaygate.replay.guardrail_measures`, the one definition of each measure) and what the CLI prints.
Its JSON is the run file's ``summary`` object, key for key as before it was typed.

Upgrade path: a run file written by an older replaygate has a summary with fewer keys (fields were only
ever added: ``retrieval``, ``capture_warnings``, ``latency_p50_s``, the cost breakdown); a missing one reads
as unknown (None, or an empty list), never as 0, and a file written before the summary existed (``{}``)
loads with an empty one. The gate never reads the stored summary: it measures the attempts themselves.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ErrorAttempt",
    "FailingAttempt",
    "FailureAttribution",
    "GuardrailSummary",
    "RetrievalMeans",
    "RetrievalSummary",
    "RunSummary",
    "ScenarioCounts",
    "ScenarioRetrieval",
    "ThresholdReport",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScenarioCounts(_Model):
    """One scenario's attempts by outcome; ``k`` is its declared repeats (None when not in the suite)."""

    attempts: int = 0
    errors: int = 0
    fails: int = 0
    passes: int = 0
    k: int | None = None
    must_pass: bool = False


class ErrorAttempt(_Model):
    """An attempt that produced no scored answer, and why."""

    scenario_id: str
    index: int
    error: str | None = None


class FailingAttempt(_Model):
    """A failed attempt: the checks and judges that failed, and where the failure was attributed."""

    scenario_id: str
    index: int
    failed: list[str] = Field(default_factory=list)
    attribution: Literal["retrieval", "generation"] | None = None


class FailureAttribution(_Model):
    """How many failed attempts were attributed to retrieval, to generation, or to neither."""

    retrieval: int = 0
    generation: int = 0
    unattributed: int = 0


class GuardrailSummary(_Model):
    """A run's guardrail measures (``guardrail_measures``; ``cost_usd`` is its total, None when unknown)."""

    latency_mean_s: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_usd_known: float | None = None
    cost_usd_mean: float | None = None
    cost_unknown_attempts: int | None = None
    cost_note: str = ""
    escalation_rate: float | None = None
    empty_rate: float | None = None
    error_rate: float | None = None


class RetrievalMeans(_Model):
    """Mean retrieval metrics over attempts (``threshold_noop``: the share where the threshold was idle)."""

    hit_rate: float
    mrr: float
    recall: float
    ndcg: float
    threshold_noop: float


class ThresholdReport(_Model):
    """What the retriever's similarity threshold did over the attempts that reported one."""

    values: list[float]
    attempts: int
    filtered: int | None  # chunks removed in all; None when the retriever never said
    attempts_filtering: int
    noop: bool  # it reported what it filtered, and that was nothing, every time


class ScenarioRetrieval(_Model):
    """One scenario's retrieval metrics: its attempts with labels, its ``k``, the means, the threshold."""

    attempts: int
    k: int
    hit_rate: float
    mrr: float
    recall: float
    ndcg: float
    threshold_noop: float
    threshold: ThresholdReport | None = None


class RetrievalSummary(_Model):
    """A run's retrieval metrics: overall, per scenario, and whether the similarity threshold was a no-op."""

    attempts: int
    mean: RetrievalMeans
    scenarios: dict[str, ScenarioRetrieval] = Field(default_factory=dict)
    threshold: ThresholdReport | None = None


class RunSummary(_Model):
    """A run at a glance, as stored in the run file (see the module docstring)."""

    run_id: str = ""
    attempts: int = 0
    errors: int = 0
    fails: int = 0
    passes: int = 0
    error_attempts: list[ErrorAttempt] = Field(default_factory=list)
    failing_attempts: list[FailingAttempt] = Field(default_factory=list)
    scenarios: dict[str, ScenarioCounts] = Field(default_factory=dict)
    attribution: FailureAttribution = Field(default_factory=FailureAttribution)
    guardrails: GuardrailSummary = Field(default_factory=GuardrailSummary)
    #: ``retrieval_summary``: per scenario, overall, and whether the similarity threshold was a no-op.
    retrieval: RetrievalSummary | None = None
    capture_warnings: list[str] = Field(default_factory=list)
