"""Shared fixtures and helpers for every part: a real PostgreSQL server for the store tests, and more.

``postgres`` starts one PostgreSQL server per test session in a temporary folder (``initdb`` and
``pg_ctl``, as the ``postgres`` user when the tests run as root) and stops it at the end. ``store_url``
is parametrized: each test that takes it runs on a new SQLite file and on a new PostgreSQL database.
Without the PostgreSQL binaries the PostgreSQL cases fail (``.ci/run`` installs them): they never skip.

Helpers the parts' tests share (``from tests.conftest import ...``): ``free_port()`` (a loopback port
nobody listens on), ``run_main(argv)`` (``replaygate ARGV`` in-process: its exit code), ``invoke_cli(*args)``
(the command line in a ``CliRunner``),
``make_decision(...)`` and ``FakeDecisions`` (signed gate decisions for the canary and the page),
``make_scenario(sid, **fields)`` (a valid scenario: one turn ``q <sid>``, 2 repeats, a ``contains ok``
check, unless ``fields`` say otherwise).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

PG_BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")


def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for folder in PG_BIN_DIRS:
        candidate = Path(folder) / name
        if candidate.is_file():
            return str(candidate)
    raise RuntimeError(
        f"PostgreSQL's {name} is not installed (apt-get install postgresql); .ci/run installs it"
    )


def free_port() -> int:
    """A loopback port that nothing listens on (bound once, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_main(argv: list[str]) -> int:
    """Run ``replaygate ARGV`` in-process (``replaygate.cli.main``) and return its exit code."""
    from replaygate.cli import main

    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def invoke_cli(*args: str, **kwargs: Any) -> Any:
    """Run ``replaygate <args>`` in a click ``CliRunner``; exceptions propagate (a traceback is a bug)."""
    from click.testing import CliRunner

    from replaygate.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kwargs)


def make_decision(
    decision_id: str,
    outcome: str = "pass",
    *,
    report_id: str = "rep-1",
    reason: str = "gate passed",
) -> Any:
    """A signed gate decision for the support agent's candidate (``replaygate.gate.SignedDecision``)."""
    from replaygate.gate import SignedDecision

    def fingerprint(config_hash: str, config_id: str) -> dict[str, Any]:
        return {
            "agent_config_hash": config_hash,
            "declared_versions": {"config_id": config_id},
            "target": "examples.support_agent:target",
            "replaygate_version": "0.1.0",
            "suite_hash": "sha256:suite",
            "k": 5,
            "seed": 0,
            "date": "2026-11-29T00:00:00Z",
        }

    return SignedDecision.model_validate(
        {
            "id": decision_id,
            "report_id": report_id,
            "outcome": outcome,
            "signed_by": "ana",
            "reason": reason,
            "signed_at": datetime(2026, 11, 29, tzinfo=UTC),
            "baseline_fingerprint": fingerprint("h-base", "production"),
            "candidate_fingerprint": fingerprint("h-cand", "candidate-fixed"),
            "candidate_target": "examples.support_agent:target",
            "candidate_config_id": "candidate-fixed",
        }
    )


def make_scenario(sid: str, **fields: Any) -> Any:
    """A valid ``replaygate.replay.Scenario`` named ``sid``; ``fields`` replace or add any field."""
    from replaygate.replay import Scenario

    return Scenario.model_validate(
        {
            "id": sid,
            "title": sid,
            "owner": "qa",
            "origin": "original-eval",
            "added": date(2026, 11, 29),
            "turns": [f"q {sid}"],
            "repeats": 2,
            "checks": [{"type": "contains", "values": ["ok"]}],
            **fields,
        }
    )


class FakeDecisions:
    """The decision store a canary controller reads, holding the given decisions."""

    def __init__(self, *decisions: Any) -> None:
        self.by_id = {d.id: d for d in decisions}

    def get(self, decision_id: str) -> Any:
        return self.by_id.get(decision_id)

    def list_decisions(self, outcomes: list[str] | tuple[str, ...] | None = None) -> list[Any]:
        return [d for d in self.by_id.values() if outcomes is None or d.outcome in outcomes]


@dataclass
class Postgres:
    port: int
    admin_url: str

    def new_database(self) -> str:
        """Create an empty database; return its ``postgresql+psycopg://`` URL."""
        import psycopg

        name = "rg_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    folder = Path(tempfile.mkdtemp(prefix="replaygate-pg-"))
    data = folder / "data"
    run_as: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run(
        [
            *run_as,
            _pg_tool("initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    options = (
        f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    subprocess.run(
        [
            *run_as,
            _pg_tool("pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
        env=env,
        timeout=120,
    )
    try:
        yield Postgres(port, f"postgresql://postgres@127.0.0.1:{port}/postgres")
    finally:
        subprocess.run(
            [*run_as, _pg_tool("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            env=env,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty store: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    server: Postgres = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture(autouse=True, scope="session")
def _golden_hash_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The golden sets' hash caches in a session folder, not in the working directory's .replaygate/."""
    saved = os.environ.get("REPLAYGATE_HASH_CACHE")
    os.environ["REPLAYGATE_HASH_CACHE"] = str(tmp_path_factory.mktemp("golden-hash-cache"))
    yield
    if saved is None:
        os.environ.pop("REPLAYGATE_HASH_CACHE", None)
    else:
        os.environ["REPLAYGATE_HASH_CACHE"] = saved
