import pytest

from examples.support_agent import Retriever

QUESTIONS = [
    ("How long does a refund take?", "refund-policy"),
    ("What is the most a refund can be without a supervisor approving it?", "refund-limits"),
    ("Can I return an item I bought 3 weeks ago?", "returns-window"),
    ("My package arrived broken, what can I do?", "returns-damaged"),
    ("I forgot my password", "account-password"),
    ("How long does shipping to Canada take?", "shipping-international"),
    ("How much does express shipping cost?", "shipping-domestic"),
    ("How do I delete my account?", "account-delete"),
    ("Do you accept PayPal?", "payment-methods"),
    ("Can I cancel my order?", "order-cancellation"),
    ("Is there a warranty on headphones?", "warranty"),
    ("I want to talk to a human, this is a formal complaint", "escalation-policy"),
]


@pytest.mark.parametrize(("question", "doc_id"), QUESTIONS)
def test_the_right_document_ranks_first(question, doc_id):
    result = Retriever().search(question, k=3)
    assert result.chunks, question
    assert result.chunks[0].chunk.doc_id == doc_id, [c.chunk.id for c in result.chunks]
    assert [c.rank for c in result.chunks] == list(range(1, len(result.chunks) + 1))
    scores = [c.score for c in result.chunks]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)


def test_retrieval_is_deterministic_and_top_k_bounded():
    r = Retriever()
    a = r.search("refund for a damaged item", k=4)
    b = Retriever().search("refund for a damaged item", k=4)
    assert [(c.chunk.id, c.score) for c in a.chunks] == [(c.chunk.id, c.score) for c in b.chunks]
    assert len(a.chunks) == 4 and a.filtered == 0 and a.threshold is None


def test_threshold_filters_and_counts_what_it_removed():
    r = Retriever()
    unfiltered = r.search("Do you accept PayPal or gift cards?", k=5)
    scores = [c.score for c in unfiltered.chunks]
    cut = (scores[0] + scores[-1]) / 2
    filtered = r.search("Do you accept PayPal or gift cards?", k=5, threshold=cut)
    assert 0 < len(filtered.chunks) < len(unfiltered.chunks)
    assert filtered.filtered == len(unfiltered.chunks) - len(filtered.chunks)
    assert all(c.score >= cut for c in filtered.chunks)
    # a threshold below every score filters nothing (the replay engine flags it as a no-op)
    assert r.search("Do you accept PayPal?", k=3, threshold=0.0).filtered == 0


def test_a_question_about_nothing_in_the_kb_retrieves_nothing():
    assert Retriever().search("xylophone quantum", k=3).chunks == ()


def test_documents_are_exported_as_instrumentation_dicts():
    doc = Retriever().search("reset password", k=1).chunks[0].as_document()
    assert doc["id"] == "account-password#0"
    assert set(doc) == {"id", "score", "text", "metadata"}
    assert doc["metadata"]["doc_id"] == "account-password" and "Forgot password" in str(doc["text"])
