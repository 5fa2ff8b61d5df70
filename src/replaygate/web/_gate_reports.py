"""Every gate report the gate wrote, with its signatures and reviews, newest first.

Reports are found as ``report.json`` files under the reports folder (``replaygate gate`` writes
``.replaygate/reports/ID/`` unless ``--out`` says otherwise) and wherever a signed decision says its report
is; each is joined with its signed decisions and reviews from the store. A report that cannot be read is
listed with its problem rather than hidden. Parsed reports are cached by file and modification time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaygate.instrumentation import ReplaygateError
from replaygate.replay import Fingerprint

from replaygate.gate import GateReport, Review, SignedDecision
from replaygate.report import load_report

__all__ = ["OUTCOME_LABELS", "ReportEntry", "ReportIndex", "config_of"]

#: What each gate outcome reads as in the list.
OUTCOME_LABELS = {"block": "blocked", "needs-sign-off": "sign-off needed", "pass": "passed"}
_MAX_FILES = 2000


def config_of(fingerprint: Fingerprint) -> str:
    """The configuration a fingerprint names (declared ``config_id``, else the config hash)."""
    return fingerprint.config_id() or "—"


@dataclass
class ReportEntry:
    """One report on disk, its decisions (newest first) and reviews."""

    path: Path
    report: GateReport
    decisions: list[SignedDecision] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The report id."""
        return self.report.report_id

    @property
    def outcome_label(self) -> str:
        """``blocked``, ``sign-off needed`` or ``passed``."""
        return OUTCOME_LABELS[self.report.outcome]

    @property
    def candidate_config(self) -> str:
        """The candidate's configuration id."""
        return config_of(self.report.comparison.candidate.fingerprint)

    @property
    def baseline_config(self) -> str:
        """The baseline's configuration id."""
        return config_of(self.report.comparison.baseline.fingerprint)

    @property
    def decision(self) -> SignedDecision | None:
        """The decision in force (the newest not superseded), or None when unsigned."""
        current = [d for d in self.decisions if getattr(d, "superseded_by", None) is None]
        return current[0] if current else None

    @property
    def read(self) -> set[str]:
        """Newly failing scenarios somebody marked read."""
        return {r.scenario_id for r in self.reviews}

    @property
    def unread(self) -> list[str]:
        """Newly failing scenarios nobody marked read yet."""
        return [s for s in self.report.newly_failing if s not in self.read]


class ReportIndex:
    """Finds report files and joins them with the decision store (``decisions``: a ``DecisionStore``)."""

    def __init__(self, reports_dir: str | os.PathLike[str], decisions: Any) -> None:
        self.reports_dir = Path(reports_dir)
        self.decisions = decisions
        self._cache: dict[Path, tuple[int, GateReport | str]] = {}
        self._lock = threading.Lock()

    def _paths(self, decisions: Iterable[SignedDecision]) -> list[Path]:
        found: list[Path] = []
        if self.reports_dir.is_dir():
            found += sorted(self.reports_dir.glob("report.json"))
            found += sorted(self.reports_dir.glob("*/report.json"))[:_MAX_FILES]
        for d in decisions:
            if d.report_path:
                p = Path(d.report_path)
                found.append(p / "report.json" if p.is_dir() else p)
        unique: dict[Path, None] = {}
        for p in found:
            try:
                unique[p.resolve()] = None
            except OSError:
                continue
        return list(unique)

    def _load(self, path: Path) -> GateReport | str:
        try:
            mtime = path.stat().st_mtime_ns
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        try:
            loaded: GateReport | str = load_report(path)
        except ReplaygateError as exc:
            loaded = str(exc)
        with self._lock:
            self._cache[path] = (mtime, loaded)
        return loaded

    def _all_decisions(self) -> list[SignedDecision]:
        if self.decisions is None:
            return []
        return list(self.decisions.list_decisions())

    def entries(self) -> tuple[list[ReportEntry], list[str], list[SignedDecision]]:
        """(reports newest first, problems reading some, signed decisions whose report is not here)."""
        decisions = self._all_decisions()
        by_report: dict[str, list[SignedDecision]] = {}
        for d in decisions:
            by_report.setdefault(d.report_id, []).append(d)
        entries: dict[str, ReportEntry] = {}
        problems: list[str] = []
        for path in self._paths(decisions):
            loaded = self._load(path)
            if isinstance(loaded, str):
                problems.append(loaded)
                continue
            if loaded.report_id in entries:
                continue
            entries[loaded.report_id] = ReportEntry(path, loaded, by_report.get(loaded.report_id, []))
        orphans = [d for d in decisions if d.report_id not in entries]
        ordered = sorted(entries.values(), key=lambda e: (e.report.created_at, e.id), reverse=True)
        return ordered, problems, orphans

    def get(self, report_id: str) -> ReportEntry | None:
        """One report with its decisions and reviews (None when no file of that id is found)."""
        entries, _, _ = self.entries()
        for e in entries:
            if e.id == report_id:
                if self.decisions is not None and hasattr(self.decisions, "reviews"):
                    e.reviews = list(self.decisions.reviews(report_id))
                return e
        return None
