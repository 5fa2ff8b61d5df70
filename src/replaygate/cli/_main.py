"""The root click group; each area adds its commands with a ``register(group)`` function."""

from __future__ import annotations

import sys

import click
from replaygate.instrumentation import ReplaygateError, __version__

from replaygate.cli import _canary, _gate, _judge, _run, _scenarios, _traces

__all__ = ["cli", "main"]

USAGE_OR_DATA_ERROR = 3


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaygate")
def cli() -> None:
    """replaygate: capture agent runs, promote failures, replay, gate and release."""


for _area in (_traces, _scenarios, _run, _judge, _gate, _canary):
    _area.register(cli)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; a :class:`ReplaygateError` prints its message and exits with code 3."""
    try:
        rc = cli.main(args=argv, prog_name="replaygate", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(USAGE_OR_DATA_ERROR if exc.exit_code == 2 else exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(USAGE_OR_DATA_ERROR)
    except ReplaygateError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(USAGE_OR_DATA_ERROR)
    # with standalone_mode=False, click returns the code of ctx.exit(n) instead of exiting
    if isinstance(rc, int) and rc:
        sys.exit(rc)
