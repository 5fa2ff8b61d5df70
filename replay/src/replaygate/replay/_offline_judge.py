"""Offline judges: groundedness and context relevance without any model (lexical, deterministic).

**Weaker than an LLM judge, by design and by necessity.** The offline groundedness judge splits the
answer into sentences (claims) and calls a claim supported when one retrieved chunk contains all of the
claim's numbers and amounts (``$1,200.00`` matches ``1200``), dates, named entities (capitalised words,
codes such as ``ORD-1234``), the same polarity (a negation in the claim and in the chunk sentence
closest to it, or in neither), and most (60 %) of its other content words (lightly
stemmed). It cannot see paraphrase, synonyms, arithmetic or a claim stitched from two chunks, and it can
be fooled by a chunk that repeats the claim's words while saying something else. Use it as a cheap
default and for the demo; calibrate it (``replaygate judge calibrate``) and prefer the LLM judge when its
kappa against your labels is low.

The offline context-relevance judge calls a chunk relevant when it shares at least 30 % (and at least
one) of the question's terms.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from replaygate.instrumentation import Chunk
from replaygate.replay._judge_registry import JudgeMode, JudgeVerdict, register_judge

__all__ = [
    "OfflineContextRelevanceJudge",
    "OfflineGroundednessJudge",
    "split_claims",
]

CONTENT_COVERAGE = 0.6
RELEVANCE_OVERLAP = 0.3

_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each else ever few for from further
    get gets got had has have having he her here hers herself him himself his how however i if in into is
    it its itself just let lets like may me might more most much must my myself now of off on once only or
    other otherwise our ours ourselves out over own please same shall she should so some such than that
    the their theirs them themselves then there these they this those through thus to too under until up
    upon us very was we were what when where which while who whom whose why will with within would yes yet
    you your yours yourself yourselves hi hello thanks thank sure happy glad help certainly kindly okay ok
    one ones want need know see also there's here's it's that's i'm i'll we'll you'll you're we're
    """.split()
)
_NEGATIONS = frozenset(
    {"not", "no", "never", "cannot", "can't", "won't", "don't", "doesn't", "isn't", "aren't"}
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")
_NUMBER = re.compile(r"(?<![A-Za-z])\d[\d,]*(?:\.\d+)?")
_CODE = re.compile(
    r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b|\b[A-Z]{2,}\d+\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$€£])|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SHA256 = re.compile(r"^(?:sha256:)?[0-9a-f]{64}$")


def split_claims(answer: str) -> list[str]:
    """Split an answer into sentence-sized claims (bullets and line breaks separate claims too)."""
    parts = (_BULLET.sub("", p).strip() for p in _SENTENCE_END.split(answer))
    return [p for p in parts if p]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _numbers(text: str) -> set[str]:
    out: set[str] = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value.lstrip("0") or "0")
    return out


@dataclass(frozen=True)
class _Terms:
    numbers: set[str]
    entities: set[str]
    negated: bool
    content: set[str]

    @property
    def empty(self) -> bool:
        return not (self.numbers or self.entities or self.content)


def _terms(text: str) -> _Terms:
    text = text.replace("\u2019", "'")
    words = _WORD.findall(text)
    entities = {c.lower() for c in _CODE.findall(text)}
    for i, word in enumerate(words):
        # Capitalised words that do not start the sentence are taken as names (a crude NER).
        if i > 0 and word[0].isupper() and word.lower() not in _STOPWORDS and len(word) > 1:
            entities.add(word.lower())
    lower = [w.lower() for w in words]
    content = {_stem(w) for w in lower if len(w) >= 3 and w not in _STOPWORDS and w not in _NEGATIONS}
    content -= {_stem(e) for e in entities}
    return _Terms(
        numbers=_numbers(text),
        entities=entities,
        negated=any(w in _NEGATIONS or w.endswith("n't") for w in lower),
        content=content,
    )


@dataclass(frozen=True)
class _ChunkIndex:
    id: str
    text: str
    terms: _Terms
    words: set[str]
    sentences: tuple[tuple[set[str], bool], ...]  # per sentence: stemmed words, negated


def _index(chunks: Sequence[Chunk]) -> list[_ChunkIndex]:
    indexed: list[_ChunkIndex] = []
    for chunk in chunks:
        if not chunk.text or _SHA256.match(chunk.text):
            continue  # content not captured (off, or only its hash): nothing to compare with
        lowered = chunk.text.lower().replace("\u2019", "'")
        sentences = tuple(
            ({_stem(w.lower()) for w in _WORD.findall(sent)}, _terms(sent).negated)
            for sent in split_claims(chunk.text)
        )
        indexed.append(
            _ChunkIndex(
                chunk.id, lowered, _terms(chunk.text), {_stem(w) for w in _WORD.findall(lowered)}, sentences
            )
        )
    return indexed


