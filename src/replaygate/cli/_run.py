r"""``replaygate run``, ``replaygate merge`` and ``replaygate fingerprint``.

::

    replaygate run --target examples.support_agent.target:run_session \
        [--config examples/support_agent/configs/candidate.yaml] --golden examples/support_agent/golden \
        --tier release --repeats 5 --concurrency 8 --timeout 60 --seed 0 --policy gate-policy.yaml \
        --out runs/candidate.json [--resume] [--quiet] [--progress auto|lines|none] [--progress-every 30] \
        [--shard 1/4] [--no-artifacts] \
        [--judge offline|llm --judge-model M --judge-base-url URL --judge-timeout 30] \
        [--simulator scripted|llm --simulator-model M --simulator-base-url URL --simulator-temperature 0.7]
    replaygate merge runs/all.json runs/shard-*.json [--quiet]
    replaygate fingerprint runs/candidate.json [--json]

Without ``--config`` the target gets ``{}`` and the fingerprint records ``agent_config_hash: no config``.
Progress is a bar when stderr is a terminal, else a plain line every ``--progress-every`` seconds and at
each 10% (``--progress lines`` forces the lines, ``none`` or ``--quiet`` shows nothing). A completed run
removes its journal; ``--resume`` of it restores the journal from the run file and finds nothing to do.

``run`` and ``merge`` exit 0 when no attempt errored, 1 when any attempt errored (the summary lists them
first), 3 on a usage or data error. Failing attempts do not change the exit code: whether they block is
the gate's call.
The summary lists errors, then fails with their failure attribution (retrieval or generation), the
per-scenario counts, the retrieval metrics (mean and per scenario) with what the retriever's similarity
threshold filtered (flagged NO-OP when it never filtered anything), and the guardrails.

The judges are the offline ones unless ``--judge llm`` (or ``--judge-model``/``--judge-base-url``) is
given; the LLM judge reads ``REPLAYGATE_JUDGE_BASE_URL``, ``REPLAYGATE_JUDGE_API_KEY`` and
``REPLAYGATE_JUDGE_MODEL`` for what is not given. ``--resume`` rebuilds the judges the journaled run was
started with (from its fingerprint) and refuses a different ``--judge``. The golden-set directory defaults
to ``REPLAYGATE_GOLDEN`` or ``golden/``; the scenarios parsed are kept in
``.replaygate/cache/scenarios-v1.json`` (``REPLAYGATE_SCENARIO_CACHE``: another path, or ``off``) and the
next run reads the unchanged files from there. Scenarios with ``followups`` get their next user turns from the
scripted simulator (offline, seeded with ``--seed``) or, with ``--simulator llm``, from the judges'
OpenAI-compatible endpoint; the simulator is recorded in the fingerprint.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

import click
from replaygate.replay import (
    MAX_YAML_BYTES,
    Judge,
    ProgressLines,
    ReplayError,
    RunFile,
    RunFileError,
    ScenarioCache,
    create_judges,
    create_simulator,
    error_lines,
    exclusive_lock,
    journal_path,
    judge_identity,
    judges_from_fingerprint,
    load_config,
    load_run,
    load_target,
    load_yaml_bounded,
    merge_runs,
    parse_shard,
    read_journal_fingerprint,
    read_text_bounded,
    restore_journal,
    run_suite,
    save_run,
    summary_headline,
    summary_lines,
)

from replaygate.cli._options import echo_json, json_option, judge_timeout_option
from replaygate.cli._outputs import keep_or_refuse, refuse_input_as_output
from replaygate.golden import GoldenSet, resolve_golden_dir, select_golden

__all__ = ["register"]

RUN_ERRORED = 1


def _parse_tags(values: tuple[str, ...]) -> dict[str, str]:
    tags: dict[str, str] = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--tag {v!r}: expected key=value, e.g. --tag risk=high")
        tags[key.strip()] = value.strip()
    return tags


def _load_policy(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    p = Path(path)
    text = read_text_bounded(p, what="gate policy", error=ReplayError, max_bytes=MAX_YAML_BYTES)
    data, _ = load_yaml_bounded(text, str(p), ReplayError)
    if data is None:  # an empty file: the gate reads it as the default policy, and so does the run
        data = {}
    if not isinstance(data, dict):
        raise ReplayError(f"{p}: a gate policy is a YAML mapping")
    # Refuse an invalid policy now, not when the gate reads the finished run.
    from replaygate.gate import policy_from_mapping

    policy_from_mapping(data, where=str(p))
    return data


def _judges(
    kind: str | None,
    model: str | None,
    base_url: str | None,
    timeout_s: float,
    resume_from: Path | None,
) -> dict[str, Judge]:
    """The run's judges: as asked, or (on --resume without --judge) as the journaled run recorded them."""
    if kind == "offline" and (model or base_url):
        raise click.UsageError("--judge-model and --judge-base-url go with --judge llm")
    if kind is None and (model or base_url):
        kind = "llm"
    if resume_from is None:
        return create_judges("llm" if kind == "llm" else "offline", model, base_url, timeout_s=timeout_s)
    old = read_journal_fingerprint(resume_from)
    if kind is None:
        return judges_from_fingerprint(old, base_url=base_url, timeout_s=timeout_s)
    judges = create_judges("llm" if kind == "llm" else "offline", model, base_url, timeout_s=timeout_s)
    now = judge_identity(judges)
    if now != (old.judge_model, old.judge_prompt_version):
        raise RunFileError(
            f"{resume_from}: cannot resume: the run was judged by {old.judge_model} "
            f"({old.judge_prompt_version}), this one would be judged by {now[0]} ({now[1]}); "
            "drop --judge to continue with the run's own judges"
        )
    return judges


