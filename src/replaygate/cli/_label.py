"""``replaygate label RUN`` (the reading queue in the terminal) and ``replaygate judge agreement RUN...``.

``replaygate label RUN --by NAME [--golden DIR] [--report DIR] [--size N]`` draws the run's reading queue
(a reproducible sample stratified by status and judge verdict, plus every attempt of each newly failing
scenario of ``--report``) and shows each attempt the person has not labelled yet: the question (turns,
from ``--golden`` or the attempt's conversation), the retrieved context (from the run's artifacts), the
answer, the checks and the judge's verdict. The person answers the judge's question (``y`` yes, ``n`` no,
``s`` skip, ``q`` quit) and may add a note; each answer is appended at once to
``<RUN>.labels.jsonl`` with who and when, so quitting loses nothing and running again continues.
``--list`` prints the queue without asking.

``replaygate judge agreement RUN... [--json]`` reports Cohen's kappa between each judge and the people,
with its 95 % bootstrap interval, per judge and judge fingerprint (model, prompt version), over the
labels of the given runs. All model output is printed as plain text (never as markup).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from replaygate.instrumentation import ReplaygateError, SpanRecord, summarize_spans
from replaygate.replay import Attempt, RunFile, ScenarioError, load_run, load_scenarios
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replaygate.cli._options import by_option, json_option
from replaygate.labels import (
    QUESTIONS,
    HumanLabel,
    QueueItem,
    append_label,
    current_labels,
    draw_sample,
    judge_agreement,
    judge_fingerprint,
    labels_path,
    now_utc,
    read_labels,
)

__all__ = ["agreement_cmd", "register"]


def _clean(text: str | None, limit: int = 600) -> str:
    flat = "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in (text or ""))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _newly_failing(report: str | None) -> list[str]:
    if report is None:
        return []
    path = Path(report)
    path = path / "report.json" if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{path}: cannot read the gate report ({exc})") from None
    return [n if isinstance(n, str) else str(n.get("id")) for n in data.get("newly_failing", [])]


def _turns(golden: str | None) -> dict[str, list[str]]:
    if golden is None:
        return {}
    try:
        return {s.id: list(s.turns) for s in load_scenarios(golden)}
    except ScenarioError as exc:
        raise click.ClickException(str(exc)) from None


def _chunks(artifact: dict[str, Any] | None) -> list[str]:
    if not artifact:
        return []
    try:
        spans = [
            SpanRecord(**{**s, "events": tuple(s.get("events") or ())}) for s in artifact.get("spans") or []
        ]
        summary = summarize_spans(spans)
    except Exception:  # noqa: BLE001 - an artifact is best effort; the queue still shows the rest
        return []
    return [f"[{c.id}] {c.text or ''}" for c in summary.chunks]


def _artifacts(run: RunFile) -> dict[tuple[str, int], dict[str, Any]]:
    from replaygate.replay import read_artifacts

    paths = {a.artifact_path for a in run.attempts if a.artifact_path}
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for path in paths:
        if path and Path(path).is_file():
            found.update(read_artifacts(path))
    return found


def _show(
    console: Console,
    item: QueueItem,
    attempt: Attempt,
    turns: list[str],
    chunks: list[str],
    position: str,
) -> None:
    console.rule(Text(f"{position} {item.scenario_id}#{item.index} · {attempt.status} · {item.reason}"))
    conversation = attempt.conversation or []
    if conversation:
        for n, turn in enumerate(conversation, start=1):
            who = "user (simulated)" if turn.generated else "user"
            console.print(Text(f"{n}. {who}: {_clean(turn.user, 300)}"))
            console.print(Text(f"   agent: {_clean(turn.answer, 300)}", style="dim"))
    else:
        for text in turns:
            console.print(Text(f"user: {_clean(text, 300)}"))
    if chunks:
        console.print(Text("context:", style="bold"))
        for chunk in chunks[:5]:
            console.print(Text(f"  {_clean(chunk, 300)}"))
    console.print(Text("answer:", style="bold"))
    console.print(Text(_clean(attempt.answer) or "(empty)"))
    if attempt.error:
        console.print(Text(f"error: {_clean(attempt.error, 300)}"))
    for check in attempt.checks:
        console.print(
            Text(f"  check {check.name}: {'pass' if check.passed else 'FAIL'} {_clean(check.detail, 120)}")
        )
    for judge in attempt.judges:
        console.print(
            Text(f"  judge {judge.name}: score {judge.score:.2f} {'pass' if judge.passed else 'FAIL'} "
                 f"{_clean(judge.detail, 160)}")
        )  # fmt: skip


def register(group: click.Group) -> None:
    """Add ``label`` to the root group."""

    @group.command("label")
    @click.argument("run_path", metavar="RUN", type=click.Path(dir_okay=False, exists=True))
    @by_option
    @click.option("--golden", default=None, help="The golden set, to show each scenario's turns.")
    @click.option(
        "--report", default=None, help="A gate report: every attempt of its newly failing scenarios."
    )
    @click.option("--size", type=click.IntRange(min=1), default=None, help="Sample size [max(10, 5%)].")
    @click.option(
        "--list", "list_only", is_flag=True, help="Print the queue and what is labelled; ask nothing."
    )
    def label_cmd(
        run_path: str, by: str, golden: str | None, report: str | None, size: int | None, list_only: bool
    ) -> None:
        """Walk the run's reading queue and label each attempt (who and when are recorded)."""
        try:
            run = load_run(run_path)
            queue = draw_sample(run, size=size, newly_failing=_newly_failing(report))
            store = labels_path(run_path)
            done = {(lab.scenario_id, lab.index) for lab in read_labels(store) if lab.by == by}
        except ReplaygateError as exc:
            raise click.ClickException(str(exc)) from None
        width = None if sys.stdout.isatty() else 150
        console = Console(file=sys.stdout, highlight=False, emoji=False, soft_wrap=True, width=width)
        if list_only:
            table = Table(
                title=f"reading queue of {run.run_id}: {len(queue)} attempt(s)", title_justify="left"
            )
            for column in ("attempt", "status", "judge", "verdict", "why", f"labelled by {by}"):
                table.add_column(column)
            for item in queue:
                table.add_row(
                    f"{item.scenario_id}#{item.index}", item.status, item.judge, str(item.verdict),
                    item.reason, "yes" if item.key in done else "-",
                )  # fmt: skip
            console.print(table)
            return
        todo = [item for item in queue if item.key not in done]
        if not todo:
            click.echo(f"nothing left to label for {by}: {len(queue)} attempt(s) in the queue are labelled")
            return
        attempts = {(a.scenario_id, a.index): a for a in run.attempts}
        turns, artifacts = _turns(golden), _artifacts(run)
        labelled = 0
        for n, item in enumerate(todo, start=1):
            attempt = attempts[item.key]
            _show(console, item, attempt, turns.get(item.scenario_id, []), _chunks(artifacts.get(item.key)),
                  f"[{n}/{len(todo)}]")  # fmt: skip
            question, yes, no = QUESTIONS.get(item.judge, QUESTIONS["checks"])
            verdict = "none" if item.verdict is None else (yes if item.verdict else no)
            console.print(Text(f"the judge ({item.judge}) says: {verdict}"))
            answer = click.prompt(
                f"{question} [y] {yes} / [n] {no} / [s] skip / [q] quit",
                type=click.Choice(["y", "n", "s", "q"]),
                show_choices=False,
            )
            if answer == "q":
                break
            if answer == "s":
                continue
            note = click.prompt("note (optional)", default="", show_default=False)
            model, prompt = judge_fingerprint(run.fingerprint, item.judge)
            append_label(
                store,
                HumanLabel(
                    run_id=run.run_id, scenario_id=item.scenario_id, index=item.index, judge=item.judge,
                    judge_model=model, judge_prompt_version=prompt, judge_verdict=item.verdict,
                    human=answer == "y", note=note, by=by, at=now_utc(),
                ),
            )  # fmt: skip
            labelled += 1
        click.echo(f"{labelled} label(s) written to {store}")


