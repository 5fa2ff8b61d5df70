"""OpenLLMetry's ``traceloop-sdk`` in its own virtual environment, for the ``@workflow`` row of overhead.py.

``traceloop-sdk`` pins ``opentelemetry-instrumentation-threading``, whose releases lag the project's
OpenTelemetry SDK (``traceloop-sdk`` 0.62.4 cannot resolve beside ``opentelemetry-sdk`` 1.45.2), so it is
not a workspace dependency: adding it would downgrade the SDK for everything. The benchmark runs that
row in a child process whose virtual environment holds ``traceloop-sdk`` and ``wrapt`` (and its own
OpenTelemetry SDK); ``replaygate.instrumentation`` is imported there from this checkout's source, so
that process measures the manual span, ``@trace_agent`` and ``@workflow`` side by side too.

The folder is ``$REPLAYGATE_OPENLLMETRY_VENV`` or ``~/.cache/replaygate/openllmetry-<version>``; it is
installed with uv (pip when uv is missing) from the package index on first use (about a minute), under
a lock; an install that did not finish is redone. ``python bench/_openllmetry_env.py`` installs it ahead.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

TRACELOOP_VERSION = "0.62.4"
#: traceloop-sdk imports httpx without declaring it; replaygate.instrumentation needs wrapt beyond OTel.
_PACKAGES = (f"traceloop-sdk=={TRACELOOP_VERSION}", "httpx", "wrapt")


class OpenLLMetryInstallError(RuntimeError):
    """traceloop-sdk could not be installed here."""


def venv_path() -> Path:
    """Where the virtual environment lives (``$REPLAYGATE_OPENLLMETRY_VENV`` or the user cache)."""
    default = Path.home() / ".cache" / "replaygate" / f"openllmetry-{TRACELOOP_VERSION}"
    return Path(os.environ.get("REPLAYGATE_OPENLLMETRY_VENV") or default)


def install_openllmetry() -> Path:
    """The virtual environment's ``python``, installing the environment first if needed (under a lock)."""
    venv = venv_path()
    exe, done = venv / "bin" / "python", venv / ".replaygate-complete"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and exe.exists():
            return exe
        shutil.rmtree(venv, ignore_errors=True)
        uv = shutil.which("uv")
        # uv resolves traceloop-sdk's fifty pinned instrumentation packages; pip's resolver gives up.
        steps = (
            [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(exe), *_PACKAGES],
            ]
            if uv
            else [
                [sys.executable, "-m", "venv", str(venv)],
                [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", *_PACKAGES],
            ]
        )
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True, timeout=1200, check=False)
            if result.returncode != 0:
                raise OpenLLMetryInstallError(
                    f"installing traceloop-sdk failed at `{' '.join(step[:4])}`: {result.stderr[-800:]}"
                )
        done.write_text(TRACELOOP_VERSION)
    return exe


if __name__ == "__main__":
    print(install_openllmetry())
