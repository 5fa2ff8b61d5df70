"""``replaygate doctor``: the settings this machine resolves, and whether each one is reachable.

::

    replaygate doctor [--store PATH] [--golden DIR] [--json]

It prints, from the options and the environment exactly as the other commands resolve them: the trace
store (absolute path, and whether it opens with how many traces), each exporter ``configure()`` would
start (the store, OTLP, Langfuse: a TCP connection to the collector is tried, 2 s), the canary source the
routing client reads (``REPLAYGATE_CANARY_SOURCE``, else the store) and the golden-set folder (how many
scenarios, and whether they load). Nothing is written. Exit 0 when every check passed, 1 when one failed.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
from replaygate.instrumentation import (
    ReplaygateError,
    RoutingClient,
    TraceStore,
    absolute_store,
    describe_destinations,
    resolve_settings,
)
from replaygate.replay import load_scenarios, scenario_files

from replaygate.cli._options import json_option, store_option
from replaygate.golden import resolve_golden_dir

__all__ = ["register"]

FAILED = 1


@dataclass(frozen=True)
class Check:
    """One resolved setting: what it is, its value, whether it is reachable, and what was found."""

    name: str
    value: str
    ok: bool
    detail: str


def _tcp(url: str, timeout_s: float = 2.0) -> tuple[bool, str]:
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return False, f"{url!r} names no host"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True, f"{host}:{port} accepts connections"
    except OSError as exc:
        return False, f"cannot connect to {host}:{port} ({exc.strerror or exc})"


def _store(value: str | None) -> Check:
    raw = value or os.environ.get("REPLAYGATE_STORE") or ".replaygate/replaygate.db"
    where = absolute_store(raw)
    if not Path(where).exists():
        return Check("store", where, False, "no store there yet (configure() creates it on the first span)")
    try:
        with TraceStore(raw, create=False) as store:
            return Check("store", where, True, f"opens; {store.count()} traces")
    except ReplaygateError as exc:
        return Check("store", where, False, str(exc))


def _exporters(store: str | None, store_ok: bool) -> list[Check]:
    env = dict(os.environ)
    if store:
        env["REPLAYGATE_STORE"] = store
    try:
        settings = resolve_settings(env=env)
    except ReplaygateError as exc:
        return [Check("exporters", "-", False, f"the environment is invalid: {exc}")]
    names = [n for n, on in (("store", settings.store), ("otlp", settings.otlp_endpoint)) if on]
    if settings.langfuse_enabled:
        names.append("langfuse")
    where = describe_destinations(
        names,
        store=settings.store,
        otlp=settings.otlp_endpoint,
        langfuse=settings.langfuse_endpoint if settings.langfuse_enabled else None,
    )
    if not names:
        return [
            Check(
                "exporters", "none", False, "REPLAYGATE_STORE=off and no OTLP or Langfuse: spans go nowhere"
            )
        ]
    out = []
    for name in names:
        if name == "store":
            detail = "in-process, to the store above" + ("" if store_ok else " (which does not open)")
            out.append(Check("exporter store", where[name], store_ok, detail))
        else:
            ok, detail = _tcp(where[name])
            out.append(Check(f"exporter {name}", where[name], ok, detail))
    return out


def _canary(store: str | None) -> Check:
    source = os.environ.get("REPLAYGATE_CANARY_SOURCE") or store or os.environ.get("REPLAYGATE_STORE")
    source = source or ".replaygate/replaygate.db"
    shown = source if "://" in source and not source.startswith("sqlite") else absolute_store(source)
    client = RoutingClient(source, timeout_s=2.0)
    state = client.refresh()
    stats = client.stats()
    if stats["last_error"]:
        return Check(
            "canary source", shown, False, f"unreadable, the agents serve the baseline: {stats['last_error']}"
        )
    return Check(
        "canary source", shown, True, f"readable; canary {state.status}, candidate share {state.share:g}"
    )


def _golden(value: str | None) -> Check:
    path = resolve_golden_dir(value)
    where = str(path.resolve())
    if not path.is_dir():
        return Check("golden set", where, False, "no such folder (set --golden or REPLAYGATE_GOLDEN)")
    files = scenario_files(path)
    try:
        scenarios = load_scenarios(path)
    except ReplaygateError as exc:
        problems = str(exc).splitlines()
        return Check(
            "golden set",
            where,
            False,
            f"{len(files)} files, {len(problems)} problem(s); first: {problems[0]}",
        )
    lock = "with golden.lock" if (path / "golden.lock").is_file() else "no golden.lock yet"
    return Check("golden set", where, True, f"{len(scenarios)} scenarios load ({lock})")


@click.command("doctor")
@store_option
@click.option("--golden", default=None, help="Golden-set folder [env REPLAYGATE_GOLDEN; golden/].")
@json_option
def doctor_cmd(store: str | None, golden: str | None, as_json: bool) -> None:
    """Print the resolved settings (store, exporters, canary source, golden folder) and check each."""
    found = _store(store)
    checks = [found, *_exporters(store, found.ok), _canary(store), _golden(golden)]
    if as_json:
        doc: dict[str, Any] = {"format_version": 1, "checks": [asdict(c) for c in checks]}
        click.echo(json.dumps(doc, indent=2))
    else:
        for c in checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'}  {c.name:<16} {c.value}")
            click.echo(f"      {c.detail}")
        bad = [c.name for c in checks if not c.ok]
        click.echo(
            f"{len(checks) - len(bad)} of {len(checks)} ok" + (f"; failing: {', '.join(bad)}" if bad else "")
        )
    if any(not c.ok for c in checks):
        sys.exit(FAILED)


def register(group: click.Group) -> None:
    """Add ``doctor`` to the root group."""
    group.add_command(doctor_cmd)
