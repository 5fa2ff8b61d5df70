"""End to end on PostgreSQL: four agent processes send OTLP (the SDK's HTTP exporter) to `replaygate collect`.

The receiver is the real command (a subprocess on 127.0.0.1) over a new database of the session's
PostgreSQL server; the agents are real processes with ``@trace_agent`` and the OTLP/HTTP exporter. Then
``failures``, ``trace``, ``promote``, a canary start / widen / rollback and the page work on that store,
and every trace the agents made is there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from replaygate.cli import cli
from replaygate.gate import DecisionStore, unread_scenarios
from replaygate.store import TraceStore
from replaygate.web import WebConfig, create_app
from tests.collect.command import free_port, start_collect
from tests.web.gate_fixture import write_gate_reports

TOKEN = "e2e-collect-token"
AGENTS = 4
CALLS = 40  # per agent: 80 requests per arm, enough to widen on a loose policy

AGENT = r"""
import json, sys
from opentelemetry import trace
from replaygate.instrumentation import configure, health, llm_call, shutdown, trace_agent

configure(store=None, otlp_endpoint=sys.argv[1], otlp_headers={"Authorization": "Bearer " + sys.argv[2]},
          otlp_capture_content=True, service_name="e2e-agent")
worker, calls = int(sys.argv[3]), int(sys.argv[4])
ids = []

@trace_agent(name="support-agent")
def respond(question: str, i: int) -> str:
    span = trace.get_current_span()
    ids.append(format(span.get_span_context().trace_id, "032x"))
    span.set_attribute("replaygate.variant", "candidate" if i % 2 else "baseline")
    with llm_call("gpt-4o-mini", provider="openai") as llm:
        llm.set_usage(input_tokens=500, output_tokens=60)
        llm.set_output("It ships tomorrow.")
    if i % 10 in (3, 4):  # a failure in each arm
        raise TimeoutError(f"inventory service timed out (worker {worker})")
    return "It ships tomorrow."

for i in range(calls):
    try:
        respond(f"where is order {worker}-{i}?", i)
    except TimeoutError:
        pass
ok = shutdown(60)
print(json.dumps({"ids": ids, "flushed": ok, "health": health()["exporters"].get("otlp", {})}))
"""

POLICY = """format_version: 1
guardrails:
  cost: {relative: 1.0}
  latency_p50: {absolute: 10.0}
  latency_p95: {absolute: 10.0}
  escalation_rate: {absolute: 0.5}
  empty_rate: {absolute: 0.5}
  error_rate: {absolute: 0.5}
"""


def _collect(url: str, port: int, tmp: Path) -> subprocess.Popen[bytes]:
    env = {"REPLAYGATE_COLLECT_TOKEN": TOKEN, "REPLAYGATE_STORE": url}
    return start_collect(port, tmp / "collect.log", "--workers", "2", env=env)


def _sign_a_pass(url: str, tmp: Path) -> str:
    _, signoff = write_gate_reports(tmp)
    decisions = DecisionStore(url)
    try:
        for scenario_id in unread_scenarios(signoff, ()):
            decisions.add_review(signoff, scenario_id, "ana", "read it")
        return decisions.sign(
            signoff, signed_by="ana", outcome="pass-with-sign-off", reason="order-status accepted"
        ).id
    finally:
        decisions.close()


def test_four_otlp_agents_to_collect_then_every_command_on_postgres(postgres: Any, tmp_path: Path) -> None:
    url = postgres.new_database()
    TraceStore(url).close()  # the schema, before anything else opens the store
    runner = CliRunner()
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    decision = _sign_a_pass(url, tmp_path)
    started = runner.invoke(
        cli,
        [
            "canary",
            "start",
            decision,
            "--by",
            "ana",
            "--plan",
            "50,100",
            "--store",
            url,
            "--policy",
            str(policy),
        ],
    )
    assert started.exit_code == 0, started.output

    port = free_port()
    collect = _collect(url, port, tmp_path)
    try:
        agents = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    AGENT,
                    f"http://127.0.0.1:{port}/v1/traces",
                    TOKEN,
                    str(w),
                    str(CALLS),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for w in range(AGENTS)
        ]
        results = []
        for agent in agents:
            out, err = agent.communicate(timeout=120)
            assert agent.returncode == 0, err.decode()
            results.append(json.loads(out.decode().strip().splitlines()[-1]))
    finally:
        collect.terminate()
        collect.wait(30)
    log = (tmp_path / "collect.log").read_text()
    # gunicorn, two workers, stopped gracefully by SIGTERM; no development server, no line per request
    assert collect.returncode == 0, log
    assert "gunicorn" in log and log.count("Booting worker") == 2, log
    assert "development server" not in log and "POST /v1/traces" not in log, log
    sent = {i for r in results for i in r["ids"]}
    assert len(sent) == AGENTS * CALLS and all(r["flushed"] for r in results)
    assert all(r["health"].get("dropped_spans", 0) == 0 for r in results)

    with TraceStore(url) as store:  # every trace is there, whole
        stored = store.list_traces(limit=None)
        assert {r.summary.trace_id for r in stored} == sent
        assert all(len(r.spans) == 2 for r in stored)
        failed = {r.summary.trace_id for r in store.failures(limit=None)}
    assert len(failed) == AGENTS * CALLS // 5

    listed = runner.invoke(cli, ["failures", "--store", url, "--json", "--limit", "100"])
    assert listed.exit_code == 0, listed.output
    shown = json.loads(listed.output)
    rows = shown if isinstance(shown, list) else shown.get("traces", shown.get("failures"))
    assert {row["trace_id"] for row in rows} == failed
    one = sorted(failed)[0]
    trace = runner.invoke(cli, ["trace", one[:12], "--store", url])
    assert trace.exit_code == 0 and "inventory service timed out" in trace.output, trace.output
    golden = tmp_path / "golden"
    promoted = runner.invoke(
        cli,
        ["promote", one[:12], "--store", url, "--golden", str(golden), "--owner", "ana",
         "--origin", "production-incident"],
    )  # fmt: skip
    assert promoted.exit_code == 0, promoted.output
    assert any(golden.rglob("*.yaml")) and "where is order" in "".join(
        p.read_text() for p in golden.rglob("*.yaml")
    )

    status = json.loads(
        runner.invoke(cli, ["canary", "status", "--json", "--store", url, "--policy", str(policy)]).output
    )
    assert status["measures"]["baseline_n"] == status["measures"]["candidate_n"] == AGENTS * CALLS // 2
    widened = runner.invoke(cli, ["canary", "widen", "--by", "ana", "--store", url, "--policy", str(policy)])
    assert widened.exit_code == 0 and "100%" in widened.output, widened.output
    rolled = runner.invoke(cli, ["canary", "rollback", "--by", "bo", "--reason", "pager", "--store", url])
    assert rolled.exit_code == 0 and "rolled back" in rolled.output, rolled.output

    env = {
        "REPLAYGATE_STORE": url,
        "REPLAYGATE_SECRET_KEY": "s" * 32,
        "REPLAYGATE_READ_TOKEN": "read-e2e",
        "REPLAYGATE_CHECK_INTERVAL_S": "0",
        "REPLAYGATE_SECURE_COOKIES": "false",
    }
    app = create_app(WebConfig.from_env(env))
    client = app.test_client()
    api = client.get("/api/canary", headers={"Authorization": "Bearer read-e2e"})
    assert api.status_code == 200 and api.get_json()["status"] == "rolled_back", api.get_data(as_text=True)
    page = client.get("/")
    assert page.status_code in (200, 302)
    with app.app_context():
        from replaygate.web._context import controller

        controller().close()