def _num(value: float) -> str:
    return f"{value:.2f}"


def _retrieval_lines(run: RunFile) -> list[str]:
    """The retrieval section of the run summary: mean and per-scenario metrics, the threshold's effect."""
    report = run.summary.retrieval  # computed by summarize_attempts with the rest of the summary
    if report is None:
        return []
    m = report.mean
    lines = [
        f"retrieval ({report.attempts} attempts with labels): hit rate@k {_num(m.hit_rate)}, "
        f"MRR@k {_num(m.mrr)}, recall@k {_num(m.recall)}, nDCG@k {_num(m.ndcg)}"
    ]
    for sid, row in report.scenarios.items():
        noop = " [threshold no-op]" if row.threshold and row.threshold.noop else ""
        lines.append(
            f"  {sid} @k={row.k}: hit {_num(row.hit_rate)}, MRR {_num(row.mrr)}, "
            f"recall {_num(row.recall)}, nDCG {_num(row.ndcg)}{noop}"
        )
    t = report.threshold
    if t is not None:
        values = ", ".join(f"{v:g}" for v in t.values)
        if t.noop:
            lines.append(
                f"retrieval threshold {values}: NO-OP, it filtered no chunk in any of {t.attempts} "
                "attempts (raise it, or drop it)"
            )
        elif t.filtered is None:
            lines.append(f"retrieval threshold {values}: the retriever did not report what it filtered")
        else:
            lines.append(
                f"retrieval threshold {values}: filtered {t.filtered} chunks, in "
                f"{t.attempts_filtering} of {t.attempts} attempts"
            )
    return lines


def _default_out() -> Path:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(".replaygate") / "runs" / f"run-{stamp}.json"