@click.command("agreement")
@click.argument("runs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@json_option
def agreement_cmd(runs: tuple[str, ...], as_json: bool) -> None:
    """Cohen's kappa (95% bootstrap interval) of each judge fingerprint with people's labels of RUNS."""
    try:
        labels = [lab for run in runs for lab in read_labels(labels_path(run))]
    except ReplaygateError as exc:
        raise click.ClickException(str(exc)) from None
    rows = judge_agreement(labels)
    if as_json:
        doc = {
            "format_version": 1,
            "labels": len(current_labels(labels)),
            "judges": [r.to_json() for r in rows],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    if not rows:
        click.echo("no labels yet: label a sample with `replaygate label RUN --by NAME`")
        return
    table = Table(
        title="Judge agreement with people (Cohen's kappa, 95% bootstrap interval)", title_justify="left"
    )
    for column in (
        "judge",
        "model",
        "prompt version",
        "labels",
        "agreement",
        "kappa",
        "interval",
        "last label",
    ):
        table.add_column(column)
    for r in rows:
        kappa = "undefined" if r.kappa is None else f"{r.kappa:.3f}"
        interval = "-" if r.low is None or r.high is None else f"[{r.low:.2f}, {r.high:.2f}]"
        table.add_row(
            r.judge, str(r.model), str(r.prompt_version), str(r.n), f"{r.agreement:.0%}", kappa, interval,
            r.last_label_at,
        )  # fmt: skip
    Console(file=sys.stdout, highlight=False, width=None if sys.stdout.isatty() else 150).print(table)
