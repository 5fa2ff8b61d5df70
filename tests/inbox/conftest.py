"""The demo's production traffic, captured once per session into a store (shared by the inbox tests)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import replaygate.instrumentation as ri
from opentelemetry.sdk.trace import TracerProvider

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from examples.support_agent import load_config  # noqa: E402
from examples.support_agent.traffic import simulate  # noqa: E402


@pytest.fixture(scope="session")
def demo_traffic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """300 requests of the production configuration, seed 2026 (the demo's), traced into a store."""
    db = tmp_path_factory.mktemp("inbox") / "store.db"
    provider = TracerProvider()
    ri.configure(tracer_provider=provider, store=str(db), otlp_endpoint=False, langfuse=False)
    config = load_config("production").model_copy(update={"latency_ms": 0.0})
    try:
        counts = simulate(300, config, 2026, feedback_rate=0.5, store=db)
    finally:
        ri.shutdown(timeout=10)
        provider.shutdown()
    return db, counts
