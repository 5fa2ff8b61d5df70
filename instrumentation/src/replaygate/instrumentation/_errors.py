"""The exception tree of replaygate.

All errors raised by replaygate derive from :class:`ReplaygateError`::

    ReplaygateError
    ├── InstrumentationError      (replaygate.instrumentation: bad configuration)
    ├── StoreError                (replaygate.instrumentation: the trace store failed)
    ├── ReplayError               (replaygate.replay)
    │   ├── ScenarioError         (a scenario file is invalid: file:line and what to do)
    │   ├── TargetError           (a target cannot be loaded or called)
    │   ├── JudgeError            (a judge failed or answered outside its schema)
    │   └── RunFileError          (a run file or journal is unreadable or inconsistent)
    └── control-plane errors      (replaygate.golden, .stats, .gate, .canary, .web)

Messages say what was wrong, where (file:line, trace id, scenario id) and what to do.
"""

__all__ = ["InstrumentationError", "ReplaygateError", "StoreError"]


class ReplaygateError(Exception):
    """Base class of every error replaygate raises on purpose."""


class InstrumentationError(ReplaygateError):
    """Instrumentation was configured wrongly (bad option, bad environment variable)."""


class StoreError(ReplaygateError):
    """The embedded trace store could not be opened, read or written."""
