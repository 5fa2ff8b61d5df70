"""``replaygate doctor``: the settings this machine resolves, and whether each one is reachable.

::

    replaygate doctor [--store PATH] [--golden DIR] [--json]

It prints, from the options and the environment exactly as the other commands resolve them: the trace
store (absolute path, and whether it opens with how many traces), each exporter ``configure()`` would
start (the store, OTLP, Langfuse: a TCP connection to the collector is tried, 2 s), the canary source the
routing client reads (``REPLAYGATE_CANARY_SOURCE``, else the store) and the golden-set folder (how many
scenarios, and whether they load). Nothing is written. Exit 0 when every check passed, 1 when one failed.

A PostgreSQL store (shown without its password) is checked as the commands open it: reachable, with
replaygate's tables. Agents do not write or read it: they export OTLP to ``replaygate collect`` with
``REPLAYGATE_STORE=off`` and read the canary state from the page (``REPLAYGATE_CANARY_SOURCE``), which
the exporter and canary lines say. ``REPLAYGATE_STORE=off`` is no store: spans go to the other exporters
only, and the canary state is read from ``REPLAYGATE_CANARY_SOURCE`` or not at all (the baseline serves).
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
    DEFAULT_STORE,
    ReplaygateError,
    RoutingClient,
    TraceStore,
    absolute_store,
    describe_destinations,
    resolve_settings,
)
from replaygate.replay import load_scenarios, scenario_files
from sqlalchemy.exc import SQLAlchemyError

from replaygate.cli._options import json_option, store_option
from replaygate.golden import resolve_golden_dir
from replaygate.store import STORE_SCHEMA_VERSION, TRACE_SCHEMA_VERSION, display_url, open_engine, versions
from replaygate.store import TraceStore as DatabaseTraceStore

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


def _store_setting(value: str | None) -> str:
    return value or os.environ.get("REPLAYGATE_STORE") or DEFAULT_STORE


def _is_database(raw: str) -> bool:
    """A database URL other than SQLite (PostgreSQL): the control plane's store, never an agent's."""
    return "://" in raw and not raw.startswith("sqlite")


def _is_off(raw: str) -> bool:
    """``off`` (or ``none``, ``false``...): no embedded store, as ``configure()`` resolves it."""
    return not _is_database(raw) and resolve_settings(env={"REPLAYGATE_STORE": raw}).store is None


def _database_store(raw: str) -> Check:
    shown = display_url(raw)
    try:
        engine = open_engine(raw)
        try:
            with engine.connect() as conn:
                trace, control = versions(conn)
        finally:
            engine.dispose()
    except ReplaygateError as exc:
        return Check("store", shown, False, str(exc))
    except SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:300]
        return Check("store", shown, False, f"cannot connect: {detail}")
    if trace == control == 0:
        return Check(
            "store",
            shown,
            False,
            "reachable, but no replaygate tables there yet (`replaygate collect` creates them at start)",
        )
    if trace < TRACE_SCHEMA_VERSION or control < STORE_SCHEMA_VERSION:
        return Check(
            "store",
            shown,
            True,
            f"reachable; schema traces={trace}, control={control}: the next command migrates it",
        )
    try:
        with DatabaseTraceStore(raw, create=False) as store:
            return Check("store", shown, True, f"opens (PostgreSQL); {store.count()} traces")
    except ReplaygateError as exc:
        return Check("store", shown, False, str(exc))


def _store(value: str | None) -> Check:
    raw = _store_setting(value)
    if _is_database(raw):
        return _database_store(raw)
    if _is_off(raw):
        return Check("store", "off", True, "no embedded store: spans go to the configured exporters only")
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
    database = _is_database(_store_setting(store))
    if database:  # what an agent of this store runs with: no embedded store, OTLP to `replaygate collect`
        env["REPLAYGATE_STORE"] = "off"
    try:
        settings = resolve_settings(env=env)
    except ReplaygateError as exc:
        return [Check("exporters", "-", False, f"the environment is invalid: {exc}")]
    names = [n for n, on in (("store", settings.store), ("otlp", settings.otlp_endpoint)) if on]
    if settings.langfuse_enabled:
        names.append("langfuse")
    out: list[Check] = []
    if database:
        out.append(
            Check(
                "exporter store",
                "off",
                True,
                "agents do not write PostgreSQL: they export OTLP to `replaygate collect` "
                "(OTEL_EXPORTER_OTLP_ENDPOINT) with REPLAYGATE_STORE=off, and collect writes this store",
            )
        )
    where = describe_destinations(
        names,
        store=settings.store,
        otlp=settings.otlp_endpoint,
        langfuse=settings.langfuse_endpoint if settings.langfuse_enabled else None,
    )
    if not names and not database:
        return [
            Check(
                "exporters", "none", False, "REPLAYGATE_STORE=off and no OTLP or Langfuse: spans go nowhere"
            )
        ]
    for name in names:
        if name == "store":
            detail = "in-process, to the store above" + ("" if store_ok else " (which does not open)")
            out.append(Check("exporter store", where[name], store_ok, detail))
        else:
            ok, detail = _tcp(where[name])
            out.append(Check(f"exporter {name}", where[name], ok, detail))
    return out


def _canary(store: str | None) -> Check:
    source = os.environ.get("REPLAYGATE_CANARY_SOURCE")
    if not source:
        raw = _store_setting(store)
        if _is_off(raw):
            return Check(  # canaries are optional: an agent that uses none is configured right
                "canary source",
                "none",
                True,
                "no canary source is configured (the store is off): choose_variant serves the baseline; "
                "for canaries set REPLAYGATE_CANARY_SOURCE to the release page's /api/canary URL",
            )
        if _is_database(raw):
            return Check(
                "canary source",
                "none",
                True,
                "agents do not read PostgreSQL: set REPLAYGATE_CANARY_SOURCE in each agent to the release "
                "page's /api/canary URL (the page serves this store's canary state)",
            )
        source = raw
    is_file = "://" not in source or source.startswith("sqlite")  # else a page URL or a database URL
    shown = absolute_store(source) if is_file else display_url(source)
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
