"""The page built from the environment (gunicorn), no state change on GET, the scheduled check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from replaygate.canary import CanaryError
from replaygate.web import WebConfig, create_app
from replaygate.web._scheduler import start_scheduled_checks
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_from_env_needs_a_secret_key(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.delenv("REPLAYGATE_SECRET_KEY", raising=False)
    with pytest.raises(CanaryError, match="REPLAYGATE_SECRET_KEY must be set"):
        WebConfig.from_env({})
    with pytest.raises(SystemExit) as stopped:
        create_app()
    assert stopped.value.code == 3
    err = capsys.readouterr().err
    assert "REPLAYGATE_SECRET_KEY must be set" in err and "Traceback" not in err


def test_from_env_reads_policy_cookies_and_check_interval(tmp_path: Path) -> None:
    policy = ROOT / "examples" / "gate-policy.yaml"
    env = {
        "REPLAYGATE_SECRET_KEY": "k" * 32,
        "REPLAYGATE_POLICY": str(policy),
        "REPLAYGATE_SECURE_COOKIES": "false",
        "REPLAYGATE_STORE": f"sqlite:///{tmp_path / 's.db'}",
        "REPLAYGATE_CHECK_INTERVAL_S": "0",
    }
    config = WebConfig.from_env(env)
    assert config.policy == str(policy) and config.secure_cookies is False and config.auto_check is False
    assert WebConfig.from_env({**env, "REPLAYGATE_SECURE_COOKIES": ""}).secure_cookies is True
    with pytest.raises(CanaryError, match="REPLAYGATE_SECURE_COOKIES"):
        WebConfig.from_env({**env, "REPLAYGATE_SECURE_COOKIES": "maybe"})
    with pytest.raises(CanaryError, match="no such file"):
        WebConfig.from_env({**env, "REPLAYGATE_POLICY": str(tmp_path / "missing.yaml")})
    # the policy's tolerances are the ones the page's controller judges by
    app = create_app(config)
    with app.app_context():
        from replaygate.canary import tolerances_from_policy
        from replaygate.gate import load_policy
        from replaygate.web._context import controller

        assert controller().tolerances == tolerances_from_policy(load_policy(policy))
        controller().close()


def test_page_view_never_rolls_back_the_scheduled_check_does(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "rita")
    env.controller.start("dec-pass", actor="rita")
    helpers.write(env.path, "baseline", 200)
    helpers.write(env.path, "candidate", 80, escalate_every=1)  # every candidate request escalates
    assert client.get("/").status_code == 200
    assert client.get("/measures").status_code == 200
    assert env.controller.state().status == "canary"  # a GET changed nothing
    thread = start_scheduled_checks(env.app, 0.05)
    deadline = time.monotonic() + 20
    while env.controller.state().status == "canary" and time.monotonic() < deadline:
        time.sleep(0.05)
    env.app.extensions["replaygate.scheduler"].set()
    thread.join(5)
    assert env.controller.state().status == "rolled_back"
    assert env.controller.audit(limit=1)[0].actor == "release page (scheduled check)"


def _gunicorn(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--preload",  # as the README's command: the app is built once, in the master
            "-w",
            "4",
            "-b",
            f"127.0.0.1:{port}",
            "replaygate.web:create_app()",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_gunicorn_without_secret_stops_with_a_message(tmp_path: Path) -> None:
    env = {"REPLAYGATE_STORE": f"sqlite:///{tmp_path / 's.db'}", "REPLAYGATE_SECRET_KEY": ""}
    proc = _gunicorn(env, free_port())
    try:
        _, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "REPLAYGATE_SECRET_KEY must be set" in err and "Traceback" not in err
