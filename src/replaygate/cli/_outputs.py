"""What the CLI writes never replaces or deletes another file silently.

- :func:`keep_or_refuse`: an existing output file is refused unless ``--force``; then the old one is
  kept as ``<name>.bak`` (one generation) before the new one is written.
- :func:`refuse_input_as_output`: ``merge OUT FILES...`` refuses an OUT that is one of its FILES.
- :func:`refuse_other_report`: ``gate --out DIR`` refuses a folder holding another report's signed
  ``decision.json`` (a decision must never sit beside a report it was not signed for, nor be deleted).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from replaygate.instrumentation import ReplaygateError
from replaygate.replay import load_json_bounded

__all__ = ["OutputError", "keep_or_refuse", "refuse_input_as_output", "refuse_other_report"]


class OutputError(ReplaygateError):
    """An output would replace or delete a file without being asked to."""


def keep_or_refuse(path: Path, *, force: bool, what: str, hint: str = "") -> Path | None:
    """Refuse an existing ``path`` unless ``force``; with it, move the old file to ``<path>.bak``.

    Returns the backup path (None when nothing was there).
    """
    if not path.exists():
        return None
    if not force:
        raise OutputError(
            f"{path}: a {what} is already there; pass --force to replace it (the old one is kept as "
            f"{path.name}.bak){hint}"
        )
    backup = path.with_name(path.name + ".bak")
    os.replace(path, backup)
    return backup


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def refuse_input_as_output(out: Path, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse an output that is one of the inputs (it would be overwritten while it is read)."""
    for f in inputs:
        p = Path(f)
        if _same(out, p) or out.resolve() == p.resolve():
            raise OutputError(f"{out}: the output is also one of the inputs ({f}); write to a new file")


def refuse_other_report(out_dir: Path, report_id: str) -> None:
    """Refuse a report folder whose ``decision.json`` was signed for another report."""
    decision = out_dir / "decision.json"
    if not decision.exists():
        return
    raw = load_json_bounded(decision, what="decision file", error=OutputError, max_bytes=10_000_000)
    signed_for = raw.get("report_id") if isinstance(raw, dict) else None
    if not isinstance(signed_for, str):
        raise OutputError(f"{decision}: not a signed decision (no report_id); move it away or fix it")
    if signed_for != report_id:
        raise OutputError(
            f"{out_dir}: holds decision.json signed for report {signed_for}, not this report {report_id}; "
            "write this report to another folder (--out) so that decision stays with its report"
        )
