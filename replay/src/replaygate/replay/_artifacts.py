"""Per-attempt artifacts (final response, messages, spans), one JSON line per attempt, best-effort.

The artifacts of a run go to one file, ``<run file's folder>/<run id>/artifacts.jsonl``: one JSON object
per line with ``scenario_id``, ``index``, ``trace_id``, ``answer``, ``label``, ``error``, ``messages``,
``spans``, ``conversation`` and ``format_version`` (the line's layout, :data:`ARTIFACTS_FORMAT_VERSION`).
Each line carries its version, so line tools (``jq``, ``grep``) see only artifacts; :func:`read_artifacts`
checks it with the versioned-file machinery (``upgrade_document``, as for the journal header): a line
written before the version was recorded reads as version 1, another version is refused. Every
attempt's ``artifact_path`` names that file; the line of an attempt is the one with
its scenario id and index (``jq 'select(.scenario_id == "S" and .index == 0)' FILE``, or
:func:`read_artifacts`). One file instead of one per attempt: creating thousands of small files costs
more than the agent calls of a fast suite.

:class:`ArtifactWriter` serializes and appends from one background thread, so the runner never waits on the
disk; the runner hands it the artifacts of each turn of the event loop together. A failed write is logged and
reported by :meth:`ArtifactWriter.close` (the runner then clears that attempt's ``artifact_path``), and never
fails the attempt. A resumed run keeps the lines of the attempts its journal holds and drops the rest
(attempts that are run again), so every attempt has at most one line.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

import pydantic_core
from replaygate.instrumentation import SpanRecord, fast_init
from replaygate.replay._batch_queue import STOP, next_batch
from replaygate.replay._errors import RunFileError
from replaygate.replay._versioned import Upgrade, upgrade_document

__all__ = [
    "ARTIFACTS_FILE",
    "ARTIFACTS_FORMAT_VERSION",
    "Artifact",
    "ArtifactWriter",
    "artifacts_path",
    "read_artifacts",
]

log = logging.getLogger("replaygate.replay")

ARTIFACTS_FILE = "artifacts.jsonl"
#: The layout of an artifact line (its ``format_version``).
ARTIFACTS_FORMAT_VERSION: Final = 1
#: A line written before the version was recorded is a version 1 line.
ARTIFACTS_UPGRADES: Final[dict[int | None, Upgrade]] = {None: lambda raw: {**raw, "format_version": 1}}

_Key = tuple[str, int]

#: How many artifacts :class:`ArtifactWriter` serializes in one call into pydantic.
_GROUP = 256


def artifacts_path(out_dir: Path, run_id: str) -> Path:
    """Return where a run's artifacts go: ``<out_dir>/<run id>/artifacts.jsonl``."""
    return out_dir / run_id / ARTIFACTS_FILE


@fast_init
@dataclass(frozen=True)
class Artifact:
    """One attempt's artifact: what the target returned and the attempt's spans."""

    scenario_id: str
    index: int
    trace_id: str | None
    answer: str | None
    label: str | None
    error: str | None
    messages: Sequence[Any] = ()
    spans: Sequence[SpanRecord] = ()
    conversation: Sequence[Any] = ()
    format_version: int = ARTIFACTS_FORMAT_VERSION

    def line(self) -> bytes:
        """Return the artifact as a JSON line (UTF-8, ending with a newline); unknown values become text."""
        return pydantic_core.to_json(self, fallback=str) + b"\n"


_NEXT = b'},{"scenario_id":'


def _lines(items: Sequence[Artifact]) -> list[bytes] | None:
    """Each artifact's :meth:`Artifact.line`, serialized in one call; None to serialize them one by one.

    The JSON array is cut where one artifact ends and the next begins; None when an item is not a plain
    :class:`Artifact`, a value cannot be serialized, or that text occurs inside an artifact too.
    """
    if len(items) < 2 or any(type(a) is not Artifact for a in items):
        return None
    # Each artifact and span as its instance dict (its fields, in declaration order): serialized the same
    # as the dataclass, in less than half the time.
    plain = [
        {**a.__dict__, "spans": [s.__dict__ if type(s) is SpanRecord else s for s in a.spans]} for a in items
    ]
    try:
        parts = pydantic_core.to_json(plain, fallback=str)[1:-1].split(_NEXT)
    except Exception:  # an unserializable value: the one-by-one path says which artifact
        return None
    if len(parts) != len(items):
        return None
    head = _NEXT[2:]
    return [parts[0] + b"}\n", *(head + p + b"}\n" for p in parts[1:-1]), head + parts[-1] + b"\n"]


def _key_of(raw: bytes, where: str) -> tuple[_Key, dict[str, Any]] | None:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("scenario_id"), str):
        return None
    index = doc.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        return None
    if doc.get("format_version") != ARTIFACTS_FORMAT_VERSION:  # older (upgraded) or newer (refused)
        doc = upgrade_document(
            doc,
            version=ARTIFACTS_FORMAT_VERSION,
            upgrades=ARTIFACTS_UPGRADES,
            path=where,
            what="artifact line",
            error=RunFileError,
        )
    return (doc["scenario_id"], index), doc


