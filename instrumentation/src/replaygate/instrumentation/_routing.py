"""Canary routing: which configuration serves this request.

A production agent asks, per request, which variant to run::

    from replaygate.instrumentation import choose_variant, trace_agent

    @trace_agent
    def handle(message: str, user_id: str) -> str:
        variant = choose_variant(user_id)          # sticky per user (or session) key
        agent = agents[variant.name]               # "baseline" or "candidate"
        return agent.respond(message)

``choose_variant`` is sticky: the key and the rollout's salt are hashed (sha256) into 10,000 buckets and
the candidate serves the buckets below ``share × 10,000``, so widening the canary keeps every key that was
already in it. The chosen variant and its configuration id are recorded on the agent span
(``replaygate.variant``, ``replaygate.config_id``) so live measures can be split by variant; call it
inside the decorated entry point.

The canary state is read from the replaygate store (the ``canary_state`` table of the SQLite file, stdlib
``sqlite3``, read-only) or from the release page's JSON endpoint (``GET /api/canary`` with ETag), and
refreshed every ``refresh_s`` seconds. ``choose_variant`` never waits on a read: a stale state starts a
refresh in a background thread (one at a time) and the last known state is served meanwhile (the
baseline until the first read has answered). Routing is safe: a read that fails (missing file, closed
port, timeout, bad JSON) is counted (``RoutingClient.stats()``) and retried within a second; the last
state read keeps serving while it is younger than ``max_stale_s`` (three refresh intervals by default),
so one slow answer does not move users between variants, and after that the baseline is served until a
read succeeds again.

Environment variables:

- ``REPLAYGATE_CANARY_SOURCE``: the store path (or ``sqlite:///path``) or the page's URL
  (``http://host:8080/api/canary``); default: the store (``REPLAYGATE_STORE`` or
  ``.replaygate/replaygate.db``). With ``REPLAYGATE_STORE=off`` there is no store to read: without this
  variable the baseline serves every request (one warning says so).
- ``REPLAYGATE_CANARY_REFRESH_S``: the refresh interval in seconds (default 5).
- ``REPLAYGATE_CANARY_TOKEN``: the page's read token (``REPLAYGATE_READ_TOKEN`` on the page), sent as a
  bearer token; without it the page serves no routing salt and the client serves the baseline.

Or configure explicitly: ``configure_routing("http://release:8080/api/canary", refresh_s=2)``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import trace
from replaygate.instrumentation import semconv as sc
from replaygate.instrumentation._agent import annotate_agent
from replaygate.instrumentation._masked_url import masked_url
from replaygate.instrumentation._settings import store_is_off
from replaygate.instrumentation._store_db import DEFAULT_STORE, resolve_store_path

__all__ = [
    "BUCKETS",
    "RoutingClient",
    "RoutingState",
    "Variant",
    "bucket",
    "choose_variant",
    "configure_routing",
    "routing_client",
    "variant_for",
]

_log = logging.getLogger("replaygate.routing")

#: Number of hash buckets; the candidate serves buckets below ``share × BUCKETS``.
BUCKETS = 10_000
DEFAULT_REFRESH_S = 5.0
_SERVING_STATUSES = ("canary", "promoted")
_NO_SOURCE = (
    "no canary source is configured (REPLAYGATE_STORE is off, so there is no store to read): serving the "
    "baseline; set REPLAYGATE_CANARY_SOURCE to the release page's /api/canary URL (or a store file)"
)

VariantName = Literal["baseline", "candidate"]


@dataclass(frozen=True)
class Variant:
    """The variant chosen for one request: ``name`` is ``baseline`` or ``candidate``."""

    name: VariantName
    config_id: str | None
    rollout_id: str | None = None
    bucket: int | None = None

    @property
    def is_candidate(self) -> bool:
        """Whether the candidate configuration serves this request."""
        return self.name == "candidate"


@dataclass(frozen=True)
class RoutingState:
    """What a routing client needs of the canary state; ``share`` is the candidate's fraction (0..1)."""

    status: str = "idle"
    share: float = 0.0
    salt: str = ""
    baseline_config_id: str | None = None
    candidate_config_id: str | None = None
    rollout_id: str | None = None
    version: int = 0

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RoutingState:
        """Build a state from the JSON endpoint's or the table's fields; raises ValueError when malformed."""
        status = data.get("status", "idle")
        if not isinstance(status, str):
            raise ValueError(f"canary status must be a string, got {status!r}")
        share = float(data.get("share", 0.0) or 0.0)
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"canary share must be within 0..1, got {share}")
        salt = data.get("salt") or ""
        if status in _SERVING_STATUSES and not salt:
            raise ValueError("a serving canary state needs a salt")

        def _opt(name: str) -> str | None:
            value = data.get(name)
            return None if value is None else str(value)

        return cls(
            status=status,
            share=share,
            salt=str(salt),
            baseline_config_id=_opt("baseline_config_id"),
            candidate_config_id=_opt("candidate_config_id"),
            rollout_id=_opt("rollout_id"),
            version=int(data.get("version", 0) or 0),
        )


