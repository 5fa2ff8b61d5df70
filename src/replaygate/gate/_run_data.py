"""What the gate reads of a run: per scenario its counts, messages, scores and measures, not its attempts.

A 5,000-scenario x k=10 run is 50,000 attempt objects; the gate needs of them, per scenario, the pass,
fail and error counts, the first error messages and failure details, one sample answer, the judge and
retrieval scores, and per attempt only its status and guardrail measures. :func:`load_run_data` reads a
run file attempt by attempt (``scan_run_fields``: each attempt line validated, reduced and dropped; lines in
the layout replaygate writes are read without building their attempt), so memory is
proportional to scenarios x k numbers, not to attempt objects; :meth:`RunData.of` reduces a
:class:`RunFile` already in memory the same way, so both give the same comparison.

Integrity needs no attempt either: the attempts' (scenario id, index) in file order and their digests
are kept (:mod:`._integrity` checks the plan and the journal on them).

The gate reads two or three run files; :meth:`RunData.reading` reads big ones side by side in forked
processes (reading is CPU-bound Python, one core per file) while the command goes on importing what it
gates with, each child handing back its :class:`RunData` pickled, and the first error in the files'
order raised as reading them one by one would raise it.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from replaygate.replay import (
    Attempt,
    AttemptFields,
    AttemptsEditedError,
    MeasureColumns,
    Measures,
    RunColumns,
    RunFile,
    RunFileError,
    ScenarioEntry,
    attempt_digest,
    attempt_fields,
    attempts_digest,
    compare_with_journal,
    load_run,
    scan_run_columns,
    scan_run_fields,
)

__all__ = ["AttemptMeasures", "MeasuredAttempt", "RunData", "ScenarioData", "as_run_data", "load_run_data"]

_RETRIEVAL = ("hit_rate", "mrr", "recall", "ndcg")
_ANSWER_CAP = 2000
_NO_MEASURES = Measures(latency_s=0.0)


class AttemptMeasures(NamedTuple):
    """The guardrail measures of one attempt (the fields of :class:`Measures` the guardrails read)."""

    latency_s: float
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    escalated: bool
    empty: bool
    llm_calls: int | None


class MeasuredAttempt(NamedTuple):
    """One attempt as the guardrails read it: its status and measures."""

    status: str
    measures: AttemptMeasures


@dataclass
class ScenarioData:
    """One scenario of one run, its attempts in index order reduced to what the comparison reads."""

    attempts: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)  # distinct, first 3
    failure_details: list[str] = field(default_factory=list)  # distinct, first 5
    sample_answer: str | None = None
    metrics: dict[str, list[float]] = field(default_factory=dict)  # judge and retrieval scores
    positions: list[int] = field(default_factory=list)  # each attempt's place in the run, index order


_STATUSES = ("pass", "fail", "error")
_CODE = {status: code for code, status in enumerate(_STATUSES)}


class _Columns:
    """Each attempt's status and guardrail measures, in file order, as arrays (not one object each)."""

    def __init__(self) -> None:
        self.status = bytearray()
        self.latency = array("d")
        self.cost = array("d")
        self.tokens_in = array("q")
        self.tokens_out = array("q")
        self.llm_calls = array("q")
        self.flags = bytearray()  # bit 0 escalated, 1 empty; 2, 3, 4, 5: cost, in, out, calls known

    def add(self, m: AttemptFields) -> None:
        self.status.append(_CODE[m.status])
        self.latency.append(m.latency_s)
        self.cost.append(m.cost_usd if m.cost_usd is not None else 0.0)
        self.tokens_in.append(m.input_tokens if m.input_tokens is not None else 0)
        self.tokens_out.append(m.output_tokens if m.output_tokens is not None else 0)
        self.llm_calls.append(m.llm_calls if m.llm_calls is not None else 0)
        self.flags.append(
            m.escalated
            | m.empty << 1
            | (m.cost_usd is not None) << 2
            | (m.input_tokens is not None) << 3
            | (m.output_tokens is not None) << 4
            | (m.llm_calls is not None) << 5
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Columns) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, c: RunColumns) -> _Columns:
        """The columns of a run read as :class:`RunColumns` (the same values :meth:`add` keeps)."""
        out = cls()
        out.status = bytearray(c.status.astype(np.uint8).tobytes())
        out.latency.frombytes(c.latency_s.astype(np.float64).tobytes())
        out.cost.frombytes(np.where(c.cost_usd_known, c.cost_usd, 0.0).tobytes())
        for column, values, known in (
            (out.tokens_in, c.input_tokens, c.input_tokens_known),
            (out.tokens_out, c.output_tokens, c.output_tokens_known),
            (out.llm_calls, c.llm_calls, c.llm_calls_known),
        ):
            column.frombytes(np.where(known, values, 0).astype(np.int64).tobytes())
        flags = (
            c.escalated.astype(np.uint8)
            | c.empty.astype(np.uint8) << 1
            | c.cost_usd_known.astype(np.uint8) << 2
            | c.input_tokens_known.astype(np.uint8) << 3
            | c.output_tokens_known.astype(np.uint8) << 4
            | c.llm_calls_known.astype(np.uint8) << 5
        )
        out.flags = bytearray(flags.tobytes())
        return out

    def measure_columns(self, places: list[int]) -> MeasureColumns:
        """The status and measures of the attempts at ``places``, as arrays (the values :meth:`row` gives)."""
        at = np.asarray(places, dtype=np.intp)

        def column(values: bytearray | array[float] | array[int], dtype: str) -> NDArray[Any]:
            whole = np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)
            return whole[at]

        flags = column(self.flags, "u1")
        return MeasureColumns(
            status=column(self.status, "u1"),
            latency_s=column(self.latency, "d"),
            input_tokens=column(self.tokens_in, "q"),
            input_tokens_known=(flags & 8) != 0,
            output_tokens=column(self.tokens_out, "q"),
            output_tokens_known=(flags & 16) != 0,
            cost_usd=column(self.cost, "d"),
            cost_usd_known=(flags & 4) != 0,
            llm_calls=column(self.llm_calls, "q"),
            llm_calls_known=(flags & 32) != 0,
            escalated=(flags & 1) != 0,
            empty=(flags & 2) != 0,
        )

    def row(self, i: int) -> MeasuredAttempt:
        f = self.flags[i]
        measures = AttemptMeasures(
            self.latency[i],
            self.tokens_in[i] if f & 8 else None,
            self.tokens_out[i] if f & 16 else None,
            self.cost[i] if f & 4 else None,
            bool(f & 1),
            bool(f & 2),
            self.llm_calls[i] if f & 32 else None,
        )
        return MeasuredAttempt(_STATUSES[self.status[i]], measures)


