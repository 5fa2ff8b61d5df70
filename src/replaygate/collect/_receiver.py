"""The OTLP/HTTP receiver: ``POST /v1/traces`` (spans) and ``POST /v1/feedback`` (user feedback).

Both need ``Authorization: Bearer <token>``. A body is bounded (``max_body_bytes``, also after gzip
decompression: 413 above it) and so is the work in flight: at most ``max_inflight`` requests write to the
store at once; a request that cannot start within ``queue_wait_s`` is answered ``429 Too Many Requests``
with ``Retry-After``, and a store that cannot be written ``503 Service Unavailable`` with ``Retry-After``,
both of which the OpenTelemetry exporters retry (OTLP/HTTP specification). A ``200`` is sent only after
the batch is committed, so an acknowledged span is stored: nothing is dropped silently. Agents' own
drop counts that arrive on their spans are recorded in the store's ``trace_drops`` (``_drops.py``).
"""

from __future__ import annotations

import hmac
import json
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, request
from replaygate.instrumentation import ReplaygateError

from replaygate.collect._decode import decode_request, encode_response, records_from_request
from replaygate.collect._drops import take_drop_reports
from replaygate.collect._errors import BadRequest
from replaygate.store import TraceStore

__all__ = ["Receiver", "ReceiverStats", "collect_blueprint"]


_COUNTERS = ("spans", "requests", "feedback", "busy", "unavailable", "rejected")
_FEEDBACK_SHAPE = 'send a JSON object {"trace_id": "<32 hex>", "score": -1..1, "comment": "..."}'


@dataclass
class ReceiverStats:
    """Counters since start: accepted spans and requests, and refusals by cause."""

    spans: int = 0
    requests: int = 0
    feedback: int = 0
    busy: int = 0  # 429
    unavailable: int = 0  # 503
    rejected: int = 0  # 400, 401, 413
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        with self.lock:
            return {
                k: getattr(self, k)
                for k in ("spans", "requests", "feedback", "busy", "unavailable", "rejected")
            }


class Receiver:
    """Turns OTLP requests into store writes, with authentication and bounds.

    Args:
        store: where spans and feedback are written.
        token: the bearer token every request must carry (required).
        max_body_bytes: the largest body accepted, compressed or not (default 16 MiB).
        max_inflight: requests writing to the store at once.
        queue_wait_s: how long a request waits for a free slot before it is answered 429.
        retry_after_s: the ``Retry-After`` sent with 429 and 503.
    """

    def __init__(
        self,
        store: TraceStore,
        *,
        token: str,
        max_body_bytes: int = 16 << 20,
        max_inflight: int = 4,
        queue_wait_s: float = 2.0,
        retry_after_s: int = 2,
    ) -> None:
        if not token:
            raise ValueError("the receiver needs a bearer token")
        self.store = store
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.queue_wait_s = queue_wait_s
        self.retry_after_s = retry_after_s
        self.stats = ReceiverStats()
        self._slots = threading.BoundedSemaphore(max(1, max_inflight))

    def authorized(self, header: str | None) -> bool:
        given = (header or "").removeprefix("Bearer ").strip() if (header or "").startswith("Bearer ") else ""
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    def body(self, raw: bytes, encoding: str | None) -> bytes:
        if len(raw) > self.max_body_bytes:
            raise _TooLarge
        if (encoding or "").lower() in ("", "identity"):
            return raw
        if encoding.lower() != "gzip":  # type: ignore[union-attr]
            raise BadRequest(f"unsupported Content-Encoding {encoding!r}: send gzip or none")
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(raw, self.max_body_bytes + 1)
        except zlib.error as exc:
            raise BadRequest(f"the gzip body does not decompress: {exc}") from exc
        if len(out) > self.max_body_bytes or inflater.unconsumed_tail:
            raise _TooLarge
        return out

    def _bounded(self, work: Callable[[], Response]) -> Response:
        if not self._slots.acquire(timeout=self.queue_wait_s):
            self.stats.add(busy=1)
            return _refuse(429, "the receiver is busy: retry later", self.retry_after_s)
        try:
            return work()
        except ReplaygateError as exc:
            self.stats.add(unavailable=1)
            return _refuse(503, f"the store cannot be written: {exc}", self.retry_after_s * 5)
        finally:
            self._slots.release()

    def traces(self) -> Response:
        content_type = request.content_type or ""
        try:
            self._check()
            otlp = decode_request(
                self.body(request.get_data(cache=False), request.content_encoding), content_type
            )
            records = records_from_request(otlp)
        except _Refused as exc:
            return exc.response
        except BadRequest as exc:
            self.stats.add(rejected=1)
            return _refuse(400, str(exc))

        spans, drops = take_drop_reports(records)

        def work() -> Response:
            self.store.write_spans(spans)
            for source, total in drops.items():  # after the spans: a retried request writes both again
                self.store.record_drops(source, total)
            self.stats.add(spans=len(spans), requests=1)
            body, kind = encode_response(content_type)
            return Response(body, status=200, content_type=kind)

        return self._bounded(work)

    def feedback(self) -> Response:
        try:
            self._check()
            data = json.loads(self.body(request.get_data(cache=False), request.content_encoding))
            if not isinstance(data, dict) or "trace_id" not in data or "score" not in data:
                raise BadRequest(
                    'send a JSON object {"trace_id": "<32 hex>", "score": -1..1, "comment": "..."}'
                )
            trace_id, score, comment = data["trace_id"], data["score"], data.get("comment")
            if not isinstance(score, bool | int | float) or (
                comment is not None and not isinstance(comment, str)
            ):
                raise BadRequest("score must be a number in [-1, 1] or a bool; comment a string")
        except _Refused as exc:
            return exc.response
        except (BadRequest, ValueError) as exc:
            self.stats.add(rejected=1)
            return _refuse(400, str(exc))

        def work() -> Response:
            try:
                self.store.record_feedback(str(trace_id), score, comment)
            except ReplaygateError as exc:
                if "must be a number" in str(exc) or "is not a trace id" in str(exc):
                    self.stats.add(rejected=1)
                    return _refuse(400, str(exc))
                raise
            self.stats.add(feedback=1)
            return Response(json.dumps({"ok": True}), status=200, content_type="application/json")

        return self._bounded(work)

    def _check(self) -> None:
        if not self.authorized(request.headers.get("Authorization")):
            self.stats.add(rejected=1)
            raise _Refused(_refuse(401, "missing or wrong bearer token (Authorization: Bearer <token>)"))
        length = request.content_length
        if length is not None and length > self.max_body_bytes:
            raise _TooLarge


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


class _TooLarge(_Refused):
    def __init__(self) -> None:
        super().__init__(_refuse(413, "the request body is too large"))


def _refuse(status: int, message: str, retry_after: int | None = None) -> Response:
    response = Response(json.dumps({"error": message}), status=status, content_type="application/json")
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


def collect_blueprint(receiver: Receiver) -> Blueprint:
    """The receiver's endpoints as a Flask blueprint (``replaygate collect`` and ``replaygate serve``)."""
    bp = Blueprint("collect", __name__)
    bp.add_url_rule("/v1/traces", "traces", receiver.traces, methods=["POST"])
    bp.add_url_rule("/v1/feedback", "feedback", receiver.feedback, methods=["POST"])

    @bp.route("/v1/collect/health", methods=["GET"])
    def health() -> Any:
        return Response(json.dumps(receiver.stats.as_dict()), content_type="application/json")

    return bp
