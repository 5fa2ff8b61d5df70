"""People's labels, in a JSON-lines file next to the run file: ``<run file>.labels.jsonl``.

Why a file next to the run and not the store: a label says what a person read in *that* run (the answer,
the judge's verdict, the judge's model and prompt version), so it travels with the run file (CI
artifacts, a shared folder) and is read wherever the run is gated, with no database to reach. Each line
is one label (``format_version`` 1) with who and when; appends take an exclusive lock and are fsynced,
so two people labelling at once lose nothing, and a torn last line (a crash mid-write) is skipped with a
warning while any other bad line is an error naming the file and line. A later label of the same attempt
and judge by the same person replaces the earlier one when read (:func:`current_labels`).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from replaygate.instrumentation import ReplaygateError

__all__ = [
    "LABELS_FORMAT_VERSION",
    "HumanLabel",
    "LabelsError",
    "append_label",
    "current_labels",
    "labelled_keys",
    "labels_path",
    "now_utc",
    "read_labels",
]

LABELS_FORMAT_VERSION = 1


class LabelsError(ReplaygateError):
    """A labels file cannot be read or written; the message names the file and line."""


class HumanLabel(BaseModel):
    """One person's answer to a judge's question about one attempt of one run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: int = LABELS_FORMAT_VERSION
    run_id: str
    scenario_id: str
    index: int
    judge: str
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    judge_verdict: bool | None = None
    human: bool
    note: str = Field(default="", max_length=2000)
    by: str = Field(min_length=1, max_length=200)
    at: str  # ISO 8601 UTC


def labels_path(run_path: str | os.PathLike[str]) -> Path:
    """Where the labels of a run file live: ``<run file>.labels.jsonl``."""
    p = Path(run_path)
    return p.with_name(p.name + ".labels.jsonl")


def now_utc() -> str:
    """The current time as ISO 8601 UTC."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def append_label(path: str | os.PathLike[str], label: HumanLabel) -> None:
    """Append one label (locked, fsynced)."""
    p = Path(path)
    line = label.model_dump_json() + "\n"
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
    except OSError as exc:
        raise LabelsError(f"{p}: cannot write the label ({exc.strerror or exc})") from None


def read_labels(path: str | os.PathLike[str]) -> list[HumanLabel]:
    """Every label in the file, in order; a missing file has none."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsError(f"{p}: cannot read the labels ({exc})") from None
    lines = text.split("\n")
    torn = not text.endswith("\n") and text != ""
    labels: list[HumanLabel] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data: Any = json.loads(raw)
            labels.append(HumanLabel.model_validate(data))
        except (ValueError, ValidationError) as exc:
            if torn and number == len(lines):
                break  # the last line of a write that did not finish
            raise LabelsError(f"{p}:{number}: not a label ({str(exc).splitlines()[0]})") from None
    return labels


def current_labels(labels: Iterable[HumanLabel]) -> list[HumanLabel]:
    """The labels that stand: the last one per (run, attempt, judge, person)."""
    latest: dict[tuple[str, str, int, str, str], HumanLabel] = {}
    for label in labels:
        latest[(label.run_id, label.scenario_id, label.index, label.judge, label.by)] = label
    return list(latest.values())


def labelled_keys(labels: Sequence[HumanLabel], by: str | None = None) -> set[tuple[str, int]]:
    """The (scenario id, index) pairs already labelled (by one person when ``by`` is given)."""
    return {(lab.scenario_id, lab.index) for lab in labels if by is None or lab.by == by}
