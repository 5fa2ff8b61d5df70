"""Issue 19: a production process importing the instrumentation loads only what the decorator needs.

asyncio (and the ssl it imports), urllib's HTTP client and email are loaded when used (sending
feedback, reading canary state from a URL, decorating a function: wrapt 2 imports asyncio), not on
import. Nor does the import load the SDK's export side, sqlite3, hashlib (OpenSSL), decimal or the
store, the export pipeline, the routing client and span normalisation: the public names that need them
load their modules on first use (PEP 562), and every name of ``__all__`` still resolves to the same object.
``replaygate run --policy`` reads the policy without loading scipy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["asyncio", "ssl", "urllib.request", "http.client", "email", "scipy"]
#: Loaded by ``configure``, the store, canary routing or replay, never by ``import`` and a decorated call.
NOT_ON_IMPORT = [
    "opentelemetry.sdk.trace",
    "opentelemetry.sdk.trace.export",
    "opentelemetry.exporter",
    "sqlite3",
    "hashlib",
    "decimal",
    "pydantic",
    "genai_prices",
    "replaygate.instrumentation._configure",
    "replaygate.instrumentation._export",
    "replaygate.instrumentation._store",
    "replaygate.instrumentation._routing",
    "replaygate.instrumentation._normalize",
    "replaygate.instrumentation._prices",
]


def _loaded(code: str, names: list[str] = HEAVY) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True, cwd=ROOT
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_loads_no_asyncio_urllib_or_ssl() -> None:
    assert _loaded("import replaygate.instrumentation") == []


def test_import_and_a_decorated_call_load_no_sdk_store_or_export_modules() -> None:
    code = (
        "import replaygate.instrumentation as ri\n"
        "@ri.trace_agent(name='a')\n"
        "def agent(message: str) -> str:\n"
        "    with ri.tool_call('t', {'x': 1}) as t:\n"
        "        t.set_result(1)\n"
        "    return message.upper()\n"
        "assert agent('hi') == 'HI'"
    )
    assert _loaded("import replaygate.instrumentation", NOT_ON_IMPORT) == []
    assert _loaded(code, NOT_ON_IMPORT) == []


def test_lazy_names_resolve_to_their_modules_objects() -> None:
    code = (
        "import replaygate.instrumentation as ri\n"
        "from replaygate.instrumentation import TraceStore, configure\n"
        "from replaygate.instrumentation._store import TraceStore as Private\n"
        "assert TraceStore is Private and ri.TraceStore is Private and callable(configure)\n"
        "assert set(ri.__all__) <= set(dir(ri))\n"
        "try:\n"
        "    ri.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
        "from replaygate.instrumentation import *"
    )
    assert "replaygate.instrumentation._store" in _loaded(code, NOT_ON_IMPORT)


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
