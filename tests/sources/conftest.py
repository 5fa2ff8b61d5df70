"""Fixtures for the trace sources: a Langfuse stand-in and a real Phoenix, each fed by the example agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sources.langfuse_standin import PUBLIC_KEY, SECRET_KEY, LangfuseStandIn, running_standin

ROOT = Path(__file__).resolve().parents[2]


def run_traffic(store: Path, n: int, seed: int, env: dict[str, str]) -> dict[str, int]:
    """Simulated production traffic in its own process, exported as ``env`` says and kept in ``store``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_", "REPLAYGATE_"))}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests/sources/traffic_driver.py"), str(n), str(seed), str(store)],
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    counts: dict[str, int] = json.loads(result.stdout.strip().splitlines()[-1])
    return counts


@pytest.fixture(scope="session")
def langfuse_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LangfuseStandIn, Path]]:
    """The stand-in, holding the example agent's traffic as exported by replaygate's Langfuse exporter."""
    store = tmp_path_factory.mktemp("langfuse") / "store.db"
    with running_standin() as standin:
        run_traffic(
            store,
            60,
            2026,
            {
                "LANGFUSE_PUBLIC_KEY": PUBLIC_KEY,
                "LANGFUSE_SECRET_KEY": SECRET_KEY,
                "LANGFUSE_HOST": standin.url,
                "REPLAYGATE_LANGFUSE_CAPTURE_CONTENT": "true",
            },
        )
        yield standin, store


@pytest.fixture(scope="session")
def replay_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run file: the example golden set's smoke tier against the support agent, k = 2."""
    out = tmp_path_factory.mktemp("replay") / "run.json"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_", "REPLAYGATE_"))}
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("replaygate")),
            "run",
            "--target",
            "examples.support_agent.target:run_session",
            "--config",
            str(ROOT / "examples/support_agent/configs/production.yaml"),
            "--golden",
            str(ROOT / "examples/support_agent/golden"),
            "--tier",
            "smoke",
            "--repeats",
            "2",
            "--quiet",
            "--no-artifacts",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), "REPLAYGATE_STORE": "off"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert out.exists(), result.stdout[-2000:] + result.stderr[-2000:]
    return out
