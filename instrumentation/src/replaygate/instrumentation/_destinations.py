"""Where spans go: each active exporter and its target, said once per ``configure`` call.

``configure()`` logs one INFO line on the ``replaygate.instrumentation`` logger naming every active
exporter and where it sends spans (the store as an absolute path, so a process that changes directory
still knows which file it writes)::

    replaygate: spans go to store /srv/agent/.replaygate/replaygate.db, otlp http://collector:4318/v1/traces

With ``REPLAYGATE_VERBOSE=1`` the same line is also written to stderr. ``health()["destinations"]`` holds
the same mapping (exporter name -> target) and ``health()["store_path"]`` the store's absolute path.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["VERBOSE_ENV", "absolute_store", "announce", "describe_destinations"]

VERBOSE_ENV = "REPLAYGATE_VERBOSE"
_LOG = logging.getLogger("replaygate.instrumentation")


def absolute_store(store: str) -> str:
    """A store path (or ``sqlite:///`` URL) as an absolute path; other values as given."""
    if "://" in store:
        if store.startswith("sqlite:///"):
            return str(Path(store.removeprefix("sqlite:///")).expanduser().resolve())
        return store
    return str(Path(store).expanduser().resolve())


def _without_secrets(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def describe_destinations(
    names: Sequence[str], *, store: str | None, otlp: str | None, langfuse: str | None
) -> dict[str, str]:
    """Exporter name -> where it sends spans (credentials left out)."""
    targets = {
        "store": absolute_store(store) if store else "",
        "otlp": otlp or "",
        "langfuse": langfuse or "",
    }
    return {name: _without_secrets(targets.get(name) or "in-process exporter") for name in names}


def announce(destinations: Mapping[str, str], env: Mapping[str, str] | None = None) -> str:
    """Log where spans go (INFO; also stderr under ``REPLAYGATE_VERBOSE=1``) and return the line."""
    where = ", ".join(f"{name} {target}" for name, target in destinations.items())
    line = (
        f"replaygate: spans go to {where}" if where else "replaygate: no exporter is active; spans go nowhere"
    )
    _LOG.info(line)
    if (env if env is not None else os.environ).get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes"):
        try:
            sys.stderr.write(line + "\n")
        except (OSError, ValueError):  # a closed stderr must not break the agent
            pass
    return line
