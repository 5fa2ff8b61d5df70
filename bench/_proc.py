"""Helpers of the benchmarks that start servers: a free port, the CPU of a process tree (Linux /proc)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_of_tree(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and its live children (a gunicorn master and its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == root or int(fields[1]) == root:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total
