"""The run journal: append-only JSON lines beside the run file (``<out>.journal``).

Line 1 is a header (run id, fingerprint, scenarios, shard, policy); each further line is one finished
attempt. One writer thread drains a queue, writes every waiting line, then fsyncs once (group commit), so
fifty concurrent attempts share one fsync instead of paying fifty in turn. A group gathers for at least
:data:`GROUP_S` after the previous fsync began (at most about 1 / ``GROUP_S`` fsyncs a second, however
fast the attempts finish), so a finished attempt is durable within ``GROUP_S`` plus one fsync of being
handed over; :meth:`JournalWriter.close` does not wait. The header's own fsync is the thread's first job,
so the run starts without waiting for the disk. A process killed mid-write
leaves at most a torn last line, which :func:`read_journal` ignores and :class:`JournalWriter` cuts off
before appending.

A run that completed and saved its run file removes its journal (the run file holds everything it had);
``--resume`` of such a run finds the run file and :func:`restore_journal` writes the journal back from it,
so resuming a finished run is idempotent.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from replaygate.replay._batch_queue import STOP, next_batch
from replaygate.replay._bounded import MAX_DEPTH, json_depth_ok, parse_json_bounded
from replaygate.replay._errors import RunFileError
from replaygate.replay._runfile import (
    Attempt,
    Fingerprint,
    attempt_digest,
    attempt_json,
    attempts_digest,
    attempts_json,
    bare_digest,
    load_run,
)
from replaygate.replay._versioned import Upgrade, upgrade_document

__all__ = [
    "GROUP_S",
    "HEADER_LATER",
    "JOURNAL_FORMAT_VERSION",
    "JOURNAL_SUFFIX",
    "JournalComparison",
    "JournalState",
    "JournalWriter",
    "compare_with_journal",
    "header_fingerprint",
    "journal_path",
    "read_journal",
    "read_journal_fingerprint",
    "restore_journal",
]

JOURNAL_SUFFIX = ".journal"

#: The layout of the journal header (``format_version``); a header without one is a version 1 header.
JOURNAL_FORMAT_VERSION: Final = 1
JOURNAL_UPGRADES: Final[dict[int | None, Upgrade]] = {None: lambda raw: {**raw, "format_version": 1}}

#: The least time between the starts of two group commits (seconds): the bound on the added latency.
GROUP_S = 0.02

#: ``JournalWriter(path, header=HEADER_LATER)``: a new journal whose header comes with :meth:`write_header`.
HEADER_LATER: Any = object()


def journal_path(out_path: str | os.PathLike[str]) -> Path:
    """Return the journal path of a run file: ``<out>.journal``."""
    p = Path(out_path)
    return p.with_name(p.name + JOURNAL_SUFFIX)


@dataclass
class JournalState:
    """What a journal holds: its header, its complete attempt lines and where they end (bytes)."""

    header: dict[str, Any]
    attempts: list[Attempt] = field(default_factory=list)
    valid_bytes: int = 0
    torn_tail: bool = False

    @property
    def digest(self) -> str:
        """The digest of the journaled attempts (first of each key), comparable with the run file's."""
        seen: dict[tuple[str, int], Attempt] = {}
        for a in self.attempts:
            seen.setdefault((a.scenario_id, a.index), a)
        return attempts_digest(attempt_digest(a) for a in seen.values())


@dataclass(frozen=True)
class JournalComparison:
    """A run file's attempts against the journal beside it (``SCENARIO#INDEX`` keys, file order)."""

    path: Path
    digest: str
    edited: tuple[str, ...] = ()
    only_in_journal: tuple[str, ...] = ()
    not_in_journal: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        """Every attempt of the run file is in the journal, as the journal has it, and nothing else is."""
        return not (self.edited or self.only_in_journal or self.not_in_journal)

    @property
    def partial(self) -> bool:
        """The journal holds some of the run's attempts, each as the run file has it, and nothing else.

        A journal left from an earlier, interrupted try of the same run: it names no edit.
        """
        return not (self.edited or self.only_in_journal) and bool(self.not_in_journal)

    def describe(self, few: int = 5) -> str:
        """``attempt a#1, b#0 differ from its journal X``: what the comparison found."""
        parts = []
        for keys, what in (
            (self.edited, "differ from"),
            (self.only_in_journal, "are only in"),
            (self.not_in_journal, "are not in"),
        ):
            if keys:
                more = f" and {len(keys) - few} more" if len(keys) > few else ""
                parts.append(f"attempt {', '.join(keys[:few])}{more} {what} its journal")
        return "; ".join(parts) + f" ({self.path})"


