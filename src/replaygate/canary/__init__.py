"""replaygate.canary."""

__all__: list[str] = []
