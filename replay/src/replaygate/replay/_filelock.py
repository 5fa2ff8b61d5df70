"""An exclusive lock on a file path (``flock``), released when the holder exits or dies.

Used for the run file and journal a run writes (``<out>.lock``: a second run into the same ``--out``
is refused at once) and for the golden folder (every golden-set write waits for the one before).
The lock file is removed on release; a holder re-checks, once locked, that the path still names the
file it locked, so a waiter never holds a lock on a file already removed. A lock held by a process
that was killed is free again (the kernel drops it with the process).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replaygate.replay._errors import ReplayError

__all__ = ["LockBusyError", "exclusive_lock"]


class LockBusyError(ReplayError):
    """Another process holds the lock (and did not release it within the wait)."""


@contextmanager
def exclusive_lock(path: Path, *, wait_s: float, what: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the block; wait up to ``wait_s`` seconds (0: never wait).

    Raises:
        LockBusyError: another process holds it; the message names ``what`` and the lock file.
    """
    deadline = time.monotonic() + wait_s
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise LockBusyError(
                    f"{path}: {what} is being written by another process (it holds this lock); wait for it "
                    "to finish, or use another output"
                ) from None
            time.sleep(0.02)
            continue
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder before us removed the file: lock the new one
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        try:
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)
