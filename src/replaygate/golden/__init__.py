"""replaygate.golden."""

__all__: list[str] = []
