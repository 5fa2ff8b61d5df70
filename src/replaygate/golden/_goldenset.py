"""A golden-set directory: loading, finding and atomically writing scenarios together with ``golden.lock``.

Every write prepares the temporary files first (each scenario file and the lock), then renames them into
place, scenarios before the lock. A crash before any rename leaves the set untouched (the temporary files
are removed, or flagged by ``lint`` if the process died); a crash between the renames leaves a scenario
whose changelog is newer than the lock, which ``lint`` reports and ``scenarios lock`` accepts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from replaygate.replay._scenario import Scenario, dump_scenario, load_scenario, scenario_files
from replaygate.replay._scenario_io import write_atomic

from replaygate.golden._errors import GoldenError
from replaygate.golden._lock import LOCK_NAME, LockEntry, dump_lock, lock_entry, read_lock

__all__ = ["DEFAULT_GOLDEN_DIR", "GOLDEN_ENV", "GoldenSet", "resolve_golden_dir"]

DEFAULT_GOLDEN_DIR = "golden"
GOLDEN_ENV = "REPLAYGATE_GOLDEN"


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

    def __repr__(self) -> str:
        return f"GoldenSet({str(self.path)!r})"

    def file_for(self, scenario_id: str) -> Path:
        """The file of a scenario: the existing one (``.yaml`` or ``.yml``) or ``<id>.yaml``."""
        return self._files_by_id().get(scenario_id) or self.path / f"{scenario_id}.yaml"

    def _files_by_id(self) -> dict[str, Path]:
        """The existing file of each scenario id (the first in sorted order), from one directory scan."""
        found: dict[str, Path] = {}
        for f in self.files():
            found.setdefault(f.stem, f)
        return found

    def files(self) -> list[Path]:
        """Every scenario file, sorted."""
        return scenario_files(self.path) if self.path.is_dir() else []

    def load(self) -> list[Scenario]:
        """Every scenario, sorted by id; any invalid file raises one error listing every problem."""
        from replaygate.replay._scenario import load_scenarios

        if not self.path.is_dir():
            raise GoldenError(f"{self.path}: no golden-set directory; create it or pass --golden DIR")
        return load_scenarios(self.path)

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
        return read_lock(self.lock_path)

    def write(self, scenarios: Iterable[Scenario], remove_from_lock: Iterable[str] = ()) -> list[Path]:
        """Write scenarios and update their lock entries in one step (temporary files, then renames)."""
        scenarios = list(scenarios)
        entries = dict(self.lock() or {})
        for s in scenarios:
            entries[s.id] = lock_entry(s)
        for scenario_id in remove_from_lock:
            entries.pop(scenario_id, None)
        found = self._files_by_id()
        targets = [(found.get(s.id) or self.path / f"{s.id}.yaml", dump_scenario(s)) for s in scenarios]
        targets.append((self.lock_path, dump_lock(entries)))
        self.path.mkdir(parents=True, exist_ok=True)
        prepared: list[tuple[Path, Path]] = []
        try:
            for target, text in targets:
                prepared.append((write_atomic(target, text), target))
            while prepared:
                tmp, target = prepared[0]
                os.replace(tmp, target)
                prepared.pop(0)
        except OSError as exc:
            raise GoldenError(
                f"{self.path}: could not write the golden set ({exc}); nothing was renamed "
                "after the failure, check `replaygate scenarios lint`"
            ) from None
        finally:
            for tmp, _ in prepared:
                tmp.unlink(missing_ok=True)
        _fsync_dir(self.path)
        return [t for t, _ in targets]

    def write_lock(self, entries: dict[str, LockEntry]) -> Path:
        """Replace the lock file atomically with ``entries``."""
        tmp = write_atomic(self.lock_path, dump_lock(entries))
        try:
            os.replace(tmp, self.lock_path)
        except OSError as exc:
            raise GoldenError(f"{self.lock_path}: could not write the lock file ({exc})") from None
        finally:
            tmp.unlink(missing_ok=True)
        return self.lock_path

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
