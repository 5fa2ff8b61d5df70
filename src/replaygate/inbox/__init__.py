"""replaygate.inbox: the failure inbox grouped into classes, and the checks each class suggests.

Production failures cluster into a handful of kinds, and each kind maps to an assertion pattern::

    from replaygate.inbox import classify_failures
    from replaygate.instrumentation import TraceStore

    with TraceStore() as store:
        classes = classify_failures(store.list_traces(since_ns=since, limit=None))
    for c in classes:
        print(c.key, c.count, c.trend, c.covered_by, c.pattern)

A rule layer recognises the known kinds from one trace (refusal phrasing with no tool call or retrieval,
unparseable structured output, markdown structure on a short question, a correction contradicted later,
a missed escalation, a claim no chunk or tool result supports, empty answers, exceptions); the failure
candidates no rule recognises are clustered by content (TF-IDF and agglomerative clustering,
scikit-learn). ``replaygate inbox`` prints the classes; ``replaygate promote TRACE --class-checks``
drafts the class's checks (:func:`suggest_checks`), and promotion refuses checks that contradict each
other (:func:`contradictions`).
"""

from replaygate.inbox._classes import ClassMember, FailureClass, classify_failures
from replaygate.inbox._clusters import cluster_documents, trace_document
from replaygate.inbox._patterns import PATTERNS, contradictions, similar_good_traces, suggest_checks
from replaygate.inbox._rules import (
    ESCALATION_REQUEST,
    REFUSAL,
    RULES,
    Rule,
    RuleMatch,
    in_conversation,
    match_rules,
)

__all__ = [
    "ESCALATION_REQUEST",
    "PATTERNS",
    "REFUSAL",
    "RULES",
    "ClassMember",
    "FailureClass",
    "Rule",
    "RuleMatch",
    "classify_failures",
    "cluster_documents",
    "contradictions",
    "in_conversation",
    "match_rules",
    "similar_good_traces",
    "suggest_checks",
    "trace_document",
]
