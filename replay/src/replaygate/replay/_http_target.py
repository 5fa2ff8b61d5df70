"""An HTTP target: POST one session as JSON, read the answer as JSON.

Request body: ``{"turns": [...], "context": {...}, "config": {...}, "session_id": "..."}``; response body:
``{"answer": "...", "label": "..."}`` (``label`` and ``messages`` optional). A W3C ``traceparent`` header
carries the attempt's trace, so an instrumented remote agent's spans join it in the remote trace store.
429 and 5xx answers and connection errors are retried with exponential backoff and full jitter,
honouring ``Retry-After``; other 4xx answers fail at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import json
import random
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from replaygate.replay._errors import TargetError
from replaygate.replay._target_types import TargetOutput, parse_target_output

if TYPE_CHECKING:  # httpx is imported when an HttpTarget is made: most runs call an in-process target
    import httpx

__all__ = ["HttpTarget", "retry_after_seconds"]

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Parse a ``Retry-After`` header (seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class HttpTarget:
    """POST each session to ``url``; see the module docstring for the wire format."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
    ) -> None:
        importlib.import_module("httpx")  # loaded here, not inside the first attempt's timeout
        self.spec = url
        self.url = url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.headers = dict(headers or {})
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._max_connections = 8
        self._rng = rng or random.Random()

    def use_threads(self, n: int) -> None:
        """Size the connection pool to the runner's concurrency."""
        self._max_connections = max(1, n)

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            limits = httpx.Limits(
                max_connections=self._max_connections, max_keepalive_connections=self._max_connections
            )
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_s), limits=limits, transport=self._transport
            )
        return self._client

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, _MAX_RETRY_AFTER_S)
        cap = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        return self._rng.uniform(0, cap)

    async def call(
        self, turns: Sequence[str], context: Mapping[str, Any], config: Mapping[str, Any], *, session_id: str
    ) -> TargetOutput:
        body = {
            "turns": list(turns),
            "context": dict(context),
            "config": dict(config),
            "session_id": session_id,
        }
        body = json.loads(json.dumps(body, default=str))  # YAML dates and the like travel as strings
        headers = {"content-type": "application/json", **self.headers}
        TraceContextTextMapPropagator().inject(headers)
        import httpx

        client = self._get_client()
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await client.post(self.url, json=body, headers=headers)
            except httpx.TimeoutException:
                raise TargetError(f"HTTP target {self.url}: no answer within {self.timeout_s:g}s") from None
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    try:
                        payload = response.json()
                    except ValueError:
                        raise TargetError(
                            f"HTTP target {self.url}: answer is not JSON ({response.text[:120]!r})"
                        ) from None
                    return parse_target_output(payload)
                last = f"HTTP {response.status_code} {response.text[:200]!r}"
                if response.status_code not in _RETRY_STATUS:
                    raise TargetError(f"HTTP target {self.url}: {last} (not retried)")
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt < self.max_retries:
                await asyncio.sleep(self._delay(attempt, retry_after))
        raise TargetError(f"HTTP target {self.url}: gave up after {self.max_retries + 1} tries; last: {last}")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
