"""``replaygate scenarios ...``, ``replaygate promote`` and ``replaygate import-csv``: the golden set.

The golden set is ``--golden DIR``, else ``$REPLAYGATE_GOLDEN``, else ``golden/``; the trace store (for
``promote``) is ``--store PATH``, else ``$REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``. Changelog
entries are signed ``--author``, else ``$REPLAYGATE_AUTHOR``, else the login name.

Exit codes: 0 ok; 1 lint found errors or ``lock`` refused a change; 3 usage or data error.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import click
from replaygate.replay import (
    HOLDOUT_TIERS,
    ORIGINS,
    STATES,
    TIERS,
    Scenario,
    dump_scenario,
    scenario_json_schema,
)

from replaygate.cli._options import json_option, store_option
from replaygate.cli._run import _parse_tags
from replaygate.cli._traces import is_store_source, open_traces, source_option
from replaygate.golden import (
    GoldenError,
    GoldenSet,
    Promotion,
    accept_changes,
    create_scenario_file,
    default_author,
    freeze_conversation,
    import_csv,
    lint,
    list_golden,
    listing_rows,
    mark_known_failure,
    promote_trace,
    quarantine,
    reactivate,
    retire,
    scaffold_scenario,
)

__all__ = ["register"]

FAILING = 1

_golden_option = click.option(
    "--golden", "golden", default=None, help="Golden-set directory [env REPLAYGATE_GOLDEN; default golden/]."
)
_author_option = click.option(
    "--author", default=None, help="Changelog author [env REPLAYGATE_AUTHOR; default the login name]."
)


def _date(value: str, option: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param_hint=option) from None


def _clean(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)


@click.group("scenarios")
def scenarios_group() -> None:
    """Lint, list, show and change the golden set (statuses with a changelog entry; never deleted)."""


@scenarios_group.command("lint")
@_golden_option
@click.option("--update-lock", is_flag=True, help="First accept changes that carry a changelog entry.")
@json_option
def lint_cmd(golden: str | None, update_lock: bool, as_json: bool) -> None:
    """Report every problem with file:line and what to do; exit 1 when there is an error."""
    gs = GoldenSet(golden)
    if not gs.path.is_dir():
        raise GoldenError(f"{gs.path}: no golden-set directory; create it or pass --golden DIR")
    if gs.needs_repair():  # a killed write: finish (or undo) it first, as every write would
        for note in gs.repair():
            click.echo(f"note: {note}", err=True)
    if update_lock:
        result = accept_changes(gs)
        if result.accepted and not as_json:
            click.echo(f"lock: accepted {', '.join(result.accepted)}")
    problems = lint(gs)
    errors = [p for p in problems if p.severity == "error"]
    if as_json:
        rows = [{"where": p.where, "severity": p.severity, "message": p.message} for p in problems]
        click.echo(json.dumps({"format_version": 1, "golden": str(gs.path), "problems": rows}, indent=2))
    else:
        for p in problems:
            click.echo(str(p))
        n = len(gs.files())
        click.echo(f"{n} scenario file(s): {len(errors)} error(s), {len(problems) - len(errors)} warning(s)")
    if errors:
        sys.exit(FAILING)


@scenarios_group.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of a scenario file (for editors: `# yaml-language-server: $schema=FILE`)."""
    click.echo(json.dumps(scenario_json_schema(), indent=2))


@scenarios_group.command("new")
@click.argument("scenario_id")
@click.option("--owner", default=None, help="Owner [default: --author, $REPLAYGATE_AUTHOR or the login].")
@click.option("--origin", type=click.Choice(ORIGINS), default="original-eval", show_default=True)
@click.option("--title", default=None, help="Title [default: from the id].")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the scaffold instead of writing it.")
@_golden_option
@_author_option
def new_cmd(
    scenario_id: str,
    owner: str | None,
    origin: str,
    title: str | None,
    to_stdout: bool,
    golden: str | None,
    author: str | None,
) -> None:
    """Scaffold GOLDEN/SCENARIO_ID.yaml with every field present or commented (never overwrites)."""
    text = scaffold_scenario(
        scenario_id, owner=owner or author or default_author(), origin=origin, title=title
    )
    if to_stdout:
        click.echo(text, nl=False)
        return
    gs = GoldenSet(golden)
    path = create_scenario_file(gs, scenario_id, text)
    then = f"`replaygate scenarios lint --golden {gs.path}`"
    if gs.lock_path.exists():  # a locked set lists the draft as not accepted until it is locked
        then += f", and `replaygate scenarios lock --golden {gs.path}` to accept it"
    click.echo(f"created {path}: edit its turns and checks, then {then}")


@scenarios_group.command("lock")
@_golden_option
@click.option("--allow-removed", is_flag=True, help="Also drop lock entries whose files were deleted.")
def lock_cmd(golden: str | None, allow_removed: bool) -> None:
    """Accept new scenarios and edits that carry a new changelog entry into golden.lock."""
    gs = GoldenSet(golden)
    if not gs.path.is_dir():
        raise GoldenError(f"{gs.path}: no golden-set directory; create it or pass --golden")
    result = accept_changes(gs, allow_removed=allow_removed)
    for scenario_id in result.accepted:
        click.echo(f"accepted {scenario_id}")
    for message in result.refused:
        click.echo(f"refused: {message}", err=True)
    click.echo(f"{gs.lock_path}: {len(result.accepted)} accepted, {len(result.refused)} refused")
    if result.refused:
        sys.exit(FAILING)


