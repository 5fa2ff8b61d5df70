"""``scan_run_columns``: a run file's attempts as columns (numpy arrays), for readers of thousands of them.

When every attempt line of a run file is in the layout :func:`~replaygate.replay.dump_run` writes and
:func:`~replaygate.replay.parse_attempt_line` reads (no judge, no escape sequence: see
:mod:`._attempt_line`), each line is matched by the same strict pattern (so it is one ``Attempt``
validation accepts), hashed for the attempts' digest, and its fields become columns: the numbers parsed
by numpy from the matched text all at once, the strings (scenario id, error, answer, checks) left as
spans of the file's bytes for the reader to decode the few it shows. No attempt object and no per-field
Python value is made per attempt.

Anything else (one line another reader must validate, another layout, a digest that does not match)
returns None: the caller reads the file with :func:`~replaygate.replay.scan_run_fields` (per line) or
:func:`~replaygate.replay.load_run` (the one error message).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from replaygate.replay._attempt_line import LINE_PATTERN, AttemptFields, failed_checks, parse_attempt_line
from replaygate.replay._runfile import RunFile, attempts_digest
from replaygate.replay._runscan import INDENT, run_bytes

__all__ = ["RunColumns", "scan_run_columns"]

_STATUS = np.zeros(256, dtype=np.uint8)  # pass 0, fail 1, error 2: the first byte of the status decides
_STATUS[ord("f")], _STATUS[ord("e")] = 1, 2
_CHUNK = 4096  # lines matched before their values become arrays (bounds the Python objects held)
_COLUMNS = ("sid", "index", "status", "latency", "tin", "tout", "cost", "esc", "empty", "calls", "retrieval")


@dataclass(frozen=True)
class RunColumns:
    """A run's attempts in file order: one array entry per attempt.

    ``status``: 0 pass, 1 fail, 2 error. Optional numbers have a ``*_known`` mask (the value is 0 where
    it is not known). ``scenario_ids`` are the ids' UTF-8 bytes; :meth:`fields` reads the whole
    :class:`AttemptFields` of one attempt (its error, answer, failed checks, retrieval scores) from its
    line. ``digests``: each attempt's raw sha256 :func:`~replaygate.replay.attempt_digest`, 32 bytes each.
    """

    data: bytes
    starts: NDArray[np.int64]  # each attempt's JSON in data: starts[i]:stops[i]
    stops: NDArray[np.int64]
    text_spans: NDArray[np.int64]  # (attempts, 3, 2): answer, error, checks; (-1, -1) where null
    scenario_ids: NDArray[np.bytes_]
    index: NDArray[np.int64]
    status: NDArray[np.uint8]
    latency_s: NDArray[np.float64]
    input_tokens: NDArray[np.int64]
    input_tokens_known: NDArray[np.bool_]
    output_tokens: NDArray[np.int64]
    output_tokens_known: NDArray[np.bool_]
    cost_usd: NDArray[np.float64]
    cost_usd_known: NDArray[np.bool_]
    llm_calls: NDArray[np.int64]
    llm_calls_known: NDArray[np.bool_]
    escalated: NDArray[np.bool_]
    empty: NDArray[np.bool_]
    has_retrieval: NDArray[np.bool_]
    digests: bytes

    def __len__(self) -> int:
        return int(self.index.size)

    def _text(self, row: int, which: int) -> str | None:
        start, end = self.text_spans[row, which].tolist()
        return None if start < 0 else self.data[start:end].decode("utf-8")

    def answer(self, row: int) -> str | None:
        """Attempt ``row``'s answer (``fields(row).answer``, without reading the rest of its line)."""
        return self._text(row, 0)

    def error(self, row: int) -> str | None:
        """Attempt ``row``'s error message (``fields(row).error``)."""
        return self._text(row, 1)

    def failed_checks(self, row: int) -> tuple[tuple[str, str], ...]:
        """Attempt ``row``'s checks that did not pass (``fields(row).failed_checks``)."""
        start, end = self.text_spans[row, 2].tolist()
        return failed_checks(self.data[start:end])

    def fields(self, row: int) -> AttemptFields:
        """Everything :class:`AttemptFields` holds of attempt ``row`` (its line read again)."""
        read = parse_attempt_line(self.data, int(self.starts[row]), int(self.stops[row]))
        assert read is not None  # every line matched when the file was scanned
        return read[0]