@click.command("run")
@click.option("--target", "target", required=True, help="module:function or an http(s):// URL.")
@click.option(
    "--config",
    "config_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="The candidate's configuration, YAML/JSON (README: configuration file) [default: none].",
)
@click.option(
    "--golden", "golden", default=None, help="Golden-set directory [env REPLAYGATE_GOLDEN; golden/]."
)
@click.option("--tier", type=click.Choice(["smoke", "release", "scheduled"]), default=None)
@click.option("--tag", "tags", multiple=True, help="key=value; every given tag must match.")
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Attempts per scenario (k).")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--policy", "policy_path", type=click.Path(dir_okay=False), default=None, help="Gate policy YAML."
)
@click.option(
    "--judge",
    "judge_kind",
    type=click.Choice(["offline", "llm"]),
    default=None,
    help="Judges [offline; with --resume: the journaled run's].",
)
@click.option("--judge-model", default=None, help="LLM judge model [env REPLAYGATE_JUDGE_MODEL].")
@click.option(
    "--judge-base-url", default=None, help="OpenAI-compatible base URL [env REPLAYGATE_JUDGE_BASE_URL]."
)
@judge_timeout_option()
@click.option(
    "--simulator",
    "simulator_kind",
    type=click.Choice(["scripted", "llm"]),
    default="scripted",
    show_default=True,
    help="Simulated user of scenarios with followups (llm: the judges' endpoint by default).",
)
@click.option("--simulator-model", default=None, help="LLM simulator model [env REPLAYGATE_JUDGE_MODEL].")
@click.option("--simulator-base-url", default=None, help="LLM simulator URL [REPLAYGATE_JUDGE_BASE_URL].")
@click.option("--simulator-temperature", type=click.FloatRange(0, 2), default=0.7, show_default=True)
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Run file to write.")
@click.option("--resume", is_flag=True, help="Continue the run journaled beside --out.")
@click.option("--force", is_flag=True, help="Replace an existing --out run file and journal (kept as *.bak).")
@click.option(
    "--quiet", is_flag=True, help="No progress bar or lines; print only the summary and the errored attempts."
)
@click.option(
    "--progress",
    "progress_kind",
    type=click.Choice(["auto", "lines", "none"]),
    default="auto",
    show_default=True,
    help="auto: a bar when stderr is a terminal, else plain lines; lines: always plain lines.",
)
@click.option(
    "--progress-every",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds between progress lines when stderr is not a terminal (also one at each 10%).",
)
@click.option("--shard", default=None, help="i/n: run only shard i of n (merge the shards with `merge`).")
@click.option(
    "--no-artifacts",
    is_flag=True,
    help="Do not write the run's artifacts file (<out dir>/<run id>/artifacts.jsonl).",
)
@json_option
def run_cmd(
    target: str,
    config_path: str | None,
    golden: str | None,
    tier: str | None,
    tags: tuple[str, ...],
    repeats: int | None,
    concurrency: int,
    timeout_s: float,
    seed: int,
    policy_path: str | None,
    judge_kind: str | None,
    judge_model: str | None,
    judge_base_url: str | None,
    judge_timeout: float,
    simulator_kind: str,
    simulator_model: str | None,
    simulator_base_url: str | None,
    simulator_temperature: float,
    out: str | None,
    resume: bool,
    force: bool,
    quiet: bool,
    progress_kind: str,
    progress_every: float,
    shard: str | None,
    no_artifacts: bool,
    as_json: bool,
) -> None:
    """Replay the golden set against a candidate (target + configuration) and write a run file."""
    if shard is not None:
        try:
            parse_shard(shard)
        except ValueError as exc:
            raise click.UsageError(f"--shard: {exc}") from None
    if resume and out is None:
        raise click.UsageError("--resume needs --out (the run file whose journal to continue)")
    tag_map = _parse_tags(tags)
    golden_dir = resolve_golden_dir(golden)
    if not golden_dir.is_dir():
        raise click.UsageError(
            f"--golden {golden_dir}: no such directory (set --golden or REPLAYGATE_GOLDEN)"
        )
    # via golden.lock's index; unchanged files from the scenario cache (REPLAYGATE_SCENARIO_CACHE)
    selection = select_golden(GoldenSet(golden_dir), tier=tier, tags=tag_map, cache=ScenarioCache.default())
    scenarios = selection.scenarios
    held_out = selection.held_out
    holdout_note = (
        f"{held_out} holdout scenario(s) left out: they run only with --tier release or --tier scheduled"
        if held_out
        else ""
    )
    if not scenarios:
        raise click.UsageError(
            f"no scenario in {golden_dir} matches tier={tier} tags={tag_map or {}}"
            + (f" ({holdout_note})" if holdout_note else "")
        )
    if holdout_note and not quiet:
        click.echo(f"note: {holdout_note}", err=True)
    config = load_config(config_path) if config_path is not None else None
    policy = _load_policy(policy_path)
    # a target that cannot be imported is refused before anything is moved, journaled or printed (the run
    # takes the loaded one: its spec is what the fingerprint records)
    http = target.startswith(("http://", "https://"))
    the_target = target if http else load_target(target, timeout_s=timeout_s)
    out_path = Path(out) if out is not None else _default_out()
    jpath = journal_path(out_path)
    # Files beside the run file are moved only while holding its lock, as a run holds it while it writes
    # them: a second command into the same --out is refused before it touches a live run's journal.
    lock = out_path.with_name(out_path.name + ".lock")
    if resume and not jpath.exists() and out_path.exists():  # a completed run removed its journal
        with exclusive_lock(lock, wait_s=0, what=f"the run file {out_path}"):
            restore_journal(out_path)
    judges = _judges(judge_kind, judge_model, judge_base_url, judge_timeout, jpath if resume else None)
    simulator = create_simulator(
        simulator_kind,
        model=simulator_model,
        base_url=simulator_base_url,
        temperature=simulator_temperature,
        timeout_s=judge_timeout,
        seed=seed,
    )
    if not resume:  # nothing replaced silently: an old run file or journal needs --force (kept as .bak)
        with exclusive_lock(lock, wait_s=0, what=f"the run file {out_path}"):
            hint = f", or --resume to continue the run journaled at {jpath}" if jpath.exists() else ""
            keep_or_refuse(out_path, force=force, what="run file", hint=hint)
            again = " (or --resume to continue it)"
            kept = keep_or_refuse(jpath, force=force, what="run journal", hint=again)
        if kept is not None:
            click.echo(f"note: starting a new run; the old journal is kept as {kept}", err=True)
    if not quiet and not resume:
        click.echo(
            f"journal: {jpath} (if the run is stopped, continue it with the same options plus "
            f"--resume --out {out_path})",
            err=True,
        )
    try:
        run = run_suite(
            scenarios,
            the_target,
            config,
            repeats=repeats,
            concurrency=concurrency,
            timeout_s=timeout_s,
            seed=seed,
            judges=judges,
            policy=policy,
            out_path=out_path,
            resume=resume,
            shard=shard,
            progress=_progress(progress_kind, progress_every, quiet),
            tier=tier,
            artifacts=not no_artifacts,
            simulator=simulator,
            content_hashes=selection.content_hashes,
        )
    except KeyboardInterrupt:
        click.echo(
            f"interrupted: finished attempts are journaled in {journal_path(out_path)}; "
            f"continue with the same options plus --resume --out {out_path}",
            err=True,
        )
        raise click.Abort() from None
    _report(run, out_path, quiet=quiet, as_json=as_json)


