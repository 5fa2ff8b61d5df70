"""Instructions per call of a manual OTel span and of ``@trace_agent``, counted by valgrind (load-free).

CPU time on a shared machine moves with the load on it; instruction counts do not. This runs the same
two variants as ``bench/overhead.py`` (the manual span and ``@trace_agent`` on one replaygate-configured
provider, here with no exporter so the count is the agent thread's work only) under
``valgrind --tool=cachegrind --cache-sim=no`` twice each, with ``BENCH_CALLS_LOW`` and ``BENCH_CALLS_HIGH``
calls after the same warm-up, and reports the difference divided by the extra calls: start-up and
imports cancel out. It takes about a minute per variant (Python runs some 50x slower under valgrind).

    uv run --locked python bench/overhead_instructions.py

Target: ``@trace_agent`` within 1.2x of the manual span (1.10x with margin).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from overhead import MESSAGE, base_variants  # bench/ is on the path: this file's folder

LOW = int(os.environ.get("BENCH_CALLS_LOW", "500"))
HIGH = int(os.environ.get("BENCH_CALLS_HIGH", "2500"))
WARM_UP = 300
VARIANTS = ("manual OTel span", "@trace_agent")
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def _variant(name: str) -> Callable[[str, str], Any]:
    return base_variants(exporters=[])[name]


def child(name: str, calls: int) -> None:
    """Run one variant ``calls`` times after the warm-up (what valgrind counts)."""
    fn = _variant(name)
    for _ in range(WARM_UP + calls):
        fn(MESSAGE, "s-1")


def count(valgrind: str, name: str, calls: int) -> int:
    """Instructions of a whole child process running ``name`` ``calls`` times."""
    result = subprocess.run(
        [
            valgrind,
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            name,
            str(calls),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts in every run: counts repeat
    )
    found = _REFS.search(result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(
            f"valgrind run of {name!r} failed (exit {result.returncode}): {result.stderr[-800:]}"
        )
    return int(found.group(1).replace(",", ""))


def main() -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:  # `make bench` runs every benchmark: say why this one measured nothing
        print("skipped: valgrind is not installed (apt-get install valgrind); bench/overhead.py times CPU")
        return
    per_call: dict[str, float] = {}
    for name in VARIANTS:
        per_call[name] = (count(valgrind, name, HIGH) - count(valgrind, name, LOW)) / (HIGH - LOW)
    print(f"instructions per call (valgrind cachegrind, {HIGH} - {LOW} calls, no exporter):")
    for name, n in per_call.items():
        print(f"  {name:<18} {n:10.0f}")
    ratio = per_call["@trace_agent"] / per_call["manual OTel span"]
    print(f"  ratio @trace_agent / manual OTel span = {ratio:5.3f}   (target <= 1.2, with margin <= 1.10)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
