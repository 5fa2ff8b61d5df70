"""A tool in a virtual environment of its own, installed once into a cache folder (Phoenix, OpenLLMetry).

Some tools the tests and benchmarks run for real pin dependencies that clash with the project's, so each
lives in its own virtual environment: ``install_venv(folder, packages, exe="bin/phoenix")`` creates it
under a lock (two processes never install at once), marks it complete at the end, and reuses a complete
one; an install that did not finish is removed and redone. Plain standard library: it runs with the
system ``python3`` before the project's environment exists (``.ci/run``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["InstallError", "cache_folder", "install_venv"]

_DONE = ".replaygate-complete"


class InstallError(RuntimeError):
    """A tool's virtual environment could not be installed here."""


def cache_folder(env: str, name: str) -> Path:
    """The folder of a cached environment: ``$<env>``, else ``~/.cache/replaygate/<name>``."""
    return Path(os.environ.get(env) or Path.home() / ".cache" / "replaygate" / name)


def install_venv(
    venv: Path,
    packages: Sequence[str],
    *,
    exe: str,
    what: str,
    error: type[InstallError] = InstallError,
    prefer_uv: bool = False,
) -> Path:
    """Return ``venv/<exe>``, installing ``packages`` into a new virtual environment first if needed.

    Args:
        venv: the environment's folder.
        packages: the pip requirements (pinned).
        exe: the executable to return, relative to ``venv`` (``bin/python``).
        what: the tool, in the error message.
        error: the exception raised when a step fails (an :class:`InstallError`).
        prefer_uv: install with uv when it is on PATH (its resolver copes with many pins), else pip.

    Raises:
        InstallError: a step of the install failed (the message names it and ends with its stderr).
    """
    target, done = venv / exe, venv / _DONE
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and target.exists():
            return target
        shutil.rmtree(venv, ignore_errors=True)
        python = venv / "bin" / "python"
        uv = shutil.which("uv") if prefer_uv else None
        steps = (
            [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(python), *packages],
            ]
            if uv
            else [
                [sys.executable, "-m", "venv", str(venv)],
                [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", *packages],
            ]
        )
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, timeout=1200, check=False)
            if result.returncode != 0:
                raise error(f"installing {what} failed at `{' '.join(step[:4])}`: {result.stderr[-800:]}")
        done.write_text("\n".join(packages))
    return target
