"""replaygate.gate."""

__all__: list[str] = []
