r"""Scenario regular expressions, bounded in time: RE2 (linear) first, Python ``re`` only with a deadline.

A pattern in a scenario (``output_regex``, ``forbidden_output_regex``, ``tool_args.pattern``,
``values_from_tools``) is compiled with google-re2, whose matching time is linear in the text: a
pattern such as ``^(a+)+$`` cannot stall a run. A pattern that needs what RE2 lacks (back-references
``\1``, look-around ``(?=``, ``(?<!``, possessive or atomic groups) falls back to Python's backtracking
``re``; ``scenarios lint`` warns about each such pattern, and each match runs in a child process that is
killed when the attempt's deadline passes: the check then raises :class:`CheckBudgetError`, which makes
the attempt ``error`` (never a fail or a pass).

Syntax notes: RE2's ``$`` matches only at the very end (Python's also before a final newline); write
``\z`` for Python's ``\Z``.

The deadline comes from the context variable set by :func:`check_deadline` (the replay engine sets it to
the attempt's deadline while it scores the attempt); with none set, the fallback gets
:data:`DEFAULT_BUDGET_S`.
"""

from __future__ import annotations

import contextvars
import json
import re
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]
from replaygate.replay._errors import ReplayError

__all__ = [
    "DEFAULT_BUDGET_S",
    "CheckBudgetError",
    "Found",
    "ScenarioRegex",
    "check_deadline",
    "compile_scenario_regex",
    "needs_backtracking",
]

#: The time a backtracking-only pattern gets when no attempt deadline is set.
DEFAULT_BUDGET_S = 5.0
#: The least time a backtracking-only pattern gets, even when the attempt's deadline has nearly passed.
_MIN_BUDGET_S = 0.25

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "replaygate_check_deadline", default=None
)

_CHILD = r"""
import json, re, sys
req = json.loads(sys.stdin.read())
rx = re.compile(req["pattern"])
if req["op"] == "search":
    m = rx.search(req["text"])
    out = None if m is None else [[m.group(0), list(m.groups())]]
else:
    out = [[m.group(0), list(m.groups())] for m in rx.finditer(req["text"])]
sys.stdout.write(json.dumps(out))
"""


class CheckBudgetError(ReplayError):
    """A check ran past its time budget (the attempt's deadline): the attempt is an error."""


@dataclass(frozen=True)
class Found:
    """One match: the matched text and its groups (what the checks use of a match)."""

    text: str
    captured: tuple[str | None, ...] = ()

    def group(self, index: int = 0) -> str | None:
        """The whole match (0) or one group."""
        return self.text if index == 0 else self.captured[index - 1]

    def groups(self) -> tuple[str | None, ...]:
        """Every group, as ``re.Match.groups``."""
        return self.captured


class check_deadline:  # noqa: N801 - used as a function: ``with check_deadline(t):``
    """Checks run inside this block stop at ``deadline`` (a ``time.monotonic()`` value).

    A class rather than a ``contextmanager`` generator: the runner enters one per attempt.
    """

    __slots__ = ("_token", "deadline")

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> None:
        self._token = _deadline.set(self.deadline)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _deadline.reset(self._token)
            self._token = None


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False
    return opts


#: RE2's own match call under the ``re2`` module's Python layer (``_Regexp._regexp.Match``) and its
#: unanchored mode, when this version of google-re2 has them (None: every search goes through the layer).
#: On ASCII text byte offsets are character offsets, so a search needs none of the layer's offset
#: conversion: 2.4 us instead of 12.5 us here.
_UNANCHORED: Any = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
_NO_SPAN = (-1, -1)


def _raw_match(compiled: Any) -> Any | None:
    """The compiled pattern's own ``Match(anchor, bytes, pos, endpos)``, or None when it has none."""
    match = getattr(getattr(compiled, "_regexp", None), "Match", None)
    return match if callable(match) and _UNANCHORED is not None else None


@lru_cache(maxsize=512)
def _re2(pattern: str) -> Any | None:
    try:
        return re2.compile(pattern, options=_options())
    except re2.error:
        return None
    except (TypeError, ValueError, OverflowError, MemoryError):
        return None


def needs_backtracking(pattern: str) -> bool:
    """Whether ``pattern`` needs Python's backtracking engine (RE2 cannot compile it)."""
    return _re2(pattern) is None


class ScenarioRegex:
    """A compiled scenario pattern: RE2 when it can, else ``re`` in a child process under the deadline."""

    def __init__(self, pattern: str) -> None:
        """Compile ``pattern``; a pattern neither engine accepts raises ``ValueError``."""
        self.pattern = pattern
        self._linear = _re2(pattern)
        self._match = _raw_match(self._linear) if self._linear is not None else None
        if self._linear is None:
            try:
                with warnings.catch_warnings():  # e.g. FutureWarning "possible nested set" for '[['
                    warnings.simplefilter("ignore")
                    re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"invalid regular expression {pattern!r}: {exc}; fix the pattern (RE2/Python syntax)"
                ) from None
            except (RecursionError, OverflowError, MemoryError, ValueError) as exc:
                raise ValueError(
                    f"regular expression {pattern!r} cannot be compiled ({type(exc).__name__})"
                ) from None

    @property
    def linear(self) -> bool:
        """True when RE2 runs the pattern (linear time)."""
        return self._linear is not None

    def search(self, text: str) -> Found | None:
        """The first match in ``text``, or None."""
        if self._linear is not None:
            if self._match is not None and text.isascii():  # offsets in bytes are offsets in characters
                spans = self._match(_UNANCHORED, text.encode("ascii"), 0, len(text))
                if spans[0] == _NO_SPAN:
                    return None
                start, end = spans[0]
                return Found(
                    text[start:end], tuple(None if s == _NO_SPAN else text[s[0] : s[1]] for s in spans[1:])
                )
            m = self._linear.search(text)
            return None if m is None else Found(m.group(0), tuple(m.groups()))
        found = self._bounded("search", text)
        return found[0] if found else None

    def finditer(self, text: str) -> list[Found]:
        """Every non-overlapping match in ``text``."""
        if self._linear is not None:
            return [Found(m.group(0), tuple(m.groups())) for m in self._linear.finditer(text)]
        return self._bounded("finditer", text)

    def _bounded(self, op: str, text: str) -> list[Found]:
        deadline = _deadline.get()
        budget = DEFAULT_BUDGET_S if deadline is None else max(deadline - time.monotonic(), _MIN_BUDGET_S)
        request = json.dumps({"pattern": self.pattern, "text": text, "op": op})
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-S", "-c", _CHILD],
                input=request,
                capture_output=True,
                text=True,
                timeout=budget,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CheckBudgetError(
                f"pattern {self.pattern!r} ran past the attempt's deadline ({budget:.2g}s left) with the "
                "backtracking engine (it needs features RE2 lacks); simplify it so RE2 can run it"
            ) from None
        except OSError as exc:
            raise CheckBudgetError(f"pattern {self.pattern!r} could not be run ({exc})") from None
        if done.returncode != 0:
            raise CheckBudgetError(
                f"pattern {self.pattern!r} failed in the backtracking engine: {done.stderr.strip()[-300:]}"
            )
        rows = json.loads(done.stdout)
        return [] if rows is None else [Found(t, tuple(g)) for t, g in rows]


@lru_cache(maxsize=512)
def compile_scenario_regex(pattern: str) -> ScenarioRegex:
    """:class:`ScenarioRegex` of ``pattern``, cached; a bad pattern raises ``ValueError``."""
    return ScenarioRegex(pattern)
