"""Retrieval metrics of one attempt against a scenario's relevance labels.

Conventions (documented in the README and pinned by the tests):

* ``retrieved`` is the list of chunk ids in rank order (rank 1 first). Ties in similarity score keep the
  retriever's reported rank; the scorer orders chunks by ``(rank, position in the trace)``.
* A chunk matches a relevant document id when it is equal to it or starts with ``"<doc id>#"`` (chunk ids
  such as ``refund-limits#2`` belong to document ``refund-limits``).
* Only the first ``k`` chunks count. A document retrieved more than once counts once, at its first rank;
  later chunks of the same document take a position but earn no gain.
* ``hit_rate@k`` is 1 when any relevant document is in the top k; ``MRR@k`` is 1 / the rank of the first
  relevant chunk in the top k (0 when none); ``recall@k`` is the share of relevant documents found in the
  top k; ``nDCG@k`` uses linear gain (1 per newly found relevant document), a ``log2(rank + 1)`` discount
  and an ideal ranking over ``min(k, |relevant|)`` positions.
* ``k`` larger than the number of chunks is fine: the missing positions simply earn nothing.
* No relevant documents: every metric is 0.0 (nothing can be hit). The scorer records no retrieval
  scores at all for a scenario without (confirmed) labels, so these zeros never dilute an aggregate.
* A similarity threshold is a no-op for one attempt when it filtered nothing there; :func:`retrieval_summary`
  flags it as a no-op for the run when it filtered nothing in any attempt that reported it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from replaygate.instrumentation import Chunk
from replaygate.replay._run_summary_model import (
    RetrievalMeans,
    RetrievalSummary,
    ScenarioRetrieval,
    ThresholdReport,
)
from replaygate.replay._runfile import Attempt, RetrievalScores

__all__ = [
    "chunk_matches",
    "matched_document",
    "mean_retrieval_scores",
    "ranked_chunk_ids",
    "relevant_in_top_k",
    "retrieval_metrics",
    "retrieval_summary",
]


def chunk_matches(chunk_id: str, doc_id: str) -> bool:
    """Whether a chunk id belongs to a document id (equal, or ``<doc id>#...``)."""
    return chunk_id == doc_id or chunk_id.startswith(doc_id + "#")


def matched_document(chunk_id: str, relevant: Sequence[str]) -> str | None:
    """Return the first relevant document id the chunk belongs to, or None."""
    for doc in relevant:
        if chunk_matches(chunk_id, doc):
            return doc
    return None


def ranked_chunk_ids(chunks: Iterable[Chunk]) -> list[str]:
    """Chunk ids in rank order: by reported rank, ties (same rank) in trace order."""
    indexed = list(enumerate(chunks))
    indexed.sort(key=lambda item: (item[1].rank, item[0]))
    return [chunk.id for _, chunk in indexed]


def relevant_in_top_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> bool:
    """Whether any of the first ``k`` retrieved chunks belongs to a relevant document."""
    return any(matched_document(cid, relevant) is not None for cid in list(retrieved)[: max(k, 0)])


def retrieval_metrics(
    retrieved: Sequence[str],
    relevant: Sequence[str],
    k: int,
    *,
    threshold: float | None = None,
    filtered: int | None = None,
) -> RetrievalScores:
    """Compute hit rate@k, MRR@k, recall@k and nDCG@k (see the module docstring for the conventions).

    Args:
        retrieved: chunk (or document) ids in rank order.
        relevant: the relevant document ids from the scenario's labels.
        k: how many of the top chunks count (must be at least 1).
        threshold: the retriever's similarity threshold, when it reported one.
        filtered: how many chunks the threshold removed, when reported; 0 flags a no-op threshold.

    Returns:
        The scores; ``retrieved`` is the number of chunks the attempt retrieved (all of them, not only k).
    """
    if k < 1:
        raise ValueError(f"retrieval k must be at least 1, got {k}")
    relevant_docs = list(dict.fromkeys(relevant))
    top = list(retrieved)[:k]
    found: set[str] = set()
    first_rank: int | None = None
    dcg = 0.0
    for position, chunk_id in enumerate(top, start=1):
        doc = next(
            (d for d in relevant_docs if d not in found and chunk_matches(chunk_id, d)),
            None,
        )
        if doc is None:
            continue
        found.add(doc)
        if first_rank is None:
            first_rank = position
        dcg += 1.0 / math.log2(position + 1)
    if relevant_docs:
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(relevant_docs)) + 1))
        hit = 1.0 if found else 0.0
        mrr = 1.0 / first_rank if first_rank is not None else 0.0
        recall = len(found) / len(relevant_docs)
        ndcg = dcg / ideal
    else:
        hit = mrr = recall = ndcg = 0.0
    return RetrievalScores(
        k=k,
        hit_rate=hit,
        mrr=mrr,
        recall=recall,
        ndcg=ndcg,
        retrieved=len(retrieved),
        filtered=filtered if threshold is not None else None,
        threshold=threshold,
        threshold_noop=threshold is not None and filtered == 0,
    )