def _check_detail(name: str, detail: str) -> str:
    return f"check {name}: {detail}".rstrip(": ")


def _details(a: AttemptFields) -> list[str]:
    out = [_check_detail(name, detail) for name, detail in a.failed_checks]
    out.extend(f"judge {j.name} ({j.score:.2f}): {j.detail}".rstrip(": ") for j in a.judges if not j.passed)
    return out


def _scores(a: AttemptFields) -> list[tuple[str, float]]:
    out = [(f"judge:{j.name}", j.score) for j in a.judges]
    if a.retrieval is not None:
        out.extend((f"retrieval:{m}", float(v)) for m, v in zip(_RETRIEVAL, a.retrieval, strict=True))
    return out


class _Gather:
    """One scenario's attempts as they arrive (any order), reduced to :class:`ScenarioData` at the end."""

    __slots__ = ("errors", "failing", "fail_answer", "answer", "scored", "rows", "passed", "failed")

    def __init__(self) -> None:
        self.errors: list[tuple[int, str]] = []
        self.failing: list[tuple[int, list[str]]] = []
        self.fail_answer: tuple[int, str] | None = None
        self.answer: tuple[int, str] | None = None
        self.scored: list[tuple[int, list[tuple[str, float]]]] = []
        self.rows: list[tuple[int, int]] = []  # (index, place in the run)
        self.passed = self.failed = 0

    def add(self, a: AttemptFields, position: int) -> None:
        i = a.index
        self.rows.append((i, position))
        self.passed += a.status == "pass"
        self.failed += a.status == "fail"
        if a.answer is not None:  # the first in index order (file order among equal indexes)
            answer = (i, a.answer[:_ANSWER_CAP])
            if self.answer is None or i < self.answer[0]:
                self.answer = answer
            if a.status == "fail" and (self.fail_answer is None or i < self.fail_answer[0]):
                self.fail_answer = answer
        if a.status == "error":
            self.errors.append((i, a.error or "error (no message)"))
            return
        self.scored.append((i, _scores(a)))
        if a.status == "fail":
            self.failing.append((i, _details(a)))

    def done(self) -> ScenarioData:
        def key(row: tuple[int, object]) -> int:
            return row[0]

        rows = [r for _, r in sorted(self.rows, key=key)]
        errors = [m for _, m in sorted(self.errors, key=key)]
        details = [d for _, ds in sorted(self.failing, key=key) for d in ds]
        metrics: dict[str, list[float]] = {}
        for _, scores in sorted(self.scored, key=key):
            for name, value in scores:
                metrics.setdefault(name, []).append(value)
        sample = self.fail_answer or self.answer
        return ScenarioData(
            attempts=len(rows),
            passed=self.passed,
            failed=self.failed,
            errors=len(errors),
            error_messages=list(dict.fromkeys(errors))[:3],
            failure_details=list(dict.fromkeys(details))[:5],
            sample_answer=sample[1] if sample is not None else None,
            metrics=metrics,
            positions=rows,
        )


