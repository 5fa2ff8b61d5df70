"""Arize Phoenix as a trace source and a sink, through its REST API (``/v1/projects/{project}/...``).

Settings (an explicit argument wins): ``PHOENIX_COLLECTOR_ENDPOINT`` (e.g. ``http://localhost:6006``;
a trailing ``/v1/traces`` is ignored), ``PHOENIX_API_KEY`` (sent as a bearer token) and
``PHOENIX_PROJECT_NAME`` (default ``default``).

Reading: traces are listed newest first (``/traces``), their spans fetched in batches (``/spans``) and
rebuilt through replaygate's normalisation, so a trace reads as it does from the embedded store. Trace
and span annotations are feedback: a negative score (in [-1, 0)) or a negative label (``negative``,
``thumbs-down``, ``bad``, ``incorrect``, ``unhelpful``, ``wrong``) makes the trace a failure candidate
(``negative_feedback``); replaygate's own annotations (``replaygate.*``) never do.

Writing: :meth:`PhoenixSource.annotate` upserts trace annotations (same ``identifier``, same
annotation: pushing twice changes nothing).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from replaygate.instrumentation import TraceRecord

from replaygate.sources._errors import SourceError
from replaygate.sources._http import JsonClient
from replaygate.sources._paging import cursor_pages
from replaygate.sources._records import (
    NEGATIVE_LABELS,
    OWN_PREFIX,
    FeedbackItem,
    build_record,
    iso_to_ns,
    ns_to_iso,
    rebuild_span,
    unique_prefix,
)

__all__ = [
    "NEGATIVE_LABELS",
    "PHOENIX_API_KEY_ENV",
    "PHOENIX_ENDPOINT_ENV",
    "PHOENIX_PROJECT_ENV",
    "Annotation",
    "PhoenixSource",
    "feedback_from_annotation",
]

PHOENIX_ENDPOINT_ENV = "PHOENIX_COLLECTOR_ENDPOINT"
PHOENIX_API_KEY_ENV = "PHOENIX_API_KEY"
PHOENIX_PROJECT_ENV = "PHOENIX_PROJECT_NAME"
_PAGE = 100
_BATCH = 50  # trace ids per span / annotation request
MAX_SCAN = 5000  # traces read at most when looking for failures


@dataclass(frozen=True)
class Annotation:
    """One annotation to write on a trace: a label and/or a score, with an explanation."""

    trace_id: str
    name: str
    label: str | None = None
    score: float | None = None
    explanation: str | None = None
    identifier: str = ""
    metadata: Mapping[str, Any] | None = None
    annotator_kind: str = "CODE"


def feedback_from_annotation(item: Mapping[str, Any]) -> FeedbackItem | None:
    """The feedback an annotation carries (None for replaygate's own, or one without a score or label)."""
    name = str(item.get("name") or "")
    if name.startswith(OWN_PREFIX):
        return None
    result = item.get("result") or {}
    score = result.get("score")
    label = str(result.get("label") or "").strip().lower()
    value: float | None = None
    if isinstance(score, int | float) and not isinstance(score, bool) and -1.0 <= score <= 1.0:
        value = float(score)
    if label in NEGATIVE_LABELS:
        value = -1.0 if value is None or value >= 0 else value
    if value is None:
        return None
    return FeedbackItem(
        score=value,
        comment=result.get("explanation") or label or None,
        created_ns=iso_to_ns(item.get("created_at")),
        name=name or "annotation",
    )


class PhoenixSource:
    """Read traces, failures and annotations from one Phoenix project; write annotations back."""

    name = "phoenix"

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        api_key: str | None = None,
        project: str | None = None,
        timeout_s: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        raw = endpoint or os.environ.get(PHOENIX_ENDPOINT_ENV) or ""
        if not raw:
            raise SourceError(
                f"no Phoenix endpoint: set {PHOENIX_ENDPOINT_ENV} (e.g. http://localhost:6006) "
                "or give the URL (--source phoenix:URL; for push, --url URL)"
            )
        base = raw.rstrip("/").removesuffix("/v1/traces")
        if not base.startswith(("http://", "https://")):
            raise SourceError(f"Phoenix endpoint {raw!r} must be an http(s):// URL")
        key = api_key if api_key is not None else os.environ.get(PHOENIX_API_KEY_ENV)
        self.project = project or os.environ.get(PHOENIX_PROJECT_ENV) or "default"
        if any(ch in self.project for ch in "/?#"):
            raise SourceError(f"Phoenix project name {self.project!r} cannot contain '/', '?' or '#'")
        self.base_url = base
        self._http = JsonClient(
            f"Phoenix (project {self.project})",
            base,
            headers={"Authorization": f"Bearer {key}"} if key else None,
            timeout_s=timeout_s,
            transport=transport,
        )

    def __enter__(self) -> PhoenixSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def describe(self) -> str:
        return f"Phoenix {self.base_url} (project {self.project})"

    # -- reading ---------------------------------------------------------------------------------------

    def _project_path(self, tail: str) -> str:
        return f"/v1/projects/{self.project}/{tail}"

    def _trace_ids(
        self,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        newest_first: bool = True,
    ) -> Iterator[str]:
        params = {
            "start_time": ns_to_iso(since_ns) if since_ns else None,
            "end_time": ns_to_iso(until_ns) if until_ns else None,
            "session_identifier": [session_id] if session_id else None,
            "sort": "start_time",
            "order": "desc" if newest_first else "asc",
            "limit": _PAGE,
        }
        for item in self._paged(self._project_path("traces"), params, "traces"):
            trace_id = item.get("trace_id")
            if isinstance(trace_id, str):
                yield trace_id

    def _paged(self, path: str, params: dict[str, Any], what: str) -> Iterator[dict[str, Any]]:
        def fetch(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
            page = self._http.get(path, {**params, "cursor": cursor})
            found = page.get("next_cursor") if isinstance(page, dict) else None
            return _data(page, what), found if isinstance(found, str) else None

        return cursor_pages(fetch, f"{self.describe()} ({what})")

    def _records(self, trace_ids: Sequence[str]) -> list[TraceRecord]:
        """Whole traces for ``trace_ids`` (in that order; ids with no agent span are left out)."""
        records: dict[str, TraceRecord] = {}
        for start in range(0, len(trace_ids), _BATCH):
            batch = list(trace_ids[start : start + _BATCH])
            spans: dict[str, list[Any]] = {t: [] for t in batch}
            for item in self._paged(self._project_path("spans"), {"trace_id": batch, "limit": 1000}, "spans"):
                record = _span_record(item, self.describe())
                spans.setdefault(record.trace_id, []).append(record)
            feedback = self._feedback(batch, spans)
            for trace_id in batch:
                built = build_record(spans.get(trace_id, []), feedback.get(trace_id, []))
                if built is not None:
                    records[trace_id] = built
        return [records[t] for t in trace_ids if t in records]

    def _feedback(
        self, trace_ids: list[str], spans: Mapping[str, list[Any]]
    ) -> dict[str, list[FeedbackItem]]:
        found: dict[str, list[FeedbackItem]] = {}
        for item in self._paged(
            self._project_path("trace_annotations"), {"trace_ids": trace_ids, "limit": 1000}, "annotations"
        ):
            feedback = feedback_from_annotation(item)
            if feedback is not None and isinstance(item.get("trace_id"), str):
                found.setdefault(item["trace_id"], []).append(feedback)
        owner = {span.span_id: trace for trace, items in spans.items() for span in items}
        span_ids = list(owner)
        for start in range(0, len(span_ids), 200):
            for item in self._paged(
                self._project_path("span_annotations"),
                {"span_ids": span_ids[start : start + 200], "limit": 1000},
                "annotations",
            ):
                feedback = feedback_from_annotation(item)
                trace = owner.get(str(item.get("span_id")))
                if feedback is not None and trace is not None:
                    found.setdefault(trace, []).append(feedback)
        return found

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        """Traces newest first (only those with an agent span), optionally filtered as the store does."""
        out: list[TraceRecord] = []
        batch: list[str] = []
        for trace_id in self._trace_ids(since_ns, until_ns, session_id):
            batch.append(trace_id)
            if len(batch) >= _BATCH:
                out.extend(r for r in self._records(batch) if variant is None or r.summary.variant == variant)
                batch = []
                if limit is not None and len(out) >= limit:
                    break
        if batch and (limit is None or len(out) < limit):
            out.extend(r for r in self._records(batch) if variant is None or r.summary.variant == variant)
        return out[:limit] if limit is not None else out

    def failures(
        self, reasons: Iterable[str] | None = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]:
        """Failure candidates newest first: errors, empty answers, escalations, marks, negative annotations.

        At most :data:`MAX_SCAN` traces are read; narrow ``since_ns`` to look further back.
        """
        wanted = set(reasons or ())
        out: list[TraceRecord] = []
        batch: list[str] = []
        scanned = 0

        def keep(records: list[TraceRecord]) -> None:
            for record in records:
                found = set(record.summary.failure_reasons)
                if found and (not wanted or found & wanted):
                    out.append(record)

        for trace_id in self._trace_ids(since_ns):
            batch.append(trace_id)
            scanned += 1
            if len(batch) >= _BATCH:
                keep(self._records(batch))
                batch = []
                if (limit is not None and len(out) >= limit) or scanned >= MAX_SCAN:
                    break
        if batch:
            keep(self._records(batch))
        return out[:limit] if limit is not None else out

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        """Every trace of one session, oldest first."""
        ids = list(self._trace_ids(session_id=session_id, newest_first=False))
        return self._records(ids)

    def get_trace(self, trace_id: str) -> TraceRecord:
        """One trace with its spans, summary and feedback."""
        full = self.resolve_trace_id(trace_id)
        found = self._records([full])
        if not found:
            raise SourceError(
                f"trace {full} is not in {self.describe()} (or has no agent span): list traces with "
                "`replaygate traces --source phoenix`"
            )
        return found[0]

    def resolve_trace_id(self, prefix: str) -> str:
        """The full id of the one trace whose id starts with ``prefix`` (6 to 32 hex digits).

        A prefix is looked up among the newest :data:`MAX_SCAN` traces (Phoenix finds full ids only).
        """
        return unique_prefix(prefix, self._trace_ids(), self.describe(), MAX_SCAN)

    # -- writing ---------------------------------------------------------------------------------------

    def annotate(self, annotations: Sequence[Annotation]) -> int:
        """Upsert trace annotations (by name and identifier); returns how many Phoenix accepted."""
        accepted = 0
        for start in range(0, len(annotations), 100):
            body = {
                "data": [
                    {
                        "trace_id": a.trace_id,
                        "name": a.name,
                        "annotator_kind": a.annotator_kind,
                        "result": {"label": a.label, "score": a.score, "explanation": a.explanation},
                        "metadata": dict(a.metadata or {}),
                        "identifier": a.identifier,
                    }
                    for a in annotations[start : start + 100]
                ]
            }
            reply = self._http.post("/v1/trace_annotations", body, {"sync": True})
            accepted += len(_data(reply, "inserted annotations"))
        return accepted

    def existing_traces(self, trace_ids: Sequence[str]) -> set[str]:
        """Which of these traces Phoenix has (annotations can only go on traces it has)."""
        found: set[str] = set()
        for start in range(0, len(trace_ids), _BATCH):
            batch = list(trace_ids[start : start + _BATCH])
            params = {"trace_id": batch, "parent_id": "null", "limit": 1000}
            for item in self._paged(self._project_path("spans"), params, "spans"):
                trace_id = (item.get("context") or {}).get("trace_id")
                if isinstance(trace_id, str):
                    found.add(trace_id)
        return found

    def export_otlp(self, body: bytes) -> None:
        """Send one OTLP/protobuf export request to Phoenix's collector endpoint (``/v1/traces``)."""
        self._http.post_bytes("/v1/traces", body, "application/x-protobuf")

    def create_spans(self, spans: Sequence[Mapping[str, Any]]) -> int:
        """Create spans in the project (Phoenix's REST shape); returns how many Phoenix queued."""
        reply = self._http.post(self._project_path("spans"), {"data": list(spans)})
        queued = reply.get("total_queued") if isinstance(reply, dict) else None
        if not isinstance(queued, int):
            raise SourceError("Phoenix answered a span creation without 'total_queued'")
        return queued

    def trace_annotations(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Every annotation on these traces as Phoenix returns them (``name``, ``result``, ``identifier``)."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(trace_ids), _BATCH):
            out.extend(
                self._paged(
                    self._project_path("trace_annotations"),
                    {"trace_ids": list(trace_ids[start : start + _BATCH]), "limit": 1000},
                    "annotations",
                )
            )
        return out


def _data(page: Any, what: str) -> list[dict[str, Any]]:
    if not isinstance(page, dict) or not isinstance(page.get("data"), list):
        raise SourceError(f"Phoenix answered a {what} page without a 'data' list")
    return [item for item in page["data"] if isinstance(item, dict)]


def _span_record(item: Mapping[str, Any], where: str) -> Any:
    context = item.get("context") or {}
    try:
        return rebuild_span(
            trace_id=str(context.get("trace_id")),
            span_id=str(context.get("span_id")),
            parent_id=item.get("parent_id") or None,
            name=str(item.get("name") or ""),
            start_ns=iso_to_ns(item.get("start_time")),
            end_ns=iso_to_ns(item.get("end_time")),
            status=item.get("status_code"),
            status_message=item.get("status_message"),
            attributes=item.get("attributes") or {},
            events=(
                (str(e.get("name") or ""), iso_to_ns(e.get("timestamp")), e.get("attributes") or {})
                for e in item.get("events") or ()
                if isinstance(e, dict)
            ),
        )
    except (ValueError, TypeError) as exc:
        raise SourceError(f"{where} sent a span that cannot be read ({exc})") from None
