"""Turning agent values into span attribute text: JSON with a fallback, bounded length, content hashes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any

__all__ = ["content_hash", "limit_text", "mapping_get", "message_json", "text_of", "to_json"]


_quote = encode_basestring


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)  # pydantic v2
    if callable(dump):
        try:
            return dump(mode="json")
        except Exception:  # noqa: BLE001
            pass
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    return repr(value)


def to_json(value: Any) -> str:
    """Serialize ``value`` as compact JSON; unknown objects become their repr, never an exception."""
    try:
        return json.dumps(value, default=_default, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(repr(value), ensure_ascii=False)


def limit_text(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` characters, saying so at the end."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"…[truncated {len(text) - max_chars} chars]"


def text_of(value: Any, max_chars: int) -> str:
    """A string as itself, anything else as JSON; bounded to ``max_chars``."""
    return limit_text(value if isinstance(value, str) else to_json(value), max_chars)


def message_json(role: str, text: str, finish_reason: str | None = None) -> str:
    """GenAI semconv message list with one text part, as a JSON string."""
    # Same output as json.dumps([{...}], ensure_ascii=False, separators=(",", ":")), without building
    # an encoder per call: this runs for every span that carries messages.
    tail = f',"finish_reason":{_quote(finish_reason)}' if finish_reason is not None else ""
    return f'[{{"role":{_quote(role)},"parts":[{{"type":"text","content":{_quote(text)}}}]{tail}}}]'


def content_hash(text: str) -> str:
    """``sha256:<hex>`` of ``text`` (what replaces content when capture is off)."""
    import hashlib  # noqa: PLC0415 - lazy: OpenSSL's load is not paid by a process that only decorates

    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def mapping_get(value: Any, *names: str) -> Any:
    """First present key of a mapping or attribute of an object among ``names`` (None otherwise)."""
    for name in names:
        if isinstance(value, Mapping):
            if name in value:
                return value[name]
        elif hasattr(value, name):
            return getattr(value, name)
    return None
