"""Redaction of secrets and personal data in span text, before any exporter sees a span.

Built-in patterns: API keys (``sk-…``, ``pk-…``, GitHub, AWS, Google, Slack tokens), bearer/basic
credentials and e-mail addresses; custom regular expressions are added with ``configure(redact=...)``.
Matches are replaced by ``[REDACTED:<kind>]``. Pure logic: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from replaygate.instrumentation._errors import InstrumentationError

__all__ = ["DEFAULT_PATTERNS", "Redactor"]

#: (kind, regex) pairs applied in order.
DEFAULT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("credential", r"\b(?i:bearer|basic|token)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
    ("api_key", r"\b(?:sk|pk|rk)-[A-Za-z0-9][A-Za-z0-9_\-]{15,}"),
    ("api_key", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("api_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("api_key", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("email", r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"),
)


class Redactor:
    """Applies the redaction patterns to strings and to span attribute values."""

    def __init__(self, custom: Iterable[str | re.Pattern[str]] = (), *, defaults: bool = True) -> None:
        rules: list[tuple[re.Pattern[str], Any]] = []
        if defaults:
            # One alternation, one scan per string: the export workers run this on every attribute.
            kinds = [kind for kind, _ in DEFAULT_PATTERNS]
            combined = re.compile("|".join(f"(?P<r{i}>{rx})" for i, (_, rx) in enumerate(DEFAULT_PATTERNS)))
            rules.append((combined, lambda m: f"[REDACTED:{kinds[int(str(m.lastgroup)[1:])]}]"))
        for item in custom:
            try:
                pattern = item if isinstance(item, re.Pattern) else re.compile(item)
            except re.error as exc:
                raise InstrumentationError(
                    f"redaction pattern {item!r} is not a valid regular expression ({exc}); "
                    "fix it in configure(redact=...) or REPLAYGATE_REDACT"
                ) from exc
            rules.append((pattern, "[REDACTED]"))
        self._rules = tuple(rules)

    @property
    def active(self) -> bool:
        return bool(self._rules)

    def redact(self, text: str) -> tuple[str, int]:
        """Return ``text`` with every match replaced, and the number of replacements."""
        total = 0
        for pattern, replacement in self._rules:
            text, n = pattern.subn(replacement, text)
            total += n
        return text, total

    def redact_value(self, value: Any) -> tuple[Any, int]:
        """Redact a span attribute value (a string or a sequence of strings); others pass unchanged."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray) and value:
            if all(isinstance(v, str) for v in value):
                total = 0
                out: list[str] = []
                for v in value:
                    red, n = self.redact(v)
                    out.append(red)
                    total += n
                return (tuple(out), total) if total else (value, 0)
        return value, 0