def read_artifacts(path: str | os.PathLike[str]) -> dict[_Key, dict[str, Any]]:
    """Read an artifacts file into ``{(scenario id, index): artifact}``; unreadable lines are skipped.

    A torn last line (a run killed while writing) and lines that are not artifacts are ignored; when an
    attempt has more than one line, the last one wins.

    Raises:
        RunFileError: a line of a ``format_version`` this replaygate does not read.
    """
    with open(path, "rb") as fh:
        return {key: doc for key, doc, _ in _artifact_lines(fh, path)}


def _artifact_lines(
    fh: BinaryIO, path: str | os.PathLike[str]
) -> Iterator[tuple[_Key, dict[str, Any], bytes]]:
    """The artifact lines of an open file: (key, artifact, raw line), up to a torn last line."""
    for number, raw in enumerate(fh, start=1):
        if not raw.endswith(b"\n"):
            break  # torn last line
        found = _key_of(raw, f"{path}:{number}")
        if found is not None:
            yield found[0], found[1], raw


def _append(fd: int, data: bytes) -> None:
    """Append ``data`` to the file descriptor, retrying short writes."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _keep_lines(path: Path, keep: Collection[_Key]) -> set[_Key]:
    """Rewrite ``path`` atomically with only the lines of the attempts in ``keep``; return those found."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return set()
    with fh:
        kept = {key: raw for key, _, raw in _artifact_lines(fh, path) if key in keep}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.writelines(kept.values())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return set(kept)


class ArtifactWriter:
    """Append artifacts to one file from a background thread; ``submit`` returns at once.

    Args:
        path: the artifacts file (created with its folder).
        keep: when resuming, the (scenario id, index) of the attempts already done: their lines are kept
            (see :attr:`kept`), every other line already in the file is dropped.
    """

    def __init__(self, path: Path, *, keep: Collection[_Key] | None = None) -> None:
        self.path = path
        self.failed: set[_Key] = set()
        self.kept: set[_Key] = set()
        self._fd: int | None = None
        self._good = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if keep is not None:
                self.kept = _keep_lines(path, keep)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if keep is not None else os.O_TRUNC)
            self._fd = os.open(path, flags, 0o644)
            self._good = os.fstat(self._fd).st_size
        except Exception as exc:  # best-effort: the run goes on without artifacts
            log.warning("could not open the artifacts file %s: %s; attempts will have no artifact", path, exc)
        self._pending: list[Artifact] = []
        self._stopping = False
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="replaygate-artifacts", daemon=True)
        self._thread.start()

    @property
    def usable(self) -> bool:
        """Whether the file could be opened (when not, every attempt's ``artifact_path`` is None)."""
        return self._fd is not None

    def submit(self, artifact: Artifact) -> str | None:
        """Hold one attempt's artifact for the next :meth:`flush`; return the artifacts file's path.

        Returns None when the file is not usable. Call ``submit`` and ``flush`` from one thread (the
        event loop's).
        """
        if self._fd is None:
            return None
        self._pending.append(artifact)
        return str(self.path)

    def flush(self) -> None:
        """Hand the held artifacts to the writer thread at once (one wake-up of it for all of them)."""
        if self._pending:
            self._queue.put(self._pending)
            self._pending = []

    def _write(self, items: list[Artifact]) -> None:
        assert self._fd is not None
        lines: list[bytes] = []
        keys: list[_Key] = []
        for start in range(0, len(items), _GROUP):  # a few hundred at a time: cheaper per artifact
            group = items[start : start + _GROUP]
            together = _lines(group)
            if together is not None:
                lines += together
                keys += [(a.scenario_id, a.index) for a in group]
            else:
                more, their_keys = self._each(group)
                lines += more
                keys += their_keys
        data = b"".join(lines)
        try:
            _append(self._fd, data)
            self._good += len(data)
        except Exception as exc:
            log.warning("could not write %d artifact(s) to %s: %s", len(keys), self.path, exc)
            self.failed.update(keys)
            try:  # cut a partly written line, so the next lines stay readable
                os.ftruncate(self._fd, self._good)
            except OSError:
                pass

    def _each(self, items: list[Artifact]) -> tuple[list[bytes], list[_Key]]:
        """Each artifact's line on its own: one that cannot be serialized costs that artifact only."""
        lines: list[bytes] = []
        keys: list[_Key] = []
        for artifact in items:
            key = (artifact.scenario_id, artifact.index)
            try:
                lines.append(artifact.line())
                keys.append(key)
            except Exception as exc:  # an unserializable value costs this artifact only
                log.warning("could not write the artifact of %s#%d: %s", *key, exc)
                self.failed.add(key)
        return lines, keys

    def _run(self) -> None:
        stop = False
        while not stop:
            items: list[Artifact]
            items, stop = next_batch(self._queue)
            if items:
                try:
                    self._write(items)
                except Exception as exc:  # a bug guard: never lose the thread silently
                    log.warning("could not write artifacts to %s: %s", self.path, exc)
                    self.failed.update((a.scenario_id, a.index) for a in items)

    def stop(self) -> None:
        """Hand over what is held and tell the thread to finish (without waiting: :meth:`close` waits)."""
        if not self._stopping:
            self._stopping = True
            self.flush()
            self._queue.put(STOP)

    def close(self) -> set[_Key]:
        """Write everything held or queued, close the file; return the (scenario id, index) that failed."""
        self.stop()
        self._thread.join()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return set(self.failed)