def _support(claim: _Terms, chunk: _ChunkIndex) -> tuple[bool, float, list[str]]:
    missing: list[str] = [n for n in sorted(claim.numbers) if n not in chunk.terms.numbers]
    missing += [e for e in sorted(claim.entities) if e not in chunk.text]
    # Polarity is compared with the chunk sentence sharing most words with the claim (ties: same polarity).
    if chunk.sentences:
        _, negated = max(
            chunk.sentences, key=lambda sent: (len(claim.content & sent[0]), sent[1] == claim.negated)
        )
        if negated != claim.negated:
            missing.append("(negation)")
    covered = len(claim.content & chunk.words) / len(claim.content) if claim.content else 1.0
    return not missing and covered >= CONTENT_COVERAGE, covered, missing


@register_judge("offline_groundedness")
class OfflineGroundednessJudge:
    """Groundedness without a model: each sentence must be found in one retrieved chunk (see module doc)."""

    name = "groundedness"
    model: str | None = "offline"
    prompt_version = "offline-groundedness-1"
    needs_question = False

    async def judge(
        self,
        *,
        answer: str,
        chunks: Sequence[Chunk],
        question: str | None = None,
        mode: JudgeMode = "answer",
    ) -> JudgeVerdict:
        return self.judge_sync(answer=answer, chunks=chunks, mode=mode)

    def judge_sync(self, *, answer: str, chunks: Sequence[Chunk], mode: JudgeMode = "answer") -> JudgeVerdict:
        """The same verdict as :meth:`judge`, synchronously (it does no I/O)."""
        indexed = _index(chunks)
        claims = [(c, _terms(c)) for c in split_claims(answer)]
        claims = [(c, t) for c, t in claims if not t.empty]
        if not claims:
            return JudgeVerdict(score=0.0, verdict=False, detail="no checkable claim in the answer")
        if not indexed:
            return JudgeVerdict(
                score=0.0, verdict=False, detail="no retrieved chunk text to support the answer"
            )
        results: list[dict[str, object]] = []
        for text, terms in claims:
            best: tuple[bool, float, list[str], str] | None = None
            for chunk in indexed:
                ok, covered, missing = _support(terms, chunk)
                key = (ok, covered, -len(missing))
                if best is None or key > (best[0], best[1], -len(best[2])):
                    best = (ok, covered, missing, chunk.id)
            assert best is not None
            ok, covered, missing, chunk_id = best
            item: dict[str, object] = {
                "claim": text,
                "supported": ok,
                "document_id": chunk_id if ok else None,
            }
            if not ok:
                item["missing"] = missing + ([f"content words {covered:.0%} found"] if covered < 1 else [])
            results.append(item)
        supported = sum(1 for r in results if r["supported"])
        score = supported / len(results)
        unsupported = [str(r["claim"]) for r in results if not r["supported"]]
        detail = f"{supported}/{len(results)} claims supported"
        if unsupported:
            detail += "; unsupported: " + " | ".join(u[:80] for u in unsupported[:3])
        return JudgeVerdict(
            score=score,
            verdict=supported == len(results),
            detail=detail,
            claims=tuple(results) if mode == "claims" else (),
        )


@register_judge("offline_context_relevance")
class OfflineContextRelevanceJudge:
    """Context relevance without a model: relevant chunks share enough of the question's terms."""

    name = "context_relevance"
    model: str | None = "offline"
    prompt_version = "offline-context-relevance-1"
    needs_question = True

    async def judge(
        self,
        *,
        answer: str,
        chunks: Sequence[Chunk],
        question: str | None = None,
        mode: JudgeMode = "answer",
    ) -> JudgeVerdict:
        q = _terms(question or "")
        q_words = q.content | q.entities | q.numbers
        if not chunks:
            return JudgeVerdict(score=0.0, verdict=False, detail="no chunk retrieved")
        need = max(1, math.ceil(RELEVANCE_OVERLAP * len(q_words)))
        items: list[dict[str, object]] = []
        for chunk in chunks:
            text = "" if not chunk.text or _SHA256.match(chunk.text) else chunk.text
            t = _terms(text)
            shared = q_words & (
                t.content | t.entities | t.numbers | {_stem(w.lower()) for w in _WORD.findall(text)}
            )
            items.append({"document_id": chunk.id, "relevant": len(shared) >= need, "shared": sorted(shared)})
        relevant = sum(1 for i in items if i["relevant"])
        return JudgeVerdict(
            score=relevant / len(items),
            detail=f"{relevant}/{len(items)} chunks share at least {need} question term(s)",
            chunks=tuple(items),
        )