def _first_of_each(mask: NDArray[np.bool_], grouped: NDArray[np.intp], groups: int) -> list[int]:
    """Per group, the first position (of ``grouped``, sorted by group) where ``mask`` holds; -1: none."""
    at = np.flatnonzero(mask)
    found, first = np.unique(grouped[at], return_index=True)
    out = np.full(groups, -1, dtype=np.int64)
    out[found] = at[first]
    return list(out.tolist())


def _of_columns(head: RunFile, c: RunColumns) -> RunData:
    """The :class:`RunData` of a run read as columns (what the reducer gathers from its attempts).

    Each scenario's rows in index order (file order among equal indexes); what a pass with no scores
    holds beyond its answer is never read, so only the first answer, the failures, the errors and the
    scored rows are visited, each scenario's counts and first answers found for all of them at once.
    """
    ids, first, code = np.unique(c.scenario_ids, return_index=True, return_inverse=True)
    names = [i.decode("utf-8") for i in ids.tolist()]
    code = code.reshape(-1)
    order = np.lexsort((np.arange(len(c)), c.index, code))  # by scenario, then index, then file order
    grouped = code[order]  # the groups are the codes 0..len(ids)-1, each a run of ``order``
    groups = len(ids)
    cuts = np.searchsorted(grouped, np.arange(groups + 1)).tolist()
    status = c.status[order]
    passed = np.bincount(grouped[status == 0], minlength=groups).tolist()
    failed = np.bincount(grouped[status == 1], minlength=groups).tolist()
    answered = c.text_spans[order, 0, 0] >= 0
    first_answer = _first_of_each(answered, grouped, groups)
    first_fail_answer = _first_of_each(answered & (status == 1), grouped, groups)
    scored = c.has_retrieval[order]
    special = np.flatnonzero((status != 0) | scored)  # failures, errors and rows with scores
    special_cuts = np.searchsorted(grouped[special], np.arange(groups + 1)).tolist()
    special_l = special.tolist()
    order_l, status_l, scored_l = order.tolist(), status.tolist(), scored.tolist()

    def text(at: int) -> str | None:
        answer = c.answer(order_l[at]) if at >= 0 else None
        return answer[:_ANSWER_CAP] if answer is not None else None

    def scenario(g: int) -> ScenarioData:
        errors: list[str] = []
        details: list[str] = []
        metrics: dict[str, list[float]] = {}
        for at in special_l[special_cuts[g] : special_cuts[g + 1]]:
            row, status_code = order_l[at], status_l[at]
            if status_code == 2:
                errors.append(c.error(row) or "error (no message)")
                continue
            if scored_l[at]:
                for name, value in _scores(c.fields(row)):
                    metrics.setdefault(name, []).append(value)
            if status_code == 1:
                details.extend(_check_detail(name, detail) for name, detail in c.failed_checks(row))
        rows = order_l[cuts[g] : cuts[g + 1]]
        fail_at = first_fail_answer[g]
        return ScenarioData(
            attempts=len(rows),
            passed=passed[g],
            failed=failed[g],
            errors=len(errors),
            error_messages=list(dict.fromkeys(errors))[:3],
            failure_details=list(dict.fromkeys(details))[:5],
            sample_answer=text(fail_at) if fail_at >= 0 else text(first_answer[g]),
            metrics=metrics,
            positions=rows,
        )

    scenarios = {names[g]: scenario(g) for g in np.argsort(first, kind="stable").tolist()}
    indexes = array("q")
    indexes.frombytes(c.index.astype(np.int64).tobytes())
    sids = [names[i] for i in code.tolist()]
    assert head.attempts_digest is not None  # the attempts were checked against it
    return RunData(
        head, sids, indexes, bytearray(c.digests), head.attempts_digest, scenarios, _Columns.of(c), []
    )


