"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import Chunk
from replaygate.replay._retrieval_metrics import (
    chunk_matches,
    mean_retrieval_scores,
    ranked_chunk_ids,
    relevant_in_top_k,
    retrieval_metrics,
    retrieval_summary,
)
from replaygate.replay._runfile import Attempt, Measures, RetrievalScores

L2 = math.log2


def test_single_relevant_at_rank_two() -> None:
    s = retrieval_metrics(["a", "b", "c"], ["b"], k=3)
    assert s.hit_rate == 1.0
    assert s.mrr == pytest.approx(0.5)
    assert s.recall == 1.0
    assert s.ndcg == pytest.approx((1 / L2(3)) / 1.0)
    assert s.retrieved == 3 and s.k == 3


def test_two_relevant_partial_recall_and_ndcg() -> None:
    # relevant {a, d, x}; retrieved a (rank 1), b, d (rank 3); k = 3
    s = retrieval_metrics(["a", "b", "d", "e"], ["a", "d", "x"], k=3)
    dcg = 1 / L2(2) + 1 / L2(4)
    idcg = 1 / L2(2) + 1 / L2(3) + 1 / L2(4)
    assert s.mrr == 1.0
    assert s.recall == pytest.approx(2 / 3)
    assert s.ndcg == pytest.approx(dcg / idcg)


def test_relevant_outside_top_k_counts_nothing() -> None:
    s = retrieval_metrics(["a", "b", "c"], ["c"], k=2)
    assert (s.hit_rate, s.mrr, s.recall, s.ndcg) == (0.0, 0.0, 0.0, 0.0)
    assert s.retrieved == 3


def test_k_larger_than_the_number_of_chunks() -> None:
    s = retrieval_metrics(["a", "r1"], ["r1", "r2"], k=10)
    # ideal over min(k, |relevant|) = 2 positions
    assert s.ndcg == pytest.approx((1 / L2(3)) / (1 / L2(2) + 1 / L2(3)))
    assert s.recall == 0.5 and s.mrr == 0.5 and s.hit_rate == 1.0


def test_no_relevant_documents_gives_zeros() -> None:
    s = retrieval_metrics(["a", "b"], [], k=5)
    assert (s.hit_rate, s.mrr, s.recall, s.ndcg) == (0.0, 0.0, 0.0, 0.0)


def test_no_chunks() -> None:
    s = retrieval_metrics([], ["a"], k=3)
    assert (s.hit_rate, s.mrr, s.recall, s.ndcg, s.retrieved) == (0.0, 0.0, 0.0, 0.0, 0)


def test_duplicate_chunks_of_a_document_count_once_at_first_rank() -> None:
    s = retrieval_metrics(["refund#1", "refund#2", "other", "ship#3"], ["refund", "ship"], k=4)
    dcg = 1 / L2(2) + 1 / L2(5)
    idcg = 1 / L2(2) + 1 / L2(3)
    assert s.recall == 1.0 and s.mrr == 1.0
    assert s.ndcg == pytest.approx(dcg / idcg)
    assert s.ndcg <= 1.0


def test_chunk_id_matching() -> None:
    assert chunk_matches("refund-limits#2", "refund-limits")
    assert chunk_matches("refund-limits", "refund-limits")
    assert not chunk_matches("refund-limits-old#2", "refund-limits")
    assert not chunk_matches("refund", "refund-limits")


def test_ties_in_score_keep_the_reported_rank_order() -> None:
    chunks = [
        Chunk(id="c", score=0.5, rank=3, text=None),
        Chunk(id="b", score=0.9, rank=2, text=None),  # tied score with "a": rank decides
        Chunk(id="a", score=0.9, rank=1, text=None),
        Chunk(id="d", score=0.9, rank=2, text=None),  # tied rank too (second retrieval): trace order
    ]
    assert ranked_chunk_ids(chunks) == ["a", "b", "d", "c"]
    s = retrieval_metrics(ranked_chunk_ids(chunks), ["d"], k=3)
    assert s.mrr == pytest.approx(1 / 3)
    assert relevant_in_top_k(ranked_chunk_ids(chunks), ["d"], 3)
    assert not relevant_in_top_k(ranked_chunk_ids(chunks), ["d"], 2)


def test_threshold_noop_flag() -> None:
    assert retrieval_metrics(["a"], ["a"], 1, threshold=0.7, filtered=0).threshold_noop
    kept = retrieval_metrics(["a"], ["a"], 1, threshold=0.7, filtered=3)
    assert not kept.threshold_noop and kept.filtered == 3 and kept.threshold == 0.7
    none = retrieval_metrics(["a"], ["a"], 1)
    assert not none.threshold_noop and none.filtered is None


def test_bad_k() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        retrieval_metrics(["a"], ["a"], 0)


def test_mean_scores() -> None:
    a = retrieval_metrics(["a"], ["a"], 1)
    b = retrieval_metrics(["b"], ["a"], 1)
    mean = mean_retrieval_scores([a, b])
    assert mean is not None and mean.hit_rate == 0.5 and mean.mrr == 0.5
    assert mean_retrieval_scores([]) is None