def compare_with_journal(
    out_path: str | os.PathLike[str], run_id: str, attempts: Iterable[tuple[str, int, str]]
) -> JournalComparison | None:
    """Compare a run file's ``(scenario_id, index, attempt_digest)`` with its journal, if one of it is beside.

    None when there is no journal, or it is the journal of another run into the same file.

    Raises:
        RunFileError: the journal cannot be read.
    """
    jpath = journal_path(out_path)
    if not jpath.is_file():
        return None
    state = read_journal(jpath)
    if state.header.get("run_id") != run_id:
        return None
    journaled: dict[tuple[str, int], str] = {}
    for a in state.attempts:
        journaled.setdefault((a.scenario_id, a.index), attempt_digest(a))
    edited, missing = [], []
    for sid, index, digest in attempts:
        seen = journaled.pop((sid, index), None)
        if seen is None:
            missing.append(f"{sid}#{index}")
        elif seen != digest:
            edited.append(f"{sid}#{index}")
    only = [f"{sid}#{index}" for sid, index in journaled]
    return JournalComparison(jpath, state.digest, tuple(edited), tuple(only), tuple(missing))


def read_journal(path: str | os.PathLike[str]) -> JournalState:
    """Read a journal; a torn (incomplete) last line is ignored.

    Raises:
        RunFileError: the journal is missing, has no header, or has a corrupt line before the last.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise RunFileError(f"{p}: no journal to resume from (run without --resume to start)") from None
    except OSError as exc:
        raise RunFileError(f"{p}: cannot read the journal ({exc})") from None
    lines = data.split(b"\n")
    # Everything after the last newline is an incomplete line (or empty).
    complete, tail = lines[:-1], lines[-1]
    torn = bool(tail.strip())
    header: dict[str, Any] | None = None
    attempts: list[Attempt] = []
    valid = 0
    for number, raw in enumerate(complete, start=1):
        is_last = number == len(complete) and not torn
        if number > 1:
            quick = _attempt_line(raw)
            if quick is not None:
                attempts.append(quick)
                valid += len(raw) + 1
                continue
        try:
            obj = parse_json_bounded(raw, "the line", ValueError, "journal line")
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            if number == 1:
                if obj.get("kind") != "header":
                    raise ValueError("the first line is not a header")
                if not isinstance(obj.get("run_id"), str) or not isinstance(obj.get("scenarios", []), list):
                    raise ValueError("the header has no run id")
                header = upgrade_document(
                    obj,
                    version=JOURNAL_FORMAT_VERSION,
                    upgrades=JOURNAL_UPGRADES,
                    path=f"{p}:1",
                    what="journal header",
                    error=RunFileError,
                )
            elif obj.get("kind") == "attempt":
                attempt = Attempt.model_validate(obj["attempt"])
                if obj.get("sha256") != attempt_digest(attempt):
                    raise ValueError(
                        f"attempt {attempt.scenario_id}#{attempt.index} does not match its digest (edited?)"
                    )
                attempts.append(attempt)
            else:
                raise ValueError(f"unknown line kind {obj.get('kind')!r}")
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            if is_last:
                torn = True  # a complete-looking but corrupt last line: cut off like a torn one
                break
            raise RunFileError(
                f"{p}:{number}: corrupt journal line ({exc}); the journal cannot be resumed, "
                "start the run again without --resume"
            ) from None
        valid += len(raw) + 1
    if header is None:
        raise RunFileError(f"{p}: the journal has no header line; start the run again without --resume")
    return JournalState(header=header, attempts=attempts, valid_bytes=valid, torn_tail=torn)


class _AttemptLine(BaseModel):
    """One attempt line of a journal, validated from its JSON in one pass."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Literal["attempt"]
    sha256: str
    attempt: Attempt


