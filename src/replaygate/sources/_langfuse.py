"""Langfuse as a trace source and a sink, through its public API and its own client (``langfuse.api``).

Settings (an explicit argument wins): ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY`` (HTTP basic auth)
and ``LANGFUSE_HOST`` (``LANGFUSE_BASE_URL`` also read; default ``https://cloud.langfuse.com``).

Reading: observations come from ``GET /api/public/v2/observations`` (cursor pages; the real-time read
path) and scores from ``GET /api/public/v3/scores``. An observation that arrived through Langfuse's
OpenTelemetry endpoint keeps its span's attributes in ``metadata.attributes``: they are read through
replaygate's normalisation as they were written. An observation made with a Langfuse SDK is described
in OpenInference terms (kind, input, output, model, token usage) and read the same way. A trace is a
failure candidate for an exception, an empty answer, an escalation, an explicit mark, an ``ERROR``
observation, or negative user feedback: a numeric score below 0 (in [-1, 1]), a boolean ``false``, or a
categorical ``negative``/``thumbs-down``/``bad``/``incorrect``; replaygate's own scores
(``replaygate.*``) never count as feedback.

Writing: :meth:`LangfuseSource.push_scores` creates scores with ids derived from what they describe,
so pushing the same run twice upserts the same scores. Requests are retried on 429/5xx with backoff
(the client honours ``Retry-After``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from langfuse.api import (
    CreateScoreRequest,
    LangfuseAPI,
    ObservationV2,
    ScoreDataType,
)
from langfuse.api.core.api_error import ApiError
from replaygate.instrumentation import TraceRecord

from replaygate.sources._errors import SourceError
from replaygate.sources._paging import cursor_pages
from replaygate.sources._records import (
    NEGATIVE_LABELS,
    OWN_PREFIX,
    FeedbackItem,
    build_record,
    iso_to_ns,
    rebuild_span,
    unique_prefix,
)

__all__ = [
    "LANGFUSE_DEFAULT_HOST",
    "LangfuseScore",
    "LangfuseSource",
    "feedback_from_score",
    "observation_attributes",
    "score_id",
]

LANGFUSE_DEFAULT_HOST = "https://cloud.langfuse.com"
NEGATIVE_CATEGORIES = NEGATIVE_LABELS
_FIELDS = "core,basic,time,io,metadata,model,usage,trace_context"
_EXPAND = "attributes,resourceAttributes"
_PAGE = 1000
_SCORE_PAGE = 100
MAX_SCAN = 5000
_RETRIES = 4

_OI_KIND = {
    "AGENT": "AGENT",
    "GENERATION": "LLM",
    "TOOL": "TOOL",
    "RETRIEVER": "RETRIEVER",
    "EMBEDDING": "EMBEDDING",
    "CHAIN": "CHAIN",
    "GUARDRAIL": "GUARDRAIL",
    "EVALUATOR": "EVALUATOR",
}


@dataclass(frozen=True)
class LangfuseScore:
    """One score to write on a trace: numeric, boolean (``bool``) or categorical (``str``)."""

    trace_id: str
    name: str
    value: float | bool | str
    comment: str | None = None
    key: str = ""  # what makes it unique with the trace and name (e.g. the run id and attempt)
    metadata: Mapping[str, Any] | None = None


def score_id(trace_id: str, name: str, key: str) -> str:
    """The id of a pushed score: the same trace, name and key always give the same id (idempotent push)."""
    digest = hashlib.sha256(f"{trace_id}\x00{name}\x00{key}".encode()).hexdigest()
    return f"rg-{digest[:32]}"


def feedback_from_score(score: Any) -> FeedbackItem | None:
    """The feedback a Langfuse score carries (None for replaygate's own, text scores and corrections)."""
    name = str(getattr(score, "name", "") or "")
    if name.startswith(OWN_PREFIX):
        return None
    kind = getattr(score, "data_type", None)
    value = getattr(score, "value", None)
    number: float | None = None
    if kind == "BOOLEAN" and isinstance(value, bool | int | float):
        number = 1.0 if bool(value) else -1.0
    elif kind == "NUMERIC" and isinstance(value, int | float) and -1.0 <= float(value) <= 1.0:
        number = float(value)
    elif kind == "CATEGORICAL" and isinstance(value, str):
        number = -1.0 if value.strip().lower() in NEGATIVE_CATEGORIES else None
    if number is None:
        return None
    stamp = getattr(score, "timestamp", None) or getattr(score, "created_at", None)
    return FeedbackItem(
        score=number,
        comment=getattr(score, "comment", None),
        created_ns=iso_to_ns(stamp),
        name=name or "score",
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def observation_attributes(obs: ObservationV2) -> dict[str, Any]:
    """The span attributes an observation stands for.

    An observation ingested over OpenTelemetry carries its span's own attributes (``metadata.attributes``);
    an SDK-made one is described in OpenInference's names, which replaygate's normalisation reads.
    """
    metadata = obs.metadata if isinstance(obs.metadata, dict) else {}
    original = metadata.get("attributes")
    if isinstance(original, str):
        try:
            original = json.loads(original)
        except ValueError:
            original = None
    if isinstance(original, dict) and original:
        return dict(original)
    kind = (
        "AGENT"
        if obs.is_root_observation and obs.type in ("SPAN", "CHAIN", "AGENT")
        else _OI_KIND.get(obs.type)
    )
    attributes: dict[str, Any] = {"openinference.span.kind": kind or "CHAIN"}
    if obs.session_id:
        attributes["session.id"] = obs.session_id
    if obs.user_id:
        attributes["user.id"] = obs.user_id
    if obs.input is not None:
        attributes["input.value"] = _text(obs.input)
    if obs.output is not None:
        attributes["output.value"] = _text(obs.output)
    if obs.type == "TOOL":
        attributes["tool.name"] = obs.name or "tool"
        if obs.input is not None:
            attributes["tool.parameters"] = _text(obs.input)
    if obs.model:
        attributes["llm.model_name"] = obs.model
    usage = obs.usage_details or {}
    if "input" in usage:
        attributes["llm.token_count.prompt"] = int(usage["input"])
    if "output" in usage:
        attributes["llm.token_count.completion"] = int(usage["output"])
    if obs.total_cost is not None:
        attributes["llm.cost.total"] = float(obs.total_cost)
    if kind == "AGENT" and obs.name:
        attributes["gen_ai.agent.name"] = obs.name
    if obs.version:
        attributes["gen_ai.agent.version"] = obs.version
    return attributes


def _span(obs: ObservationV2) -> Any:
    level = str(obs.level or "")
    return rebuild_span(
        trace_id=obs.trace_id or "",
        span_id=obs.id,
        parent_id=obs.parent_observation_id,
        name=obs.name or obs.type,
        start_ns=iso_to_ns(obs.start_time),
        end_ns=iso_to_ns(obs.end_time) if obs.end_time else iso_to_ns(obs.start_time),
        status="ERROR" if level == "ERROR" else None,
        status_message=obs.status_message,
        attributes=observation_attributes(obs),
    )


class LangfuseSource:
    """Read traces, failures and scores from one Langfuse project; write scores back."""

    name = "langfuse"

    def __init__(
        self,
        host: str | None = None,
        *,
        public_key: str | None = None,
        secret_key: str | None = None,
        timeout_s: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base = (
            host
            or os.environ.get("LANGFUSE_HOST")
            or os.environ.get("LANGFUSE_BASE_URL")
            or LANGFUSE_DEFAULT_HOST
        ).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise SourceError(f"Langfuse host {base!r} must be an http(s):// URL")
        public = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY")
        secret = secret_key or os.environ.get("LANGFUSE_SECRET_KEY")
        if not public or not secret:
            raise SourceError(
                "Langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY (a project's API keys, "
                "Settings > API Keys) and LANGFUSE_HOST"
            )
        self.base_url = base
        self._auth = httpx.BasicAuth(public, secret)
        self._http = httpx.Client(timeout=timeout_s, transport=transport)
        self._api = LangfuseAPI(
            base_url=base,
            username=public,
            password=secret,
            x_langfuse_public_key=public,
            x_langfuse_sdk_name="replaygate",
            timeout=timeout_s,
            httpx_client=self._http,
        )
        self._options: Any = {"max_retries": _RETRIES, "timeout_in_seconds": int(max(1, timeout_s))}

    def __enter__(self) -> LangfuseSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def describe(self) -> str:
        return f"Langfuse {self.base_url}"

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        try:
            return fn(**kwargs, request_options=self._options)
        except ApiError as exc:
            status = exc.status_code
            if status in (401, 403):
                raise SourceError(
                    f"{self.describe()} refused the API keys (HTTP {status}) while trying to {what}; "
                    "check LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY and LANGFUSE_HOST"
                ) from None
            if status == 429:
                raise SourceError(
                    f"{self.describe()} is rate-limiting us (HTTP 429) after {_RETRIES} retries while trying "
                    f"to {what}; try again later or lower the page count"
                ) from None
            raise SourceError(
                f"{self.describe()} answered HTTP {status} while trying to {what}: {str(exc.body)[:200]!r}"
            ) from None
        except httpx.TimeoutException:
            raise SourceError(f"{self.describe()} did not answer in time while trying to {what}") from None
        except httpx.HTTPError as exc:
            raise SourceError(
                f"cannot reach {self.describe()} to {what}: {exc}; check LANGFUSE_HOST"
            ) from None
        except (ValueError, TypeError) as exc:  # a reply that is not Langfuse's documented shape
            raise SourceError(
                f"{self.describe()} sent a reply that cannot be read while trying to {what}: {exc}"
            ) from None

    # -- reading ---------------------------------------------------------------------------------------

    def _paged(self, what: str, fn: Any, **params: Any) -> Iterator[Any]:
        def fetch(cursor: str | None) -> tuple[list[Any], str | None]:
            page = self._call(what, fn, cursor=cursor, **params)
            return page.data, page.meta.cursor

        return cursor_pages(fetch, f"{self.describe()} ({what})")

    def _observations(self, what: str, **filters: Any) -> Iterator[ObservationV2]:
        get_many = self._api.observations.get_many
        return self._paged(what, get_many, fields=_FIELDS, expand_metadata=_EXPAND, limit=_PAGE, **filters)

    def _scores(self, what: str, **filters: Any) -> Iterator[Any]:
        get_many = self._api.scores.get_many
        return self._paged(what, get_many, limit=_SCORE_PAGE, fields="details,subject", **filters)

    def _trace_feedback(self, trace_id: str) -> list[FeedbackItem]:
        items = (
            feedback_from_score(s)
            for s in self._scores(f"read the scores of trace {trace_id}", trace_id=trace_id)
        )
        return [item for item in items if item is not None]

    def _record(self, trace_id: str) -> TraceRecord | None:
        observations = list(self._observations(f"read trace {trace_id}", trace_id=trace_id))
        try:
            spans = [_span(obs) for obs in observations]
        except ValueError as exc:
            raise SourceError(
                f"{self.describe()}: trace {trace_id} has an observation that cannot be read ({exc})"
            ) from None
        return build_record(spans, self._trace_feedback(trace_id)) if spans else None

    def _root_trace_ids(self, what: str, **filters: Any) -> Iterator[str]:
        seen: set[str] = set()
        for obs in self._observations(what, is_root_observation=True, **filters):
            if obs.trace_id and obs.trace_id not in seen:
                seen.add(obs.trace_id)
                yield obs.trace_id

    def list_traces(
        self,
        limit: int | None = 100,
        since_ns: int | None = None,
        until_ns: int | None = None,
        session_id: str | None = None,
        variant: str | None = None,
    ) -> list[TraceRecord]:
        """Traces newest first (only those with an agent call)."""
        out: list[TraceRecord] = []
        for trace_id in self._root_trace_ids(
            "list traces",
            from_start_time=_datetime(since_ns),
            to_start_time=_datetime(until_ns),
            session_id=session_id,
        ):
            record = self._record(trace_id)
            if record is not None and (variant is None or record.summary.variant == variant):
                out.append(record)
            if limit is not None and len(out) >= limit:
                break
        return sorted(out, key=lambda r: (-r.start_ns, r.summary.trace_id))

    def _candidate_ids(self, since_ns: int | None) -> list[str]:
        """Trace ids worth reading: negative feedback, ERROR observations, then every root in the window."""
        since = _datetime(since_ns)
        ids: dict[str, None] = {}
        for score in self._scores("list scores", from_timestamp=since):
            item = feedback_from_score(score)
            subject = getattr(score, "subject", None)
            trace_id = getattr(subject, "trace_id", None) or (
                getattr(subject, "id", None) if getattr(subject, "kind", None) == "trace" else None
            )
            if item is not None and item.score < 0 and trace_id:
                ids[trace_id] = None
        for obs in self._observations("list ERROR observations", level="ERROR", from_start_time=since):
            if obs.trace_id:
                ids[obs.trace_id] = None
        for trace_id in self._root_trace_ids("list traces", from_start_time=since):
            ids[trace_id] = None
            if len(ids) >= MAX_SCAN:
                break
        return list(ids)

    def failures(
        self, reasons: Iterable[str] | None = None, since_ns: int | None = None, limit: int | None = 100
    ) -> list[TraceRecord]:
        """Failure candidates newest first (at most :data:`MAX_SCAN` traces are read)."""
        wanted = set(reasons or ())
        out: list[TraceRecord] = []
        for trace_id in self._candidate_ids(since_ns):
            record = self._record(trace_id)
            if record is None:
                continue
            found = set(record.summary.failure_reasons)
            if found and (not wanted or found & wanted):
                out.append(record)
        out.sort(key=lambda r: (-r.start_ns, r.summary.trace_id))
        return out[:limit] if limit is not None else out

    def session_traces(self, session_id: str) -> list[TraceRecord]:
        """Every trace of one session, oldest first."""
        records = [
            self._record(t) for t in self._root_trace_ids(f"list session {session_id}", session_id=session_id)
        ]
        return sorted((r for r in records if r is not None), key=lambda r: (r.start_ns, r.summary.trace_id))

    def get_trace(self, trace_id: str) -> TraceRecord:
        """One trace with its observations (as spans), summary and scores."""
        full = self.resolve_trace_id(trace_id)
        record = self._record(full)
        if record is None:
            raise SourceError(
                f"trace {full} is not in {self.describe()} (or has no agent call); list traces with "
                "`replaygate traces --source langfuse`"
            )
        return record

    def resolve_trace_id(self, prefix: str) -> str:
        """The full id of the one trace whose id starts with ``prefix`` (among the newest MAX_SCAN)."""
        return unique_prefix(prefix, self._root_trace_ids("look up a trace id"), self.describe(), MAX_SCAN)

    # -- writing ---------------------------------------------------------------------------------------

    def push_scores(self, scores: Sequence[LangfuseScore]) -> int:
        """Create (or, with the same ids, update) scores; returns how many Langfuse accepted."""
        accepted = 0
        for start in range(0, len(scores), 100):
            requests = [_score_request(s) for s in scores[start : start + 100]]
            reply = self._call("push scores", self._api.scores.create, request=requests)
            rejected = getattr(reply, "rejected", 0) or 0
            if rejected:
                errors = getattr(reply, "errors", None)
                raise SourceError(
                    f"{self.describe()} rejected {rejected} of {len(requests)} scores: {errors!r}"
                )
            count = getattr(reply, "accepted", None)
            accepted += int(count) if isinstance(count, int) else len(requests)
        return accepted

    def export_otlp(self, body: bytes) -> None:
        """Send one OTLP/protobuf export request to Langfuse's OpenTelemetry endpoint."""
        url = f"{self.base_url}/api/public/otel/v1/traces"
        try:
            response = self._http.post(
                url, content=body, headers={"Content-Type": "application/x-protobuf"}, auth=self._auth
            )
        except httpx.HTTPError as exc:
            raise SourceError(f"cannot reach {self.describe()} to export a span: {exc}") from None
        if response.status_code >= 400:
            raise SourceError(f"{self.describe()} refused an OTLP export (HTTP {response.status_code})")

    def scores_of(self, trace_id: str) -> list[Any]:
        """Every score on one trace, as Langfuse's models."""
        return list(self._scores(f"read the scores of trace {trace_id}", trace_id=trace_id))


def _score_request(score: LangfuseScore) -> CreateScoreRequest:
    kind: Any
    value: float | str
    if isinstance(score.value, bool):
        kind, value = ScoreDataType.BOOLEAN, 1.0 if score.value else 0.0
    elif isinstance(score.value, str):
        kind, value = ScoreDataType.CATEGORICAL, score.value
    else:
        kind, value = ScoreDataType.NUMERIC, float(score.value)
    return CreateScoreRequest(
        id=score_id(score.trace_id, score.name, score.key),
        trace_id=score.trace_id,
        name=score.name,
        value=value,
        data_type=kind,
        comment=score.comment,
        metadata=dict(score.metadata or {}) or None,
    )


def _datetime(ns: int | None) -> dt.datetime | None:
    return None if ns is None else dt.datetime.fromtimestamp(ns / 1e9, dt.UTC)
