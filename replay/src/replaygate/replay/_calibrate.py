"""Calibrate a groundedness judge against human labels.

The labels file is a CSV with a header and four columns::

    question,answer,context,label
    "Can I return shoes?","Yes, within 30 days.","Returns: 30 days. || Sale items are final.",supported

``context`` holds the documents the answer should be grounded in, separated by `` || ``; ``label`` is
``supported`` or ``unsupported`` (a person's verdict). The question is kept for the reader: the
groundedness judge never sees it. Agreement between the judge and the people is reported as Cohen's
kappa (computed by :func:`replaygate.stats.cohen_kappa` in the CLI) with a confusion matrix.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from replaygate.instrumentation import Chunk
from replaygate.replay._bounded import BoundedDictReader
from replaygate.replay._errors import ReplayError
from replaygate.replay._judges import Judge

__all__ = [
    "CALIBRATION_LABELS",
    "CONTEXT_SEPARATOR",
    "CalibrationResult",
    "CalibrationRow",
    "calibrate_judge",
    "load_labels",
]

CALIBRATION_LABELS = ("supported", "unsupported")
CONTEXT_SEPARATOR = " || "
_COLUMNS = ("question", "answer", "context", "label")
CalibrationLabel = Literal["supported", "unsupported"]


@dataclass(frozen=True)
class CalibrationRow:
    """One human-labelled example (``line`` is its line in the CSV file)."""

    question: str
    answer: str
    context: tuple[str, ...]
    label: CalibrationLabel
    line: int = 0

    def chunks(self) -> tuple[Chunk, ...]:
        """The context documents as retrieved chunks ``doc-1``, ``doc-2``, ... in order."""
        return tuple(
            Chunk(id=f"doc-{i}", score=None, rank=i, text=text)
            for i, text in enumerate(self.context, start=1)
        )


@dataclass(frozen=True)
class CalibrationResult:
    """The judge's predictions next to the human labels."""

    labels: tuple[str, ...]
    predictions: tuple[str, ...]
    scores: tuple[float, ...]
    rows: tuple[CalibrationRow, ...]

    @property
    def agreement(self) -> float:
        """The share of rows where judge and people agree."""
        same = sum(a == b for a, b in zip(self.labels, self.predictions, strict=True))
        return same / len(self.labels) if self.labels else float("nan")

    def confusion(self) -> dict[str, dict[str, int]]:
        """``confusion[human][judge]`` counts over both labels."""
        matrix = {h: dict.fromkeys(CALIBRATION_LABELS, 0) for h in CALIBRATION_LABELS}
        for human, judged in zip(self.labels, self.predictions, strict=True):
            matrix[human][judged] += 1
        return matrix

    def disagreements(self) -> list[CalibrationRow]:
        """The rows where the judge disagrees with the people."""
        return [r for r, p in zip(self.rows, self.predictions, strict=True) if r.label != p]


def load_labels(path: str | os.PathLike[str]) -> list[CalibrationRow]:
    """Read a labels CSV; every problem names the file and line and says what to do.

    Raises:
        ReplayError: missing file, missing columns, an empty answer or context, or an unknown label.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ReplayError(f"{p}: no such labels file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReplayError(f"{p}: cannot read the labels file ({exc})") from None
    reader = BoundedDictReader(text, str(p), ReplayError)
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in _COLUMNS if c not in header]
    if missing:
        raise ReplayError(
            f"{p}:1: missing column(s) {', '.join(missing)}; the header must be {','.join(_COLUMNS)}"
        )
    rows: list[CalibrationRow] = []
    problems: list[str] = []
    for record in reader:
        line = reader.line_num
        values = {(k or "").strip(): (v or "").strip() for k, v in record.items() if isinstance(v, str)}
        label = values.get("label", "").lower()
        docs = values.get("context", "").split(CONTEXT_SEPARATOR.strip())
        context = tuple(d.strip() for d in docs if d.strip())
        if label not in CALIBRATION_LABELS:
            problems.append(f"{p}:{line}: label {values.get('label')!r} must be supported or unsupported")
        elif not values.get("answer"):
            problems.append(f"{p}:{line}: empty answer; label a real answer or remove the row")
        elif not context:
            problems.append(f"{p}:{line}: empty context; give the documents separated by ' || '")
        else:
            rows.append(
                CalibrationRow(
                    question=values.get("question", ""),
                    answer=values["answer"],
                    context=context,
                    label=cast(CalibrationLabel, label),
                    line=line,
                )
            )
    if problems:
        raise ReplayError("invalid labels file:\n" + "\n".join(problems))
    if not rows:
        raise ReplayError(f"{p}: no labelled rows; add at least one row under the header")
    return rows


async def calibrate_judge(
    judge: Judge, rows: Sequence[CalibrationRow], *, min_score: float = 0.8, concurrency: int = 8
) -> CalibrationResult:
    """Run a groundedness judge (answer mode) on every row and collect its predictions.

    A row is predicted ``supported`` when the judge's score reaches ``min_score`` and its verdict is not
    negative (the same rule the scorer applies). A judge error stops the calibration
    (:class:`~replaygate.replay.JudgeError` propagates): a partial calibration would overstate agreement.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(row: CalibrationRow) -> tuple[str, float]:
        async with gate:
            verdict = await judge.judge(answer=row.answer, chunks=row.chunks(), question=None, mode="answer")
        ok = verdict.score >= min_score and verdict.verdict is not False
        return ("supported" if ok else "unsupported"), verdict.score

    results = await asyncio.gather(*(one(r) for r in rows))
    return CalibrationResult(
        labels=tuple(r.label for r in rows),
        predictions=tuple(p for p, _ in results),
        scores=tuple(s for _, s in results),
        rows=tuple(rows),
    )