def mean_retrieval_scores(scores: Iterable[RetrievalScores]) -> RetrievalMeans | None:
    """Aggregate (mean) retrieval metrics over attempts; None when there are none."""
    items = list(scores)
    if not items:
        return None
    n = len(items)
    return RetrievalMeans(
        hit_rate=sum(s.hit_rate for s in items) / n,
        mrr=sum(s.mrr for s in items) / n,
        recall=sum(s.recall for s in items) / n,
        ndcg=sum(s.ndcg for s in items) / n,
        threshold_noop=float(sum(1 for s in items if s.threshold_noop)) / n,
    )


def _threshold_report(items: Sequence[RetrievalScores]) -> ThresholdReport | None:
    reported = [s for s in items if s.threshold is not None]
    if not reported:
        return None
    counted = [s.filtered for s in reported if s.filtered is not None]
    filtered = sum(counted)
    return ThresholdReport(
        values=sorted({s.threshold for s in reported if s.threshold is not None}),
        attempts=len(reported),
        filtered=filtered if counted else None,
        attempts_filtering=sum(1 for n in counted if n > 0),
        # A no-op for the run: the threshold reported how much it filtered and that was nothing, every time.
        noop=bool(counted) and filtered == 0,
    )


def retrieval_summary(attempts: Iterable[Attempt]) -> RetrievalSummary | None:
    """Aggregate the retrieval metrics of a run's attempts, per scenario and overall.

    Only attempts with retrieval scores count (scenarios with confirmed labels). ``threshold`` reports the
    retriever's similarity threshold when any attempt reported one: how many chunks it filtered in all,
    in how many attempts it filtered anything, and ``noop`` when it filtered nothing in any attempt.

    Returns:
        The summary (its JSON: ``attempts``, ``mean``, ``scenarios``, ``threshold``), or None when no
        attempt was scored.
    """
    by_scenario: dict[str, list[RetrievalScores]] = {}
    for a in attempts:
        if a.retrieval is not None:
            by_scenario.setdefault(a.scenario_id, []).append(a.retrieval)
    everything = [s for items in by_scenario.values() for s in items]
    mean = mean_retrieval_scores(everything)
    if mean is None:
        return None
    scenarios: dict[str, ScenarioRetrieval] = {}
    for sid, items in sorted(by_scenario.items()):
        means = mean_retrieval_scores(items)
        assert means is not None  # every listed scenario has at least one scored attempt
        scenarios[sid] = ScenarioRetrieval(
            attempts=len(items),
            k=max(s.k for s in items),
            **means.model_dump(),
            threshold=_threshold_report(items),
        )
    return RetrievalSummary(
        attempts=len(everything), mean=mean, scenarios=scenarios, threshold=_threshold_report(everything)
    )
