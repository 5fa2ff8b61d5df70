"""A golden-set directory: loading, finding and writing scenarios together with ``golden.lock``.

Every write is one transaction (:meth:`GoldenSet.transaction`): it holds an exclusive lock on the
folder (``.replaygate-write.lock``; a second promote, import or retire waits for the first), and it
commits like a small write-ahead log:

1. write each new file (scenarios, then ``golden.lock``) to a temporary file beside it, fsynced;
2. write the intent ``.replaygate-txn.json`` (which temporary file replaces which file), fsync the folder;
3. rename each temporary file into place, scenarios before the lock; fsync the folder;
4. remove the intent.

A process killed before step 2 leaves the set untouched plus temporary files; killed after it, the set
is half renamed. Either way the next golden-set command (any write, and ``scenarios lint``) repairs it
first, under the lock: an intent is rolled forward (the remaining renames are done), and temporary files
without an intent are removed. ``lint`` therefore always sees a whole transaction or none of it.
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from replaygate.replay import (
    LockBusyError,
    Scenario,
    dump_scenario,
    exclusive_lock,
    load_scenario,
    scenario_content_hash,
    scenario_file_names,
    write_atomic,
)

from replaygate.golden._errors import GoldenError
from replaygate.golden._hash_cache import FileHashCache
from replaygate.golden._index import (
    IndexEntry,
    file_stem,
    index_entry,
    index_prefix,
    read_index,
    relative_name,
    verified_index,
    verified_names,
)
from replaygate.golden._lock import LOCK_NAME, LockEntry, dump_lock, lock_entry, read_lock_file

__all__ = [
    "DEFAULT_GOLDEN_DIR",
    "GOLDEN_ENV",
    "INTENT_NAME",
    "WRITE_LOCK_NAME",
    "GoldenSet",
    "resolve_golden_dir",
]

DEFAULT_GOLDEN_DIR = "golden"
GOLDEN_ENV = "REPLAYGATE_GOLDEN"
WRITE_LOCK_NAME = ".replaygate-write.lock"
INTENT_NAME = ".replaygate-txn.json"
#: How long a golden-set command waits for another one's write to finish.
LOCK_WAIT_S = 120.0

#: A test hook called with the name of each file-system step of a write (fault injection: kill there).
STEP_HOOK: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "replaygate_golden_step_hook", default=None
)
_held = threading.local()  # folders this thread holds the write lock of (transactions nest)
_LockRead = tuple[dict[str, LockEntry], dict[str, IndexEntry]] | None


class _Reads:
    """What a transaction read of its folder (listing, lock), kept until its own write changes them."""

    def __init__(self) -> None:
        self.files: list[str] | None = None
        self.lock: _LockRead = None
        self.lock_read = False

    def clear(self) -> None:
        self.files = None
        self.lock = None
        self.lock_read = False


P = ParamSpec("P")
R = TypeVar("R")


def in_transaction(fn: Callable[Concatenate[GoldenSet, P], R]) -> Callable[Concatenate[GoldenSet, P], R]:
    """Run a golden-set operation (reads and writes) inside :meth:`GoldenSet.transaction`."""

    @functools.wraps(fn)
    def wrapper(golden: GoldenSet, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with golden.transaction():
            return fn(golden, *args, **kwargs)

    return wrapper


def _step(name: str) -> None:
    hook = STEP_HOOK.get()
    if hook is not None:
        hook(name)


def resolve_golden_dir(value: str | os.PathLike[str] | None = None) -> Path:
    """The golden-set directory: ``value``, else ``$REPLAYGATE_GOLDEN``, else ``golden/``."""
    if value is not None and str(value):
        return Path(value)
    return Path(os.environ.get(GOLDEN_ENV) or DEFAULT_GOLDEN_DIR)


class GoldenSet:
    """One golden-set directory and its lock file."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.path = resolve_golden_dir(directory)
        self.lock_path = self.path / LOCK_NAME
        self.repaired: list[str] = []

    def __repr__(self) -> str:
        return f"GoldenSet({str(self.path)!r})"

    def file_for(self, scenario_id: str) -> Path:
        """The file of a scenario: the existing one (``.yaml`` or ``.yml``) or ``<id>.yaml``."""
        return self._file_of(self._files_by_id(), scenario_id)

    def _files_by_id(self) -> dict[str, str]:
        """The existing file of each scenario id (the first in sorted order), from one directory scan."""
        found: dict[str, str] = {}
        for name in self.file_names():
            found.setdefault(file_stem(name), name)
        return found

    def _file_of(self, found: dict[str, str], scenario_id: str) -> Path:
        name = found.get(scenario_id)
        return Path(name) if name is not None else self.path / f"{scenario_id}.yaml"

    def _reads(self) -> _Reads | None:
        """This thread's reads of the folder while it holds the write lock (nobody else writes then)."""
        reads: dict[str, _Reads] | None = getattr(_held, "reads", None)
        return reads.get(str(self.path.resolve())) if reads else None

    def files(self) -> list[Path]:
        """Every scenario file, sorted (listed once per transaction, again after its write)."""
        return [Path(name) for name in self.file_names()]

    def file_names(self) -> list[str]:
        """:meth:`files` as the strings ``os.scandir`` gives (no ``Path`` per file)."""
        reads = self._reads()
        if reads is not None and reads.files is not None:
            return list(reads.files)
        found = scenario_file_names(self.path) if self.path.is_dir() else []
        if reads is not None:
            reads.files = list(found)
        return found

    def _lock_file(self) -> _LockRead:
        """The lock's entries and index entries (read once per transaction); None without a lock."""
        reads = self._reads()
        if reads is not None and reads.lock_read:
            return reads.lock
        found = read_lock_file(self.lock_path)
        if reads is not None:
            reads.lock, reads.lock_read = found, True
        return found

    def indexed(self) -> dict[str, IndexEntry]:
        """The index entries of the lock, not yet checked against the files (empty if it is damaged)."""
        try:
            found = self._lock_file()
        except GoldenError:
            return read_index(self.lock_path)
        return dict(found[1]) if found is not None else {}

    def load(self, skip: Collection[Path] = ()) -> list[Scenario]:
        """Every scenario (but the files in ``skip``), sorted by id; invalid files raise one error."""
        from replaygate.replay import load_scenarios

        if not self.path.is_dir():
            raise GoldenError(f"{self.path}: no golden-set directory; create it or pass --golden DIR")
        return load_scenarios(self.path, skip)

    def get(self, scenario_id: str) -> Scenario:
        """One scenario by id.

        Raises:
            GoldenError: no such scenario.
            ScenarioError: its file is invalid.
        """
        path = self.file_for(scenario_id)
        if not path.exists():
            raise GoldenError(
                f"no scenario {scenario_id!r} in {self.path}; list them with `replaygate scenarios list`"
            )
        return load_scenario(path)

    def lock(self) -> dict[str, LockEntry] | None:
        """The lock entries, or None when the set has no lock yet."""
        found = self._lock_file()
        return None if found is None else dict(found[0])

    def index(self, files: Iterable[Path] | None = None) -> dict[Path, IndexEntry]:
        """The index entries of the files (default: all) whose bytes are still the ones indexed."""
        if files is None:
            return {Path(name): e for name, e in self.index_names().items()}
        hashes = FileHashCache.for_set(self.path)
        found = verified_index(self.path, files, self.indexed(), hashes)
        hashes.save()
        return found

    def index_names(self) -> dict[str, IndexEntry]:
        """:meth:`index` of every file, by the names :meth:`file_names` gives."""
        names = self.file_names()
        hashes = FileHashCache.for_set(self.path)
        found = verified_names(self.path, names, self.indexed(), hashes)
        prefix = index_prefix(self.path)
        hashes.save({relative_name(name, self.path, prefix) for name in names})
        return found

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the folder's write lock (waiting for another writer), after repairing a killed write.

        Nested transactions of one thread on one folder share the lock.
        """
        key = str(self.path.resolve())
        held: set[str] = getattr(_held, "folders", set())
        _held.folders = held
        if key in held:
            yield
            return
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            lock = exclusive_lock(
                self.path / WRITE_LOCK_NAME, wait_s=LOCK_WAIT_S, what=f"the golden set {self.path}"
            )
            with lock:
                held.add(key)
                reads: dict[str, _Reads] = getattr(_held, "reads", {})
                _held.reads = reads
                try:
                    self.recover()
                    reads[key] = _Reads()
                    yield
                finally:
                    held.discard(key)
                    reads.pop(key, None)
        except LockBusyError as exc:
            raise GoldenError(str(exc)) from None

    def needs_repair(self) -> bool:
        """Whether a killed write left an intent or temporary files (see :meth:`repair`)."""
        return (self.path / INTENT_NAME).exists() or bool(self.leftovers())

    def repair(self) -> list[str]:
        """Complete or undo a killed write now (every write does it first); return what was done."""
        with self.transaction():
            return list(self.repaired)

    def recover(self) -> list[str]:
        """Finish or undo a write that was killed (call under the lock); return what was done."""
        done: list[str] = []
        intent = self.path / INTENT_NAME
        if intent.exists():
            try:
                pairs = json.loads(intent.read_text(encoding="utf-8"))["renames"]
                renames = [(self.path / str(t), self.path / str(d)) for t, d in pairs]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise GoldenError(
                    f"{intent}: an interrupted write left an unreadable intent ({exc}); check the files "
                    "with git and remove it"
                ) from None
            for tmp, target in renames:
                if tmp.exists():
                    os.replace(tmp, target)
                    done.append(f"completed the interrupted write of {target.name}")
            _fsync_dir(self.path)
            intent.unlink()
            _fsync_dir(self.path)
        for leftover in self.leftovers():
            leftover.unlink(missing_ok=True)
            done.append(f"removed {leftover.name} left by an interrupted write")
        return done

    def write(self, scenarios: Iterable[Scenario], remove_from_lock: Iterable[str] = ()) -> list[Path]:
        """Write scenarios and update their lock entries in one transaction (see the module docstring)."""
        with self.transaction():
            scenarios = list(scenarios)
            entries = dict(self.lock() or {})
            hashes = {s.id: scenario_content_hash(s) for s in scenarios}
            for s in scenarios:
                entries[s.id] = lock_entry(s, content_hash=hashes[s.id])
            for scenario_id in remove_from_lock:
                entries.pop(scenario_id, None)
            found = self._files_by_id()
            targets = [(self._file_of(found, s.id), dump_scenario(s)) for s in scenarios]
            index = self.indexed()
            for s, (target, text) in zip(scenarios, targets, strict=True):
                relative = relative_name(target, self.path)
                index[s.id] = index_entry(s, relative, text.encode("utf-8"), hashes[s.id])
            targets.append((self.lock_path, dump_lock(entries, index)))
            self._commit(targets)
            return [t for t, _ in targets]

    def write_lock(self, entries: dict[str, LockEntry], index: dict[str, IndexEntry] | None = None) -> Path:
        """Replace the lock file with ``entries`` (one transaction); ``index`` adds to the kept index."""
        with self.transaction():
            kept = {**self.indexed(), **(index or {})}
            self._commit([(self.lock_path, dump_lock(entries, kept))])
        return self.lock_path

    def _commit(self, targets: list[tuple[Path, str]]) -> None:
        reads = self._reads()
        if reads is not None:
            reads.clear()  # what was read before this write is read again after it
        prepared: list[tuple[Path, Path]] = []
        intent = self.path / INTENT_NAME
        try:
            for target, text in targets:
                prepared.append((write_atomic(target, text), target))
                _step(f"wrote {target.name} (temporary)")
            record = {"renames": [[tmp.name, target.name] for tmp, target in prepared]}
            prepared.append((write_atomic(intent, json.dumps(record)), intent))
            os.replace(prepared[-1][0], intent)
            prepared.pop()
            _fsync_dir(self.path)
            _step("wrote the intent")
        except OSError as exc:
            for tmp, _ in prepared:
                tmp.unlink(missing_ok=True)
            raise GoldenError(
                f"{self.path}: could not write the golden set ({exc}); nothing was changed"
            ) from None
        try:
            for tmp, target in prepared:
                os.replace(tmp, target)
                _step(f"renamed {target.name}")
            _fsync_dir(self.path)
            intent.unlink()
            _step("removed the intent")
            _fsync_dir(self.path)
        except OSError as exc:
            raise GoldenError(
                f"{self.path}: the write stopped halfway ({exc}); the next golden-set command completes it"
            ) from None

    def leftovers(self) -> list[Path]:
        """Temporary files left by an interrupted write."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.glob(".*.tmp") if p.is_file())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