class _Reducer:
    """Gathers a run's attempts (keys, digests, per-scenario data, the judges' verdicts)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self.ids = {i: i for i in ids}  # one string per scenario id, shared by every key
        self.sids: list[str] = []
        self.indexes = array("q")
        self.digests = bytearray()  # 32 bytes each
        self.columns = _Columns()
        self.gathered: dict[str, _Gather] = {}
        self.judged: list[Attempt] = []

    def __call__(self, a: AttemptFields, digest: bytes) -> None:
        sid = self.ids.setdefault(a.scenario_id, a.scenario_id)
        position = len(self.sids)
        self.sids.append(sid)
        self.indexes.append(a.index)
        self.digests += digest
        self.columns.add(a)
        g = self.gathered.get(sid)
        if g is None:
            g = self.gathered[sid] = _Gather()
        g.add(a, position)
        if a.judges:
            self.judged.append(
                Attempt.model_construct(
                    scenario_id=sid,
                    index=a.index,
                    status=a.status,
                    judges=list(a.judges),
                    measures=_NO_MEASURES,
                )
            )

    def data(self, head: RunFile, digest: str) -> RunData:
        per = {sid: g.done() for sid, g in self.gathered.items()}
        return RunData(head, self.sids, self.indexes, self.digests, digest, per, self.columns, self.judged)


@dataclass(frozen=True)
class RunData:
    """A run as the gate reads it: the run without its attempts (``head``) and their reduction.

    :attr:`keys` and :attr:`digests` are each attempt's (scenario id, index) and
    :func:`attempt_digest`, in file order; ``digest`` is the attempts' digest (recomputed; for a run
    file, checked against the recorded one when read); ``scenarios`` the per-scenario data of every
    scenario with attempts; ``judged`` the attempts with judge verdicts, reduced to those (what judge
    agreement reads).
    """

    head: RunFile
    sids: list[str]
    indexes: array[int]
    raw_digests: bytearray
    digest: str
    scenarios: dict[str, ScenarioData]
    columns: _Columns
    judged: list[Attempt]

    @property
    def keys(self) -> Iterator[tuple[str, int]]:
        """Each attempt's (scenario id, index), in file order."""
        return zip(self.sids, self.indexes, strict=True)

    @property
    def digests(self) -> list[str]:
        """Each attempt's :func:`attempt_digest`, in file order."""
        raw = self.raw_digests
        return [raw[i : i + 32].hex() for i in range(0, len(raw), 32)]

    def rows(self, sid: str) -> list[MeasuredAttempt]:
        """The status and measures of each attempt of ``sid``, in index order (none without attempts)."""
        data = self.scenarios.get(sid)
        return [self.columns.row(i) for i in data.positions] if data is not None else []

    def measure_columns(self, sids: Iterable[str]) -> MeasureColumns:
        """The status and measures of each attempt of each of ``sids`` (in index order), as arrays."""
        places = [i for sid in sids if (data := self.scenarios.get(sid)) is not None for i in data.positions]
        return self.columns.measure_columns(places)

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.head.run_id

    @property
    def entries(self) -> list[ScenarioEntry]:
        """The scenarios as they were when the run started."""
        return self.head.scenarios

    @classmethod
    def of(cls, run: RunFile) -> RunData:
        """Reduce a run in memory (its digests computed, as ``digest_of`` does)."""
        reducer = _Reducer(e.id for e in run.scenarios)
        digests = [attempt_digest(a) for a in run.attempts]
        for a, digest in zip(run.attempts, digests, strict=True):
            reducer(attempt_fields(a), bytes.fromhex(digest))
        head = run.model_copy(update={"attempts": []})
        return reducer.data(head, attempts_digest(digests))

    @staticmethod
    def reading(
        paths: Sequence[str | os.PathLike[str]],
    ) -> AbstractContextManager[Callable[[], list[RunData]]]:
        """Start reading run files: ``with RunData.reading(paths) as read: ... runs = read()``.

        ``read()`` gives :func:`load_run_data` of each path, in order (its first error); big files are
        read side by side in forked processes from the start of the block (see :func:`_reading_runs`).
        """
        return _reading_runs(paths)

    def judged_run(self) -> RunFile:
        """The run with only its judged attempts, each with only its status and verdicts."""
        return self.head.model_copy(update={"attempts": list(self.judged)})


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (reading makes no cycles, and every pass would walk the data)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_run_data(path: str | os.PathLike[str]) -> RunData:
    """Read a run file into :class:`RunData` without keeping its attempts (errors as :func:`load_run`).

    The cyclic garbage collector is paused while the file is read (what is read holds no cycle; its
    passes would only walk the growing data again and again).

    Raises:
        RunFileError: the file is missing, unreadable, invalid or edited (the message :func:`load_run`
            gives; an edit also names the attempts that differ from the journal still beside the file).
    """
    with _collector_paused():
        columns = scan_run_columns(path)
        if columns is not None:
            return _of_columns(*columns)
        reducer = _Reducer(())  # the header is read first, but handed back last: ids shared as seen
        head = scan_run_fields(path, reducer)
        if head is None:
            return RunData.of(_load_run_named(path))
        assert head.attempts_digest is not None  # scan_run checked the attempts against it
        return reducer.data(head, head.attempts_digest)


