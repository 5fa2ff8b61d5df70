"""Issue 19: a production process importing the instrumentation loads only what the decorator needs.

asyncio (and the ssl it imports), urllib's HTTP client and email are loaded when used (sending
feedback, reading canary state from a URL, decorating a function: wrapt 2 imports asyncio), not on
import. ``replaygate run --policy`` reads the policy without loading scipy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["asyncio", "ssl", "urllib.request", "http.client", "email", "scipy"]


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True, cwd=ROOT
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_loads_no_asyncio_urllib_or_ssl() -> None:
    assert _loaded("import replaygate.instrumentation") == []


def test_the_probe_sees_a_module_that_is_loaded() -> None:
    assert "urllib.request" in _loaded("import replaygate.instrumentation, urllib.request")


def test_decorating_and_calling_still_work_and_load_asyncio_then() -> None:
    code = (
        "import replaygate.instrumentation as ri\n"
        "@ri.trace_agent(name='a')\n"
        "def agent(message: str) -> str:\n"
        "    return message.upper()\n"
        "assert agent('hi') == 'HI'"
    )
    assert "asyncio" in _loaded(code)  # wrapt, at decoration time


def test_reading_a_policy_for_a_run_loads_no_scipy() -> None:
    code = (
        "from replaygate.cli._run import _load_policy\n"
        f"assert _load_policy({str(ROOT / 'examples' / 'gate-policy.yaml')!r}) is not None"
    )
    assert "scipy" not in _loaded(code)