@scenarios_group.command("list")
@_golden_option
@click.option("--tier", type=click.Choice(TIERS), default=None, help="Only this tier (holdout rule applies).")
@click.option("--tag", "tags", multiple=True, help="key=value; every given tag must match.")
@click.option(
    "--status", "statuses", multiple=True, type=click.Choice(STATES), help="Default: all but retired."
)
@click.option("--origin", "origins", multiple=True, type=click.Choice(ORIGINS))
@json_option
def list_cmd(
    golden: str | None,
    tier: str | None,
    tags: tuple[str, ...],
    statuses: tuple[str, ...],
    origins: tuple[str, ...],
    as_json: bool,
) -> None:
    """List scenarios; for a tuning tier (smoke, or no tier) holdout scenarios are only counted."""
    gs = GoldenSet(golden)
    listing = list_golden(
        gs, tier=tier, tags=_parse_tags(tags), statuses=statuses or None, origins=origins or None
    )
    rows = listing_rows(listing)
    if as_json:
        doc: dict[str, Any] = {"format_version": 1, "tier": tier, "scenarios": rows}
        doc["hidden_holdout"] = listing.hidden_holdout
        click.echo(json.dumps(doc, indent=2))
        return
    for r in rows:
        flags = ("must-pass " if r["must_pass"] else "") + ("" if r["counts"] else "(not counted) ")
        click.echo(
            f"{r['id']:<40} {r['status']:<13} {flags}{','.join(r['tiers'])}  {_clean(str(r['title']))}"  # type: ignore[arg-type]
        )
    click.echo(f"{len(rows)} scenario(s)")
    if listing.hidden_holdout:
        click.echo(
            f"{listing.hidden_holdout} holdout scenario(s) hidden (never shown for tuning; "
            f"they run only in {' and '.join(sorted(HOLDOUT_TIERS))})"
        )


@scenarios_group.command("show")
@click.argument("scenario_id")
@_golden_option
@click.option("--reveal-holdout", is_flag=True, help="Show a holdout scenario (not for tuning work).")
def show_cmd(scenario_id: str, golden: str | None, reveal_holdout: bool) -> None:
    """Print one scenario as YAML (a holdout scenario only with --reveal-holdout)."""
    scenario = GoldenSet(golden).get(scenario_id)
    if scenario.holdout and not reveal_holdout:
        raise GoldenError(
            f"{scenario_id} is a holdout scenario: its content is not shown for tuning; "
            "pass --reveal-holdout if you are not tuning against it"
        )
    click.echo(dump_scenario(scenario), nl=False)


@scenarios_group.command("retire")
@click.argument("scenario_id")
@click.option("--reason", default=None, help="Why it is retired (required).")
@_golden_option
@_author_option
def retire_cmd(scenario_id: str, reason: str | None, golden: str | None, author: str | None) -> None:
    """Retire a scenario: no longer selected by default; the file and its history stay."""
    s = retire(GoldenSet(golden), scenario_id, reason, author=author)
    click.echo(f"{s.id}: {s.status.state}")


@scenarios_group.command("quarantine")
@click.argument("scenario_id")
@click.option("--owner", required=True, help="Who will fix or reactivate it.")
@click.option("--until", "until", required=True, help="Date the quarantine ends (YYYY-MM-DD).")
@click.option("--reason", default=None, help="Why (required).")
@_golden_option
@_author_option
def quarantine_cmd(
    scenario_id: str, owner: str, until: str, reason: str | None, golden: str | None, author: str | None
) -> None:
    """Quarantine a scenario (still runs; counts in the gate only when must-pass)."""
    s = quarantine(GoldenSet(golden), scenario_id, owner, _date(until, "--until"), reason, author=author)
    click.echo(f"{s.id}: {s.status.state}")


@scenarios_group.command("mark-known-failure")
@click.argument("scenario_id")
@click.option("--reason", default=None, help="Why it fails (required).")
@_golden_option
@_author_option
def known_failure_cmd(scenario_id: str, reason: str | None, golden: str | None, author: str | None) -> None:
    """Mark a scenario as a known failure (runs and stays visible in every report)."""
    s = mark_known_failure(GoldenSet(golden), scenario_id, reason, author=author)
    click.echo(f"{s.id}: {s.status.state}")


@scenarios_group.command("reactivate")
@click.argument("scenario_id")
@click.option("--reason", default=None, help="Why (optional; recorded in the changelog).")
@_golden_option
@_author_option
def reactivate_cmd(scenario_id: str, reason: str | None, golden: str | None, author: str | None) -> None:
    """Make a scenario active again."""
    s = reactivate(GoldenSet(golden), scenario_id, reason, author=author)
    click.echo(f"{s.id}: {s.status.state}")