ids = st.lists(st.sampled_from(["a", "b", "c", "d#1", "d#2", "e"]), max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    retrieved=ids, relevant=st.lists(st.sampled_from(["a", "b", "d", "x"]), max_size=4), k=st.integers(1, 10)
)
def test_metrics_stay_in_range_and_recall_grows_with_k(
    retrieved: list[str], relevant: list[str], k: int
) -> None:
    s = retrieval_metrics(retrieved, relevant, k)
    for value in (s.hit_rate, s.mrr, s.recall, s.ndcg):
        assert 0.0 <= value <= 1.0 + 1e-12
    assert (s.hit_rate > 0) == (s.mrr > 0) == (s.recall > 0)
    bigger = retrieval_metrics(retrieved, relevant, k + 1)
    assert bigger.recall >= s.recall and bigger.hit_rate >= s.hit_rate and bigger.mrr >= s.mrr


def _attempt(sid: str, index: int, scores: RetrievalScores | None) -> Attempt:
    return Attempt(
        scenario_id=sid, index=index, status="pass", retrieval=scores, measures=Measures(latency_s=0.1)
    )


def test_run_summary_per_scenario_and_overall() -> None:
    attempts = [
        _attempt("a", 0, retrieval_metrics(["x", "r1"], ["r1"], 2, threshold=0.5, filtered=0)),  # MRR 1/2
        _attempt("a", 1, retrieval_metrics(["r1"], ["r1"], 2, threshold=0.5, filtered=2)),  # MRR 1
        _attempt("b", 0, retrieval_metrics(["x", "y"], ["r2"], 3, threshold=0.5, filtered=0)),  # miss
        _attempt("c", 0, None),  # no labels: not counted
    ]
    report = retrieval_summary(attempts)
    assert report is not None and report.attempts == 3
    assert report.mean.mrr == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert report.mean.hit_rate == pytest.approx(2 / 3)
    assert sorted(report.scenarios) == ["a", "b"]
    a, b = report.scenarios["a"], report.scenarios["b"]
    assert (a.attempts, a.k, a.mrr) == (2, 2, pytest.approx(0.75))
    assert (b.k, b.hit_rate, b.ndcg) == (3, 0.0, 0.0)
    # The threshold filtered 2 chunks in one attempt: not a no-op for the run, a no-op for scenario b.
    t = report.threshold
    assert t is not None
    assert (t.values, t.attempts, t.filtered, t.attempts_filtering, t.noop) == (
        [0.5],
        3,
        2,
        1,
        False,
    )
    assert b.threshold is not None and a.threshold is not None
    assert b.threshold.noop and not a.threshold.noop


def test_run_summary_threshold_that_never_filters_is_a_noop() -> None:
    attempts = [
        _attempt("a", i, retrieval_metrics(["r"], ["r"], 1, threshold=0.2, filtered=0)) for i in range(3)
    ]
    report = retrieval_summary(attempts)
    assert report is not None and report.threshold is not None
    assert report.threshold.noop and report.threshold.filtered == 0
    unreported = [_attempt("a", 0, retrieval_metrics(["r"], ["r"], 1, threshold=0.2))]
    quiet = retrieval_summary(unreported)
    assert quiet is not None and quiet.threshold is not None
    assert quiet.threshold.filtered is None and not quiet.threshold.noop
    none = retrieval_summary([_attempt("a", 0, retrieval_metrics(["r"], ["r"], 1))])
    assert none is not None and none.threshold is None
    assert retrieval_summary([_attempt("a", 0, None)]) is None


def test_summary_retrieval_is_typed_and_its_json_unchanged() -> None:
    """A run file's ``summary.retrieval`` as written before it was typed loads, and dumps key for key."""
    import json

    from replaygate.replay import RetrievalSummary, RunSummary

    threshold = {"values": [0.5], "attempts": 2, "filtered": 2, "attempts_filtering": 1, "noop": False}
    means = {"hit_rate": 0.5, "mrr": 0.25, "recall": 0.5, "ndcg": 0.3, "threshold_noop": 0.5}
    old = {
        "attempts": 2,
        "mean": means,
        "scenarios": {"a": {"attempts": 2, "k": 3, **means, "threshold": threshold}},
        "threshold": threshold,
    }
    summary = RunSummary.model_validate({"run_id": "r", "retrieval": old})
    assert isinstance(summary.retrieval, RetrievalSummary)
    assert summary.retrieval.scenarios["a"].threshold is not None
    assert json.dumps(summary.model_dump(mode="json")["retrieval"]) == json.dumps(
        old
    )  # same keys, same order
    attempts = [
        _attempt("a", i, retrieval_metrics(["x", "r1"], ["r1"], 2, threshold=0.5, filtered=i)) for i in (0, 2)
    ]
    made = retrieval_summary(attempts)
    assert made is not None
    assert list(made.model_dump()) == list(old) and list(made.model_dump()["scenarios"]["a"]) == list(
        old["scenarios"]["a"]
    )
