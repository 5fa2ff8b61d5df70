"""The version of ``replaygate-replay``: the one place to bump it (the build reads this file)."""

__version__ = "0.1.0"
