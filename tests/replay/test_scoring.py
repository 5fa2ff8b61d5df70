"""score_attempt: checks, label, judges, retrieval, measures, status and attribution."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from replaygate.instrumentation import Chunk, LlmCall, ToolCall, TraceSummary
from replaygate.replay._errors import JudgeError
from replaygate.replay._judges import Judge, JudgeVerdict, create_judges
from replaygate.replay._scenario_model import Scenario
from replaygate.replay._scoring import ScoreOutcome, score_attempt

POLICY = Chunk(
    id="refund-limits#2", score=0.9, rank=1, text="Refunds above $200 must be escalated to a human agent."
)
OTHER = Chunk(id="shipping#1", score=0.8, rank=1, text="Standard shipping takes 3 to 5 business days.")


def make_summary(**over: Any) -> TraceSummary:
    base: dict[str, Any] = dict(
        trace_id="t1", session_id=None, user_id=None, agent_name="a", agent_version="1", turns=("q",),
        output=None, outputs=(), error=None, chunks=(POLICY,), tool_calls=(), llm_calls=(), escalated=False,
        escalation_reason=None, clarification=False, failure_reasons=(), latency_s=0.1,
        input_tokens=None, output_tokens=None,
    )  # fmt: skip
    base.update(over)
    return TraceSummary(**base)


def scenario(**over: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": "refund-over-limit",
        "title": "Refund above the limit is escalated",
        "owner": "alice",
        "origin": "production-incident",
        "added": "2026-11-29",
        "turns": ["I want a refund of $450 for ORD-10042"],
        "checks": [
            {"type": "forbidden_tools", "tools": ["issue_refund"]},
            {"type": "expected_label", "label": "escalate"},
        ],
        "judges": [{"type": "groundedness", "mode": "claims", "min_score": 0.8}],
        "retrieval": {"relevant": ["refund-limits"], "k": 3},
    }
    data.update(over)
    return Scenario.model_validate(data)


def score(
    sc: Scenario,
    answer: str | None,
    summary: TraceSummary,
    judges: dict[str, Judge] | None = None,
    label: str | None = None,
) -> ScoreOutcome:
    return asyncio.run(
        score_attempt(
            sc,
            answer=answer,
            label=label,
            summary=summary,
            latency_s=0.5,
            judges=judges if judges is not None else create_judges(),
        )
    )


GOOD = "Refunds above $200 must be escalated to a human agent, so I escalated your request."


def test_a_good_attempt_passes() -> None:
    out = score(scenario(), GOOD, make_summary(escalated=True))
    assert out.status == "pass", out
    assert out.error is None and out.attribution is None and out.label == "escalate"
    assert [c.name for c in out.checks] == ["non_empty", "forbidden_tools", "expected_label"]
    assert out.judges[0].name == "groundedness" and out.judges[0].passed
    assert out.judges[0].claims[0]["document_id"] == "refund-limits#2"
    assert out.retrieval is not None and out.retrieval.hit_rate == 1.0 and out.retrieval.k == 3
    assert out.measures.latency_s == 0.5 and out.measures.escalated and not out.measures.empty


def test_generation_failure_when_the_relevant_chunk_was_retrieved() -> None:
    calls = (ToolCall(name="issue_refund", arguments={"amount": 450}, result={"ok": True}),)
    out = score(scenario(), "Done: I refunded $450 to your card.", make_summary(tool_calls=calls))
    assert out.status == "fail" and out.attribution == "generation"
    failed = {c.name: c.detail for c in out.checks if not c.passed}
    assert "issue_refund" in failed["forbidden_tools"] and "'answer'" in failed["expected_label"]
    assert not out.judges[0].passed


def test_retrieval_failure_when_no_relevant_chunk_in_top_k() -> None:
    out = score(scenario(), "Shipping takes 3 to 5 business days.", make_summary(chunks=(OTHER,)))
    assert out.status == "fail" and out.attribution == "retrieval"
    assert out.retrieval is not None and out.retrieval.hit_rate == 0.0


def test_empty_answer_fails_unless_allowed() -> None:
    sc = scenario(checks=[{"type": "forbidden_output_regex", "pattern": "refund issued"}], judges=[])
    out = score(sc, "", make_summary())
    assert out.status == "fail" and out.measures.empty
    assert {c.name: c.passed for c in out.checks} == {"non_empty": False, "forbidden_output_regex": False}
    allowed = score(scenario(checks=sc.checks, judges=[], allow_empty=True), None, make_summary())
    assert allowed.status == "pass" and [c.name for c in allowed.checks] == ["forbidden_output_regex"]


class Boom:
    name = "groundedness"
    model: str | None = "boom"
    prompt_version = "boom-1"
    needs_question = False

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def judge(
        self, *, answer: str, chunks: Sequence[Chunk], question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        raise self.exc


def test_a_judge_error_is_an_error_even_when_checks_fail() -> None:
    calls = (ToolCall(name="issue_refund", arguments={}, result=None),)
    for exc in (JudgeError("endpoint down"), RuntimeError("bug")):
        out = score(scenario(), GOOD, make_summary(tool_calls=calls), judges={"groundedness": Boom(exc)})
        assert out.status == "error" and out.error is not None
        assert "refund-over-limit" in out.error and str(exc) in out.error
        assert out.judges == [] and out.attribution is None


class Says(Boom):
    """A judge that returns whatever it is given, however wrong."""

    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict

    async def judge(
        self, *, answer: str, chunks: Sequence[Chunk], question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        return self.verdict  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "verdict",
    [
        JudgeVerdict(score=float("nan"), verdict=True),
        JudgeVerdict(score=1.5),
        JudgeVerdict(score=-0.1),
        JudgeVerdict(score=True),
        JudgeVerdict(score="1.0"),  # type: ignore[arg-type]
        JudgeVerdict(score=1.0, verdict="yes"),  # type: ignore[arg-type]
        None,
        {"score": 1.0},
    ],
)
def test_a_judge_returning_garbage_is_an_error_never_a_pass(verdict: Any) -> None:
    out = score(scenario(), GOOD, make_summary(escalated=True), judges={"groundedness": Says(verdict)})
    assert out.status == "error" and out.error is not None
    assert "judge groundedness (boom)" in out.error and out.judges == []
    good = score(
        scenario(), GOOD, make_summary(escalated=True), judges={"groundedness": Says(JudgeVerdict(1.0))}
    )
    assert good.status == "pass"  # the same judge with a valid verdict passes: the test can tell


def test_a_declared_but_unconfigured_judge_is_an_error_not_a_skip() -> None:
    out = score(scenario(), GOOD, make_summary(escalated=True), judges={})
    assert out.status == "error" and out.error is not None and "not configured" in out.error


def test_an_invalid_reported_label_is_an_error() -> None:
    out = score(scenario(), GOOD, make_summary(escalated=True), label="maybe")
    assert out.status == "error" and out.error is not None and "maybe" in out.error


def test_the_targets_label_wins() -> None:
    out = score(scenario(judges=[]), GOOD, make_summary(escalated=False), label="escalate")
    assert out.status == "pass" and out.label == "escalate"


class Recorder:
    name = "context_relevance"
    model: str | None = None
    prompt_version = "rec-1"

    def __init__(self, needs_question: bool) -> None:
        self.needs_question = needs_question
        self.seen: list[str | None] = []

    async def judge(
        self, *, answer: str, chunks: Sequence[Chunk], question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        self.seen.append(question)
        return JudgeVerdict(score=1.0)


def test_only_judges_that_need_it_receive_the_question() -> None:
    sc = scenario(judges=[{"type": "groundedness"}, {"type": "context_relevance"}])
    grounded, relevance = Recorder(False), Recorder(True)
    out = score(
        sc,
        GOOD,
        make_summary(escalated=True),
        judges={"groundedness": grounded, "context_relevance": relevance},
    )
    assert out.status == "pass"
    assert grounded.seen == [None] and relevance.seen == ["I want a refund of $450 for ORD-10042"]


def test_judges_run_only_when_declared() -> None:
    rec = Recorder(True)
    out = score(scenario(judges=[]), GOOD, make_summary(escalated=True), judges={"groundedness": rec})
    assert out.judges == [] and rec.seen == []


def test_unconfirmed_labels_are_not_scored() -> None:
    sc = scenario(retrieval={"relevant": ["refund-limits"], "k": 3, "confirmed": False})
    out = score(sc, "wrong", make_summary(chunks=(OTHER,)))
    assert out.status == "fail" and out.retrieval is None and out.attribution is None


def test_threshold_noop_and_measures() -> None:
    llm = (
        LlmCall(model="gpt-4o-mini", provider="openai", input_tokens=100, output_tokens=20, latency_s=0.1),
    )
    summary = make_summary(escalated=True, retrieval_threshold=0.3, retrieval_filtered=0, llm_calls=llm)
    out = score(scenario(), GOOD, summary)
    assert out.retrieval is not None and out.retrieval.threshold_noop and out.retrieval.filtered == 0
    assert out.measures.cost_usd is not None and out.measures.cost_usd > 0 and out.measures.steps == 1
