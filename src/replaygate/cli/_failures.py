"""The CLI's one error handler: every failure becomes ``error: <file>[:line]: <what>`` and exit code 3.

:func:`describe_failure` turns an exception into that line: replaygate's own errors carry their file
and line already; an ``OSError`` (a missing file, a full disk, no permission) is named by its file; a
decode, parse or validation error that escaped a loader, a database error (a store file that is not
SQLite, a server that refuses), a missing database driver, and input too large or too deep each get a
sentence saying what to do. Anything else is reported as an internal error. The traceback is printed
only under ``replaygate --debug`` (or ``REPLAYGATE_DEBUG=1``).
"""

from __future__ import annotations

import errno
import json
import sys

import yaml
from pydantic import ValidationError
from replaygate.instrumentation import ReplaygateError

__all__ = ["describe_failure"]

_DRIVERS = {"psycopg": "psycopg[binary]", "psycopg2": "psycopg[binary]", "pymysql": "pymysql"}


def _os_error(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else "(a file)"
    what = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        what += "; free some space and run again (with --resume for a run)"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        what += "; check the file's permissions"
    elif exc.errno == errno.ENOENT:
        what += "; check the path"
    return f"{where}: {what}"


def _is_database_error(exc: BaseException) -> bool:
    sqlite3 = sys.modules.get("sqlite3")  # not imported here: a process without it has no error of it
    return type(exc).__module__.split(".")[0] == "sqlalchemy" or (
        sqlite3 is not None and isinstance(exc, sqlite3.Error)
    )


def describe_failure(exc: BaseException) -> str:
    """The one line (without ``error: ``) that tells a user what failed, where, and what to do."""
    if isinstance(exc, ReplaygateError):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text (byte {exc.start}); save the file as UTF-8"
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, ModuleNotFoundError | ImportError):
        name = (exc.name or "").split(".")[0]
        hint = _DRIVERS.get(name, name)
        return f"a needed module is not installed: {name or exc}; install it (pip install {hint})"
    if _is_database_error(exc):
        orig = getattr(exc, "orig", None)
        detail = str(orig if orig is not None else exc).strip().splitlines()[0][:300]
        return (
            f"the store cannot be used: {detail}; check --store / REPLAYGATE_STORE "
            "(a SQLite file made by replaygate, or a reachable database URL)"
        )
    if isinstance(exc, yaml.YAMLError):
        return f"not valid YAML ({str(exc).splitlines()[0]})"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg}, line {exc.lineno})"
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False, include_input=False)[:3]
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(document)'}: {e['msg']}" for e in first
        )
        return f"invalid {exc.title}: {problems}"
    if isinstance(exc, MemoryError | RecursionError):
        return "the input is too large or nested too deeply to read; shorten or flatten it"
    return (
        f"internal error: {type(exc).__name__}: {exc} (run `replaygate --debug ...` for the traceback "
        "and report it)"
    )