BASELINE_ONLY = RoutingState()


def bucket(salt: str, key: str) -> int:
    """Return the key's bucket in ``0..BUCKETS-1`` for this rollout's salt (sha256, stable everywhere)."""
    digest = hashlib.sha256(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def variant_for(state: RoutingState, key: str) -> Variant:
    """Choose the variant of ``key`` under ``state`` (pure: no I/O)."""
    if state.status not in _SERVING_STATUSES or state.share <= 0.0:
        return Variant("baseline", state.baseline_config_id, state.rollout_id)
    b = bucket(state.salt, str(key))
    if state.status == "promoted" or b < round(state.share * BUCKETS):
        return Variant("candidate", state.candidate_config_id, state.rollout_id, b)
    return Variant("baseline", state.baseline_config_id, state.rollout_id, b)


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


class RoutingClient:
    """Reads the canary state from a store file or the page's URL, refreshed every ``refresh_s`` seconds.

    Thread-safe. A failed read is counted in :meth:`stats` and retried after ``min(refresh_s, 1)``
    seconds; meanwhile the last state read serves while it is younger than ``max_stale_s`` (None: three
    refresh intervals), then the baseline until a read succeeds. With ``background`` (the default),
    :meth:`state` and :meth:`choose` never block: the first read starts at construction and later ones
    when the state is stale, each in a background thread; with ``background=False`` a stale state is read
    in the caller's thread. A ``source`` of None (no canary source: the store is off) reads nothing and
    serves the baseline, with one warning.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | None,
        *,
        refresh_s: float = DEFAULT_REFRESH_S,
        timeout_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
        token: str | None = None,
        max_stale_s: float | None = None,
    ) -> None:
        self.source = os.fspath(source) if source is not None else None
        self.background = background
        self._refreshing = False
        self.token = token if token is not None else os.environ.get("REPLAYGATE_CANARY_TOKEN") or None
        self.refresh_s = float(refresh_s)
        self.timeout_s = float(timeout_s)
        self.max_stale_s = 3 * self.refresh_s if max_stale_s is None else float(max_stale_s)
        self._clock = clock
        self._good_at = float("-inf")  # when the state in use was last read successfully
        self._lock = threading.Lock()
        self._state = BASELINE_ONLY
        self._etag: str | None = None
        self._next_refresh = float("-inf")
        self._failures = 0
        self._refreshes = 0
        self._last_error: str | None = None
        if self.source is None:  # nothing to read, ever
            self._refreshes = 1
            self._last_error = _NO_SOURCE
            self._next_refresh = float("inf")
            _log.warning("replaygate routing: %s", _NO_SOURCE)
        elif background:
            self._next_refresh = self._clock() + self.refresh_s
            self._start_background()

    def state(self) -> RoutingState:
        """Return the current state; a stale one is refreshed (in the background unless told otherwise)."""
        if not self.background:
            with self._lock:
                if self._clock() >= self._next_refresh:
                    self._refresh_locked()
                return self._state
        if self._clock() >= self._next_refresh and not self._refreshing:
            with self._lock:
                if self._clock() >= self._next_refresh and not self._refreshing:
                    self._next_refresh = self._clock() + self.refresh_s
                    self._start_background()
        return self._state

    def _start_background(self) -> None:
        self._refreshing = True
        try:
            threading.Thread(target=self._background_refresh, name="replaygate-routing", daemon=True).start()
        except RuntimeError:  # no new thread (interpreter shutting down): keep the last state
            self._refreshing = False

    def _background_refresh(self) -> None:
        try:
            state, etag, error = self._read()
            with self._lock:
                self._apply(state, etag, error)
        finally:
            self._refreshing = False

    def wait_ready(self, timeout_s: float = 5.0) -> bool:
        """Wait until the first read answered (tests, start-up scripts); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self._refreshes == 0 or self._refreshing:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def refresh(self) -> RoutingState:
        """Read the state now, whatever its age."""
        with self._lock:
            self._refresh_locked()
            return self._state

    def choose(self, key: str) -> Variant:
        """Return the variant for ``key`` (sticky by key and rollout salt)."""
        return variant_for(self.state(), key)

    def stats(self) -> dict[str, Any]:
        """Counters: refreshes (reads attempted), read failures, the last error, and the state in use."""
        with self._lock:
            return {
                "source": self.source,
                "refreshes": self._refreshes,
                "failures": self._failures,
                "last_error": self._last_error,
                "status": self._state.status,
                "share": self._state.share,
                "version": self._state.version,
            }

    def _refresh_locked(self) -> None:
        if self.source is None:
            return
        self._next_refresh = self._clock() + self.refresh_s
        self._apply(*self._read())

    def _read(self) -> tuple[RoutingState, str | None, Exception | None]:
        """Read the state without holding the lock: (state, etag, None) or (baseline, None, error)."""
        try:
            if self.source is None:
                raise LookupError(_NO_SOURCE)
            if _is_url(self.source):
                state, etag = self._read_url(self.source, self._etag, self._state)
                return state, etag, None
            return self._read_store(self.source), None, None
        except Exception as exc:  # any failure serves the baseline
            return BASELINE_ONLY, None, exc

    def _apply(self, state: RoutingState, etag: str | None, error: Exception | None) -> None:
        self._refreshes += 1
        now = self._clock()
        if error is None:
            self._state = state
            self._etag = etag
            self._good_at = now
            self._last_error = None
            return
        self._failures += 1
        if self._last_error is None:
            where = masked_url(self.source or "")
            _log.warning("replaygate routing: cannot read canary state from %s: %s", where, error)
        self._last_error = f"{type(error).__name__}: {error}"
        self._next_refresh = min(self._next_refresh, now + min(self.refresh_s, 1.0))  # retry soon
        if now - self._good_at >= self.max_stale_s:  # too old to trust: serve the baseline
            self._state = BASELINE_ONLY
            self._etag = None

    def _read_url(self, url: str, etag: str | None, known: RoutingState) -> tuple[RoutingState, str | None]:
        import urllib.error  # noqa: PLC0415 - lazy: only a routing client reading a URL loads http/ssl/email
        import urllib.request  # noqa: PLC0415

        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if etag is not None:
            request.add_header("If-None-Match", etag)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = response.read(1 << 20)
                new_etag = response.headers.get("ETag")
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                return known, etag
            raise
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("the canary endpoint did not return a JSON object")
        return RoutingState.from_mapping(data), new_etag

    def _read_store(self, source: str) -> RoutingState:
        path = resolve_store_path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no replaygate store at {path}")
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=self.timeout_s)
        try:
            conn.row_factory = sqlite3.Row
            try:
                row = conn.execute(
                    "SELECT status, share, salt, baseline_config_id, candidate_config_id, rollout_id, "
                    "version FROM canary_state WHERE id = 1"
                ).fetchone()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return BASELINE_ONLY  # no canary was ever started in this store
                raise
        finally:
            conn.close()
        return BASELINE_ONLY if row is None else RoutingState.from_mapping(dict(row))