def scan_run_columns(path: str | os.PathLike[str]) -> tuple[RunFile, RunColumns] | None:
    """The run without its attempts and its attempts as :class:`RunColumns`, or None (see the docstring).

    Raises:
        RunFileError: the file is missing, unreadable, too large or not UTF-8 (as :func:`load_run`).
    """
    found = run_bytes(path)
    if found is None:
        return None
    head, data, begin, end = found
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf[begin:end] == 10) + begin
    starts = np.concatenate([[begin], newlines + 1])
    stops = np.concatenate([newlines - 1, [end]])  # without the "," that ends every line but the last
    if starts.size and (buf[newlines - 1] != ord(",")).any():
        return None
    indent = INDENT.encode()
    fullmatch = LINE_PATTERN.fullmatch
    sha256 = hashlib.sha256
    digests: list[bytes] = []
    chunks: list[dict[str, NDArray[Any]]] = []
    span = LINE_PATTERN.groupindex
    path_group, answer, error, checks = span["path"], span["answer"], span["error"], span["checks"]
    wanted = [LINE_PATTERN.groupindex[name] for name in _COLUMNS]
    bounds = list(zip(starts.tolist(), stops.tolist(), strict=True))
    for first in range(0, len(bounds), _CHUNK):  # each chunk's matched text to arrays before the next
        rows: list[tuple[bytes | None, ...]] = []
        texts: list[int] = []  # the spans of each line's answer, error and checks, flat
        for start, stop in bounds[first : first + _CHUNK]:
            if not data.startswith(indent, start, stop):
                return None
            m = fullmatch(data, start + len(indent), stop)
            if m is None:
                return None
            rows.append(m.group(*wanted))
            texts += (*m.span(answer), *m.span(error), *m.span(checks))
            cut, resume = m.span(path_group)
            h = sha256(data[start + len(indent) : cut])
            h.update(data[resume:stop])
            digests.append(h.digest())
        chunks.append(_chunk(rows, np.array(texts, dtype=np.int64).reshape(-1, 3, 2)))
    if attempts_digest(d.hex() for d in digests) != head.attempts_digest:
        return None
    return head, _columns(data, starts + len(indent), stops, chunks, digests)


def _numbers(
    values: tuple[bytes | None, ...], dtype: type[np.generic]
) -> tuple[NDArray[Any], NDArray[np.bool_]]:
    """The numbers of a column (None: ``null``) and where they are known (0 where not)."""
    nulls = values.count(None)
    if nulls == 0:
        return np.array(values, dtype=np.bytes_).astype(dtype), np.ones(len(values), dtype=bool)
    if nulls == len(values):
        return np.zeros(len(values), dtype=dtype), np.zeros(len(values), dtype=bool)
    known = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    text = np.array([b"0" if v is None else v for v in values], dtype=np.bytes_)
    return text.astype(dtype), known


def _flags(values: tuple[bytes | None, ...]) -> NDArray[np.uint8]:
    """The first byte of each value (each value is there)."""
    return np.array(values, dtype="S1").view(np.uint8)


def _chunk(rows: list[tuple[bytes | None, ...]], spans: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
    """The columns of some attempts' matched values (``rows``, one tuple per attempt, as ``_COLUMNS``)."""
    sid, index, status, latency, tin, tout, cost, esc, empty, calls, retrieval = zip(*rows, strict=True)
    tokens_in, tokens_in_known = _numbers(tin, np.int64)
    tokens_out, tokens_out_known = _numbers(tout, np.int64)
    costs, cost_known = _numbers(cost, np.float64)
    llm_calls, llm_calls_known = _numbers(calls, np.int64)
    return {
        "text_spans": spans,
        "scenario_ids": np.array(sid, dtype=np.bytes_),
        "index": _numbers(index, np.int64)[0],
        "status": _STATUS[_flags(status)],
        "latency_s": _numbers(latency, np.float64)[0],
        "input_tokens": tokens_in,
        "input_tokens_known": tokens_in_known,
        "output_tokens": tokens_out,
        "output_tokens_known": tokens_out_known,
        "cost_usd": costs,
        "cost_usd_known": cost_known,
        "llm_calls": llm_calls,
        "llm_calls_known": llm_calls_known,
        "escalated": _flags(esc) == ord("t"),
        "empty": _flags(empty) == ord("t"),
        "has_retrieval": np.array([r is not None for r in retrieval], dtype=bool),
    }


def _columns(
    data: bytes,
    starts: NDArray[np.int64],
    stops: NDArray[np.int64],
    chunks: list[dict[str, NDArray[Any]]],
    digests: list[bytes],
) -> RunColumns:
    columns = {name: np.concatenate([c[name] for c in chunks]) for name in chunks[0]}
    return RunColumns(data=data, starts=starts, stops=stops, digests=b"".join(digests), **columns)
