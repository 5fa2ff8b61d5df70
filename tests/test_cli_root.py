"""The root CLI loads areas lazily; its static command table must match what the areas register."""

import importlib
import subprocess
import sys

import click
from click.testing import CliRunner

from replaygate.cli import COMMANDS, cli


def test_command_table_matches_the_areas() -> None:
    registered: dict[str, str] = {}
    for area in sorted({a for a, _ in COMMANDS.values()}):
        group = click.Group()
        importlib.import_module(f"replaygate.cli.{area}").register(group)
        for name in group.commands:
            registered[name] = area
    assert registered == {name: area for name, (area, _) in COMMANDS.items()}


def test_help_lists_every_command_without_loading_areas() -> None:
    code = (
        "import sys; from replaygate.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(('scipy', 'flask', 'sqlalchemy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in COMMANDS:
        assert name in out
    assert "LOADED []" in out


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2 and "No such command" in result.output
