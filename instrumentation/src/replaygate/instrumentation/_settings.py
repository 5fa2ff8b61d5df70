"""``configure`` options resolved against the environment: explicit argument, then variable, then default.

Pure logic (the environment is passed in): every bad value raises :class:`InstrumentationError` naming the
option or variable, the value, and what is expected.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import unquote

from replaygate.instrumentation._errors import InstrumentationError
from replaygate.instrumentation._masked_url import masked_url
from replaygate.instrumentation._store_db import DEFAULT_STORE

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_STORE",
    "LANGFUSE_OTEL_PATH",
    "OPTION_NAMES",
    "UNSET",
    "ConfigureOptions",
    "Settings",
    "check_option_names",
    "parse_headers",
    "resolve_settings",
    "store_is_off",
]

LANGFUSE_DEFAULT_HOST = "https://cloud.langfuse.com"
#: Spans each exporter's queue holds before it drops (REPLAYGATE_QUEUE_SIZE): a burst of 2,000 agent
#: calls/s for 5 s (40,000 spans of 4 a call) fits whole while the worker drains it. A queued span holds
#: its attributes' memory, about 3 KB for a typical agent span (bench/store_ingest.py measures it), so a
#: full queue costs ~150 MB; the queues of several exporters hold the same span objects.
DEFAULT_QUEUE_SIZE = 50_000
LANGFUSE_OTEL_PATH = "/api/public/otel/v1/traces"
_OFF = {"", "0", "false", "no", "off", "none", "disabled"}
_ON = {"1", "true", "yes", "on"}


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Settings:
    """The resolved configuration of one ``configure`` call."""

    service_name: str | None = None
    service_version: str | None = None
    environment: str | None = None
    project: str | None = None
    store: str | None = DEFAULT_STORE
    otlp_endpoint: str | None = None
    otlp_protocol: str = "http/protobuf"
    otlp_headers: dict[str, str] = field(default_factory=dict)
    otlp_timeout_s: float | None = None
    langfuse_public_key: str | None = None
    langfuse_secret_key: str | None = None
    langfuse_host: str = LANGFUSE_DEFAULT_HOST
    capture_store: bool = True
    capture_otlp: bool = False
    capture_langfuse: bool = False
    redact: tuple[str, ...] = ()
    redact_defaults: bool = True
    sample_ratio: float = 1.0
    max_queue_size: int = DEFAULT_QUEUE_SIZE
    max_batch_size: int = 512
    schedule_delay_s: float = 1.0
    shutdown_timeout_s: float = 5.0
    max_chars: int = 32768

    @property
    def resource_attributes(self) -> dict[str, str]:
        """``service.*``, ``deployment.environment.name`` and Phoenix's project, as far as they are set."""
        attrs = {
            "service.name": self.service_name,
            "service.version": self.service_version,
            "deployment.environment.name": self.environment,
            "openinference.project.name": self.project,
        }
        return {k: v for k, v in attrs.items() if v}

    @property
    def langfuse_endpoint(self) -> str:
        return self.langfuse_host.rstrip("/") + LANGFUSE_OTEL_PATH

    @property
    def langfuse_enabled(self) -> bool:
        return bool(self.langfuse_public_key and self.langfuse_secret_key)


def _bool(name: str, explicit: bool | None, env: Mapping[str, str], default: bool) -> bool:
    if explicit is not None:
        return bool(explicit)
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise InstrumentationError(f"{name}={raw!r} is not a boolean; use true or false")


def _number(name: str, explicit: float | None, env: Mapping[str, str], default: float) -> float:
    if explicit is not None:
        return float(explicit)
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return float(raw)
    except ValueError:
        raise InstrumentationError(f"{name}={raw!r} is not a number") from None


