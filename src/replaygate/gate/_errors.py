"""Errors of the comparison, the gate and the decision store."""

from __future__ import annotations

from replaygate.instrumentation import ReplaygateError

__all__ = ["ComparisonError", "DecisionError", "GateError", "PolicyError", "PolicyWidenedError"]


class GateError(ReplaygateError):
    """Base class of errors raised by :mod:`replaygate.gate`."""


class ComparisonError(GateError):
    """Two runs cannot be compared (no fingerprint, different suite hash or k)."""


class PolicyError(GateError):
    """A gate policy file is missing, unreadable or invalid."""


class PolicyWidenedError(PolicyError):
    """The gate policy is wider than the one recorded when the run started."""


class DecisionError(GateError):
    """A review or a signature was refused, or the decision store failed."""
