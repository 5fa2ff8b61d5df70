"""Reuse the run-file factory of tests/gate (loaded by path: test folders are not packages)."""

import importlib.util
import pathlib

import pytest

_spec = importlib.util.spec_from_file_location(
    "replaygate_gate_test_factory", pathlib.Path(__file__).resolve().parents[1] / "gate" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_factory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_factory)


@pytest.fixture
def f():
    return _factory.Factory