def parse_headers(raw: str | Mapping[str, str] | None, source: str) -> dict[str, str]:
    """Parse OTLP headers given as a mapping or as ``key=value,key2=value2`` (values URL-decoded)."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    headers: dict[str, str] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InstrumentationError(
                f"{source}: header entry {item.strip()!r} is not key=value; "
                "write e.g. 'api-key=abc,x-team=ml'"
            )
        headers[unquote(key.strip())] = unquote(value.strip())
    return headers


def _redact_patterns(explicit: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    patterns = list(explicit)
    raw = env.get("REPLAYGATE_REDACT")
    if raw and raw.strip():
        text = raw.strip()
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except ValueError:
                raise InstrumentationError(
                    f"REPLAYGATE_REDACT={raw!r} starts with '[' but is not a JSON list of regular expressions"
                ) from None
            if not isinstance(decoded, list) or not all(isinstance(p, str) for p in decoded):
                raise InstrumentationError("REPLAYGATE_REDACT must be a JSON list of strings or one regex")
            patterns.extend(decoded)
        else:
            patterns.append(text)
    return tuple(patterns)


def store_is_off(value: str) -> bool:
    """Whether a ``REPLAYGATE_STORE`` value turns the embedded store off (``off``, ``none``, ``false``...)."""
    return value.strip().lower() in _OFF


def _embedded(store: str | None) -> str | None:
    """The embedded store is a SQLite file: any other database URL is refused with what to do instead."""
    if store is not None and "://" in store and not store.startswith("sqlite"):
        raise InstrumentationError(
            f"store {masked_url(store)!r} is not a SQLite file: an agent writes the embedded SQLite store "
            "only. For a shared (PostgreSQL) store, export OTLP to `replaygate collect` "
            "(OTEL_EXPORTER_OTLP_ENDPOINT) and set REPLAYGATE_STORE=off (or store=None) in the agent"
        )
    return store


def _store(explicit: Any, env: Mapping[str, str]) -> str | None:
    if explicit is UNSET:
        raw = env.get("REPLAYGATE_STORE")
        if raw is None:
            return DEFAULT_STORE
        return None if store_is_off(raw) else _embedded(raw.strip())
    if explicit is None or explicit is False:
        return None
    if explicit is True:
        return _embedded(env.get("REPLAYGATE_STORE") or DEFAULT_STORE)
    return _embedded(str(os.fspath(explicit)))


def _otlp_endpoint(explicit: Any, protocol: str, env: Mapping[str, str]) -> str | None:
    if explicit is False or explicit == "":
        return None
    if explicit is not None:
        endpoint = str(explicit)
        if protocol == "grpc" or endpoint.rstrip("/").endswith("/v1/traces"):
            return endpoint
        return endpoint.rstrip("/") + "/v1/traces"
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base:
        return None
    return base if protocol == "grpc" else base.rstrip("/") + "/v1/traces"


class ConfigureOptions(TypedDict, total=False):
    """The options of ``configure`` and ``resolve_settings``, declared once (see ``configure`` for each).

    Every option left out (or None) falls back to its environment variable, then to its default.
    """

    service_name: str | None
    service_version: str | None
    environment: str | None
    project: str | None
    store: str | os.PathLike[str] | bool | None
    otlp_endpoint: str | bool | None
    otlp_protocol: str | None
    otlp_headers: str | Mapping[str, str] | None
    otlp_timeout_s: float | None
    langfuse: bool | None
    langfuse_public_key: str | None
    langfuse_secret_key: str | None
    langfuse_host: str | None
    capture_content: bool | None
    otlp_capture_content: bool | None
    langfuse_capture_content: bool | None
    redact: Sequence[str]
    redact_defaults: bool | None
    sample_ratio: float | None
    max_queue_size: int | None
    max_batch_size: int | None
    schedule_delay_s: float | None
    shutdown_timeout_s: float | None


OPTION_NAMES: frozenset[str] = frozenset(ConfigureOptions.__annotations__)


def check_option_names(function: str, given: Mapping[str, object]) -> None:
    """Refuse a keyword that is not an option, as Python does for a misspelt keyword argument."""
    unknown = sorted(set(given) - OPTION_NAMES)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")


def resolve_settings(*, env: Mapping[str, str], **options: Unpack[ConfigureOptions]) -> Settings:
    """Resolve ``configure``'s options against ``env`` (see the package docstring for the variables)."""
    check_option_names("resolve_settings", options)
    protocol = (
        options.get("otlp_protocol")
        or env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol not in ("http/protobuf", "grpc"):
        raise InstrumentationError(
            f"OTLP protocol {protocol!r} is not supported; use 'http/protobuf' or 'grpc' "
            "(argument otlp_protocol or OTEL_EXPORTER_OTLP_PROTOCOL)"
        )
    given_headers = options.get("otlp_headers")
    headers = parse_headers(given_headers, "otlp_headers") if given_headers is not None else {}
    if given_headers is None:
        for var in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
            headers.update(parse_headers(env.get(var), var))

    public = options.get("langfuse_public_key") or env.get("LANGFUSE_PUBLIC_KEY") or None
    secret = options.get("langfuse_secret_key") or env.get("LANGFUSE_SECRET_KEY") or None
    host = (
        options.get("langfuse_host")
        or env.get("LANGFUSE_HOST")
        or env.get("LANGFUSE_BASE_URL")
        or LANGFUSE_DEFAULT_HOST
    )
    if options.get("langfuse") is False:
        public = secret = None
    elif bool(public) != bool(secret) or (options.get("langfuse") and not public):
        raise InstrumentationError(
            "Langfuse export needs both a public and a secret key: set LANGFUSE_PUBLIC_KEY and "
            "LANGFUSE_SECRET_KEY (or langfuse_public_key= and langfuse_secret_key=)"
        )
    if not host.startswith(("http://", "https://")):
        raise InstrumentationError(f"Langfuse host {host!r} must be an http(s) URL (LANGFUSE_HOST)")

    ratio = _number("REPLAYGATE_SAMPLE_RATIO", options.get("sample_ratio"), env, 1.0)
    if not 0.0 <= ratio <= 1.0:
        raise InstrumentationError(f"sample ratio {ratio} must be between 0 and 1 (REPLAYGATE_SAMPLE_RATIO)")
    queue = int(_number("REPLAYGATE_QUEUE_SIZE", options.get("max_queue_size"), env, DEFAULT_QUEUE_SIZE))
    batch = int(_number("REPLAYGATE_BATCH_SIZE", options.get("max_batch_size"), env, 512))
    delay = _number("REPLAYGATE_SCHEDULE_DELAY", options.get("schedule_delay_s"), env, 1.0)
    shutdown_timeout = _number("REPLAYGATE_SHUTDOWN_TIMEOUT", options.get("shutdown_timeout_s"), env, 5.0)
    max_chars = int(_number("REPLAYGATE_MAX_TEXT_CHARS", None, env, 32768))
    for label, value in (("queue size", queue), ("batch size", batch), ("max text chars", max_chars)):
        if value < 1:
            raise InstrumentationError(f"{label} must be a positive integer, got {value}")
    if delay <= 0 or shutdown_timeout < 0:
        raise InstrumentationError("schedule delay must be > 0 and shutdown timeout >= 0 (seconds)")

    return Settings(
        service_name=options.get("service_name") or env.get("OTEL_SERVICE_NAME") or None,
        service_version=options.get("service_version") or env.get("REPLAYGATE_SERVICE_VERSION") or None,
        environment=options.get("environment") or env.get("REPLAYGATE_ENVIRONMENT") or None,
        project=options.get("project") or env.get("PHOENIX_PROJECT_NAME") or None,
        store=_store(options.get("store", UNSET), env),
        otlp_endpoint=_otlp_endpoint(options.get("otlp_endpoint"), protocol, env),
        otlp_protocol=protocol,
        otlp_headers=headers,
        otlp_timeout_s=options.get("otlp_timeout_s"),
        langfuse_public_key=public,
        langfuse_secret_key=secret,
        langfuse_host=host,
        capture_store=_bool("REPLAYGATE_CAPTURE_CONTENT", options.get("capture_content"), env, True),
        capture_otlp=_bool(
            "REPLAYGATE_OTLP_CAPTURE_CONTENT", options.get("otlp_capture_content"), env, False
        ),
        capture_langfuse=_bool(
            "REPLAYGATE_LANGFUSE_CAPTURE_CONTENT", options.get("langfuse_capture_content"), env, False
        ),
        redact=_redact_patterns(options.get("redact", ()), env),
        redact_defaults=_bool("REPLAYGATE_REDACT_DEFAULTS", options.get("redact_defaults"), env, True),
        sample_ratio=ratio,
        max_queue_size=queue,
        max_batch_size=min(batch, queue),
        schedule_delay_s=delay,
        shutdown_timeout_s=shutdown_timeout,
        max_chars=max_chars,
    )
