"""The canary area's commands: ``replaygate canary ...``, ``replaygate serve``, ``replaygate hash-password``.

Exit codes: 0 done (or nothing to do), 1 an action was refused or ``check`` found a breach, 3 usage or
data error.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import sys
from dataclasses import asdict
from typing import Any

import click

from replaygate.cli._options import by_option, echo_json, json_option, store_option

__all__ = ["register"]

REFUSED = 1

_policy_option = click.option(
    "--policy",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help=(
        "Gate policy YAML: its guardrails and max_hold are the canary's tolerances. `start` records them; "
        "later commands judge the canary by what it recorded and refuse to widen or promote under another."
    ),
)


def _controller(store: str | None, policy: str | None, min_count: int | None = None) -> Any:
    from dataclasses import replace

    from replaygate.canary import CanaryController, CanarySettings

    settings = CanarySettings()
    if min_count is not None:
        settings = replace(
            settings, evidence=replace(settings.evidence, min_count=min_count, min_breach_count=min_count)
        )
    ctl = CanaryController.open(store, policy=policy, settings=settings)
    click.get_current_context().call_on_close(ctl.close)  # the store's connections, when the command ends
    return ctl


def _plan(plan: str | None) -> tuple[float, ...] | None:
    """The ``--plan`` option's shares (None: the default plan); a malformed plan is a usage error."""
    if not plan:
        return None
    from replaygate.canary import parse_plan

    try:
        return parse_plan(plan)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _report(t: Any, as_json: bool = False) -> None:
    if as_json:
        _transition_json(t)
    elif t.outcome == "applied":
        click.echo(f"{t.action}: {t.reason}; now {t.after.label()}")
    elif t.outcome == "noop":
        click.echo(f"{t.action}: nothing to do ({t.reason}); {t.after.label()}")
    else:
        click.echo(f"{t.action} refused: {t.reason}", err=True)
    if t.outcome not in ("applied", "noop"):
        sys.exit(REFUSED)


def _transition_json(t: Any) -> None:
    """The ``--json`` document of a canary action: what was tried, what came of it, the state after."""
    from replaygate.canary import state_json

    echo_json(
        "canary-action",
        {
            "action": t.action,
            "outcome": t.outcome,
            "reason": t.reason,
            "changed": t.changed,
            "before": state_json(t.before),
            "after": state_json(t.after),
        },
    )


def _status_json(status: Any) -> dict[str, Any]:
    from replaygate.canary import state_json

    out: dict[str, Any] = {"state": state_json(status.state), "notes": list(status.notes)}
    if status.measures is not None:
        m = status.measures
        out["measures"] = {
            "baseline_n": m.baseline.n,
            "candidate_n": m.candidate.n,
            "diffs": [asdict(d) for d in m.diffs],
        }
    if status.evidence is not None:
        out["evidence"] = status.evidence.to_json()
    out["outlook"] = None if status.outlook is None else status.outlook.to_json()
    out["policy"] = None if status.policy is None else status.policy.to_json()
    return out


