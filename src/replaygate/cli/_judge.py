"""``replaygate judge calibrate LABELS.csv``: agreement of a groundedness judge with human labels.

Runs the judge on every labelled row and prints Cohen's kappa, the raw agreement and a confusion matrix
(rows: people, columns: judge), then the rows where they disagree. ``--json`` prints the same as JSON.
``--min-kappa`` makes the command exit 1 when kappa is below it (or undefined), for CI.

The LLM judge reads ``REPLAYGATE_JUDGE_BASE_URL``, ``REPLAYGATE_JUDGE_MODEL`` and
``REPLAYGATE_JUDGE_API_KEY`` when the options are not given.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any, Literal, cast

import click
from replaygate.replay import (
    CALIBRATION_LABELS,
    CalibrationResult,
    Judge,
    calibrate_judge,
    create_judges,
    load_labels,
)
from rich.console import Console
from rich.table import Table

from replaygate.cli._label import agreement_cmd
from replaygate.cli._options import json_option, judge_timeout_option
from replaygate.stats import cohen_kappa

__all__ = ["register"]

FAILING = 1


def _report(result: CalibrationResult, judge: Judge, kappa: float, labels_path: str) -> dict[str, Any]:
    return {
        "labels": labels_path,
        "n": len(result.labels),
        "judge": {"name": judge.name, "model": judge.model, "prompt_version": judge.prompt_version},
        "kappa": None if math.isnan(kappa) else kappa,
        "agreement": result.agreement,
        "confusion": result.confusion(),
        "disagreements": [
            {"line": r.line, "label": r.label, "answer": r.answer} for r in result.disagreements()
        ],
    }


def _print(console: Console, report: dict[str, Any]) -> None:
    judge = report["judge"]
    kappa = report["kappa"]
    console.print(
        f"[bold]{report['labels']}[/]: {report['n']} labelled answers, judge "
        f"{judge['model']} ({judge['prompt_version']})",
        highlight=False,
    )
    table = Table(title="Confusion matrix (rows: people, columns: judge)")
    table.add_column("people \\ judge")
    for label in CALIBRATION_LABELS:
        table.add_column(label, justify="right")
    for human in CALIBRATION_LABELS:
        table.add_row(human, *(str(report["confusion"][human][j]) for j in CALIBRATION_LABELS))
    console.print(table)
    shown = "undefined (one label only)" if kappa is None else f"{kappa:.3f}"
    console.print(f"Cohen's kappa: [bold]{shown}[/]   agreement: {report['agreement']:.1%}", highlight=False)
    for row in report["disagreements"]:
        console.print(f"  line {row['line']}: people say {row['label']}: {row['answer']}", markup=False)


@click.command("calibrate")
@click.argument("labels", type=click.Path(dir_okay=False))
@click.option("--judge", "kind", type=click.Choice(["offline", "llm"]), default="offline", show_default=True)
@click.option("--judge-model", "model", default=None, help="LLM judge model (env REPLAYGATE_JUDGE_MODEL).")
@click.option("--judge-base-url", "base_url", default=None, help="OpenAI-compatible base URL.")
@judge_timeout_option(old_names=("--timeout",))
@click.option("--min-score", type=click.FloatRange(0, 1), default=0.8, show_default=True)
@click.option("--min-kappa", type=float, default=None, help="Exit 1 when kappa is below this (or undefined).")
@json_option
def calibrate(
    labels: str,
    kind: str,
    model: str | None,
    base_url: str | None,
    judge_timeout: float,
    min_score: float,
    min_kappa: float | None,
    as_json: bool,
) -> None:
    """Measure a groundedness judge against human labels (CSV: question,answer,context,label)."""
    rows = load_labels(labels)
    judges = create_judges(
        cast(Literal["offline", "llm"], kind), model=model, base_url=base_url, timeout_s=judge_timeout
    )
    judge = judges["groundedness"]
    result = asyncio.run(calibrate_judge(judge, rows, min_score=min_score))
    kappa = cohen_kappa(list(result.labels), list(result.predictions))
    report = _report(result, judge, kappa, str(Path(labels)))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print(Console(), report)
    if min_kappa is not None and (math.isnan(kappa) or kappa < min_kappa):
        if not as_json:
            click.echo(f"kappa below --min-kappa {min_kappa}", err=True)
        # sys.exit, not click's Exit: main() runs click with standalone_mode=False, which turns an Exit
        # into a return value that main() does not pass on.
        sys.exit(FAILING)


@click.group("judge")
def judge_group() -> None:
    """Judges: measure their agreement with people."""


judge_group.add_command(calibrate)
judge_group.add_command(agreement_cmd)


def register(group: click.Group) -> None:
    """Add the ``judge`` commands to the root group."""
    group.add_command(judge_group)
