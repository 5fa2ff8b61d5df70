"""A Langfuse stand-in on 127.0.0.1: the endpoints replaygate uses, in the shapes of Langfuse's public API.

No Langfuse server can run here. Every response body is built from the ``langfuse`` package's own models
(``ObservationsV2Response``, ``GetScoresV3Response``, ``CreateScoreBatchResponse``) and every score
request is parsed with its ``CreateScoreRequest``, so the wire format is Langfuse's, not ours.
Spans arrive as Langfuse receives them from OpenTelemetry (``/api/public/otel/v1/traces``, protobuf) and
are kept as observations the way Langfuse's OTel ingestion stores them: the span's attributes under
``metadata.attributes``, the type from the span kind, input/output from ``input.value``/``output.value``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langfuse.api import (
    CreateScoreBatchResponse,
    CreateScoreRequest,
    GetScoresV3Meta,
    GetScoresV3Response,
    ObservationsV2Meta,
    ObservationsV2Response,
    ObservationV2,
    ScoreSubjectV3_Trace,
    ScoreV3_Boolean,
    ScoreV3_Categorical,
    ScoreV3_Numeric,
)
from langfuse.api.core.jsonable_encoder import jsonable_encoder
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.core.serialization import convert_and_respect_annotation_metadata
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

PUBLIC_KEY = "pk-lf-test"
SECRET_KEY = "sk-lf-test"
_TYPES = {"AGENT": "AGENT", "LLM": "GENERATION", "TOOL": "TOOL", "RETRIEVER": "RETRIEVER", "CHAIN": "CHAIN"}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _time(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC)


def _dump(model: Any) -> bytes:
    """A model as Langfuse sends it: camelCase wire names (the client's own write conversion), no nulls."""
    wire = convert_and_respect_annotation_metadata(object_=model, annotation=type(model), direction="write")
    return json.dumps(jsonable_encoder(wire, custom_encoder=None), default=str).encode()


class LangfuseStandIn:
    """In-memory observations and scores behind Langfuse's URLs; knobs for paging, 429 and auth."""

    def __init__(self) -> None:
        self.observations: dict[str, ObservationV2] = {}
        self.scores: dict[str, Any] = {}
        self.page_size: int | None = None  # cap every page (forces a trace over several pages)
        self.fail_with_429 = 0  # answer this many requests with 429 + Retry-After: 0
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _gate(self) -> bool:
                standin.requests.append((self.command, self.path))
                self.body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                header = self.headers.get("Authorization", "")
                expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
                if header != expected:
                    self._send(401, b'{"message":"Invalid credentials"}')
                    return False
                with standin.lock:
                    if standin.fail_with_429 > 0:
                        standin.fail_with_429 -= 1
                        self._send(429, b'{"message":"rate limited"}', {"Retry-After": "0"})
                        return False
                return True

            def do_GET(self) -> None:  # noqa: N802
                if not self._gate():
                    return
                url = urllib.parse.urlsplit(self.path)
                query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
                if url.path == "/api/public/v2/observations":
                    self._send(200, standin.observation_page(query))
                elif url.path == "/api/public/v3/scores":
                    self._send(200, standin.score_page(query))
                else:
                    self._send(404, b'{"message":"not found"}')

            def do_POST(self) -> None:  # noqa: N802
                if not self._gate():
                    return
                body = self.body
                if self.path == "/api/public/otel/v1/traces":
                    standin.ingest(body)
                    self._send(200, b"{}")
                elif self.path == "/api/public/scores":
                    requests = parse_obj_as(list[CreateScoreRequest], json.loads(body))
                    standin.add_scores(requests)
                    self._send(202, _dump(CreateScoreBatchResponse()))
                else:
                    self._send(404, b'{"message":"not found"}')

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- ingestion, as Langfuse's OTel endpoint stores spans ---------------------------------------------

    def ingest(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    kind = str(attributes.get("openinference.span.kind") or "")
                    parent = span.parent_span_id.hex() or None
                    obs = ObservationV2(
                        id=span.span_id.hex(),
                        trace_id=span.trace_id.hex(),
                        start_time=_time(span.start_time_unix_nano),
                        end_time=_time(span.end_time_unix_nano),
                        project_id="project-1",
                        parent_observation_id=parent,
                        type=_TYPES.get(kind, "SPAN"),
                        is_root_observation=parent is None,
                        name=span.name,
                        level="ERROR" if span.status.code == span.status.STATUS_CODE_ERROR else "DEFAULT",
                        status_message=span.status.message or None,
                        version=resource.get("service.version"),
                        session_id=attributes.get("session.id"),
                        user_id=attributes.get("user.id"),
                        input=attributes.get("input.value"),
                        output=attributes.get("output.value"),
                        metadata={"attributes": attributes, "resourceAttributes": resource},
                        model=attributes.get("gen_ai.request.model"),
                    )
                    with self.lock:
                        self.observations[f"{obs.trace_id}:{obs.id}"] = obs

    # -- reads ------------------------------------------------------------------------------------------

    def _page(self, items: list[Any], query: dict[str, str], default: int) -> tuple[list[Any], str | None]:
        limit = int(query.get("limit", default))
        if self.page_size is not None:
            limit = min(limit, self.page_size)
        start = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if query.get("cursor") else 0
        page = items[start : start + limit]
        more = start + limit < len(items)
        return page, base64.urlsafe_b64encode(str(start + limit).encode()).decode() if more else None

    def observation_page(self, query: dict[str, str]) -> bytes:
        with self.lock:
            items = sorted(self.observations.values(), key=lambda o: (o.start_time, o.id), reverse=True)
        if "traceId" in query:
            items = [o for o in items if o.trace_id == query["traceId"]]
        if "sessionId" in query:
            items = [o for o in items if o.session_id == query["sessionId"]]
        if "level" in query:
            items = [o for o in items if o.level == query["level"]]
        if query.get("isRootObservation") == "true":
            items = [o for o in items if o.is_root_observation]
        if "fromStartTime" in query:
            since = dt.datetime.fromisoformat(query["fromStartTime"].replace("Z", "+00:00"))
            items = [o for o in items if o.start_time >= since]
        page, cursor = self._page(items, query, 50)
        return _dump(ObservationsV2Response(data=page, meta=ObservationsV2Meta(cursor=cursor)))

    def score_page(self, query: dict[str, str]) -> bytes:
        with self.lock:
            items = sorted(self.scores.values(), key=lambda s: (s.timestamp, s.id), reverse=True)
        if "traceId" in query:
            items = [s for s in items if s.subject and s.subject.id == query["traceId"]]
        page, cursor = self._page(items, query, 50)
        return _dump(GetScoresV3Response(data=page, meta=GetScoresV3Meta(cursor=cursor, limit=len(page))))

    # -- writes -----------------------------------------------------------------------------------------

    def add_scores(self, requests: list[CreateScoreRequest]) -> None:
        now = dt.datetime.now(dt.UTC)
        for request in requests:
            self.add_score(request, now)

    def add_score(
        self, request: CreateScoreRequest, now: dt.datetime | None = None, source: str = "API"
    ) -> None:
        now = now or dt.datetime.now(dt.UTC)
        score_id = request.id or f"score-{len(self.scores) + 1}"
        common: dict[str, Any] = {
            "id": score_id,
            "project_id": "project-1",
            "name": request.name,
            "source": source,
            "timestamp": now,
            "environment": request.environment or "default",
            "created_at": now,
            "updated_at": now,
            "comment": request.comment,
            "metadata": request.metadata,
            "subject": ScoreSubjectV3_Trace(id=request.trace_id or ""),
        }
        kind = str(getattr(request.data_type, "value", request.data_type) or "NUMERIC")
        score: Any
        if kind == "BOOLEAN":
            score = ScoreV3_Boolean(value=bool(request.value), **common)
        elif kind == "CATEGORICAL":
            score = ScoreV3_Categorical(value=str(request.value), **common)
        else:
            score = ScoreV3_Numeric(value=float(request.value), **common)
        with self.lock:
            self.scores[score_id] = score


@contextmanager
def running_standin() -> Iterator[LangfuseStandIn]:
    standin = LangfuseStandIn()
    standin.thread.start()
    try:
        yield standin
    finally:
        standin.server.shutdown()
        standin.server.server_close()
