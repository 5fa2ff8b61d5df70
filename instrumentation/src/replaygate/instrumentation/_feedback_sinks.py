"""Feedback to Langfuse (a score) and Phoenix (a trace annotation), with the standard library only.

Used by ``record_feedback`` when traces go to those tools: Langfuse when ``LANGFUSE_PUBLIC_KEY`` and
``LANGFUSE_SECRET_KEY`` are set (``LANGFUSE_HOST``, default ``https://cloud.langfuse.com``); Phoenix when
``PHOENIX_COLLECTOR_ENDPOINT`` is set (``PHOENIX_API_KEY``, ``PHOENIX_PROJECT_NAME``). The score is
named ``user-feedback``: in Langfuse a numeric score in [-1, 1]; in Phoenix an annotation by a HUMAN
with that score and the label ``thumbs-up`` or ``thumbs-down``. Each call is bounded by a timeout.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from typing import Any

from replaygate.instrumentation._errors import InstrumentationError

__all__ = ["FEEDBACK_NAME", "langfuse_configured", "phoenix_configured", "send_langfuse", "send_phoenix"]

FEEDBACK_NAME = "user-feedback"
_TIMEOUT_S = 5.0
_TRACE_WAIT_S = (0.25, 0.5, 1.0, 1.5)  # a trace exported a moment ago may not be ingested yet


def langfuse_configured() -> bool:
    return bool(os.environ.get("LANGFUSE_PUBLIC_KEY") and os.environ.get("LANGFUSE_SECRET_KEY"))


def phoenix_configured() -> bool:
    return bool(os.environ.get("PHOENIX_COLLECTOR_ENDPOINT"))


def _post(what: str, url: str, body: Any, headers: dict[str, str], wait_for_trace: bool = False) -> None:
    """POST JSON; with ``wait_for_trace`` a 404 (the trace not ingested yet) is retried for about 3 s."""
    import urllib.error  # noqa: PLC0415 - lazy: a process that never sends feedback never loads http/ssl/email
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    for delay in (*_TRACE_WAIT_S, None):
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:  # noqa: S310 - http(s) only
                response.read(65536)
            return
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and wait_for_trace and delay is not None:
                time.sleep(delay)
                continue
            hint = " (the trace is not there: was it exported?)" if exc.code == 404 else ""
            raise InstrumentationError(
                f"{what} at {url} refused the feedback (HTTP {exc.code}){hint}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise InstrumentationError(f"cannot send feedback to {what} at {url}: {exc}") from None


def _http_url(value: str, what: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise InstrumentationError(f"{what} URL {value!r} must start with http:// or https://")
    return value.rstrip("/")


def send_langfuse(trace_id: str, score: float, comment: str | None) -> None:
    """Create a ``user-feedback`` score on the trace in Langfuse (a new score per call)."""
    host = _http_url(os.environ.get("LANGFUSE_HOST") or "https://cloud.langfuse.com", "LANGFUSE_HOST")
    credentials = f"{os.environ.get('LANGFUSE_PUBLIC_KEY', '')}:{os.environ.get('LANGFUSE_SECRET_KEY', '')}"
    body = [
        {
            "id": f"feedback-{uuid.uuid4().hex}",
            "traceId": trace_id,
            "name": FEEDBACK_NAME,
            "value": score,
            "dataType": "NUMERIC",
            "comment": comment,
        }
    ]
    auth = "Basic " + base64.b64encode(credentials.encode()).decode()
    _post("Langfuse", f"{host}/api/public/scores", body, {"Authorization": auth})


def send_phoenix(trace_id: str, score: float, comment: str | None) -> None:
    """Add a ``user-feedback`` trace annotation in Phoenix (one more per call)."""
    endpoint = os.environ.get("PHOENIX_COLLECTOR_ENDPOINT", "")
    base = _http_url(endpoint.rstrip("/").removesuffix("/v1/traces"), "PHOENIX_COLLECTOR_ENDPOINT")
    headers = {}
    if os.environ.get("PHOENIX_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['PHOENIX_API_KEY']}"
    body = {
        "data": [
            {
                "trace_id": trace_id,
                "name": FEEDBACK_NAME,
                "annotator_kind": "HUMAN",
                "result": {
                    "score": score,
                    "label": "thumbs-up" if score >= 0 else "thumbs-down",
                    "explanation": comment,
                },
                "identifier": f"feedback-{uuid.uuid4().hex}",
            }
        ]
    }
    _post("Phoenix", f"{base}/v1/trace_annotations?sync=true", body, headers, wait_for_trace=True)
