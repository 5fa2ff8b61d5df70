"""replaygate.web."""

__all__: list[str] = []
