"""One source for each distribution's version: its version file, which the build reads (hatch)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import replaygate.instrumentation
import replaygate.replay
from click.testing import CliRunner

from replaygate.cli import cli, versions
from replaygate.cli.version import __version__ as root_version

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {
    "replaygate": (ROOT, root_version),
    "replaygate-instrumentation": (ROOT / "instrumentation", replaygate.instrumentation.__version__),
    "replaygate-replay": (ROOT / "replay", replaygate.replay.__version__),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_the_build_reads_the_version_file(name: str) -> None:
    folder, declared = DISTRIBUTIONS[name]
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["name"] == name
    assert "version" not in project["project"], "a second, hand-kept copy of the version"
    assert project["project"]["dynamic"] == ["version"]
    path = folder / project["tool"]["hatch"]["version"]["path"]
    found = re.search(r'^__version__ = "([^"]+)"$', path.read_text(encoding="utf-8"), re.M)
    assert found is not None and found.group(1) == declared
    assert version(name) == declared  # the installed metadata came from that file


def test_version_prints_all_three() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"{name} {v}" for name, (_, v) in DISTRIBUTIONS.items()]
    assert versions() == {name: v for name, (_, v) in DISTRIBUTIONS.items()}