_LINE_HEAD = b'{"kind":"attempt","sha256":"'
_LINE_ATTEMPT = b'","attempt":'


def _attempt_line(raw: bytes) -> Attempt | None:
    """The attempt of a line exactly as :class:`JournalWriter` writes it, validated in one pass.

    None sends the line to the strict reader (``json.loads`` without NaN, the depth limit,
    ``model_validate``), which says what is wrong with it: any other layout, a NaN literal, a claim nested
    too deep, or an attempt whose text is not the one its ``sha256`` was made from.
    """
    start = len(_LINE_HEAD) + 64
    if (
        not raw.startswith(_LINE_HEAD)
        or raw[start : start + len(_LINE_ATTEMPT)] != _LINE_ATTEMPT
        or not raw.endswith(b"}")
        or b"NaN" in raw
        or b"Infinity" in raw
    ):
        return None
    try:
        line = _AttemptLine.model_validate_json(raw)
    except ValidationError:
        return None
    if bare_digest(raw[start + len(_LINE_ATTEMPT) : -1].decode("utf-8")) != line.sha256:
        return None
    claims = [c for j in line.attempt.judges for c in j.claims]  # line > attempt > judges > judge > claims
    if claims and not all(json_depth_ok(c, MAX_DEPTH - 5) for c in claims):
        return None
    return line.attempt


