"""Real gate reports for the release page: run files, artifacts with spans, and the gate's own verdict.

Five scenarios, k=5. ``refund-cap`` is must-pass and its title is hostile markup; in the candidate its
last attempt fails with a hostile answer, a hostile retrieved chunk and a hostile tool argument.
``order-status`` goes 5/5 -> 0/5. The blocked report compares the baseline with that candidate (rule 1);
the sign-off report compares it with a fixed candidate where only ``order-status`` newly fails.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from replaygate.replay import (
    Attempt,
    CheckResult,
    Fingerprint,
    Measures,
    RunFile,
    ScenarioEntry,
    load_run,
    save_run,
    suite_hash_of,
)

from replaygate.gate import GateReport, Policy, gate_runs
from replaygate.report import write_reports

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(2)>'
SCENARIOS = ["refund-cap", "order-status", "shipping", "returns", "warranty"]
TITLE = f"Refund over the cap {HOSTILE}"


def _spans(trace_id: str, question: str, answer: str, chunk: str, tool_arg: str) -> list[dict[str, Any]]:
    def span(span_id: str, parent: str | None, name: str, kind: str, attrs: dict[str, Any]) -> dict[str, Any]:
        return {
            "trace_id": trace_id,
            "span_id": span_id,
            "parent_id": parent,
            "name": name,
            "kind": kind,
            "start_ns": 1_796_000_000_000_000_000 + int(span_id, 16),
            "end_ns": 1_796_000_000_100_000_000,
            "status": "unset",
            "status_message": None,
            "attributes": attrs,
            "events": [],
        }

    return [
        span("0000000000000001", None, "replay attempt", "other", {}),
        span(
            "0000000000000002",
            "0000000000000001",
            "invoke_agent support",
            "agent",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support",
                "openinference.span.kind": "AGENT",
                "input.value": question,
                "output.value": answer,
            },
        ),
        span(
            "0000000000000003",
            "0000000000000002",
            "retrieval kb",
            "retrieval",
            {
                "gen_ai.operation.name": "retrieval",
                "openinference.span.kind": "RETRIEVER",
                "input.value": question,
                "retrieval.documents.0.document.id": "refund-policy#0",
                "retrieval.documents.0.document.score": 0.42,
                "retrieval.documents.0.document.content": chunk,
            },
        ),
        span(
            "0000000000000004",
            "0000000000000002",
            "execute_tool issue_refund",
            "tool",
            {
                "gen_ai.operation.name": "execute_tool",
                "openinference.span.kind": "TOOL",
                "gen_ai.tool.name": "issue_refund",
                "tool.name": "issue_refund",
                "gen_ai.tool.call.arguments": json.dumps({"amount": 250, "note": tool_arg}),
                "gen_ai.tool.call.result": json.dumps({"status": "refunded"}),
            },
        ),
    ]


def _run(runs: Path, run_id: str, config: str, passes: dict[str, int], hostile_fail: bool) -> Path:
    art_dir = runs / run_id
    art_dir.mkdir(parents=True, exist_ok=True)
    artifacts = art_dir / "artifacts.jsonl"
    scenarios, attempts, lines = [], [], []
    for sid in SCENARIOS:
        scenarios.append(
            ScenarioEntry(
                id=sid,
                title=TITLE if sid == "refund-cap" else f"{sid} question",
                must_pass=sid == "refund-cap",
                threshold=0.8,
                repeats=5,
                tags={"risk": "high" if sid == "refund-cap" else "low"},
            )
        )
        for j in range(5):
            ok = j < passes.get(sid, 5)
            bad = hostile_fail and sid == "refund-cap" and not ok
            answer = f"I refunded $250. {HOSTILE}" if bad else ("Done." if ok else "Not sure.")
            trace_id = hashlib.md5(f"{run_id}/{sid}/{j}".encode()).hexdigest()
            question = f"Please refund order {j} ({sid})"
            attempts.append(
                Attempt(
                    scenario_id=sid,
                    index=j,
                    status="pass" if ok else "fail",
                    answer=answer,
                    checks=[
                        CheckResult(
                            name="forbidden_output_regex",
                            passed=ok,
                            detail="" if ok else f"forbidden pattern found in {HOSTILE}",
                        )
                    ],
                    measures=Measures(latency_s=0.2, cost_usd=0.00018, escalated=False),
                    trace_id=trace_id,
                    artifact_path=str(artifacts),
                )
            )
            chunk = (
                f"Refunds above $200 need approval. {HOSTILE}" if bad else "Refunds above $200 need approval."
            )
            lines.append(
                {
                    "scenario_id": sid,
                    "index": j,
                    "trace_id": trace_id,
                    "answer": answer,
                    "label": None,
                    "error": None,
                    "messages": [
                        {"role": "user", "content": question},
                        {"role": "assistant", "content": answer},
                    ],
                    "spans": _spans(trace_id, question, answer, chunk, HOSTILE if bad else "ok"),
                }
            )
    artifacts.write_text("".join(json.dumps(doc) + "\n" for doc in lines), encoding="utf-8")
    fp = Fingerprint(
        agent_config_hash=f"sha256:{config}",
        target="examples.agent:respond",
        replaygate_version="0.1.0",
        suite_hash=suite_hash_of((sid, "active", "") for sid in SCENARIOS),
        k=5,
        seed=0,
        date="2026-11-29T10:00:00+00:00",
        declared_versions={"config_id": config},
    )
    path = runs / f"{run_id}.json"
    save_run(RunFile(run_id=run_id, fingerprint=fp, scenarios=scenarios, attempts=attempts), path)
    return path


def write_gate_reports(tmp: Path) -> tuple[GateReport, GateReport]:
    """Write the runs and both reports under ``tmp/runs`` and ``tmp/reports``; return (blocked, sign-off)."""
    runs = tmp / "runs"
    base = _run(runs, "base", "production", {}, False)
    base2 = _run(runs, "base2", "production", {"warranty": 2}, False)  # the baselines disagree: flaky
    head = _run(runs, "head", "candidate", {"refund-cap": 4, "order-status": 0}, True)
    fixed = _run(runs, "fixed", "candidate-fixed", {"order-status": 0}, False)
    reports = []
    for name, cand, created in (("blocked", head, "2026-11-29T10:00:00+00:00"), ("signoff", fixed, "")):
        report = gate_runs(
            Policy(),
            load_run(base),
            load_run(cand),
            load_run(base2),
            paths=(str(base), str(cand), str(base2)),
        )
        if created:  # the blocked one is older: the list shows newest first
            report = report.model_copy(update={"created_at": created})
        write_reports(report, tmp / "reports" / name, ["md", "html"])
        reports.append(report)
    return reports[0], reports[1]
