"""Arize Phoenix in its own virtual environment (its dependency pins clash with the project's).

``python tests/sources/phoenix_env.py`` installs it ahead of the tests (``.ci/run`` does, with the system
``python3``); the Phoenix fixture calls :func:`install_phoenix` too, so a developer's first run installs
it (about 1.5 minutes) and later runs reuse it. The folder is ``$REPLAYGATE_PHOENIX_VENV`` or
``~/.cache/replaygate/phoenix-<version>``; an install that did not finish is redone
(``tests/cached_venv.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``tests`` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.cached_venv import InstallError, cache_folder, install_venv  # noqa: E402

PHOENIX_VERSION = "20.26.1"
PHOENIX_HELP = (
    "the Phoenix tests need arize-phoenix in its own virtual environment, installed on first use into "
    f"$REPLAYGATE_PHOENIX_VENV (default ~/.cache/replaygate/phoenix-{PHOENIX_VERSION}) with pip from the "
    "package index (or ahead of time: python tests/sources/phoenix_env.py); "
    "REPLAYGATE_REQUIRE_PHOENIX=1 turns a missing Phoenix into a failure"
)


class PhoenixInstallError(InstallError):
    """Phoenix could not be installed here."""


def venv_path() -> Path:
    """Where the virtual environment lives (``$REPLAYGATE_PHOENIX_VENV`` or the user cache)."""
    return cache_folder("REPLAYGATE_PHOENIX_VENV", f"phoenix-{PHOENIX_VERSION}")


def install_phoenix() -> Path:
    """The ``phoenix`` executable, installing its virtual environment first if needed (under a lock)."""
    return install_venv(
        venv_path(),
        [f"arize-phoenix=={PHOENIX_VERSION}"],
        exe="bin/phoenix",
        what="Phoenix",
        error=PhoenixInstallError,
    )


if __name__ == "__main__":
    print(install_phoenix())
