"""Progress of a run: a rich progress bar on stderr (passes, fails, errors so far), or a callback.

rich ships with the ``replaygate`` distribution; when it is not installed (``replaygate-replay`` alone),
``progress=True`` shows nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from replaygate.replay._runfile import Attempt

__all__ = ["Progress", "ProgressCallback", "make_progress"]

ProgressCallback = Callable[[Attempt], None]


class Progress:
    """Counts finished attempts and forwards them to a bar or a callback."""

    def __init__(self, total: int, already: Iterable[Attempt], callback: ProgressCallback | None) -> None:
        self.total = total
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        for a in already:
            self.counts[a.status] += 1
        self._callback = callback
        self._bar: Any = None
        self._task: Any = None

    def start_bar(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
        except ImportError:
            return
        self._bar = RichProgress(
            TextColumn("replay"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task("replay", total=self.total, completed=self.done, counts=self._text())

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def _text(self) -> str:
        c = self.counts
        return f"errors {c['error']}  fails {c['fail']}  passes {c['pass']}"

    def __call__(self, attempt: Attempt) -> None:
        self.counts[attempt.status] += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, counts=self._text())
        if self._callback is not None:
            self._callback(attempt)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def make_progress(progress: bool | ProgressCallback, *, total: int, already: Iterable[Attempt]) -> Progress:
    """Build the run's progress reporter: a rich bar (True), nothing (False) or a callback."""
    if progress is True:
        p = Progress(total, already, None)
        p.start_bar()
        return p
    if progress is False:
        return Progress(total, already, None)
    return Progress(total, already, progress)
