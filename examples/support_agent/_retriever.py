"""A deterministic TF-IDF retriever over the knowledge-base chunks (pure Python, no I/O).

Scores are cosine similarities in [0, 1] (sublinear term frequency, smoothed idf, title words counted
twice). ``search`` returns the top k chunks; with a similarity threshold, chunks of the top k scoring
below it are dropped and counted in ``filtered``, so a threshold that never filters shows as a no-op.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from examples.support_agent._kb import KbChunk, chunk_documents
from examples.support_agent._text import tokenize

__all__ = ["RetrievalResult", "Retriever", "ScoredChunk"]


@dataclass(frozen=True)
class ScoredChunk:
    """One retrieved chunk with its cosine score and rank (from 1)."""

    chunk: KbChunk
    score: float
    rank: int

    def as_document(self) -> dict[str, object]:
        """Return the chunk as the instrumentation's document dict (id, score, text, metadata)."""
        return {
            "id": self.chunk.id,
            "score": round(self.score, 6),
            "text": self.chunk.text,
            "metadata": {"doc_id": self.chunk.doc_id, "title": self.chunk.title},
        }


@dataclass(frozen=True)
class RetrievalResult:
    """The chunks kept, best first, and how many of the top k the threshold removed."""

    query: str
    chunks: tuple[ScoredChunk, ...]
    threshold: float | None
    filtered: int


class Retriever:
    """TF-IDF cosine retrieval over a fixed set of chunks."""

    def __init__(self, chunks: tuple[KbChunk, ...] | None = None) -> None:
        self._chunks = chunks if chunks is not None else chunk_documents()
        bags = [Counter(tokenize(c.title) * 2 + tokenize(c.text)) for c in self._chunks]
        n = len(bags)
        df: Counter[str] = Counter()
        for bag in bags:
            df.update(bag.keys())
        self._idf = {term: math.log((n + 1) / (count + 1)) + 1.0 for term, count in df.items()}
        self._vectors = [self._vector(bag) for bag in bags]

    @property
    def chunks(self) -> tuple[KbChunk, ...]:
        """Every chunk in the index, in index order."""
        return self._chunks

    def _vector(self, bag: Counter[str]) -> dict[str, float]:
        weights = {t: (1.0 + math.log(c)) * self._idf.get(t, 0.0) for t, c in bag.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {t: w / norm for t, w in weights.items() if w > 0} if norm > 0 else {}

    def score_all(self, query: str) -> list[tuple[KbChunk, float]]:
        """Score every chunk against ``query``; best first, ties broken by index order."""
        qvec = self._vector(Counter(tokenize(query)))
        scored = [
            (chunk, sum(w * vec.get(t, 0.0) for t, w in qvec.items()))
            for chunk, vec in zip(self._chunks, self._vectors, strict=True)
        ]
        order = sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))
        return [scored[i] for i in order]

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> RetrievalResult:
        """Return the top ``k`` chunks with a positive score, minus those under ``threshold``."""
        top = [(c, s) for c, s in self.score_all(query) if s > 0][:k]
        kept = [(c, s) for c, s in top if threshold is None or s >= threshold]
        return RetrievalResult(
            query=query,
            chunks=tuple(ScoredChunk(c, s, rank) for rank, (c, s) in enumerate(kept, start=1)),
            threshold=threshold,
            filtered=len(top) - len(kept),
        )
