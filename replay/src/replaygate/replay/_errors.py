"""Errors of the replay part (see :mod:`replaygate.instrumentation._errors` for the whole tree)."""

from replaygate.instrumentation import ReplaygateError

__all__ = ["JudgeError", "ReplayError", "RunFileError", "ScenarioError", "TargetError"]


class ReplayError(ReplaygateError):
    """Base class of errors raised by :mod:`replaygate.replay`."""


class ScenarioError(ReplayError):
    """A scenario file is invalid; the message names the file, line and what to do."""


class TargetError(ReplayError):
    """A target could not be loaded or called."""


class JudgeError(ReplayError):
    """A judge failed, timed out or answered outside its schema."""


class RunFileError(ReplayError):
    """A run file or its journal is unreadable or inconsistent."""
