"""Errors of the canary control plane."""

from __future__ import annotations

from replaygate.instrumentation import ReplaygateError

__all__ = ["CanaryError", "ConflictError"]


class CanaryError(ReplaygateError):
    """A canary action was refused or the canary state could not be read or written (says what to do)."""


class ConflictError(CanaryError):
    """The canary state changed under an action too many times in a row (retry the action)."""
