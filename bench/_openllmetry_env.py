"""OpenLLMetry's ``traceloop-sdk`` in its own virtual environment, for the ``@workflow`` row of overhead.py.

``traceloop-sdk`` pins ``opentelemetry-instrumentation-threading``, whose releases lag the project's
OpenTelemetry SDK (``traceloop-sdk`` 0.62.4 cannot resolve beside ``opentelemetry-sdk`` 1.45.2), so it is
not a workspace dependency: adding it would downgrade the SDK for everything. The benchmark runs that
row in a child process whose virtual environment holds ``traceloop-sdk`` and ``wrapt`` (and its own
OpenTelemetry SDK); ``replaygate.instrumentation`` is imported there from this checkout's source, so
that process measures the manual span, ``@trace_agent`` and ``@workflow`` side by side too.

The folder is ``$REPLAYGATE_OPENLLMETRY_VENV`` or ``~/.cache/replaygate/openllmetry-<version>``; it is
installed with uv (pip when uv is missing) from the package index on first use (about a minute), under
a lock; an install that did not finish is redone (``tests/cached_venv.py``, shared with the Phoenix
tests). ``python bench/_openllmetry_env.py`` installs it ahead.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: ``tests.cached_venv``

from tests.cached_venv import InstallError, cache_folder, install_venv  # noqa: E402

TRACELOOP_VERSION = "0.62.4"
#: traceloop-sdk imports httpx without declaring it; replaygate.instrumentation needs wrapt beyond OTel.
_PACKAGES = (f"traceloop-sdk=={TRACELOOP_VERSION}", "httpx", "wrapt")


class OpenLLMetryInstallError(InstallError):
    """traceloop-sdk could not be installed here."""


def venv_path() -> Path:
    """Where the virtual environment lives (``$REPLAYGATE_OPENLLMETRY_VENV`` or the user cache)."""
    return cache_folder("REPLAYGATE_OPENLLMETRY_VENV", f"openllmetry-{TRACELOOP_VERSION}")


def install_openllmetry() -> Path:
    """The virtual environment's ``python``, installing the environment first if needed (under a lock)."""
    # uv resolves traceloop-sdk's fifty pinned instrumentation packages; pip's resolver gives up.
    return install_venv(
        venv_path(),
        _PACKAGES,
        exe="bin/python",
        what="traceloop-sdk",
        error=OpenLLMetryInstallError,
        prefer_uv=True,
    )


if __name__ == "__main__":
    print(install_openllmetry())