def _default_source(env: Mapping[str, str]) -> str | None:
    """``REPLAYGATE_CANARY_SOURCE``, else the store (``REPLAYGATE_STORE`` or the default file); None: off."""
    canary = env.get("REPLAYGATE_CANARY_SOURCE")
    if canary:
        return canary
    store = env.get("REPLAYGATE_STORE")
    if not store:
        return DEFAULT_STORE
    return None if store_is_off(store) else store


_client_lock = threading.Lock()
_client: RoutingClient | None = None


def configure_routing(
    source: str | os.PathLike[str] | None = None,
    *,
    refresh_s: float | None = None,
    timeout_s: float = 2.0,
) -> RoutingClient:
    """Set the process-wide routing client used by :func:`choose_variant` and return it.

    Args:
        source: the store path (or ``sqlite:///`` URL) or the page's ``/api/canary`` URL; None reads
            ``REPLAYGATE_CANARY_SOURCE``, then ``REPLAYGATE_STORE``, then ``.replaygate/replaygate.db``
            (no source at all when ``REPLAYGATE_STORE`` is off: the baseline serves).
        refresh_s: seconds between state reads; None reads ``REPLAYGATE_CANARY_REFRESH_S`` (default 5).
        timeout_s: timeout of one read.
    """
    global _client
    if refresh_s is None:
        try:
            refresh_s = float(os.environ.get("REPLAYGATE_CANARY_REFRESH_S", DEFAULT_REFRESH_S))
        except ValueError:
            refresh_s = DEFAULT_REFRESH_S
    client = RoutingClient(
        source if source is not None else _default_source(os.environ),
        refresh_s=refresh_s,
        timeout_s=timeout_s,
    )
    with _client_lock:
        _client = client
    return client


def routing_client() -> RoutingClient:
    """Return the process-wide routing client, configuring it from the environment on first use."""
    with _client_lock:
        client = _client
    return client if client is not None else configure_routing()


def _annotate(variant: Variant) -> None:
    attributes: dict[str, str] = {sc.RG_VARIANT: variant.name}
    if variant.config_id is not None:
        attributes[sc.RG_CONFIG_ID] = variant.config_id
    try:
        if annotate_agent(attributes):
            return  # set on the innermost agent span
        span = trace.get_current_span()
        for name, value in attributes.items():
            span.set_attribute(name, value)
    except Exception:  # instrumentation faults never reach the agent
        _log.debug("replaygate routing: could not annotate the agent span", exc_info=True)


def choose_variant(key: str, *, annotate: bool = True) -> Variant:
    """Return the variant serving ``key`` (a user or session id) and record it on the agent span.

    Never raises on a state that cannot be read: the baseline is served instead.
    """
    try:
        variant = routing_client().choose(str(key))
    except Exception:  # defensive: routing must never break the agent
        _log.warning("replaygate routing failed; serving the baseline", exc_info=True)
        variant = Variant("baseline", None)
    if annotate:
        _annotate(variant)
    return variant
