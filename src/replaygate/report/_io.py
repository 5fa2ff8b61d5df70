"""Write and read report files atomically: report.json (versioned), report.md, report.html, junit.xml."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from replaygate.replay import load_versioned, write_atomic

from replaygate.gate import REPORT_FORMAT_VERSION, GateError, GateReport
from replaygate.report._html import render_html
from replaygate.report._junit import render_junit
from replaygate.report._markdown import render_markdown

__all__ = [
    "FILE_NAMES",
    "FORMATS",
    "atomic_write",
    "load_report",
    "render_json",
    "report_path",
    "write_reports",
]

FORMATS = ("json", "md", "html", "junit")
FILE_NAMES = {"json": "report.json", "md": "report.md", "html": "report.html", "junit": "junit.xml"}


def atomic_write(path: str | os.PathLike[str], text: str) -> Path:
    """Write text to a temporary file beside ``path``, fsync, then rename over it."""
    p = Path(path)
    tmp = write_atomic(p, text)
    try:
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def render_json(report: GateReport) -> str:
    """The versioned JSON form of a report (``format_version``)."""
    return report.model_dump_json(indent=2)


def write_reports(
    report: GateReport, out_dir: str | os.PathLike[str], formats: Iterable[str] = FORMATS
) -> dict[str, Path]:
    """Write the chosen formats into ``out_dir``; return each format's path. report.json is always written.

    Raises:
        GateError: an unknown format name.
    """
    wanted = list(dict.fromkeys(["json", *formats]))
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise GateError(f"unknown report format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    render = {"json": render_json, "md": render_markdown, "html": render_html, "junit": render_junit}
    out = Path(out_dir)
    return {f: atomic_write(out / FILE_NAMES[f], render[f](report)) for f in wanted}


def report_path(path: str | os.PathLike[str]) -> Path:
    """Accept a report.json path or the directory holding it."""
    p = Path(path)
    return p / FILE_NAMES["json"] if p.is_dir() else p


def load_report(path: str | os.PathLike[str]) -> GateReport:
    """Read a report.json (or a directory holding one).

    Raises:
        GateError: missing, unreadable, another format version, or invalid.
    """
    p = report_path(path)
    if not p.exists():
        raise GateError(f"{p}: no such report (run replaygate gate --out DIR first)")
    return load_versioned(
        p, GateReport, version=REPORT_FORMAT_VERSION, what="gate report", kind="report", error=GateError
    )
