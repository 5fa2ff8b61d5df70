"""CLI commands of one area (filled in by its issue)."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(group: click.Group) -> None:
    """Add this area's commands to the root group."""
