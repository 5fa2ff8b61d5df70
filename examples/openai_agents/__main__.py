"""Traced, promoted, replayed: ``python -m examples.openai_agents [WORKDIR]`` (default: a temp folder)."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from examples.openai_agents.demo import run_demo


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m examples.openai_agents",
        description="An openai-agents SDK agent against a local OpenAI-compatible server: traced, "
        "promoted into a golden scenario, replayed.",
    )
    parser.add_argument("workdir", nargs="?", type=Path, help="where to write the store, scenario and run "
                        "(default: a temporary folder, removed afterwards)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.workdir is not None:
        print("\n".join(asyncio.run(run_demo(args.workdir))))
        return
    with tempfile.TemporaryDirectory() as work:
        print("\n".join(asyncio.run(run_demo(Path(work)))))


if __name__ == "__main__":
    main()
