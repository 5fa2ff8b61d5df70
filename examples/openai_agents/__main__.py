"""Traced, promoted, replayed: ``python -m examples.openai_agents [WORKDIR]`` (default: a temp folder)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from examples.openai_agents.demo import run_demo


def main() -> None:
    if len(sys.argv) > 1:
        print("\n".join(asyncio.run(run_demo(Path(sys.argv[1])))))
        return
    with tempfile.TemporaryDirectory() as work:
        print("\n".join(asyncio.run(run_demo(Path(work)))))


if __name__ == "__main__":
    main()
