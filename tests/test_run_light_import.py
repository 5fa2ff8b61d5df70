"""Issue 19: ``replaygate run`` imports only what a run uses.

A whole ``replaygate run`` (a golden set of two scenarios, a Python target, offline judges, a run file
written) runs in a fresh interpreter, and the modules it loaded are read at its exit: the numpy run-file
columns (the gate's), the gate, store, web and report parts, SQLAlchemy, Flask, the OTLP exporters,
the LLM judge and the rest below stay unloaded. The same probe run with ``--judge llm`` shows the LLM
judge is still loaded when it is asked for, and a probe importing numpy shows the probe sees a module
that is loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from replaygate.golden import GoldenSet
from tests.conftest import make_scenario

#: Modules a run never needs (each is what another command, or another option, uses).
NOT_LOADED = [
    "numpy",
    "scipy",
    "genai_prices",
    "sqlalchemy",
    "psycopg",
    "flask",
    "jinja2",
    "rich",
    "httpx",
    "jsonschema",
    "langfuse",
    "google.protobuf",
    "opentelemetry.exporter",
    "replaygate.gate",
    "replaygate.store",
    "replaygate.web",
    "replaygate.report",
    "replaygate.stats",
    "replaygate.canary",
    "replaygate.replay._runcolumns",
    "replaygate.replay._llm_judge",
    "replaygate.replay._calibrate",
]
#: The run's target, in a module of its own that imports nothing (the probe runs in its folder).
TARGET = "def echo(turns, context, config):\n    return 'ok ' + turns[-1]\n"


def _loaded_by_run(tmp_path: Path, *extra: str, also_import: str = "") -> tuple[int, list[str], str]:
    """Exit code, the NOT_LOADED modules loaded, and stderr of one ``replaygate run`` in a new process."""
    golden = tmp_path / "golden"
    if not golden.exists():
        GoldenSet(golden).write([make_scenario("s-1"), make_scenario("s-2")])
        (tmp_path / "light_target.py").write_text(TARGET, encoding="utf-8")
    argv = [
        "run",
        "--golden",
        str(golden),
        "--target",
        "light_target:echo",
        "--out",
        str(tmp_path / "run.json"),
    ]
    argv += ["--quiet", "--force", *extra]
    probe = (
        "import atexit, json, sys\n"
        f"{also_import}\n"
        f"names = {NOT_LOADED!r}\n"
        "atexit.register(lambda: print('LOADED ' + json.dumps([m for m in names if m in sys.modules])))\n"
        "from replaygate.cli import main\n"
        f"main({argv!r})\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAYGATE_")}
    env["REPLAYGATE_SCENARIO_CACHE"] = str(tmp_path / "cache.json")
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED "))
    loaded: list[str] = json.loads(line.removeprefix("LOADED "))
    return done.returncode, loaded, done.stderr


def test_a_run_loads_none_of_the_other_parts_heavy_modules(tmp_path: Path) -> None:
    code, loaded, err = _loaded_by_run(tmp_path)
    assert code == 0, err
    assert (tmp_path / "run.json").is_file()
    assert loaded == []
    code, loaded, err = _loaded_by_run(tmp_path)  # the second run reads the scenario cache
    assert code == 0, err
    assert loaded == []


def test_the_llm_judge_loads_when_asked_for(tmp_path: Path) -> None:
    extra = ("--judge", "llm", "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1")
    code, loaded, err = _loaded_by_run(tmp_path, *extra, "--timeout", "5", "--judge-timeout", "1")
    assert code == 0, err  # the scenarios have checks only: no judge is called
    assert "replaygate.replay._llm_judge" in loaded  # and its HTTP client


def test_the_probe_sees_a_loaded_module(tmp_path: Path) -> None:
    code, loaded, err = _loaded_by_run(tmp_path, also_import="import numpy")
    assert code == 0, err
    assert loaded == ["numpy"]


def _probe(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_public_replay_name_resolves_to_its_modules_object() -> None:
    code = (
        "import importlib, sys\n"
        "import replaygate.replay as r\n"
        "assert 'replaygate.replay._runner' not in sys.modules\n"
        "for name in r.__all__:\n"
        "    value = getattr(r, name)\n"
        "    if name != '__version__':\n"
        "        module = importlib.import_module('replaygate.replay.' + r._MODULES[name])\n"
        "        assert getattr(module, name) is value, name\n"
        "assert set(r.__all__) <= set(dir(r))\n"
        "try:\n"
        "    r.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
        "print('ok')"
    )
    assert _probe(code) == "ok"


def test_the_llm_judges_name_is_taken_before_its_module_loads() -> None:
    code = (
        "import sys\n"
        "from replaygate.replay import create_judge, register_judge\n"
        "from replaygate.replay._judges import registered_judges\n"
        "assert 'llm' in registered_judges()\n"
        "assert 'replaygate.replay._llm_judge' not in sys.modules\n"
        "try:\n"
        "    register_judge('llm')(lambda **kw: None)\n"
        "except ValueError as exc:\n"
        "    assert 'already registered' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('a second llm judge was registered')\n"
        "judge = create_judge('llm', model='m', base_url='http://127.0.0.1:9/v1', task='groundedness')\n"
        "print(type(judge).__name__)"
    )
    assert _probe(code) == "LlmJudge"


def test_the_console_entry_freezes_what_is_left_and_an_in_process_call_does_not() -> None:
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "from replaygate.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('in-process', gc.get_freeze_count() > 0)\n"
        "sys.argv = ['replaygate', '--version']\n"
        "main()\n"
    )
    lines = [x for x in _probe(code).splitlines() if not x.startswith("replaygate")]
    assert lines == ["in-process False", "frozen True"]
