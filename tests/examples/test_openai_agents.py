"""examples/openai_agents: an openai-agents SDK agent traced by OpenInference, promoted and replayed."""

import asyncio
import warnings
from pathlib import Path

from examples.openai_agents.demo import run_demo
from replaygate.golden import GoldenSet


def test_traced_promoted_and_replayed_with_the_same_tool_calls(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        lines = asyncio.run(run_demo(tmp_path))
    production, tools, promoted, replay = lines
    assert "shipped on 2026-11-28" in production
    assert "tools ['lookup_order'], 2 LLM calls (gpt-4o-mini)" in tools
    assert promoted.startswith("promoted ")
    [scenario] = GoldenSet(tmp_path / "golden").load()
    [expected] = [c for c in scenario.checks if c.type == "expected_tools"]
    assert list(expected.tools) == ["lookup_order"]  # seen in production
    # ...and passes in replay, where the instrumentor's spans are captured too
    assert replay.startswith("replay: ['pass', 'pass'], expected_tools [True, True]")
    tokens = tools.split("tokens ")[1]
    assert f"tokens {tokens}" in replay  # same token counts in production and in replay
    assert "cost $None" not in replay


def test_help_prints_usage_and_runs_nothing(tmp_path, monkeypatch, capsys) -> None:
    import pytest

    from examples.openai_agents.__main__ import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "usage: python -m examples.openai_agents" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # no demo into a folder named --help
