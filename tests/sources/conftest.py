"""Fixtures for the trace sources: a Langfuse stand-in and a real Phoenix, each fed by the example agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.sources.langfuse_standin import PUBLIC_KEY, SECRET_KEY, LangfuseStandIn, running_standin
from tests.sources.phoenix_env import PHOENIX_HELP, PhoenixInstallError, install_phoenix

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


def replay(out: Path, env: dict[str, str]) -> Path:
    """A real run file: the example golden set's smoke tier against the support agent, k = 2.

    ``env`` may point the run's own export somewhere (its attempts' spans go there as the run goes).
    """
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
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), "REPLAYGATE_STORE": "off", **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert out.exists(), result.stdout[-2000:] + result.stderr[-2000:]
    return out


@pytest.fixture(scope="session")
def replay_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run file (no export)."""
    return replay(tmp_path_factory.mktemp("replay") / "run.json", {})


def _unavailable(reason: str) -> None:
    if os.environ.get("REPLAYGATE_REQUIRE_PHOENIX") == "1":
        pytest.fail(f"Phoenix is required here but {reason}")
    pytest.skip(f"{reason}: {PHOENIX_HELP}")


def phoenix_executable() -> Path:
    """``phoenix`` from its own virtual environment (installed on first use; see phoenix_env.py)."""
    try:
        return install_phoenix()
    except PhoenixInstallError as exc:
        _unavailable(str(exc))
        raise


@pytest.fixture(scope="session")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``phoenix serve`` on 127.0.0.1 with its own working folder, for the whole session."""
    import time

    import httpx

    exe = phoenix_executable()
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("w")
    process = subprocess.Popen([str(exe), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                _unavailable(f"phoenix serve exited ({process.returncode}); see {work / 'phoenix.log'}")
            try:
                if httpx.get(f"{url}/v1/projects", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                _unavailable(f"phoenix serve did not answer within 180 s; see {work / 'phoenix.log'}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def phoenix_world(phoenix_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Phoenix and the store, both holding the example agent's traffic (feedback went to both)."""
    import time

    import httpx

    store = tmp_path_factory.mktemp("phoenix-store") / "store.db"
    run_traffic(
        store,
        60,
        2027,
        {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{phoenix_url}/v1/traces",
            "REPLAYGATE_OTLP_CAPTURE_CONTENT": "true",
            "PHOENIX_COLLECTOR_ENDPOINT": phoenix_url,
        },
    )
    from replaygate.instrumentation import TraceStore

    with TraceStore(store, create=False) as ts:
        expected = ts.count()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # Phoenix inserts spans asynchronously
        page = httpx.get(
            f"{phoenix_url}/v1/projects/default/traces", params={"limit": 1000}, timeout=10
        ).json()
        if len(page["data"]) >= expected:
            break
        time.sleep(0.5)
    return phoenix_url, store
