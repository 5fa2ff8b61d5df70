"""The options several commands share, each declared once here with one name and one help text.

- ``--store PATH|URL``: the store (a file, ``sqlite:///PATH`` or ``postgresql+psycopg://`` URL);
  default ``$REPLAYGATE_STORE``, else ``.replaygate/replaygate.db``.
- ``--json``: print JSON on stdout instead of text (documents carry ``format_version``); exit
  codes stay the same.
- ``--by NAME``: who acts, recorded in the audit log, reviews, labels and decisions. One rule for every
  command: default ``$USER``, else the login name of the account; a usage error when there is neither.
- ``--baseline-2 RUN``: a second baseline run of the same configuration (the noise floor, and flakiness).
  ``--noise`` is the old name on ``compare``, still accepted and hidden from ``--help``.
- ``--judge-timeout SECONDS``: the LLM judge's request timeout. ``--timeout`` is the old name on
  ``judge calibrate``, still accepted and hidden (``run --timeout`` is the target's timeout).
"""

from __future__ import annotations

import functools
import getpass
import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click
from replaygate.instrumentation import ReplaygateError

__all__ = [
    "DATA_ERROR",
    "JSON_FORMAT_VERSION",
    "AliasedOption",
    "DataError",
    "baseline_2_option",
    "by_option",
    "data_errors",
    "echo_json",
    "json_option",
    "judge_timeout_option",
    "store_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The ``format_version`` of the ``--json`` documents this module's ``echo_json`` prints.
JSON_FORMAT_VERSION = 1
#: The exit code of a usage or data error.
DATA_ERROR = 3


class DataError(click.ClickException):
    """A data error as ``error: <what>`` and exit code 3 (also under click's own runner)."""

    exit_code = DATA_ERROR

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def data_errors(fn: F) -> F:
    """Turn a ReplaygateError into exit code 3 with its message (``--debug`` prints its traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ReplaygateError as exc:
            raise DataError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


class AliasedOption(click.Option):
    """An option whose old names keep working but are left out of ``--help``."""

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        names = list(args[0]) + list(hidden_aliases)
        super().__init__(names, *args[1:], **kwargs)
        self.hidden_aliases = hidden_aliases

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """The help line without the hidden aliases."""
        opts, secondary = self.opts, self.secondary_opts
        self.opts = [o for o in opts if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts, self.secondary_opts = opts, secondary


def store_option(fn: F) -> F:
    """``--store PATH|URL``."""
    return click.option(
        "--store",
        metavar="PATH|URL",
        default=None,
        help="Store: a file, sqlite:///PATH or postgresql+psycopg:// URL "
        "[default: $REPLAYGATE_STORE or .replaygate/replaygate.db].",
    )(fn)


def json_option(fn: F) -> F:
    """``--json`` (parameter ``as_json``)."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help='Print JSON for scripts instead of text (README: "... and JSON for scripts").',
    )(fn)


def _user(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value and value.strip():
        return value.strip()
    user = os.environ.get("USER", "").strip()
    if not user:
        try:
            user = getpass.getuser().strip()
        except (OSError, KeyError):  # no login variable and no passwd entry for this uid
            user = ""
    if not user:
        raise click.UsageError("say who acts: --by NAME (or set $USER)", ctx)
    return user


def by_option(fn: F) -> F:
    """``--by NAME``, default ``$USER`` or the login name (a usage error when there is neither)."""
    return click.option(
        "--by",
        "by",
        default=None,
        callback=_user,
        metavar="NAME",
        show_default="$USER",
        help="Who acts (recorded).",
    )(fn)


def baseline_2_option(fn: F) -> F:
    """``--baseline-2 RUN`` (parameter ``baseline_2``; hidden old name ``--noise``)."""
    return click.option(
        "--baseline-2",
        "baseline_2",
        cls=AliasedOption,
        hidden_aliases=("--noise",),
        type=click.Path(dir_okay=False),
        default=None,
        help="A second baseline run of the same configuration (noise floor and flakiness).",
    )(fn)


def judge_timeout_option(*, old_names: tuple[str, ...] = ()) -> Callable[[F], F]:
    """``--judge-timeout SECONDS`` (parameter ``judge_timeout``), with the command's old names hidden."""
    return click.option(
        "--judge-timeout",
        "judge_timeout",
        cls=AliasedOption,
        hidden_aliases=old_names,
        type=click.FloatRange(min=0, min_open=True),
        default=30.0,
        show_default=True,
        help="LLM judge request timeout (s).",
    )


def echo_json(kind: str, payload: dict[str, Any]) -> None:
    """Print ``payload`` as the ``--json`` document of ``kind`` (``format_version`` and ``kind`` first)."""
    document = {"format_version": JSON_FORMAT_VERSION, "kind": kind, **payload}
    click.echo(json.dumps(document, ensure_ascii=False, indent=2, default=str))