@click.command("import-csv")
@click.argument("csv_file", type=click.Path(dir_okay=False))
@click.option("--owner", default=None, help="Owner for rows without an owner column.")
@_golden_option
@_author_option
def import_csv_cmd(csv_file: str, owner: str | None, golden: str | None, author: str | None) -> None:
    """Create scenarios from a question-set CSV (all rows or nothing)."""
    gs = GoldenSet(golden)
    created = import_csv(csv_file, gs, owner=owner, author=author)
    for s in created:
        click.echo(f"created {gs.file_for(s.id)}")
    click.echo(f"{len(created)} scenario(s) imported into {gs.path}")


@click.command("promote")
@click.argument("trace_id", metavar="TRACE_ID | SCENARIO#INDEX")
@click.option("--owner", required=True, help="Who owns the new scenario.")
@click.option("--origin", required=True, type=click.Choice(ORIGINS))
@click.option("--must-pass", is_flag=True, help="One failing attempt blocks a release.")
@click.option("--tag", "tags", multiple=True, help="key=value (dimension, request_type, risk, free-form).")
@click.option("--tier", "tiers", multiple=True, type=click.Choice(TIERS), help="Default: smoke and release.")
@click.option("--expected-behavior", default=None, help="What the agent should have done.")
@click.option("--forbid-answer", is_flag=True, help="Draft a forbidden-output check from the failing answer.")
@click.option(
    "--class-checks", is_flag=True, help="Draft the checks of the trace's failure class (replaygate inbox)."
)
@click.option(
    "--from-run",
    "from_run",
    type=click.Path(dir_okay=False),
    default=None,
    help="Freeze attempt SCENARIO#INDEX's simulated conversation of this run into a fixed scenario.",
)
@click.option(
    "--id", "scenario_id", default=None, help="Scenario id (default: slug of the last turn + trace)."
)
@store_option
@source_option
@_golden_option
@_author_option
@json_option
def promote_cmd(
    trace_id: str,
    owner: str,
    origin: str,
    must_pass: bool,
    tags: tuple[str, ...],
    tiers: tuple[str, ...],
    expected_behavior: str | None,
    forbid_answer: bool,
    class_checks: bool,
    from_run: str | None,
    scenario_id: str | None,
    store: str | None,
    source: str | None,
    golden: str | None,
    author: str | None,
    as_json: bool,
) -> None:
    """Promote a captured trace into a regression scenario (idempotent: one scenario per trace).

    With --from-run RUN, the argument is SCENARIO#INDEX: that attempt's simulated conversation becomes
    a fixed multi-turn scenario.
    """
    if from_run is not None:
        frozen = freeze_conversation(
            from_run, trace_id, GoldenSet(golden), owner=owner, origin=origin, scenario_id=scenario_id,
            author=author,
        )  # fmt: skip
        _promoted(frozen, as_json)
        return
    with open_traces(store, source) as traces:
        full_id = traces.resolve_trace_id(trace_id)
        recent = getattr(traces, "list_traces", None)
        similar = recent(limit=2000) if class_checks and callable(recent) else []
        result = promote_trace(
            traces,
            full_id,
            GoldenSet(golden),
            owner=owner,
            origin=origin,
            must_pass=must_pass,
            tags=_parse_tags(tags),
            expected_behavior=expected_behavior,
            forbid_answer=forbid_answer,
            class_checks=class_checks,
            similar=similar,
            tiers=tiers or None,
            scenario_id=scenario_id,
            author=author,
            source_name=None if is_store_source(source) else (source or "").split(":", 1)[0].lower(),
        )
    _promoted(result, as_json)
    if as_json:
        return
    if class_checks:
        click.echo(_class_checks_line(result.scenario))


def _class_checks_line(scenario: Scenario) -> str:
    """What ``promote --class-checks`` drafted, in one line (also when it drafted no check at all)."""
    kind = scenario.tags.get("failure_class")
    if not kind:
        return "the trace is in no known failure class: the default checks were drafted"
    if scenario.checks:
        return f"failure class {kind}: checks {', '.join(c.type for c in scenario.checks)}"
    return (
        f"failure class {kind}: no check drafted; only an error or an empty answer fails the scenario "
        "(every scenario fails those): add checks or a judge to its file"
    )


def _promoted(result: Promotion, as_json: bool) -> None:
    if as_json:
        doc = {
            "id": result.scenario.id,
            "path": str(result.path),
            "created": result.created,
            "notes": list(result.notes),
        }
        click.echo(json.dumps(doc))
        return
    verb = "created" if result.created else "already promoted as"
    click.echo(f"{verb} {result.scenario.id} ({result.path})")
    for note in result.notes:
        click.echo(f"not drafted: {note}")
    if result.created:
        click.echo("review the suggested retrieval labels and expected tools, then confirm them")


def register(group: click.Group) -> None:
    """Add ``scenarios``, ``promote`` and ``import-csv`` to the root group."""
    scenarios_group.add_command(import_csv_cmd)
    group.add_command(scenarios_group)
    group.add_command(promote_cmd)
    group.add_command(import_csv_cmd)
