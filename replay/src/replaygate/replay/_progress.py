"""Progress of a run: a rich bar in a terminal, plain lines in CI logs, or a callback.

``progress=True`` shows a rich progress bar on stderr (attempts done, passes, fails and errors so far,
elapsed time and an ETA) when stderr is a terminal; when it is not (CI, a pipe, a file), it prints one
plain line every 30 seconds and at every 10% step instead, so a log shows the run moving::

    replay: 36/120 (30%)  pass 30  fail 4  error 2  elapsed 0:00:41  eta 0:01:35

``progress=ProgressLines(interval_s=10)`` asks for the plain lines whatever stderr is, ``False`` shows
nothing, and a callable is called with each finished attempt. rich ships with the ``replaygate``
distribution; without it (``replaygate-replay`` alone) a terminal gets the plain lines too.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from replaygate.replay._runfile import Attempt

__all__ = ["Progress", "ProgressCallback", "ProgressLines", "format_duration", "make_progress"]

ProgressCallback = Callable[[Attempt], None]


@dataclass(frozen=True)
class ProgressLines:
    """Plain progress lines: one every ``interval_s`` seconds and one at each 10% step (to ``stream``)."""

    interval_s: float = 30.0
    stream: TextIO | None = None  #: None: ``sys.stderr`` when the run starts


def format_duration(seconds: float) -> str:
    """``H:MM:SS`` of a number of seconds (rounded down)."""
    whole = max(0, int(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Progress:
    """Counts finished attempts and shows them on a bar, as plain lines, or through a callback."""

    def __init__(self, total: int, already: Iterable[Attempt], callback: ProgressCallback | None) -> None:
        self.total = total
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        for a in already:
            self.counts[a.status] += 1
        self._resumed = sum(self.counts.values())
        self._callback = callback
        self._bar: Any = None
        self._task: Any = None
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stream: TextIO | None = None
        self._step = -1
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def done(self) -> int:
        """Attempts finished so far (those of a resumed journal included)."""
        return sum(self.counts.values())

    def _text(self) -> str:
        c = self.counts
        return f"pass {c['pass']}  fail {c['fail']}  error {c['error']}"

    def eta_s(self) -> float | None:
        """Seconds left at the pace of this run's own attempts (None before the first one)."""
        ran = self.done - self._resumed
        if ran <= 0:
            return None
        return (time.monotonic() - self._started) / ran * max(0, self.total - self.done)

    def line(self) -> str:
        """The plain progress line."""
        pct = 100 * self.done // self.total if self.total else 100
        eta = self.eta_s()
        return (
            f"replay: {self.done}/{self.total} ({pct}%)  {self._text()}  "
            f"elapsed {format_duration(time.monotonic() - self._started)}  "
            f"eta {'?' if eta is None else format_duration(eta)}"
        )

    def start_bar(self) -> bool:
        """Show a rich bar on stderr (rich is loaded here: most runs print plain lines)."""
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(
            TextColumn("replay"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("replay", total=self.total, completed=self.done, counts=self._text())
        return True

    def start_lines(self, options: ProgressLines) -> None:
        """Print a plain line now, every ``interval_s`` seconds, and at each 10% step."""
        self._stream = options.stream if options.stream is not None else sys.stderr
        self._step = self._decile()
        self._emit()
        self._ticker = threading.Thread(
            target=self._tick, args=(options.interval_s,), name="replaygate-progress", daemon=True
        )
        self._ticker.start()

    def _decile(self) -> int:
        return 10 * self.done // self.total if self.total else 10

    def _tick(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self._emit()

    def _emit(self) -> None:
        with self._lock:
            if self._stream is None:
                return
            try:
                self._stream.write(self.line() + "\n")
                self._stream.flush()
            except (OSError, ValueError):  # a closed pipe must not fail the run
                self._stream = None

    def __call__(self, attempt: Attempt) -> None:
        self.counts[attempt.status] += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, counts=self._text())
        if self._stream is not None and self._decile() > self._step:
            self._step = self._decile()
            self._emit()
        if self._callback is not None:
            self._callback(attempt)

    def close(self) -> None:
        """Stop the bar or the line ticker."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            self._ticker = None
        with self._lock:
            self._stream = None


def make_progress(
    progress: bool | ProgressLines | ProgressCallback, *, total: int, already: Iterable[Attempt]
) -> Progress:
    """Build the run's progress reporter (see the module docstring for what each value shows)."""
    if progress is False:
        return Progress(total, already, None)
    if progress is True or isinstance(progress, ProgressLines):
        p = Progress(total, already, None)
        if isinstance(progress, ProgressLines):
            p.start_lines(progress)
        elif not (sys.stderr.isatty() and p.start_bar()):
            p.start_lines(ProgressLines())
        return p
    return Progress(total, already, progress)
