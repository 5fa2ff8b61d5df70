"""replaygate.sources: where teams already keep their traces (Langfuse, Phoenix) as sources and sinks.

A source lists traces and failure candidates, reads one trace with its session, and resolves ids,
exactly as the embedded store does, so ``replaygate failures|traces|trace|promote --source
langfuse|phoenix|store`` work alike::

    from replaygate.sources import PhoenixSource, open_source

    with PhoenixSource("http://localhost:6006", project="support-agent") as phoenix:
        for record in phoenix.failures(since_ns=...):
            print(record.summary.trace_id, record.summary.failure_reasons)

Spans of any dialect are read through replaygate's one normalisation (``span_to_record`` and
``summarize_spans``), never parsed here. Results go back with :func:`push_run` and
:func:`push_report` (Langfuse scores, Phoenix trace annotations; idempotent).

Environment: ``PHOENIX_COLLECTOR_ENDPOINT``, ``PHOENIX_API_KEY``, ``PHOENIX_PROJECT_NAME``;
``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY``, ``LANGFUSE_HOST``. A source that cannot be reached,
refuses the keys or keeps answering 429 is a :class:`SourceError`, never an empty inbox.
"""

from replaygate.sources._errors import SourceError
from replaygate.sources._langfuse import LangfuseScore, LangfuseSource, feedback_from_score, score_id
from replaygate.sources._open import SOURCE_KINDS, TraceSource, open_source, source_kind
from replaygate.sources._phoenix import Annotation, PhoenixSource, feedback_from_annotation
from replaygate.sources._push import PushResult, push_failures, push_report, push_run
from replaygate.sources._records import FeedbackItem

__all__ = [
    "SOURCE_KINDS",
    "Annotation",
    "FeedbackItem",
    "LangfuseScore",
    "LangfuseSource",
    "PhoenixSource",
    "PushResult",
    "SourceError",
    "TraceSource",
    "feedback_from_annotation",
    "feedback_from_score",
    "open_source",
    "push_failures",
    "push_report",
    "push_run",
    "score_id",
    "source_kind",
]
