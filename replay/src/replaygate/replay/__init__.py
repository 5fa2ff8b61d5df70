"""replaygate.replay: scenarios, targets, the replay runner and scoring."""

from replaygate.replay._errors import (
    JudgeError,
    ReplayError,
    RunFileError,
    ScenarioError,
    TargetError,
)
from replaygate.replay.version import __version__

__all__ = [
    "JudgeError",
    "ReplayError",
    "RunFileError",
    "ScenarioError",
    "TargetError",
    "__version__",
]