def _load_run_named(path: str | os.PathLike[str]) -> RunFile:
    """:func:`load_run`; an edit of the attempts names which ones, when the run's journal is beside."""
    try:
        return load_run(path)
    except AttemptsEditedError as exc:
        run = exc.run
        try:
            found = compare_with_journal(
                path, run.run_id, ((a.scenario_id, a.index, attempt_digest(a)) for a in run.attempts)
            )
        except RunFileError:
            found = None  # an unreadable journal names nothing; the digests still refuse the file
        if found is None or found.agrees:
            raise
        raise exc.naming(found.describe()) from None


def as_run_data(run: RunFile | RunData) -> RunData:
    """``run`` reduced (a :class:`RunData` as it is)."""
    return run if isinstance(run, RunData) else RunData.of(run)


#: Below this many bytes of run files, forking readers costs more than reading side by side saves.
PARALLEL_BYTES = 8 << 20


def _cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _other_threads() -> bool:
    """Whether this process runs other threads (a fork copies a lock one of them may hold)."""
    return threading.active_count() > 1


def _side_by_side(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether to read ``paths`` in forked processes: several big files, cores to spare, safe to fork."""
    if len(paths) < 2 or _cpus() < 2 or _other_threads():
        return False
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        total = sum(os.stat(p).st_size for p in paths)
    except OSError:  # a missing or unreadable file: load_run_data says which, in order
        return False
    return total >= PARALLEL_BYTES


def _read_into(path: str | os.PathLike[str], sender: Any) -> None:
    """A forked reader: send ``path``'s :class:`RunData` (or its error) and exit (freeing it all).

    Ctrl-C is this process's parent's to handle (it stops the readers): ignored here, so no reader
    prints a traceback.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result: tuple[bool, Any] = (True, load_run_data(path))
    except Exception as e:  # noqa: BLE001 - handed back, raised there as reading it there would raise it
        result = (False, e)
    try:
        sender.send(result)
    except Exception:  # noqa: BLE001, S110 - it does not pickle: the parent sees EOF and reads the file itself
        pass
    finally:
        sender.close()


@contextmanager
def _reading_runs(paths: Sequence[str | os.PathLike[str]]) -> Iterator[Callable[[], list[RunData]]]:
    """Start reading ``paths``; ``read()`` inside the block gives :func:`load_run_data` of each, in order.

    Big files (together at least :data:`PARALLEL_BYTES`) are read side by side when the machine has
    cores to spare: a forked process reads each but the first from the start of the block, so what the
    block does before ``read()`` (imports, a policy) overlaps with reading; ``read()`` reads the first
    file here and receives the others. A reader that dies before it sends (killed, out of memory), or
    whose result does not pickle, leaves its file to be read here. Readers still running when the block
    ends are stopped.

    ``read()`` raises:
        RunFileError: the first of ``paths`` (in order) that is missing, unreadable, invalid or edited.
    """
    if not _side_by_side(paths):
        yield lambda: [load_run_data(p) for p in paths]
        return
    import multiprocessing

    fork = multiprocessing.get_context("fork")
    readers = []
    try:
        for path in paths[1:]:
            receiver, sender = fork.Pipe(duplex=False)
            reader = fork.Process(target=_read_into, args=(path, sender), daemon=True)
            reader.start()
            sender.close()  # the child's end: EOF here once the child exits
            readers.append((path, reader, receiver))

        def read() -> list[RunData]:
            out = [load_run_data(paths[0])]
            for path, _, receiver in readers:
                try:
                    ok, got = receiver.recv()
                except Exception:  # noqa: BLE001 - it died before sending, or it does not unpickle
                    ok, got = True, load_run_data(path)
                if not ok:
                    raise got
                out.append(got)
            return out

        yield read
    finally:
        for _, reader, receiver in readers:
            receiver.close()
            reader.join(timeout=0.5)
            if reader.is_alive():
                reader.kill()
                reader.join()
