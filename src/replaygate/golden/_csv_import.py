"""``import-csv``: scenarios from a question set written in advance (one row per scenario).

Columns (header row required; only ``id``, ``title`` and ``question`` are required, unknown columns are
errors; lists are separated by ``;``):

==================  =======================================================================
``id``              scenario id (``[a-z0-9][a-z0-9._-]*``), also the file name
``title``           one line
``owner``           required unless given with ``--owner``
``question``        the user turns, several turns separated by `` || ``
``origin``          default ``original-eval``
``must_pass``       true/false, yes/no, 1/0 (default false)
``tags``            ``dimension=safety;request_type=refund;risk=high``
``tiers``           ``smoke;release`` (default ``release``)
``holdout``         true/false (default false)
``expected_behavior``  free text
``expected_label``  answer, escalate, clarify or refuse (adds an ``expected_label`` check)
``contains``        values the answer must contain (``contains`` check)
``not_contains``    values the answer must not contain (``not_contains`` check)
``relevant_docs``   relevant document ids (``retrieval`` labels, confirmed)
``context``         ``user_id=u-17;order_id=ORD-10042``
``repeats``         integer (default 5)
``threshold``       number in (0, 1] (default 0.8)
==================  =======================================================================

Every bad row is reported (file, row number, column) and nothing is written when any row is bad.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from replaygate.replay import BoundedDictReader, Scenario, read_text_bounded

from replaygate.golden._errors import GoldenError
from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._lifecycle import default_author, today_utc

__all__ = ["CSV_COLUMNS", "TURN_SEPARATOR", "import_csv", "parse_csv"]

#: The largest question-set CSV read.
MAX_CSV_BYTES = 50_000_000

TURN_SEPARATOR = " || "
CSV_COLUMNS = (
    "id",
    "title",
    "owner",
    "question",
    "origin",
    "must_pass",
    "tags",
    "tiers",
    "holdout",
    "expected_behavior",
    "expected_label",
    "contains",
    "not_contains",
    "relevant_docs",
    "context",
    "repeats",
    "threshold",
)
_REQUIRED = ("id", "title", "question")
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0", ""}


class _RowError(ValueError):
    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column


def _list(value: str) -> list[str]:
    return [v.strip() for v in value.split(";") if v.strip()]


def _pairs(column: str, value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in _list(value):
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise _RowError(column, f"{item!r} is not key=value (write k=v;k=v)")
        out[key.strip()] = val.strip()
    return out


def _bool(column: str, value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise _RowError(column, f"{value!r} is not true or false")


def _number(column: str, value: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(value.strip())
    except ValueError:
        raise _RowError(column, f"{value!r} is not a{'n integer' if kind is int else ' number'}") from None


def _row_to_data(row: dict[str, str], owner: str | None, author: str, day: dt.date) -> dict[str, Any]:
    cell = {k: (v or "").strip() for k, v in row.items()}
    for column in _REQUIRED:
        if not cell.get(column):
            raise _RowError(column, "is empty; it is required")
    turns = [t.strip() for t in cell["question"].split(TURN_SEPARATOR.strip())]
    if any(not t for t in turns):
        raise _RowError("question", f"has an empty turn (turns are separated by {TURN_SEPARATOR!r})")
    who = cell.get("owner") or owner
    if not who:
        raise _RowError("owner", "is empty; fill it or pass --owner")
    checks: list[dict[str, Any]] = []
    if cell.get("expected_label"):
        checks.append({"type": "expected_label", "label": cell["expected_label"]})
    if cell.get("contains"):
        checks.append({"type": "contains", "values": _list(cell["contains"])})
    if cell.get("not_contains"):
        checks.append({"type": "not_contains", "values": _list(cell["not_contains"])})
    data: dict[str, Any] = {
        "id": cell["id"],
        "title": cell["title"],
        "owner": who,
        "origin": cell.get("origin") or "original-eval",
        "added": day,
        "must_pass": _bool("must_pass", cell.get("must_pass", "")),
        "tags": _pairs("tags", cell.get("tags", "")),
        "holdout": _bool("holdout", cell.get("holdout", "")),
        "expected_behavior": cell.get("expected_behavior", ""),
        "turns": turns,
        "context": _pairs("context", cell.get("context", "")),
        "checks": checks,
        "changelog": [{"date": day, "author": author, "reason": "Imported from a question set (CSV)"}],
    }
    if cell.get("tiers"):
        data["tiers"] = _list(cell["tiers"].replace(",", ";"))
    if cell.get("relevant_docs"):
        data["retrieval"] = {"relevant": _list(cell["relevant_docs"]), "confirmed": True}
    if cell.get("repeats"):
        data["repeats"] = _number("repeats", cell["repeats"], int)
    if cell.get("threshold"):
        data["threshold"] = _number("threshold", cell["threshold"], float)
    return data


_FIELD_TO_COLUMN = {"turns": "question", "retrieval": "relevant_docs"}


def parse_csv(
    path: str | os.PathLike[str],
    owner: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
) -> list[Scenario]:
    """Parse a question-set CSV into scenarios; bad rows raise one :class:`GoldenError` listing them all.

    Errors give the file, the line number of the row (the header is line 1) and the column.
    """
    p = Path(path)
    text = read_text_bounded(p, what="CSV file", error=GoldenError, max_bytes=MAX_CSV_BYTES).removeprefix(
        "\ufeff"
    )
    reader = BoundedDictReader(text, str(p), GoldenError)  # a cell over 1 MiB is an error naming its line
    header = reader.fieldnames or []
    problems: list[str] = []
    unknown = [c for c in header if c not in CSV_COLUMNS]
    missing = [c for c in _REQUIRED if c not in header]
    if unknown or missing or not header:
        if unknown:
            problems.append(f"{p}:1: unknown column(s) {', '.join(unknown)}; use {', '.join(CSV_COLUMNS)}")
        if missing or not header:
            problems.append(f"{p}:1: missing column(s) {', '.join(missing or _REQUIRED)}")
        raise GoldenError("\n".join(problems))
    who = author or default_author()
    day = today or today_utc()
    scenarios: list[Scenario] = []
    ids: dict[str, int] = {}
    for row in reader:
        number = reader.line_num
        if None in row:
            problems.append(f"{p}:{number}: more cells than columns; quote cells that contain commas")
            continue
        try:
            data = _row_to_data(row, owner, who, day)
            scenario = Scenario.model_validate(data)
        except _RowError as exc:
            problems.append(f"{p}:{number}: column {exc.column}: {exc}")
            continue
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                loc = error["loc"]
                field = str(loc[0]) if loc else "id"
                column = (
                    str(loc[2]) if field == "checks" and len(loc) > 2 else _FIELD_TO_COLUMN.get(field, field)
                )
                problems.append(
                    f"{p}:{number}: column {column}: {error['msg']} (value {error.get('input')!r})"
                )
            continue
        if scenario.id in ids:
            problems.append(f"{p}:{number}: column id: {scenario.id!r} is also on row {ids[scenario.id]}")
            continue
        ids[scenario.id] = number
        scenarios.append(scenario)
    if problems:
        raise GoldenError("\n".join(problems) + "\nnothing was written; fix these rows and import again")
    return scenarios


def import_csv(
    path: str | os.PathLike[str],
    golden: GoldenSet | str | Path | None = None,
    owner: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
) -> list[Scenario]:
    """Import a question-set CSV into the golden set (all rows or nothing) and update the lock."""
    gs = golden if isinstance(golden, GoldenSet) else GoldenSet(golden)
    scenarios = parse_csv(path, owner=owner, author=author, today=today)
    with gs.transaction():  # the clash check and the write under one folder lock
        existing = {f.stem for f in gs.files()}
        clashes = [s.id for s in scenarios if s.id in existing]
        if clashes:
            raise GoldenError(
                f"{path}: scenario(s) already in {gs.path}: {', '.join(clashes)}; nothing was written "
                "(change their ids or remove those rows)"
            )
        if scenarios:
            gs.write(scenarios)
        return scenarios