def _print_status(status: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    state = status.state
    console.print(f"state: [bold]{state.label()}[/bold]", highlight=False)
    if state.rollout_id:
        console.print(
            f"rollout {state.rollout_id} · decision {state.decision_id} · "
            f"baseline {state.baseline_config_id} · candidate {state.candidate_config_id}",
            markup=False,
            highlight=False,
        )
    if status.policy is not None:
        recorded = "recorded when the canary started" if state.policy is not None else "not recorded"
        line = f"tolerances: {status.policy.describe()} ({recorded})"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if status.measures is None:
        for note in status.notes:
            console.print(note, markup=False, highlight=False, style="dim")
        return
    m = status.measures
    verdicts = {e.name: e for e in status.evidence.measures} if status.evidence is not None else {}
    table = Table(
        title=f"live measures (current step): baseline n={m.baseline.n}, candidate n={m.candidate.n}"
    )
    for col in ("measure", "baseline", "candidate", "difference", "worse by", "tolerance", "verdict"):
        table.add_column(col)

    def f(v: float | None) -> str:
        return "—" if v is None else f"{v:.4g}"

    for d in m.diffs:
        e = verdicts.get(d.name)
        bounds = "—" if e is None or e.lower is None else f"{_worse(e, e.lower)} to {_worse(e, e.upper)}"
        if e is not None and e.gross and (e.lower is None or e.lower <= (e.tolerance_value or 0.0)):
            bounds = f"beyond {e.tolerance} (sequential test)"  # the guard decided, not the bounds
        verdict = "not checked" if e is None else _VERDICT_SHORT[e.verdict](e)
        table.add_row(d.label, f(d.baseline), f(d.candidate), "—" if d.delta is None else f"{d.delta:+.4g}",
                      bounds, "—" if e is None else e.tolerance, verdict)  # fmt: skip
    console.print(table)
    if status.evidence is not None:
        console.print(f"decision: {status.evidence.decision}", markup=False, highlight=False, style="bold")
        console.print(status.evidence.reason, markup=False, highlight=False)
        for b in status.evidence.breaches:
            console.print(f"BREACH: {b}", markup=False, highlight=False, style="bold red")
    for note in status.notes:
        console.print(note, markup=False, highlight=False, style="dim")


def _worse(e: Any, value: float | None) -> str:
    import math

    if value is None or not math.isfinite(value):
        return "?"
    if e.relative:
        return f"{value * 100:+.0f}%"
    if e.name.endswith("_rate"):
        return f"{value * 100:+.1f} pts"
    return f"{value:+.4g}"


_VERDICT_SHORT: dict[str, Any] = {
    "worse": lambda e: "confidently worse than the tolerance" + (" (gross harm)" if e.gross else ""),
    "within": lambda e: "confidently within",
    "undecided": lambda e: (
        "not yet decided" + (f" (needs ~{e.needed} more candidate requests)" if e.needed is not None else "")
    ),
    "unchecked": lambda e: "not checked",
}


@click.group("canary")
def canary() -> None:
    """Canary releases: start a signed candidate, watch live measures, widen, promote, roll back."""


@canary.command("decisions")
@store_option
@json_option
def decisions_cmd(store: str | None, as_json: bool) -> None:
    """List the signed decisions that can start a canary (pass, pass-with-sign-off)."""
    ctl = _controller(store, None)
    found = ctl.signed_decisions()
    if as_json:
        click.echo(json.dumps([d.model_dump(mode="json") for d in found], indent=2))
        return
    if not found:
        click.echo("no signed pass decision: run the gate and `replaygate sign REPORT ...` first")
    for d in found:
        click.echo(
            f"{d.id}  {d.outcome:<18} {d.candidate_config_id}  signed by {d.signed_by} at {d.signed_at}"
        )


@canary.command("start")
@click.argument("decision_id")
@by_option
@click.option("--reason", default="", help="Why (audited).")
@click.option("--plan", default=None, help="Candidate shares in percent, e.g. 1,5,25,50,100 (the default).")
@click.option("--no-auto-rollback", is_flag=True, help="Report breaches without rolling back.")
@click.option(
    "--salt", default=None, help="Routing salt (default: random); fixed, a demo or test routes the same way."
)
@store_option
@_policy_option
@json_option
def start_cmd(
    decision_id: str, by: str, reason: str, plan: str | None, no_auto_rollback: bool, salt: str | None,
    store: str | None, policy: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Start a canary of the candidate of a signed decision (DECISION_ID from `canary decisions`)."""
    steps = _plan(plan)
    ctl = _controller(store, policy)
    _report(
        ctl.start(
            decision_id, actor=by, reason=reason, plan=steps, auto_rollback=not no_auto_rollback, salt=salt
        ),
        as_json,
    )


@canary.command("status")
@store_option
@_policy_option
@json_option
def status_cmd(store: str | None, policy: str | None, as_json: bool) -> None:
    """Show the rollout, the live measures of the current step and what a widen needs."""
    status = _controller(store, policy).status()
    if as_json:
        echo_json("canary-status", _status_json(status))
    else:
        _print_status(status)


@canary.command("audit")
@store_option
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Newest N entries.")
@json_option
def audit_cmd(store: str | None, limit: int, as_json: bool) -> None:
    """Print the canary's audit log, newest first: who did what, when, why, and what came of it."""
    entries = _controller(store, None).audit(limit)
    if as_json:
        click.echo(json.dumps([asdict(e) for e in entries], indent=2, default=str))
        return
    if not entries:
        click.echo("no audited canary action yet")
    for e in entries:
        when = dt.datetime.fromtimestamp(e.at_ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
        reason = f": {e.reason}" if e.reason else ""
        click.echo(
            f"{when}  {e.actor:<24} {e.action:<9} {e.outcome:<8} {e.from_state} -> {e.to_state}{reason}"
        )


@canary.command("widen")
@by_option
@click.option("--reason", default="", help="Why (audited).")
@store_option
@_policy_option
@json_option
def widen_cmd(by: str, reason: str, store: str | None, policy: str | None, as_json: bool) -> None:
    """Widen to the plan's next step; refused (exit 1, with the reason) until the evidence holds."""
    _report(_controller(store, policy).widen(actor=by, reason=reason), as_json)


@canary.command("promote")
@by_option
@click.option("--reason", default="", help="Why (audited).")
@store_option
@_policy_option
@json_option
def promote_cmd(by: str, reason: str, store: str | None, policy: str | None, as_json: bool) -> None:
    """Promote the candidate to all traffic (idempotent)."""
    _report(_controller(store, policy).promote(actor=by, reason=reason), as_json)


@canary.command("rollback")
@by_option
@click.option("--reason", required=True, help="Why (audited).")
@store_option
@json_option
def rollback_cmd(by: str, reason: str, store: str | None, as_json: bool) -> None:
    """Roll back: all traffic to the baseline at once (idempotent, audited)."""
    _report(_controller(store, None).rollback(actor=by, reason=reason), as_json)


@canary.command("check")
@click.option("--no-auto-rollback", is_flag=True, help="Report a breach without rolling back.")
@store_option
@_policy_option
@json_option
def check_cmd(no_auto_rollback: bool, store: str | None, policy: str | None, as_json: bool) -> None:
    """Evaluate the current step; a breach rolls back (unless switched off) and exits 1. For cron."""
    result = _controller(store, policy).check(
        actor="replaygate canary check", auto_rollback=False if no_auto_rollback else None
    )
    if as_json:
        out = _status_json(result.status)
        out["rolled_back"] = result.rollback is not None and result.rollback.changed
        out["hold_notified"] = result.notice is not None and result.notice.outcome == "notified"
        echo_json("canary-check", out)
    else:
        _print_status(result.status)
        if result.rollback is not None and result.rollback.changed:
            click.echo(f"ROLLED BACK: {result.rollback.reason}")
        if result.notice is not None and result.notice.outcome == "notified":
            click.echo(f"NOTIFIED (audit log): {result.notice.reason}")
    if result.breached:
        sys.exit(REFUSED)


@canary.command("simulate")
@click.option("--start", "decision_id", default=None, help="Start a canary of this signed decision first.")
@click.option("--batches", default=30, show_default=True, help="Batches of requests (check/widen between).")
@click.option("--batch-size", default=300, show_default=True, help="Requests per batch.")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--plant-escalation", default=0.0, show_default=True, help="Add this to the candidate's escalation rate."
)
@click.option("--plant-error", default=0.0, show_default=True, help="Add this to the candidate's error rate.")
@click.option("--plan", default=None, help="Plan for --start, e.g. 10,25,50,100.")
@click.option("--min-count", default=None, type=int, help="Requests needed in each arm before a widen.")
@click.option("--promote", is_flag=True, help="Promote when the last step is reached.")
@by_option
@store_option
@_policy_option
def simulate_cmd(
    decision_id: str | None, batches: int, batch_size: int, seed: int, plant_escalation: float,
    plant_error: float, plan: str | None, min_count: int | None, promote: bool, by: str, store: str | None,
    policy: str | None,
) -> None:  # fmt: skip
    """Simulated live traffic through the canary (a fast synthetic agent writing real spans to the store)."""
    from replaygate.canary import TrafficProfile, simulate_live_traffic

    ctl = _controller(store, policy, min_count)
    if decision_id:
        _report(ctl.start(decision_id, actor=by, reason="simulation", plan=_plan(plan)))
    if ctl.state().status != "canary":
        raise click.UsageError(
            "no canary is running: pass --start DECISION_ID (see `replaygate canary decisions`)"
        )
    candidate = TrafficProfile().planted(escalation_rate=plant_escalation, error_rate=plant_error)

    def progress(batch: int, c: Any) -> None:
        click.echo(f"batch {batch}: {c.state().label()}")

    report = simulate_live_traffic(
        ctl, candidate=candidate, batches=batches, batch_size=batch_size, seed=seed, promote=promote,
        actor=f"{by} (simulation)", on_batch=progress,
    )  # fmt: skip
    for t in report.transitions:
        click.echo(f"  {t.action}: {t.reason}")
    click.echo(
        f"{report.requests} requests ({report.candidate_requests} on the candidate) "
        f"in {report.batches} batches; final state: {ctl.state().label()}"
    )


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--users", type=click.Path(exists=True, dir_okay=False), default=None, help="Users YAML file.")
@_policy_option
@store_option
@click.option("--insecure-cookies", is_flag=True, help="Drop the cookie's Secure flag (local http only).")
@click.option(
    "--reports",
    "reports_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder of gate reports to list (env REPLAYGATE_REPORTS, default .replaygate/reports).",
)
@click.option(
    "--golden", default=None, type=click.Path(file_okay=False), help="Golden set promotions write to."
)
def serve_cmd(
    host: str,
    port: int,
    users: str | None,
    policy: str | None,
    store: str | None,
    insecure_cookies: bool,
    reports_dir: str | None,
    golden: str | None,
) -> None:
    """Serve the release page (development server; run behind gunicorn for production)."""
    from werkzeug.serving import run_simple

    from replaygate.web import WebConfig, create_app, load_users

    collect = None
    if os.environ.get("REPLAYGATE_COLLECT_TOKEN"):  # the OTLP receiver on the same port
        from replaygate.collect import receiver_from_env

        collect = receiver_from_env(store)
    config = WebConfig(
        store=store,
        policy=policy,
        users=load_users(users),
        secure_cookies=not insecure_cookies,
        collect=collect,
        reports_dir=reports_dir,
        golden=golden,
    )
    app = create_app(config)
    if not config.users:
        click.echo(
            "warning: no users configured (--users FILE or REPLAYGATE_USERS): nobody can log in", err=True
        )
    click.echo(f"replaygate release page: http://{host}:{port}/")
    run_simple(host, port, app, threaded=True, use_reloader=False)


@click.command("hash-password")
@click.option("--password-stdin", is_flag=True, help="Read the password from stdin instead of a prompt.")
def hash_password_cmd(password_stdin: bool) -> None:
    """Print a werkzeug password hash for the users file of `replaygate serve`."""
    from replaygate.web import hash_password

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise click.UsageError("the two passwords differ")
    if not password:
        raise click.UsageError("an empty password is not allowed")
    click.echo(hash_password(password))


def register(group: click.Group) -> None:
    """Add this area's commands to the root group."""
    group.add_command(canary)
    group.add_command(serve_cmd)
    group.add_command(hash_password_cmd)
