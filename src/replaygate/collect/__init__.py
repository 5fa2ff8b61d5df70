"""replaygate.collect: the OTLP/HTTP receiver that writes agents' spans (and feedback) to the store.

Agents on any machine export OTLP (directly, or through an OpenTelemetry Collector) to
``replaygate collect``, which writes to the store named by ``--store`` / ``REPLAYGATE_STORE`` (SQLite or
PostgreSQL)::

    export REPLAYGATE_STORE=postgresql+psycopg://rg:secret@db:5432/replaygate
    export REPLAYGATE_COLLECT_TOKEN=$(openssl rand -hex 16)
    replaygate collect --host 0.0.0.0 --port 4318

    # on each agent machine (no database driver needed):
    export OTEL_EXPORTER_OTLP_ENDPOINT=http://collector-host:4318
    export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer $REPLAYGATE_COLLECT_TOKEN"
    export REPLAYGATE_OTLP_CAPTURE_CONTENT=true REPLAYGATE_STORE=off

Endpoints: ``POST /v1/traces`` (OTLP/HTTP, ``application/x-protobuf`` or ``application/json``, gzip or
not), ``POST /v1/feedback`` (``{"trace_id", "score", "comment"}``: what ``record_feedback`` sends when its
store is this receiver's URL), ``GET /v1/collect/health`` (counters). Every request needs the bearer
token. Bounds and backpressure: see :class:`Receiver` (413 for a body too large, 429 or 503 with
``Retry-After`` when busy or when the store cannot be written; 200 only once the spans are committed).
The same endpoints are served by ``replaygate serve`` when ``REPLAYGATE_COLLECT_TOKEN`` is set.
Spans are normalised by ``replaygate.instrumentation``'s ``span_to_record``, the in-process store's code.
gRPC is not served: use OTLP/HTTP (the Collector's ``otlphttp`` exporter). The command serves the app
on gunicorn (:func:`serve_collect`: workers, threads, no access log).
"""

from replaygate.collect._app import TOKEN_ENV, create_collect_app, receiver_from_env
from replaygate.collect._decode import decode_request, encode_response, records_from_request
from replaygate.collect._errors import BadRequest, CollectError
from replaygate.collect._receiver import Receiver, ReceiverStats, collect_blueprint
from replaygate.collect._server import serve_collect

__all__ = [
    "TOKEN_ENV",
    "BadRequest",
    "CollectError",
    "Receiver",
    "ReceiverStats",
    "collect_blueprint",
    "create_collect_app",
    "decode_request",
    "encode_response",
    "receiver_from_env",
    "records_from_request",
    "serve_collect",
]