def header_fingerprint(header: dict[str, Any], path: str | os.PathLike[str]) -> Fingerprint:
    """The fingerprint recorded in a journal header (``path`` names the journal in the error).

    Raises:
        RunFileError: the header has no readable fingerprint.
    """
    try:
        return Fingerprint.model_validate(header["fingerprint"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RunFileError(f"{path}: the journal header has no readable fingerprint ({exc})") from None


def read_journal_fingerprint(path: str | os.PathLike[str]) -> Fingerprint:
    """The fingerprint in a journal's header, reading only its first line.

    Raises:
        RunFileError: the journal is missing or its header has no readable fingerprint.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            header = parse_json_bounded(fh.readline(), str(p), RunFileError, "journal")
    except FileNotFoundError:
        raise RunFileError(f"{p}: no journal to resume from (run without --resume to start)") from None
    except OSError as exc:
        raise RunFileError(f"{p}: the journal header has no readable fingerprint ({exc})") from None
    if not isinstance(header, dict):
        raise RunFileError(f"{p}:1: the journal header is not a JSON object")
    header = upgrade_document(
        header,
        version=JOURNAL_FORMAT_VERSION,
        upgrades=JOURNAL_UPGRADES,
        path=f"{p}:1",
        what="journal header",
        error=RunFileError,
    )
    return header_fingerprint(header, p)


def restore_journal(out_path: str | os.PathLike[str]) -> Path:
    """Write the journal of a completed run back from its run file; return the journal's path.

    Raises:
        RunFileError: the run file cannot be read, or the journal cannot be written.
    """
    run = load_run(out_path)
    path = journal_path(out_path)
    header = {
        "run_id": run.run_id,
        "fingerprint": run.fingerprint.model_dump(mode="json"),
        "scenarios": [e.model_dump(mode="json") for e in run.scenarios],
        "shard": run.shard,
        "policy": run.policy,
    }
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(_header_line(header))
            for a in run.attempts:
                text, digest = attempt_json(a)
                fh.write(f'{{"kind":"attempt","sha256":"{digest}","attempt":{text}}}\n'.encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunFileError(f"{path}: cannot write the journal ({exc.strerror or exc})") from None
    return path


class JournalWriter:
    """Append attempt lines from any task or thread; one thread writes and fsyncs them in groups."""

    def __init__(
        self, path: str | os.PathLike[str], *, header: dict[str, Any] | None, truncate_at: int | None = None
    ) -> None:
        """Start a new journal with ``header``, or (``header=None``) append after ``truncate_at`` bytes.

        With ``header=HEADER_LATER`` the new journal is created empty and :meth:`write_header` must come
        before the first attempt (the runner makes the header while its first calls run).
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: BinaryIO
        self._needs_header = header is HEADER_LATER
        self._header_unsynced = False
        if header is not None:
            self._fh = open(self.path, "wb")
            if header is not HEADER_LATER:
                self._fh.write(_header_line(header))
        else:
            self._fh = open(self.path, "r+b")
            self._fh.truncate(truncate_at if truncate_at is not None else self._fh.seek(0, os.SEEK_END))
            self._fh.seek(0, os.SEEK_END)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._pending = 0
        self._cond = threading.Condition()
        self.fsyncs = 0
        self.serialized: dict[tuple[str, int], tuple[Attempt, str]] = {}
        """The attempts written by this writer and their JSON (the run file reuses it: ``save_run``)."""
        self.digests: dict[tuple[str, int], tuple[Attempt, str]] = {}
        """The attempts written by this writer and their :func:`attempt_digest` (reused by ``digest_of``)."""
        self._thread = threading.Thread(target=self._run, name="replaygate-journal", daemon=True)
        self._thread.start()

    def write_header(self, header: dict[str, Any]) -> None:
        """Write the header of a journal made with ``header=HEADER_LATER`` (durable with the first fsync).

        Raises:
            RuntimeError: the journal was not made with ``HEADER_LATER``, or has its header already.
        """
        if not self._needs_header:
            raise RuntimeError(f"{self.path}: the journal has its header already")
        self._needs_header = False
        self._header_unsynced = True
        self._fh.write(_header_line(header))
        self._fh.flush()  # in the OS now (a killed process keeps it); fsynced with the first group

    @property
    def needs_header(self) -> bool:
        """Whether this journal was made with ``HEADER_LATER`` and has no header yet."""
        return self._needs_header

    def append(self, attempt: Attempt) -> None:
        """Queue one finished attempt (returns at once; durable after the next group fsync)."""
        self.extend([attempt])

    def extend(self, attempts: list[Attempt]) -> None:
        """Queue finished attempts as one item (one wake-up of the writer thread for all of them)."""
        self._raise_if_failed()
        if not attempts:
            return
        if self._needs_header:
            raise RuntimeError(f"{self.path}: an attempt came before the journal's header")
        with self._cond:
            self._pending += len(attempts)
        self._queue.put(attempts)  # serialized by the writer thread

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued line is written and fsynced."""
        with self._cond:
            self._cond.wait_for(lambda: self._pending == 0 or self._error is not None, timeout)
        self._raise_if_failed()

    def close(self) -> None:
        """Write and fsync what is queued, then stop the writer thread and close the file."""
        self._queue.put(STOP)
        self._thread.join()
        self._fh.close()
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise RunFileError(f"{self.path}: cannot write the journal ({self._error})") from self._error

    def _run(self) -> None:
        try:  # the header (or the cut of a torn tail) is made durable here, while the first attempts run
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except Exception as exc:  # reported to the runner by the next append/flush/close
            self._error = exc
        stop = False
        synced = time.monotonic()
        while not stop:
            items: list[Attempt]
            items, stop = next_batch(self._queue, until=synced + GROUP_S)
            if items and self._error is None:
                synced = time.monotonic()
                try:
                    done = [(a, *pair) for a, pair in zip(items, attempts_json(items), strict=True)]
                    data = "".join(
                        f'{{"kind":"attempt","sha256":"{h}","attempt":{text}}}\n' for _, text, h in done
                    )
                    self._fh.write(data.encode("utf-8"))
                    self._fh.flush()
                    os.fsync(self._fh.fileno())
                    self.fsyncs += 1
                    self._header_unsynced = False
                    for a, text, h in done:
                        key = (a.scenario_id, a.index)
                        self.serialized[key] = (a, text)
                        self.digests[key] = (a, h)
                except Exception as exc:  # reported to the runner by the next append/flush/close
                    self._error = exc
            with self._cond:
                self._pending -= len(items)
                self._cond.notify_all()
        if self._header_unsynced and self._error is None:  # a run without attempts: its header alone
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except Exception as exc:  # reported by close
                self._error = exc


def _header_line(header: dict[str, Any]) -> bytes:
    return _line({"kind": "header", **header, "format_version": JOURNAL_FORMAT_VERSION})


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