def _progress(kind: str, every_s: float, quiet: bool) -> bool | ProgressLines:
    """What ``run_suite`` shows: ``--quiet`` or ``none`` nothing; a bar in a terminal; else plain lines."""
    if quiet or kind == "none":
        return False
    if kind == "auto" and sys.stderr.isatty():
        return True
    return ProgressLines(every_s)


def _report(run: RunFile, out_path: Path, *, quiet: bool, as_json: bool = False) -> None:
    """Print a run's summary (errors first), or its ``--json`` document; exit 1 when any attempt errored."""
    summary = run.summary
    lines: list[str] = []
    if as_json:
        echo_json(
            "run",
            {
                "run_id": run.run_id,
                "run_file": str(out_path),
                "exit_code": RUN_ERRORED if summary.errors else 0,
                "summary": summary.model_dump(mode="json"),
            },
        )
    elif quiet:  # the headline, and the errors: CI logs must say what broke
        lines = [summary_headline(summary), *error_lines(summary)]
    else:
        lines = summary_lines(summary) + _retrieval_lines(run)
    for line in lines:
        click.echo(line)
    if not quiet and not as_json:
        click.echo(f"run file: {out_path}")
    if summary.errors:
        click.echo(
            f"error: {summary.errors} of {summary.attempts} attempts errored "
            "(target raised, timed out, returned bad output, or a judge failed); "
            + ("see the summary's errors" if as_json else "see ERRORS above"),
            err=True,
        )
        # SystemExit, not click's Exit: in non-standalone mode click turns Exit into a return value.
        sys.exit(RUN_ERRORED)


@click.command("merge")
@click.argument("out", type=click.Path(dir_okay=False))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--quiet", is_flag=True, help="Print only the summary line.")
@click.option("--force", is_flag=True, help="Replace an existing OUT (kept as OUT.bak).")
@json_option
def merge_cmd(out: str, files: tuple[str, ...], quiet: bool, force: bool, as_json: bool) -> None:
    """Merge the run files of every shard of one run into OUT (exit 1 when any attempt errored).

    OUT may not be one of the FILES; an existing OUT needs --force.
    """
    refuse_input_as_output(Path(out), files)
    run = merge_runs(list(files))
    keep_or_refuse(Path(out), force=force, what="run file")
    save_run(run, out)
    _report(run, Path(out), quiet=quiet, as_json=as_json)


@click.command("fingerprint")
@click.argument("run_file", type=click.Path(dir_okay=False))
@json_option
def fingerprint_cmd(run_file: str, as_json: bool) -> None:
    """Print the fingerprint a run was recorded with."""
    run = load_run(run_file)
    fp = run.fingerprint.model_dump(mode="json")
    if as_json:
        click.echo(json.dumps({"run_id": run.run_id, "shard": run.shard, **fp}, indent=2, sort_keys=True))
        return
    click.echo(f"run_id: {run.run_id}")
    if run.shard:
        click.echo(f"shard: {run.shard}")
    for key, value in fp.items():
        if isinstance(value, dict):
            click.echo(f"{key}:")
            for sub, v in sorted(value.items()):
                click.echo(f"  {sub}: {v}")
        else:
            click.echo(f"{key}: {'-' if value is None else value}")


def register(group: click.Group) -> None:
    """Add ``run``, ``merge`` and ``fingerprint`` to the root group."""
    group.add_command(run_cmd)
    group.add_command(merge_cmd)
    group.add_command(fingerprint_cmd)
