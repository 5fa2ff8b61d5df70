"""CLI commands of the gate: compare, gate, review, sign, drift.

Exit codes: 0 pass, 1 block (or drift), 2 needs sign-off or review, 3 usage or data error.
The store for reviews and decisions is ``--store`` or env ``REPLAYGATE_STORE`` (path or URL), default
``.replaygate/replaygate.db``.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from replaygate.replay import old_objects_frozen

from replaygate import gate as gate_api  # each name loads its module on first use (SQLAlchemy: the store)
from replaygate.cli._options import (
    baseline_2_option,
    by_option,
    data_errors,
    echo_json,
    json_option,
    store_option,
)
from replaygate.cli._outputs import refuse_other_report

if TYPE_CHECKING:
    from replaygate.replay import RunFile

    from replaygate.gate import GateReport, Policy

# The reports, the labels and the statistics are imported by the commands that use them, after
# ``compare`` and ``gate`` have started reading their run files (reading does not wait for them).

__all__ = ["register"]

EXIT = {"pass": 0, "block": 1, "needs-sign-off": 2}


@click.command("compare")
@click.argument("base_run", type=click.Path(dir_okay=False))
@click.argument("head_run", type=click.Path(dir_okay=False))
@baseline_2_option
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), help="Alpha and resampling settings."
)
@json_option
@data_errors
def compare_cmd(
    base_run: str, head_run: str, baseline_2: str | None, policy_path: str | None, as_json: bool
) -> None:
    """Compare two runs of the same suite: scenario by scenario, by category and overall."""
    noise_run = baseline_2
    with gate_api.RunData.reading([*([noise_run] if noise_run else []), base_run, head_run]) as read:
        policy = gate_api.load_policy(policy_path) if policy_path else gate_api.Policy()
        from replaygate.report import render_comparison_markdown

        *noise_read, base, head = read()
    noise = noise_read[0] if noise_read else None
    runs = [("baseline", base), ("candidate", head)] + ([("second baseline", noise)] if noise else [])
    gate_api.verify_runs(runs, (base_run, head_run, noise_run))  # the plan each run records, as the gate does
    c = gate_api.compare_runs(base, head, noise, policy, paths=(base_run, head_run, noise_run))
    click.echo(c.model_dump_json(indent=2) if as_json else render_comparison_markdown(c))


@click.command("gate")
@click.option(
    "--policy", "policy_path", required=True, type=click.Path(dir_okay=False), help="Gate policy YAML."
)
@click.option("--baseline", required=True, type=click.Path(dir_okay=False), help="Baseline run file.")
@click.option("--candidate", required=True, type=click.Path(dir_okay=False), help="Candidate run file.")
@baseline_2_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Report folder (default .replaygate/reports/ID).",
)
@click.option("--format", "formats", default="md,html,json,junit", show_default=True, help="Report formats.")
@json_option
@data_errors
def gate_cmd(
    policy_path: str,
    baseline: str,
    candidate: str,
    baseline_2: str | None,
    out_dir: str | None,
    formats: str,
    as_json: bool,
) -> None:
    """Apply the release gate; exit 0 pass, 1 block, 2 needs sign-off or review, 3 usage/data error."""
    with gate_api.RunData.reading([*([baseline_2] if baseline_2 else []), candidate, baseline]) as read:
        from replaygate.report import FORMATS, write_reports

        wanted = [f.strip() for f in formats.split(",") if f.strip()]
        unknown = [f for f in wanted if f not in FORMATS]
        if unknown:
            raise click.UsageError(f"unknown --format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
        policy = gate_api.load_policy(policy_path)
        importlib.import_module("scipy.special")  # the statistics' ufuncs, loaded while the files are read
        *b2_read, head, base = read()
    b2 = b2_read[0] if b2_read else None
    with old_objects_frozen():  # the runs read stay out of the collector's passes
        report = gate_api.gate_runs(policy, base, head, b2, paths=(baseline, candidate, baseline_2))
    report = _judge_agreement(report, policy, head.judged_run(), (candidate, baseline))
    out = Path(out_dir) if out_dir else Path(".replaygate") / "reports" / report.report_id
    refuse_other_report(out, report.report_id)  # never delete or overwrite another report's files
    paths = write_reports(report, out, wanted)
    if as_json:
        echo_json("gate", _gate_json(report, paths))
        sys.exit(EXIT[report.outcome])
    click.echo(report.headline)
    for f in report.findings:
        click.echo(f"  [{f.rule}] {f.message}\n      fix: {f.fix}")
    if not report.can_tell and report.notes:
        click.echo(f"  {report.notes[0]}")
    if report.worse_unconfirmed:
        k = report.comparison.k
        click.echo(
            f"  worse, not confirmed at k={k} (no signature needed): {', '.join(report.worse_unconfirmed)}"
        )
    if report.flaky:
        click.echo(
            f"  flaky (the baseline runs disagree; quarantine or raise repeats): {', '.join(report.flaky)}"
        )
    for name, p in paths.items():
        click.echo(f"{name}: {p}")
    sys.exit(EXIT[report.outcome])  # (click returns, not raises, Exit codes under main())


def _gate_json(report: GateReport, paths: dict[str, Path]) -> dict[str, Any]:
    """What a script needs of a gate: the outcome and its exit code, the findings, where the reports are."""
    return {
        "report_id": report.report_id,
        "outcome": report.outcome,
        "exit_code": EXIT[report.outcome],
        "headline": report.headline,
        "can_tell": report.can_tell,
        "findings": [f.model_dump(mode="json") for f in report.findings],
        "worse_unconfirmed": list(report.worse_unconfirmed),
        "flaky": list(report.flaky),
        "notes": list(report.notes),
        "reports": {name: str(p) for name, p in paths.items()},
    }


def _judge_agreement(report: GateReport, policy: Policy, head: RunFile, runs: tuple[str, ...]) -> GateReport:
    """Kappa of the candidate's judges with people's labels of the gated runs (``replaygate.labels``)."""
    from replaygate.labels import labels_path, read_labels, with_judge_agreement

    labels = [label for run in runs for label in read_labels(labels_path(run))]
    cal = policy.judge_calibration
    return with_judge_agreement(
        report,
        head,
        labels,
        min_kappa=cal.min_kappa if cal else None,
        min_labels=cal.min_labels if cal else 1,
        required=cal is not None,
    )


def _load(report: str) -> tuple[GateReport, Path]:
    from replaygate.report import load_report, report_path

    path = report_path(report)
    return load_report(path), path.resolve()


@click.command("review")
@click.argument("report")
@click.argument("scenario")
@by_option
@click.option("--note", required=True, help="What they concluded.")
@store_option
@json_option
@data_errors
def review_cmd(report: str, scenario: str, by: str, note: str, store: str | None, as_json: bool) -> None:
    """Mark a newly failing scenario of a report read (needed before signing)."""
    rep, _ = _load(report)
    ds = gate_api.DecisionStore(store)
    try:
        ds.add_review(rep, scenario, by, note)
        left = gate_api.unread_scenarios(rep, {r.scenario_id for r in ds.reviews(rep.report_id)})
    finally:
        ds.close()
    if as_json:
        echo_json(
            "review",
            {"report_id": rep.report_id, "scenario_id": scenario, "by": by, "note": note, "unread": left},
        )
        return
    click.echo(f"{scenario} marked read by {by} (report {rep.report_id})")
    click.echo(f"still unread: {', '.join(left)}" if left else "every newly failing scenario has been read")


@click.command("sign")
@click.argument("report")
@by_option
@click.option(
    "--outcome", required=True, type=click.Choice(list(gate_api.DECISION_OUTCOMES)), help="The decision."
)
@click.option("--reason", required=True, help="Why (the trade-off, for a pass with sign-off).")
@click.option(
    "--supersede", is_flag=True, help="Replace the report's current decision (audited; it stays listed)."
)
@store_option
@json_option
@data_errors
def sign_cmd(
    report: str, by: str, outcome: str, reason: str, supersede: bool, store: str | None, as_json: bool
) -> None:
    """Sign the gate decision: stored with both fingerprints, and as decision.json beside the report.

    A report signed already is refused unless --supersede (with --reason saying why).
    """
    rep, path = _load(report)
    ds = gate_api.DecisionStore(store)
    try:
        decision = ds.sign(
            rep, signed_by=by, outcome=outcome, reason=reason, report_path=str(path), supersede=supersede
        )
    finally:
        ds.close()
    from replaygate.report import atomic_write

    out = atomic_write(path.parent / "decision.json", decision.model_dump_json(indent=2))
    if as_json:
        echo_json("decision", {"decision": decision.model_dump(mode="json"), "path": str(out)})
        return
    click.echo(f"decision {decision.id}: {decision.outcome} signed by {decision.signed_by} ({out})")


@click.command("drift")
@click.option(
    "--runs", "runs_dir", required=True, type=click.Path(file_okay=False), help="Folder of run files."
)
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), help="Gate policy (alpha, tolerances)."
)
@click.option("--config-hash", default=None, help="Watch this configuration (default: the latest scheduled).")
@json_option
@data_errors
def drift_cmd(runs_dir: str, policy_path: str | None, config_hash: str | None, as_json: bool) -> None:
    """Compare the latest scheduled run of an unchanged configuration with the previous one (exit 1: drop)."""
    from replaygate.report import render_comparison_markdown

    policy = gate_api.load_policy(policy_path) if policy_path else None
    runs, skipped = gate_api.load_runs_dir(runs_dir)
    (latest_path, latest), previous = gate_api.drift_pair(runs, config_hash)
    if previous is None:
        click.echo(
            f"no earlier scheduled run of configuration {latest.fingerprint.agent_config_hash} with the same "
            f"suite and k ({latest_path}): nothing to compare yet"
        )
        return
    report = gate_api.detect_drift(previous[1], latest, policy)
    if as_json:
        payload = json.loads(report.model_dump_json())
        payload["skipped"] = skipped
        click.echo(json.dumps(payload, indent=2))
    else:
        state = "DRIFT: significant drop" if report.significant else "no significant drop"
        click.echo(f"{state} (configuration {report.config_hash}; {previous[0]} -> {latest_path})")
        for d in report.drops:
            click.echo(f"  - {d}")
        for n in [*report.notes, *(f"skipped {s}" for s in skipped)]:
            click.echo(f"  note: {n}")
        click.echo(render_comparison_markdown(report.comparison, title="Drift"))
    sys.exit(1 if report.significant else 0)


def register(group: click.Group) -> None:
    """Add this area's commands to the root group."""
    for cmd in (compare_cmd, gate_cmd, review_cmd, sign_cmd, drift_cmd):
        group.add_command(cmd)
