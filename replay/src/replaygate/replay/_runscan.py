"""``scan_run``: read a run file one attempt at a time, for readers that keep a summary, not the attempts.

A run file as :func:`~replaygate.replay.dump_run` lays it out (indented header, then one compact attempt
per line) is validated piece by piece: the header with pydantic's JSON parser (``RunFile`` with no
attempts), then each attempt line as an :class:`Attempt`, handed to ``visit`` with its digest and
dropped. Validating the pieces is validating the document (a run file's attempts are a list of
``Attempt``), and the attempts' digest is checked on the lines as written, as :func:`load_run` does, so
memory stays at one attempt while a 50,000-attempt file is read.

Anything else (another layout, a NaN, a line that is not a valid attempt, nesting too deep, a digest
that does not match the lines) returns None *after* some attempts may have been visited: the caller then
discards what it gathered and reads the file with :func:`load_run`, which gives the one error message
(or, for a valid file in another layout, the run).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError
from replaygate.replay._attempt_line import AttemptFields, attempt_fields, parse_attempt_line
from replaygate.replay._bounded import MAX_DEPTH, MAX_JSON_BYTES, json_depth_ok, read_text_bounded
from replaygate.replay._errors import RunFileError
from replaygate.replay._runfile import (
    _ATTEMPTS_OPEN,
    RUN_FORMAT_VERSION,
    Attempt,
    RunFile,
    _free_form,
    attempts_digest,
    bare_digest,
)
from replaygate.replay._versioned import version_first

__all__ = ["INDENT", "run_bytes", "run_header", "scan_run", "scan_run_fields"]

_CLOSE = "\n  ]\n}\n"
INDENT = "    "
_CLAIM_DEPTH = 6  # run > attempts > attempt > judges > judge > claims > claim


def run_header(text: str) -> tuple[RunFile, int, int] | None:
    """The run without its attempts and where its attempt lines are, or None (not this layout)."""
    if "NaN" in text or "Infinity" in text or version_first(text) != RUN_FORMAT_VERSION:
        return None
    at = text.rfind(_ATTEMPTS_OPEN)
    if at < 0 or not text.endswith(_CLOSE):
        return None
    try:
        head = RunFile.model_validate_json(text[:at] + '"attempts": []\n}')
    except ValidationError:
        return None
    if head.attempts or head.attempts_digest is None:
        return None
    if not all(json_depth_ok(value, MAX_DEPTH - depth) for value, depth in _free_form(head)):
        return None
    return head, at + len(_ATTEMPTS_OPEN), len(text) - len(_CLOSE)


def _read_header(path: str | os.PathLike[str]) -> tuple[str, RunFile, int, int] | None:
    """The run file's text with :func:`run_header`'s answer (None: not this layout)."""
    text = read_text_bounded(Path(path), what="run file", error=RunFileError, max_bytes=MAX_JSON_BYTES)
    found = run_header(text)
    return None if found is None else (text, *found)


def run_bytes(path: str | os.PathLike[str]) -> tuple[RunFile, bytes, int, int] | None:
    """The run without its attempts, the file's bytes and the byte range of its attempt lines (or None).

    Raises:
        RunFileError: the file is missing, unreadable, too large or not UTF-8 (as :func:`load_run`).
    """
    found = _read_header(path)
    if found is None:
        return None
    text, head, start_at, _ = found
    data = text.encode("utf-8")
    begin = start_at if data.isascii() else len(text[:start_at].encode("utf-8"))
    return head, data, begin, len(data) - len(_CLOSE)


def _attempt(body: str) -> tuple[Attempt, str] | None:
    """One attempt line validated as an :class:`Attempt`, with its digest (None: not a valid one)."""
    try:
        attempt = Attempt.model_validate_json(body)
    except ValidationError:
        return None
    digest = bare_digest(body)
    if digest is None:
        return None
    for judge in attempt.judges:
        if not all(json_depth_ok(claim, MAX_DEPTH - _CLAIM_DEPTH) for claim in judge.claims):
            return None
    return attempt, digest


def scan_run(path: str | os.PathLike[str], visit: Callable[[Attempt, str], None]) -> RunFile | None:
    """Validate a run file attempt by attempt: ``visit(attempt, digest)`` for each, in file order.

    Returns the run without its attempts (``attempts`` empty; everything else as recorded, including
    ``attempts_digest``, which the attempts were checked against), or None when the file is not one
    :func:`load_run` accepts in the layout it writes (see the module docstring: read it with
    :func:`load_run`).

    Raises:
        RunFileError: the file is missing, unreadable, too large or not UTF-8 (as :func:`load_run`).
    """
    found = _read_header(path)
    if found is None:
        return None
    text, head, start, end = found
    digests: list[str] = []
    while start <= end:  # one line at a time: the file's text is the only copy of it in memory
        stop = text.find("\n", start, end)
        last = stop < 0
        line = text[start : end if last else stop]
        start = end + 1 if last else stop + 1
        if not line.startswith(INDENT) or (not last and not line.endswith(",")):
            return None
        read = _attempt(line[len(INDENT) :] if last else line[len(INDENT) : -1])
        if read is None:
            return None
        digests.append(read[1])
        visit(*read)
    if attempts_digest(digests) != head.attempts_digest:
        return None
    return head


def scan_run_fields(
    path: str | os.PathLike[str], visit: Callable[[AttemptFields, bytes], None]
) -> RunFile | None:
    """:func:`scan_run` for readers of :class:`AttemptFields`: ``visit(fields, raw digest)`` per attempt.

    Each line in the layout :func:`~replaygate.replay.dump_run` writes is read by
    :func:`parse_attempt_line` without building its attempt; any other line (a judge, an escape) is
    validated as an :class:`Attempt`, as :func:`scan_run` does, and reduced by :func:`attempt_fields`.
    The same files are accepted (None otherwise: read it with :func:`load_run`), with the same values.

    Raises:
        RunFileError: the file is missing, unreadable, too large or not UTF-8 (as :func:`load_run`).
    """
    found = run_bytes(path)
    if found is None:
        return None
    head, data, start, end = found
    digests: list[bytes] = []
    indent = INDENT.encode()
    while start <= end:
        stop = data.find(b"\n", start, end)
        last = stop < 0
        line_end = end if last else stop
        if not data.startswith(indent, start, line_end) or (not last and data[line_end - 1] != 44):  # ","
            return None
        body_start, body_end = start + len(indent), line_end if last else line_end - 1
        start = end + 1 if last else stop + 1
        fast = parse_attempt_line(data, body_start, body_end)
        if fast is None:
            read = _attempt(data[body_start:body_end].decode("utf-8"))
            if read is None:
                return None
            fast = attempt_fields(read[0]), bytes.fromhex(read[1])
        digests.append(fast[1])
        visit(*fast)
    if attempts_digest(d.hex() for d in digests) != head.attempts_digest:
        return None
    return head
