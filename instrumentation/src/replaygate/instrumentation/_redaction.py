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

__all__ = ["DEFAULT_PATTERNS", "Redactor", "may_hold_trigger", "may_hold_trigger_in_values"]

#: (kind, regex, triggers): the rules run only on text containing one of the triggers (one search
#: for a literal alternation, case-sensitive because that keeps it fast), sparing most strings the scans.
DEFAULT_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "credential",
        r"\b(?i:bearer|basic|token)\s+[A-Za-z0-9\-._~+/]{8,}=*",
        ("bearer", "Bearer", "BEARER", "basic", "Basic", "BASIC", "token", "Token", "TOKEN"),
    ),
    ("api_key", r"\b(?:sk|pk|rk)-[A-Za-z0-9][A-Za-z0-9_\-]{15,}", ("sk-", "pk-", "rk-")),
    ("api_key", r"\bgh[pousr]_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("api_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    ("api_key", r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),
    ("api_key", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", ("xox",)),
    ("email", r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}", ("@",)),
)

_Rule = tuple[re.Pattern[str], str, tuple[str, ...]]


def may_hold_trigger(text: str) -> bool:
    """Whether ``text`` may hold one of the default patterns' triggers (False: it holds none).

    The same answer as one search for any trigger, or True more often (``bearer``, ``basic`` and
    ``token`` in any case), about twice as fast: substring tests run in C without the regex engine's
    per-character work, the rarer characters first (``@``, ``k-`` of ``sk-``/``pk-``/``rk-``, ``xox``,
    ``A`` of ``AKIA``/``ASIA``/``AIza``, ``gh`` of the GitHub tokens).
    """
    if "@" in text or "k-" in text or "xox" in text:
        return True
    if "A" in text and ("AKIA" in text or "ASIA" in text or "AIza" in text):
        return True
    if "gh" in text and any(t in text for t in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")):
        return True
    low = text.lower()
    return "bearer" in low or "basic" in low or "token" in low


_WORDS = ("bearer", "basic", "token")


def may_hold_trigger_in_values(encoded: str, keys: str) -> bool:
    """:func:`may_hold_trigger` of the values in ``encoded``, JSON text whose object keys are ``keys``.

    ``encoded`` is the compact JSON of a span's attributes (and any other texts appended to it), ``keys``
    those attributes' names joined. Attribute names such as ``gen_ai.usage.input_tokens`` hold the
    ``token`` trigger, so the case-insensitive words count only where ``encoded`` holds more of them than
    the names do. No trigger holds a quote, backslash or control character, so JSON escaping never hides
    one in a value and a trigger never straddles a key and a value; an escape can only make a trigger
    appear (a backspace escaped before ``asic``), which answers True, never a wrong False. False: no value
    holds a trigger.
    """
    if "@" in encoded or "k-" in encoded or "xox" in encoded:
        return True
    if "A" in encoded and ("AKIA" in encoded or "ASIA" in encoded or "AIza" in encoded):
        return True
    if "gh" in encoded and any(t in encoded for t in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")):
        return True
    low = encoded.lower()
    if "bearer" not in low and "basic" not in low and "token" not in low:
        return False
    low_keys = keys.lower()
    return any(low.count(word) > low_keys.count(word) for word in _WORDS)


class Redactor:
    """Applies the redaction patterns to strings and to span attribute values."""

    def __init__(self, custom: Iterable[str | re.Pattern[str]] = (), *, defaults: bool = True) -> None:
        rules: list[_Rule] = []
        self._any_trigger: re.Pattern[str] | None = None
        if defaults:
            for kind, rx, triggers in DEFAULT_PATTERNS:
                rules.append((re.compile(rx), f"[REDACTED:{kind}]", triggers))
            # One search for any trigger decides whether the default rules need to look at all.
            self._any_trigger = re.compile(
                "|".join(re.escape(t) for _, _, triggers in DEFAULT_PATTERNS for t in triggers)
            )
        for item in custom:
            try:
                pattern = item if isinstance(item, re.Pattern) else re.compile(item)
            except re.error as exc:
                raise InstrumentationError(
                    f"redaction pattern {item!r} is not a valid regular expression ({exc}); "
                    "fix it in configure(redact=...) or REPLAYGATE_REDACT"
                ) from exc
            rules.append((pattern, "[REDACTED]", ()))
        self._rules = tuple(rules)

    def may_change(self, texts: Iterable[str]) -> bool:
        """Whether :meth:`redact` could change any of ``texts`` (False: every one comes back as it is).

        One trigger search over all of them instead of one per string; custom patterns have no
        triggers, so with any custom pattern the answer is always True.
        """
        if len(self._rules) != (len(DEFAULT_PATTERNS) if self._any_trigger is not None else 0):
            return True  # custom patterns: each text must be scanned
        if self._any_trigger is None:
            return False
        # No trigger holds a newline, so a match in the joined text lies inside one of the texts.
        return may_hold_trigger("\n".join(texts))

    def may_change_encoded(self, encoded: str, keys: str) -> bool:
        """:meth:`may_change` of the values in JSON text ``encoded`` whose object keys are ``keys`` joined.

        The same answer as :meth:`may_change` over those values, or True more often
        (:func:`may_hold_trigger_in_values`).
        """
        if len(self._rules) != (len(DEFAULT_PATTERNS) if self._any_trigger is not None else 0):
            return True
        if self._any_trigger is None:
            return False
        return may_hold_trigger_in_values(encoded, keys)

    def redact(self, text: str) -> tuple[str, int]:
        """Return ``text`` with every match replaced, and the number of replacements."""
        total = 0
        run_defaults = self._any_trigger is not None and self._any_trigger.search(text) is not None
        for pattern, replacement, triggers in self._rules:
            if triggers and not (run_defaults and any(t in text for t in triggers)):
                continue
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
