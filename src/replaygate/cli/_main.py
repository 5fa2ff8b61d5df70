"""The root click group; each area adds its commands with a ``register(group)`` function.

The areas import heavy libraries (scipy, sqlalchemy, flask), so the root group loads an area only when
one of its commands runs: ``replaygate --help`` and ``replaygate traces`` stay fast.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import traceback

import click
from replaygate.instrumentation import __version__ as instrumentation_version

from replaygate.cli._failures import describe_failure
from replaygate.cli.version import __version__

__all__ = ["COMMANDS", "cli", "main", "versions"]

USAGE_OR_DATA_ERROR = 3

#: command name -> (area module, one-line help shown by ``replaygate --help``); a test keeps it true.
COMMANDS: dict[str, tuple[str, str]] = {
    "traces": ("_traces", "List captured traces, newest first."),
    "trace": ("_traces", "Show one trace: turns, answers, span tree, chunks, tool and LLM calls."),
    "failures": ("_traces", "The failure inbox: failure candidates with their reasons, newest first."),
    "inbox": ("_inbox", "The failure inbox grouped into classes, with the checks each class suggests."),
    "scenarios": ("_scenarios", "Lint, list, show and change the golden set."),
    "promote": ("_scenarios", "Promote a captured trace into a regression scenario (idempotent)."),
    "import-csv": ("_scenarios", "Create scenarios from a question-set CSV (all rows or nothing)."),
    "run": ("_run", "Replay the golden set against a candidate and write a run file."),
    "merge": ("_run", "Merge the run files of every shard of one run."),
    "fingerprint": ("_run", "Print the fingerprint a run was recorded with."),
    "judge": ("_judge", "Judges: measure their agreement with people."),
    "label": ("_label", "Walk a run's reading queue and label each attempt (who and when recorded)."),
    "compare": ("_gate", "Compare two runs of the same suite."),
    "gate": ("_gate", "Apply the release gate: 0 pass, 1 block, 2 needs sign-off or review, 3 error."),
    "review": ("_gate", "Mark a newly failing scenario of a report read (needed before signing)."),
    "sign": ("_gate", "Sign the gate decision, stored with both fingerprints."),
    "drift": ("_gate", "Compare the latest two scheduled runs of an unchanged configuration."),
    "canary": ("_canary", "Canary releases: start, watch, widen, promote, roll back."),
    "serve": ("_canary", "Serve the release page."),
    "collect": ("_collect", "Receive OTLP/HTTP spans and feedback from agents and write them to the store."),
    "hash-password": ("_canary", "Print a password hash for the users file of `replaygate serve`."),
    "doctor": (
        "_doctor",
        "Print the resolved settings (store, exporters, canary source, golden set); check each.",
    ),
    "push": ("_push", "Push replay results or a gate outcome to Langfuse or Phoenix (idempotent)."),
}


class _LazyGroup(click.Group):
    """A group that imports an area's module the first time one of its commands is asked for."""

    def _load(self, area: str) -> None:
        module = importlib.import_module(f"replaygate.cli.{area}")
        staging = click.Group()
        module.register(staging)
        for name, command in staging.commands.items():
            self.commands.setdefault(name, command)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self._load(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_versions(ctx) if value else None,
    help="Print the versions of the three distributions and exit.",
)
@click.option("--debug", is_flag=True, help="Print the traceback of an error (env REPLAYGATE_DEBUG=1).")
def cli(debug: bool) -> None:
    """replaygate: capture agent runs, promote failures, replay, gate and release."""


def versions() -> dict[str, str]:
    """The version of each distribution, read from its version file (the build reads the same file)."""
    from replaygate.replay import __version__ as replay_version  # on use: the replay part is heavy

    return {
        "replaygate": __version__,
        "replaygate-instrumentation": instrumentation_version,
        "replaygate-replay": replay_version,
    }


def _print_versions(ctx: click.Context) -> None:
    if ctx.resilient_parsing:
        return
    for name, version in versions().items():
        click.echo(f"{name} {version}")
    ctx.exit()


def _debug(args: list[str]) -> bool:
    """``--debug`` before the command name, or ``REPLAYGATE_DEBUG=1``."""
    before = args[: next((i for i, a in enumerate(args) if not a.startswith("-")), len(args))]
    return "--debug" in before or os.environ.get("REPLAYGATE_DEBUG", "") not in ("", "0")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every failure prints ``error: <file>[:line]: <what>`` and exits with code 3.

    The traceback is printed only under ``--debug`` (see :mod:`replaygate.cli._failures`). Called
    without ``argv`` (the console script: the process ends with the command), what the command leaves
    is frozen out of the garbage collector (``gc.freeze``) when it returns or exits: the interpreter's
    last collection would otherwise walk and free every object left, 0.5 s after a run of 10,000
    attempts, only for the process to end; exit handlers (exporters' flushes) still run as before.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _main(args)
    finally:
        if argv is None:
            gc.freeze()


def _main(args: list[str]) -> None:
    try:
        rc = cli.main(args=args, prog_name="replaygate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        cause = exc.__cause__ or exc.__context__  # a data error turned into a message keeps its cause
        if cause is not None and _debug(args):
            traceback.print_exception(cause)
        exc.show()
        sys.exit(USAGE_OR_DATA_ERROR if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(USAGE_OR_DATA_ERROR)
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the one place every failure becomes one clean line
        if _debug(args):
            traceback.print_exc()
        click.echo(f"error: {describe_failure(exc)}", err=True)
        sys.exit(USAGE_OR_DATA_ERROR)
    # with standalone_mode=False, click returns the code of ctx.exit(n) instead of exiting
    if isinstance(rc, int) and rc:
        sys.exit(rc)
