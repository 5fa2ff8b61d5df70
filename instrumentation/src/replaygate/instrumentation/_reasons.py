"""The failure reasons a trace can carry, in their one order (the decorators need them, not the records)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FAILURE_REASONS", "ordered_reasons"]

#: The reasons that make a trace a failure candidate.
FAILURE_REASONS = ("exception", "empty_answer", "escalation", "explicit", "negative_feedback")


def ordered_reasons(reasons: Iterable[str]) -> tuple[str, ...]:
    """Failure reasons without repeats or blanks: known ones in ``FAILURE_REASONS`` order, then the others."""
    unique = list(dict.fromkeys(r for r in reasons if r))
    known = [r for r in FAILURE_REASONS if r in unique]
    return tuple(known + [r for r in unique if r not in FAILURE_REASONS])
