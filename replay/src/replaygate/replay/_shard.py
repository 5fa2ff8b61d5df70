"""Sharding: split a suite across CI jobs by a stable hash of the scenario id."""

from __future__ import annotations

import hashlib
import re

__all__ = ["format_shard", "in_shard", "parse_shard"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``"i/n"`` (1 ≤ i ≤ n); a bad value raises ValueError saying what is expected."""
    m = _SHARD.match(text)
    if not m:
        raise ValueError(f"shard {text!r}: expected i/n, e.g. 1/4")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"shard {text!r}: expected 1 <= i <= n")
    return i, n


def format_shard(i: int, n: int) -> str:
    """Return ``"i/n"``."""
    return f"{i}/{n}"


def in_shard(scenario_id: str, i: int, n: int) -> bool:
    """Return whether a scenario belongs to shard ``i`` of ``n`` (stable across machines and runs)."""
    digest = hashlib.sha256(scenario_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n == i - 1
