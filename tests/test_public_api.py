"""Pin each part's public names: a rename is a breaking change and must show up here."""

import importlib
import pathlib

import pytest
import replaygate.instrumentation
import replaygate.replay

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_namespace_has_no_init() -> None:
    for base in ("src", "instrumentation/src", "replay/src"):
        assert not (ROOT / base / "replaygate" / "__init__.py").exists(), base


@pytest.mark.parametrize("module", ["replaygate.instrumentation", "replaygate.replay", "replaygate.cli"])
def test_all_names_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.{name}"


def test_error_tree() -> None:
    assert issubclass(replaygate.replay.ScenarioError, replaygate.instrumentation.ReplaygateError)
    assert issubclass(replaygate.instrumentation.StoreError, replaygate.instrumentation.ReplaygateError)
