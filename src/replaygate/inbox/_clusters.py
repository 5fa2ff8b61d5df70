"""Similarity clusters of the failure candidates no rule recognised (scikit-learn, deterministic).

Each trace becomes one document: its failure reasons (as tokens such as ``reason_escalation``), the last
user turn, the answer, and the comments of its feedback. Documents are weighted with TF-IDF (unigrams and
bigrams, English stop words dropped, sublinear term frequency) and grouped by agglomerative clustering
(average linkage, cosine distance) cut at ``distance_threshold``; a cluster is named after its heaviest
terms. The same traces always give the same clusters: nothing here is random. Memory stays bounded: the
distances are computed from the sparse TF-IDF rows, and only the first ``max_documents`` (the newest
failures, as the inbox lists them) are clustered; each later one joins the cluster whose centroid it is
closest to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from replaygate.instrumentation import TraceRecord

__all__ = ["DISTANCE_THRESHOLD", "cluster_documents", "trace_document"]

#: Cosine distance at which the dendrogram is cut (lower: more, tighter clusters).
DISTANCE_THRESHOLD = 0.8
#: Documents clustered at most (the distance matrix is this size squared); the rest join the nearest.
MAX_DOCUMENTS = 2000
_VOLATILE = re.compile(r"\b[A-Z]{2,}-[0-9a-f]{4,}\b|\$?\d[\d,.]*")


def trace_document(record: TraceRecord) -> str:
    """The text one trace is clustered by (ids and numbers masked: they differ in every trace)."""
    s = record.summary
    parts = [" ".join(f"reason_{r}" for r in s.failure_reasons)]
    parts.append(s.turns[-1] if s.turns else "")
    parts.append(s.output or "")
    parts += [str(f.get("comment") or "") for f in record.feedback]
    return _VOLATILE.sub(" ", " ".join(parts))


def cluster_documents(
    documents: Sequence[str],
    *,
    distance_threshold: float = DISTANCE_THRESHOLD,
    name_terms: int = 3,
    max_documents: int = MAX_DOCUMENTS,
) -> list[tuple[str, list[int]]]:
    """Group documents; returns (name, member indices) per cluster, largest first.

    One document is its own cluster; documents without any usable term share one ``other`` cluster.
    """
    if not documents:
        return []
    if len(documents) == 1:
        return [(_fallback_name(documents[0]), [0])]
    # lazy: scikit-learn (and scipy under it) loads when failures are clustered, not with every command
    from sklearn.cluster import AgglomerativeClustering  # noqa: PLC0415
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: PLC0415

    vectorizer = TfidfVectorizer(
        stop_words="english", ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b[a-z_]{3,}\b"
    )
    try:
        matrix = vectorizer.fit_transform([d.lower() for d in documents])
    except ValueError:  # no term in any document
        return [("other", list(range(len(documents))))]
    norms = np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel()
    usable = np.flatnonzero(norms > 0)
    usable_set = set(usable.tolist())
    clusters: list[tuple[str, list[int]]] = []
    empty = [i for i in range(len(documents)) if i not in usable_set]
    if len(usable) == 1:
        clusters.append((_fallback_name(documents[int(usable[0])]), [int(usable[0])]))
    elif len(usable) > 1:
        head, tail = usable[:max_documents], usable[max_documents:]
        rows = matrix[head]
        distances = np.clip(1.0 - (rows @ rows.T).toarray(), 0.0, 2.0)  # TF-IDF rows are L2-normalised
        np.fill_diagonal(distances, 0.0)
        model = AgglomerativeClustering(
            n_clusters=None, distance_threshold=distance_threshold, metric="precomputed", linkage="average"
        )
        labels = model.fit_predict(distances)
        groups = {int(k): [int(head[i]) for i in np.flatnonzero(labels == k)] for k in set(labels.tolist())}
        if len(tail):
            keys = sorted(groups)
            centroids = np.vstack([np.asarray(matrix[groups[k]].mean(axis=0)).ravel() for k in keys])
            nearest = np.asarray((matrix[tail] @ centroids.T).argmax(axis=1)).ravel()
            for i, j in zip(tail.tolist(), nearest.tolist(), strict=True):
                groups[keys[j]].append(int(i))
        terms = vectorizer.get_feature_names_out()
        for key in sorted(groups):
            members = sorted(groups[key])
            weights = np.asarray(matrix[members].sum(axis=0)).ravel()
            top = [str(terms[j]) for j in np.argsort(-weights, kind="stable")[:name_terms] if weights[j] > 0]
            clusters.append((" / ".join(t.replace("reason_", "") for t in top) or "other", members))
    if empty:
        clusters.append(("other", empty))
    clusters.sort(key=lambda c: (-len(c[1]), c[1][0]))
    return clusters


def _fallback_name(document: str) -> str:
    words = [w for w in re.findall(r"[a-z_]{3,}", document.lower())][:3]
    return " / ".join(w.replace("reason_", "") for w in words) or "other"
