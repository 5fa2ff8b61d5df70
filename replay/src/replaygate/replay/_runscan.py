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

__all__ = ["scan_run"]

_CLOSE = "\n  ]\n}\n"
_INDENT = "    "
_CLAIM_DEPTH = 6  # run > attempts > attempt > judges > judge > claims > claim


def scan_run(path: str | os.PathLike[str], visit: Callable[[Attempt, str], None]) -> RunFile | None:
    """Validate a run file attempt by attempt: ``visit(attempt, digest)`` for each, in file order.

    Returns the run without its attempts (``attempts`` empty; everything else as recorded, including
    ``attempts_digest``, which the attempts were checked against), or None when the file is not one
    :func:`load_run` accepts in the layout it writes (see the module docstring: read it with
    :func:`load_run`).

    Raises:
        RunFileError: the file is missing, unreadable, too large or not UTF-8 (as :func:`load_run`).
    """
    p = Path(path)
    text = read_text_bounded(p, what="run file", error=RunFileError, max_bytes=MAX_JSON_BYTES)
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
    lines = text[at + len(_ATTEMPTS_OPEN) : len(text) - len(_CLOSE)].split("\n")
    del text
    last = len(lines) - 1
    digests: list[str] = []
    for number, line in enumerate(lines):
        if not line.startswith(_INDENT):
            return None
        body = line[len(_INDENT) : -1] if number < last and line.endswith(",") else line[len(_INDENT) :]
        if number < last and len(body) == len(line) - len(_INDENT):
            return None  # a line before the last without its comma
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
        digests.append(digest)
        visit(attempt, digest)
    if attempts_digest(digests) != head.attempts_digest:
        return None
    return head
