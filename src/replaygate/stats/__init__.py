"""replaygate.stats."""

__all__: list[str] = []
