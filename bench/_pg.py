"""A throwaway PostgreSQL for the benchmarks (initdb/pg_ctl in a temp folder, as ``postgres`` when root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for v in ("17", "16", "15"):
        p = Path(f"/usr/lib/postgresql/{v}/bin/{name}")
        if p.is_file():
            return str(p)
    return None


@contextlib.contextmanager
def postgres() -> Iterator[str | None]:
    """Yield a ``postgresql+psycopg://`` URL of a new database, or None when PostgreSQL is not installed."""
    initdb, pg_ctl = _tool("initdb"), _tool("pg_ctl")
    if not initdb or not pg_ctl:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="rg-bench-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = folder / "data"
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        check=True,
        capture_output=True,
    )
    opts = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c synchronous_commit=off"
    subprocess.run(
        [*run_as, pg_ctl, "-D", str(data), "-o", opts, "-l", str(folder / "log"), "-w", "start"],
        check=True,
        capture_output=True,
    )
    try:
        import psycopg

        name = "bench_" + uuid.uuid4().hex[:8]
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
