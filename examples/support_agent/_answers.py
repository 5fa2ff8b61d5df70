"""Writing answers from retrieved chunks (pure): pick the sentences that answer the question.

A grounded answer quotes policy sentences verbatim, so every amount and duration it states is in a
retrieved chunk. The planted ungrounded claims are deliberately absent from the knowledge base.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from examples.support_agent._retriever import ScoredChunk
from examples.support_agent._text import split_sentences, tokenize

__all__ = ["REFUSALS", "UNGROUNDED_CLAIMS", "best_sentences", "grounded_answer", "ungrounded_claim"]

_DURATION_CUE = re.compile(
    r"\b(how long|when|how soon|how quickly|how many days|take|ago|\d+\s*(?:days?|weeks?|months?))\b", re.I
)
_DURATION = re.compile(r"\b(day|days|hours?|minutes?|year|years|weeks?)\b", re.I)
_MONEY_CUE = re.compile(r"\b(how much|cost|price|fee|fees|charge|limit|maximum)\b", re.I)

#: Claims no document supports (amounts and durations chosen to appear nowhere in the knowledge base).
UNGROUNDED_CLAIMS: dict[str, str] = {
    "refund-policy": "Refunds usually reach your account within 24 hours.",
    "refund-limits": "Agents can approve refunds of up to $500 without a supervisor.",
    "shipping-domestic": "Express shipping is free on every order this month.",
    "shipping-international": "International orders arrive within 3 business days.",
    "returns-window": "You can return any item within 90 days, even if it has been used.",
    "returns-damaged": "You can report damage up to 60 days after delivery.",
    "account-password": "The reset link stays valid for 48 hours.",
    "account-delete": "A deleted account can be restored at any time within 2 years.",
    "payment-methods": "We also accept cash on delivery for orders under $300.",
    "order-cancellation": "Orders can be cancelled within 48 hours even after they ship.",
    "warranty": "All products carry a 3-year warranty, accidental damage included.",
    "escalation-policy": "Every escalated customer receives a $50 credit.",
    "": "As a goodwill gesture, every customer gets a $50 credit.",
}

REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "Unfortunately I'm not able to assist with this.",
    "I'm afraid I can't help you with that.",
)


def best_sentences(question: str, chunks: Sequence[ScoredChunk], limit: int = 2) -> list[str]:
    """Return up to ``limit`` sentences from ``chunks`` that best answer ``question``, in reading order."""
    q_tokens = set(tokenize(question))
    want_duration = bool(_DURATION_CUE.search(question))
    want_money = bool(_MONEY_CUE.search(question))
    scored: list[tuple[float, int, str]] = []
    position = 0
    for sc in chunks:
        for sentence in split_sentences(sc.chunk.text):
            s_tokens = set(tokenize(sentence))
            score = len(q_tokens & s_tokens) + 0.5 * sc.score
            if want_duration and _DURATION.search(sentence):
                score += 1.5
            if want_money and "$" in sentence:
                score += 1.5
            scored.append((score, position, sentence))
            position += 1
    top = sorted(scored, key=lambda t: (-t[0], t[1]))[:limit]
    top = [t for t in top if t[0] > 0.5] or top[:1]
    return [s for _, _, s in sorted(top, key=lambda t: t[1])]


def grounded_answer(question: str, chunks: Sequence[ScoredChunk], limit: int = 2) -> str:
    """Answer ``question`` by quoting the best sentences of the chunks (empty string without chunks)."""
    return " ".join(best_sentences(question, chunks, limit))


def ungrounded_claim(doc_id: str | None) -> str:
    """Return the planted unsupported claim for the topic of ``doc_id``."""
    return UNGROUNDED_CLAIMS.get(doc_id or "", UNGROUNDED_CLAIMS[""])
