"""A local cache of the scenario files' hashes, keyed by what ``stat`` says of each file.

Checking ``golden.lock``'s index (:func:`~replaygate.golden.verified_index`) means hashing every scenario
file: 2,000 files read and hashed on every ``promote``. This cache remembers, per golden set, each file's
``(size, mtime_ns, ctime_ns, inode) -> sha256`` and hashes only the files whose stat changed. It lives
in ``.replaygate/cache/golden-hashes-v1-<set>.json`` (below the working directory, like the scenario
cache; env ``REPLAYGATE_HASH_CACHE``: another folder, or ``off``), never in the git-tracked lock.

Anything the cache says is a hint, never an answer: an entry is used only while every stat field is the
same; a file modified (``mtime``, or ``ctime``: its inode changed) within two seconds of being hashed is
not remembered (a write in the same timestamp tick could keep its stat: it is hashed again next time,
as git treats "racily clean" files); and a missing, unreadable, damaged or other-version cache is
ignored and written afresh (atomically).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

__all__ = ["HASH_CACHE_ENV", "FileHashCache"]

HASH_CACHE_ENV = "REPLAYGATE_HASH_CACHE"
_DEFAULT_DIR = Path(".replaygate") / "cache"
_FORMAT = "replaygate-golden-hashes"
_FORMAT_VERSION = 1
_RACY_NS = 2_000_000_000  # a file this fresh when hashed may change again with the same stat
_MAX_CACHE_BYTES = 64_000_000
_OFF = ("off", "0", "false", "no", "none")

Stat = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def stat_key(st: os.stat_result) -> Stat:
    """What the cache compares of a file's stat."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class FileHashCache:
    """The file hashes of one golden set by relative file name: :meth:`get`, :meth:`put`, then :meth:`save`.

    ``path`` None: a cache that remembers nothing (``REPLAYGATE_HASH_CACHE=off``).
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self._old: dict[str, Any] | None = None
        self._new: dict[str, list[Any]] = {}
        self._changed = False

    @classmethod
    def for_set(cls, root: Path) -> FileHashCache:
        """The cache of the set at ``root`` (in ``$REPLAYGATE_HASH_CACHE`` or ``.replaygate/cache/``)."""
        value = os.environ.get(HASH_CACHE_ENV, "").strip()
        if value.lower() in _OFF:
            return cls(None)
        folder = Path(value) if value else _DEFAULT_DIR
        name = hashlib.sha256(os.path.abspath(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return cls(folder / f"golden-hashes-v{_FORMAT_VERSION}-{name}.json")

    def _entries(self) -> dict[str, Any]:
        if self._old is None:
            self._old = self._read()
        return self._old

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read(_MAX_CACHE_BYTES + 1)
            doc = json.loads(raw) if len(raw) <= _MAX_CACHE_BYTES else None
        except (OSError, ValueError, RecursionError):
            doc = None
        files = doc.get("files") if isinstance(doc, dict) else None
        if (
            not isinstance(doc, dict)
            or doc.get("format") != _FORMAT
            or doc.get("format_version") != _FORMAT_VERSION
            or not isinstance(files, dict)
        ):
            self._changed = True  # absent or unusable: written afresh
            return {}
        return files

    def get(self, name: str, st: os.stat_result) -> str | None:
        """The remembered hash of file ``name`` if its stat is the one remembered (None: hash it)."""
        entry = self._entries().get(name)
        if (
            not isinstance(entry, list)
            or len(entry) != 5
            or not isinstance(entry[4], str)
            or tuple(entry[:4]) != stat_key(st)
        ):
            return None
        self._new[name] = entry
        return entry[4]

    def put(self, name: str, st: os.stat_result, digest: str) -> None:
        """Remember ``digest`` for file ``name`` as ``st`` (taken after reading it) describes it."""
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS:
            self._changed = True  # not remembered (and any older entry of it dropped)
            return
        self._new[name] = [*stat_key(st), digest]
        self._changed = True

    def save(self, names: Collection[str] | None = None) -> None:
        """Write what was used and learned; a failure to write only costs time.

        ``names``: every file of the set now (the entries of other names are dropped); None keeps them.
        """
        if self.path is None:
            return
        old = self._entries()
        files = dict(self._new) if names is not None else {**old, **self._new}
        if names is not None:
            files = {name: entry for name, entry in files.items() if name in names}
        if not self._changed and files == old:
            return
        doc = {"format": _FORMAT, "format_version": _FORMAT_VERSION, "files": files}
        tmp: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc, separators=(",", ":")))
            os.replace(tmp, self.path)  # atomic: readers see the old cache or the new one
        except OSError:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
