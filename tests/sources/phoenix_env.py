"""Arize Phoenix in its own virtual environment (its dependency pins clash with the project's).

``python tests/sources/phoenix_env.py`` installs it ahead of the tests (``.ci/run`` does); the Phoenix
fixture calls :func:`install_phoenix` too, so a developer's first run installs it (about 1.5 minutes)
and later runs reuse it. The folder is ``$REPLAYGATE_PHOENIX_VENV`` or
``~/.cache/replaygate/phoenix-<version>``; an install that did not finish is redone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

PHOENIX_VERSION = "20.26.1"
PHOENIX_HELP = (
    "the Phoenix tests need arize-phoenix in its own virtual environment, installed on first use into "
    f"$REPLAYGATE_PHOENIX_VENV (default ~/.cache/replaygate/phoenix-{PHOENIX_VERSION}) with pip from the "
    "package index (or ahead of time: python tests/sources/phoenix_env.py); "
    "REPLAYGATE_REQUIRE_PHOENIX=1 turns a missing Phoenix into a failure"
)


class PhoenixInstallError(RuntimeError):
    """Phoenix could not be installed here."""


def venv_path() -> Path:
    default = Path.home() / ".cache" / "replaygate" / f"phoenix-{PHOENIX_VERSION}"
    return Path(os.environ.get("REPLAYGATE_PHOENIX_VENV") or default)


def install_phoenix() -> Path:
    """The ``phoenix`` executable, installing its virtual environment first if needed (under a lock)."""
    venv = venv_path()
    exe, done = venv / "bin" / "phoenix", venv / ".replaygate-complete"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and exe.exists():
            return exe
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(venv / "bin" / "pip"),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"arize-phoenix=={PHOENIX_VERSION}",
            ],
        ]
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, timeout=1200, check=False)
            if result.returncode != 0:
                raise PhoenixInstallError(
                    f"installing Phoenix failed at `{' '.join(step[:4])}`: {result.stderr[-800:]}"
                )
        done.write_text(PHOENIX_VERSION)
    return exe


if __name__ == "__main__":
    print(install_phoenix())
