"""JSON over HTTP for the trace sources: bounded time and size, retries with backoff, errors that say what.

429 and 5xx answers are retried (``Retry-After`` honoured, capped) a few times; a refused login, a
missing resource or an unreachable host is a :class:`SourceError` naming the source, the URL and the fix.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from replaygate.sources._errors import SourceError

__all__ = ["JsonClient", "MAX_RESPONSE_BYTES"]

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0

Params = Mapping[str, str | int | float | bool | Sequence[str] | None]


class JsonClient:
    """A small JSON client for one service (``what`` names it in every error)."""

    def __init__(
        self,
        what: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 15.0,
        retries: int = 4,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.what = what
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self._client = httpx.Client(
            base_url=self.base_url, headers=dict(headers or {}), timeout=timeout_s, transport=transport
        )

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: Params | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any, params: Params | None = None) -> Any:
        return self.request("POST", path, params=params, body=body)

    def post_bytes(self, path: str, content: bytes, content_type: str) -> None:
        """POST raw bytes (an OTLP/protobuf export) and check the answer (retried on 429/5xx)."""
        url = f"{self.base_url}{path}"
        for attempt in range(self.retries + 1):
            try:
                response = self._client.post(path, content=content, headers={"Content-Type": content_type})
            except httpx.HTTPError as exc:
                raise SourceError(f"cannot reach {self.what} at {url}: {exc}") from None
            if response.status_code in _RETRY_STATUSES and attempt < self.retries:
                time.sleep(_retry_delay(response, self.backoff_s * 2**attempt))
                continue
            if response.status_code >= 400:
                raise SourceError(f"{self.what} at {url} refused the spans (HTTP {response.status_code})")
            return

    def request(self, method: str, path: str, *, params: Params | None = None, body: Any = None) -> Any:
        """Send one request (retried on 429/5xx) and return its decoded JSON body."""
        query = _query(params or {})
        url = f"{self.base_url}{path}"
        for attempt in range(self.retries + 1):
            try:
                response = self._client.request(method, path, params=query, json=body)
            except httpx.TimeoutException:
                if attempt < self.retries:
                    time.sleep(self.backoff_s * 2**attempt)
                    continue
                raise SourceError(f"{self.what} at {url} did not answer in time; is it running?") from None
            except httpx.HTTPError as exc:
                raise SourceError(
                    f"cannot reach {self.what} at {url}: {exc}; check the URL and that the server is running"
                ) from None
            if response.status_code in _RETRY_STATUSES and attempt < self.retries:
                time.sleep(_retry_delay(response, self.backoff_s * 2**attempt))
                continue
            return self._decode(response, url)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _decode(self, response: httpx.Response, url: str) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise SourceError(
                f"{self.what} at {url} refused the credentials (HTTP {status}); check the API key"
            )
        if status == 404:
            raise SourceError(f"{self.what} at {url} answered 404: no such resource")
        if status == 429:
            raise SourceError(
                f"{self.what} at {url} is rate-limiting us (HTTP 429) after {self.retries} retries"
            )
        if status >= 400:
            raise SourceError(f"{self.what} at {url} answered HTTP {status}: {_excerpt(response.text)}")
        if len(response.content) > MAX_RESPONSE_BYTES:
            raise SourceError(f"{self.what} at {url} sent more than {MAX_RESPONSE_BYTES} bytes in one page")
        if not response.content:
            return None
        try:
            return response.json()
        except (ValueError, RecursionError):
            raise SourceError(
                f"{self.what} at {url} did not answer JSON: {_excerpt(response.text)}"
            ) from None


def _query(params: Params) -> list[tuple[str, str | int | float | bool | None]]:
    query: list[tuple[str, str | int | float | bool | None]] = []
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            query.append((key, "true" if value else "false"))
        elif isinstance(value, str | int | float):
            query.append((key, str(value)))
        else:
            query.extend((key, str(item)) for item in value)
    return query


def _retry_delay(response: httpx.Response, default: float) -> float:
    header = response.headers.get("retry-after")
    if header:
        try:
            return max(0.0, min(float(header), _MAX_RETRY_AFTER_S))
        except ValueError:
            pass
    return default


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat[:limit] + ("…" if len(flat) > limit else ""), ensure_ascii=False)
