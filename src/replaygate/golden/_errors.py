"""Errors of the golden-set lifecycle."""

from __future__ import annotations

from pydantic import ValidationError
from replaygate.instrumentation import ReplaygateError

__all__ = ["GoldenError", "describe_invalid"]


class GoldenError(ReplaygateError):
    """A golden-set operation was refused or failed; the message says why and what to do."""


def describe_invalid(exc: ValueError) -> str:
    """One line per problem of a pydantic validation error: ``field: what (value ...)``, no URLs."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(scenario)"
        lines.append(f"{where}: {error['msg']} (value {error.get('input')!r})")
    return "; ".join(lines)
