"""The shared CLI options: one name and one help text each, old names hidden, one rule for ``--by``."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from replaygate.cli import _options
from replaygate.cli._main import COMMANDS


def _commands() -> Iterator[tuple[str, click.Command]]:
    group = click.Group()
    for area in sorted({area for area, _ in COMMANDS.values()}):
        importlib.import_module(f"replaygate.cli.{area}").register(group)

    def walk(prefix: str, cmd: click.Command) -> Iterator[tuple[str, click.Command]]:
        yield prefix, cmd
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from walk(f"{prefix} {name}", sub)

    for name, cmd in group.commands.items():
        yield from walk(name, cmd)


def _option(cmd: click.Command, flag: str) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and flag in p.opts), None)


def _reference(decorator: object) -> click.Option:
    @click.command()
    def probe(**_: object) -> None:
        """Carry the option."""

    found = decorator(probe).params[0]  # type: ignore[operator]
    assert isinstance(found, click.Option)
    return found


def test_each_shared_option_has_one_declaration_and_help_text() -> None:
    shared = {
        "--store": _reference(_options.store_option),
        "--json": _reference(_options.json_option),
        "--by": _reference(_options.by_option),
        "--baseline-2": _reference(_options.baseline_2_option),
        "--judge-timeout": _reference(_options.judge_timeout_option()),
    }
    seen: dict[str, list[str]] = {flag: [] for flag in shared}
    for name, cmd in _commands():
        for flag, ref in shared.items():
            opt = _option(cmd, flag)
            if opt is None:
                continue
            seen[flag].append(name)
            assert opt.help == ref.help, f"{name} {flag}: its own help text"
            assert opt.name == ref.name, f"{name} {flag}: parameter {opt.name}, not {ref.name}"
    for flag in ("--store", "--json", "--by"):
        assert len(seen[flag]) >= 3, (flag, seen[flag])
    assert {"run", "gate", "sign", "review", "merge"} <= set(seen["--json"])
    actions = {f"canary {a}" for a in ("start", "widen", "promote", "rollback", "status", "check")}
    assert actions <= set(seen["--json"])
    assert {"review", "sign", "label", "canary start", "canary rollback"} <= set(seen["--by"])
    assert {"compare", "gate"} <= set(seen["--baseline-2"])
    assert {"run", "judge calibrate"} <= set(seen["--judge-timeout"])


def test_old_names_still_parse_but_are_hidden_from_help() -> None:
    commands = dict(_commands())
    compare, calibrate = commands["compare"], commands["judge calibrate"]
    assert "--noise" in _option(compare, "--baseline-2").opts  # type: ignore[union-attr]
    assert "--timeout" in _option(calibrate, "--judge-timeout").opts  # type: ignore[union-attr]
    runner = CliRunner()
    compare_help = runner.invoke(compare, ["--help"]).output
    assert "--baseline-2" in compare_help and "--noise" not in compare_help
    calibrate_help = runner.invoke(calibrate, ["--help"]).output
    assert "--judge-timeout" in calibrate_help and "--timeout" not in calibrate_help
    # run keeps its own --timeout (the target's) beside --judge-timeout
    run = commands["run"]
    assert _option(run, "--timeout") is not _option(run, "--judge-timeout")


@click.command()
@_options.by_option
@_options.baseline_2_option
def _probe(by: str, baseline_2: str | None) -> None:
    click.echo(f"{by}|{baseline_2}")


def test_by_defaults_to_user_then_the_login_name_else_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("USER", "ana")
    assert runner.invoke(_probe, []).output == "ana|None\n"
    assert runner.invoke(_probe, ["--by", "bo", "--noise", "x.json"]).output == "bo|x.json\n"
    monkeypatch.delenv("USER")
    monkeypatch.setattr(_options.getpass, "getuser", lambda: "login-name")
    assert runner.invoke(_probe, ["--baseline-2", "y.json"]).output == "login-name|y.json\n"

    def no_account() -> str:
        raise OSError("no passwd entry")

    monkeypatch.setattr(_options.getpass, "getuser", no_account)
    refused = runner.invoke(_probe, [])
    assert refused.exit_code == 2 and "--by NAME" in refused.output
    assert runner.invoke(_probe, ["--by", "  "]).exit_code == 2  # a blank name is no name
