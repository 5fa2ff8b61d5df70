"""The offline judges and the judge registry."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from replaygate.instrumentation import Chunk
from replaygate.replay._errors import JudgeError
from replaygate.replay._judges import (
    Judge,
    JudgeVerdict,
    create_judge,
    create_judges,
    judge_spec,
    register_judge,
)
from replaygate.replay._llm_judge import LlmJudge
from replaygate.replay._offline_judge import (
    OfflineContextRelevanceJudge,
    OfflineGroundednessJudge,
    split_claims,
)

CHUNKS = (
    Chunk(
        id="refund-limits#1", score=0.9, rank=1, text="Refunds above $200 must be escalated to a human agent."
    ),
    Chunk(
        id="shipping#4",
        score=0.7,
        rank=2,
        text="Standard shipping with Acme Post takes 3 to 5 business days.",
    ),
    Chunk(id="returns#2", score=0.5, rank=3, text="Items cannot be returned after 30 days."),
)


def ground(answer: str, chunks: tuple[Chunk, ...] = CHUNKS, mode: str = "claims") -> JudgeVerdict:
    return OfflineGroundednessJudge().judge_sync(answer=answer, chunks=chunks, mode=mode)  # type: ignore[arg-type]


def test_split_claims() -> None:
    assert split_claims("Refunds take $12.50. Shipping is 3 days!\n- Call us? Yes.") == [
        "Refunds take $12.50.",
        "Shipping is 3 days!",
        "Call us?",
        "Yes.",
    ]


def test_supported_claims_cite_their_chunk() -> None:
    v = ground(
        "Refunds above $200 are escalated to a human agent. Shipping with Acme Post takes 3 to 5 days."
    )
    assert v.score == 1.0 and v.verdict is True
    assert [c["document_id"] for c in v.claims] == ["refund-limits#1", "shipping#4"]


@pytest.mark.parametrize(
    ("answer", "missing"),
    [
        ("Refunds above $500 must be escalated to a human agent.", "500"),  # wrong amount
        ("Standard shipping with Zoom Post takes 3 to 5 business days.", "zoom"),  # wrong entity
        ("Items can be returned after 30 days.", "(negation)"),  # dropped negation
        ("Standard shipping takes 3 to 7 business days.", "7"),
    ],
)
def test_unsupported_claims_name_what_is_missing(answer: str, missing: str) -> None:
    v = ground(answer)
    assert v.score == 0.0 and v.verdict is False
    assert v.claims[0]["supported"] is False and v.claims[0]["document_id"] is None
    assert missing in v.claims[0]["missing"]


def test_content_words_must_mostly_be_found() -> None:
    v = ground("Our warehouse robots polish every parcel lovingly.")
    assert v.score == 0.0


def test_partial_support_and_answer_mode() -> None:
    v = ground(
        "Refunds above $200 must be escalated to a human agent. Refunds are paid in bitcoin.", mode="answer"
    )
    assert v.score == 0.5 and v.verdict is False and v.claims == ()
    assert "1/2" in v.detail and "bitcoin" in v.detail


def test_no_chunks_hashed_chunks_and_empty_answer_are_not_supported() -> None:
    assert ground("Refunds above $200 are escalated.", chunks=()).score == 0.0
    hashed = Chunk(id="x", score=None, rank=1, text=hashlib.sha256(b"secret").hexdigest())
    assert ground("Refunds above $200 are escalated.", chunks=(hashed,)).score == 0.0
    assert ground("").verdict is False


def test_offline_groundedness_never_uses_the_question() -> None:
    judge = OfflineGroundednessJudge()
    a = asyncio.run(judge.judge(answer="Refunds above $200 are escalated.", chunks=CHUNKS, question="x"))
    b = asyncio.run(judge.judge(answer="Refunds above $200 are escalated.", chunks=CHUNKS, question=None))
    assert a == b and judge.needs_question is False


def test_offline_context_relevance() -> None:
    judge = OfflineContextRelevanceJudge()
    v = asyncio.run(judge.judge(answer="", chunks=CHUNKS, question="Will my refund of $450 be escalated?"))
    relevant = {c["document_id"]: c["relevant"] for c in v.chunks}
    assert relevant == {"refund-limits#1": True, "shipping#4": False, "returns#2": False}
    assert v.score == pytest.approx(1 / 3)
    assert asyncio.run(judge.judge(answer="", chunks=(), question="q")).score == 0.0


def test_registry_records_arguments_without_secrets() -> None:
    judge = create_judge(
        "llm", task="groundedness", model="m", base_url="http://127.0.0.1:1/v1", api_key="sk-1"
    )
    assert isinstance(judge, LlmJudge) and isinstance(judge, Judge)
    spec = judge_spec(judge)
    assert spec == {
        "name": "llm",
        "args": {"task": "groundedness", "model": "m", "base_url": "http://127.0.0.1:1/v1"},
    }
    rebuilt = create_judge(spec["name"], **spec["args"])
    assert rebuilt.prompt_version == judge.prompt_version and rebuilt.model == "m"


def test_registry_errors() -> None:
    with pytest.raises(JudgeError, match="unknown judge 'nope'"):
        create_judge("nope")
    with pytest.raises(JudgeError, match="cannot be created"):
        create_judge("offline_groundedness", model="x")
    with pytest.raises(ValueError, match="already registered"):
        register_judge("offline_groundedness")(LlmJudge)


def test_register_a_custom_judge() -> None:
    @register_judge("test_always_one")
    class AlwaysOne:
        name = "groundedness"
        model: str | None = None
        prompt_version = "t-1"
        needs_question = False

        def __init__(self, bias: float = 0.0) -> None:
            self.bias = bias

        async def judge(
            self, *, answer: str, chunks: Any, question: str | None = None, mode: str = "answer"
        ) -> JudgeVerdict:
            return JudgeVerdict(score=1.0 - self.bias)

    judge = create_judge("test_always_one", bias=0.25)
    assert judge_spec(judge) == {"name": "test_always_one", "args": {"bias": 0.25}}
    assert asyncio.run(judge.judge(answer="a", chunks=())).score == 0.75


def test_create_judges_offline_and_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    offline = create_judges()
    assert set(offline) == {"groundedness", "context_relevance"}
    assert offline["groundedness"].model == "offline" and offline["groundedness"].prompt_version
    assert not offline["groundedness"].needs_question and offline["context_relevance"].needs_question
    with pytest.raises(JudgeError, match="needs a model and a base URL"):
        create_judges("llm")
    monkeypatch.setenv("REPLAYGATE_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("REPLAYGATE_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("REPLAYGATE_JUDGE_API_KEY", "sk-env")
    llm = create_judges("llm", timeout_s=5)
    assert llm["groundedness"].model == "env-model" and llm["context_relevance"].name == "context_relevance"
    assert "sk-env" not in repr(judge_spec(llm["groundedness"]))
    assert llm["groundedness"].prompt_version != llm["context_relevance"].prompt_version
    with pytest.raises(JudgeError, match="unknown judge kind"):
        create_judges("magic")  # type: ignore[arg-type]
