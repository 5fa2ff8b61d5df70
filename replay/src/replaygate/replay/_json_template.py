"""``JsonTemplate``: the JSON text of one object with a few values left open, filled by joining strings.

The runner writes thousands of attempts that differ from an attempt scored before only in a few values
(index, trace id, start, latency: see ``_attempt_templates``), and their artifact lines likewise. Instead
of serializing each one again, :meth:`JsonTemplate.cut` cuts the text of one of them out at those values
— each found right after an *anchor*, a piece of the layout such as ``,"index":`` that occurs exactly
once in the text (a quote inside a JSON string is escaped, so an anchor cannot hide in one) — and
:meth:`JsonTemplate.fill` puts another object's values in their places. Cut from a real text at its
real values, the template gives that text back; with other values, the serializer's text for them, as
each field of a JSON object is serialized on its own (a test compares the two on varied objects).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["JsonTemplate"]


class JsonTemplate:
    """A JSON text cut at its open values: ``parts[0] v0 parts[1] v1 ... parts[n]``."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts

    @classmethod
    def cut(cls, text: str, places: Sequence[tuple[str, str]]) -> JsonTemplate | None:
        """Cut ``text`` at each (anchor, value's JSON), in the order they occur; None if one is not there.

        Each anchor must occur exactly once in ``text`` and be followed by the value's JSON.
        """
        parts: list[str] = []
        done = 0
        for anchor, value in places:
            at = text.find(anchor, done)
            start = at + len(anchor)
            if at < 0 or text.count(anchor) != 1 or not text.startswith(value, start):
                return None
            parts.append(text[done:start])
            done = start + len(value)
        parts.append(text[done:])
        return cls(parts)

    def fill(self, values: Sequence[str]) -> str:
        """The text with each open value's JSON (``values``, in the order of the places) in place."""
        parts = self.parts
        out = [parts[0]]
        for value, part in zip(values, parts[1:], strict=True):
            out.append(value)
            out.append(part)
        return "".join(out)
