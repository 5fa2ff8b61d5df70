"""The canary CLI: decisions, start, status, widen, check, rollback, simulate, serve config, hash-password."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from werkzeug.security import check_password_hash

from replaygate.canary import CanaryController
from replaygate.cli import _canary, cli


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, make_controller: Callable[..., CanaryController]) -> CliRunner:
    ctl = make_controller(min_count=20)
    monkeypatch.setattr(_canary, "_controller", lambda store, policy, min_count=None: ctl)
    return CliRunner()


def test_start_status_widen_rollback(runner: CliRunner, traces: Any) -> None:
    out = runner.invoke(cli, ["canary", "decisions"])
    assert out.exit_code == 0 and "dec-pass" in out.output and "dec-block" not in out.output
    refused = runner.invoke(cli, ["canary", "start", "dec-block", "--by", "ana"])
    assert refused.exit_code == 1 and "only a signed pass" in refused.output
    bad_plan = runner.invoke(cli, ["canary", "start", "dec-pass", "--plan", "5,1"])
    assert bad_plan.exit_code == 2 and "increase" in bad_plan.output
    started = runner.invoke(cli, ["canary", "start", "dec-pass", "--by", "ana", "--plan", "10,50,100"])
    assert started.exit_code == 0 and "now canary 10% (step 1 of 3)" in started.output
    widen = runner.invoke(cli, ["canary", "widen", "--by", "ana"])
    assert widen.exit_code == 1 and "not enough traffic yet" in widen.output
    traces.add("baseline", 200)
    traces.add("candidate", 60)
    status = runner.invoke(cli, ["canary", "status", "--json"])
    data = json.loads(status.output)
    assert data["state"]["status"] == "canary" and data["measures"]["candidate_n"] == 60
    # no error in 60 requests does not yet show an error rate within +2 points: the rule says how many more
    assert data["evidence"]["decision"] == "hold"
    error = next(m for m in data["evidence"]["measures"] if m["name"] == "error_rate")
    assert error["verdict"] == "undecided" and error["needed_candidate_requests"] > 0
    assert f"not yet decided (needs ~{error['needed_candidate_requests']} more" in error["words"]
    assert error["upper"] > error["tolerance_value"] == 0.02
    traces.add("baseline", 600)
    traces.add("candidate", 140)
    data = json.loads(runner.invoke(cli, ["canary", "status", "--json"]).output)
    assert data["evidence"]["can_widen"] is True and data["evidence"]["decision"] == "widen"
    assert {m["verdict"] for m in data["evidence"]["measures"]} <= {"within", "unchecked"}
    assert runner.invoke(cli, ["canary", "status"]).exit_code == 0
    widened = runner.invoke(cli, ["canary", "widen", "--by", "ana", "--reason", "clean"])
    assert widened.exit_code == 0 and "canary 50%" in widened.output
    check = runner.invoke(cli, ["canary", "check"])
    assert check.exit_code == 0
    rolled = runner.invoke(cli, ["canary", "rollback", "--by", "bo", "--reason", "pager"])
    assert rolled.exit_code == 0 and "rolled back" in rolled.output
    again = runner.invoke(cli, ["canary", "rollback", "--by", "bo", "--reason", "pager"])
    assert again.exit_code == 0 and "nothing to do" in again.output
    assert runner.invoke(cli, ["canary", "rollback"]).exit_code == 2  # --reason is required


def test_check_exits_1_on_breach_and_rolls_back(runner: CliRunner, traces: Any) -> None:
    runner.invoke(cli, ["canary", "start", "dec-pass", "--plan", "50,100"])
    traces.add("baseline", 200)
    traces.add("candidate", 100, error=True)
    out = runner.invoke(cli, ["canary", "check", "--json"])
    assert out.exit_code == 1
    data = json.loads(out.output)
    assert data["rolled_back"] is True and data["evidence"]["breaches"]
    assert data["state"]["status"] == "canary"  # the status as evaluated, before the rollback
    assert "rolled back" in runner.invoke(cli, ["canary", "status"]).output


def test_simulate_command(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_simulate(ctl: Any, **kwargs: Any) -> Any:
        from replaygate.canary import SimulationReport

        seen.update(kwargs)
        return SimulationReport(seed=kwargs["seed"], requests=10, batches=1, candidate_requests=2,
                                final_status="canary", final_share=0.1)  # fmt: skip

    monkeypatch.setattr("replaygate.canary._simulate.simulate_live_traffic", fake_simulate)
    none = runner.invoke(cli, ["canary", "simulate"])
    assert none.exit_code == 2 and "no canary is running" in none.output
    out = runner.invoke(
        cli, ["canary", "simulate", "--start", "dec-pass", "--plant-escalation", "0.1", "--seed", "4"]
    )
    assert out.exit_code == 0, out.output
    assert seen["seed"] == 4 and seen["candidate"].escalation_rate == pytest.approx(0.2)
    assert "10 requests (2 on the candidate)" in out.output


def test_hash_password() -> None:
    out = CliRunner().invoke(cli, ["hash-password", "--password-stdin"], input="s3cret\n")
    assert out.exit_code == 0 and check_password_hash(out.output.strip(), "s3cret")
    assert CliRunner().invoke(cli, ["hash-password", "--password-stdin"], input="\n").exit_code == 2


def test_users_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replaygate.canary import CanaryError
    from replaygate.web import hash_password, load_users

    path = tmp_path / "users.yaml"
    ana = f"  ana: {{password_hash: '{hash_password('pw')}', role: releaser}}\n"
    path.write_text(f"users:\n{ana}  bo: {{password_hash: x}}\n")
    users = load_users(path)
    assert users["ana"].can_act and users["bo"].role == "viewer" and not users["bo"].can_act
    path.write_text("users:\n  eve: {password_hash: x, role: admin}\n")
    with pytest.raises(CanaryError, match="viewer, reviewer, responder, releaser"):
        load_users(path)
    monkeypatch.setenv("REPLAYGATE_USERS", "users: {cy: {password_hash: h, role: releaser}}")
    assert load_users()["cy"].role == "releaser"


def test_serve_builds_the_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replaygate.web import hash_password

    users = tmp_path / "users.yaml"
    users.write_text(f"users:\n  ana: {{password_hash: '{hash_password('pw')}', role: releaser}}\n")
    served: dict[str, Any] = {}

    def fake_run_simple(host: str, port: int, app: Any, **kwargs: Any) -> None:
        served.update(host=host, port=port, app=app)

    monkeypatch.setattr("werkzeug.serving.run_simple", fake_run_simple)
    args = [
        "serve",
        "--port",
        "9123",
        "--users",
        str(users),
        "--store",
        str(tmp_path / "s.db"),
        "--insecure-cookies",
    ]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert "http://127.0.0.1:9123/" in out.output
    app = served["app"]
    assert served["port"] == 9123 and app.config["SESSION_COOKIE_SECURE"] is False
    assert set(app.extensions["replaygate"].users) == {"ana"}
    assert app.test_client().get("/api/canary").json["status"] == "idle"


def test_canary_actions_print_versioned_json(runner: CliRunner, traces: Any) -> None:
    started = runner.invoke(cli, ["canary", "start", "dec-pass", "--by", "ana", "--plan", "10,100", "--json"])
    assert started.exit_code == 0
    doc = json.loads(started.output)
    assert (doc["format_version"], doc["kind"], doc["action"], doc["outcome"]) == (
        1,
        "canary-action",
        "start",
        "applied",
    )
    assert doc["before"]["status"] != "canary" and doc["after"]["status"] == "canary"
    refused = runner.invoke(cli, ["canary", "widen", "--by", "ana", "--json"])
    assert refused.exit_code == 1  # refused: still exit 1, the reason in the document
    doc = json.loads(refused.stdout)
    assert doc["outcome"] == "refused" and "not enough traffic" in doc["reason"] and doc["changed"] is False
    rolled = runner.invoke(cli, ["canary", "rollback", "--by", "bo", "--reason", "pager", "--json"])
    assert rolled.exit_code == 0 and json.loads(rolled.output)["after"]["status"] != "canary"
    status = json.loads(runner.invoke(cli, ["canary", "status", "--json"]).output)
    assert status["format_version"] == 1 and status["kind"] == "canary-status"
