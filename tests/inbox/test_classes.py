"""Failure classes on the demo's traffic, the rule layer on hand-made traces, clustering, patterns."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import Chunk, ToolCall, TraceRecord, TraceStore, TraceSummary
from replaygate.replay import (
    Check,
    ContainsCheck,
    ExpectedToolsCheck,
    ForbiddenOutputRegexCheck,
    ForbiddenToolsCheck,
    load_scenario,
    score_attempt,
)

from replaygate.cli import main
from replaygate.golden import GoldenSet, lint
from replaygate.inbox import (
    classify_failures,
    cluster_documents,
    contradictions,
    match_rules,
    similar_good_traces,
    suggest_checks,
)

PLANTED = ("refusal_without_tools", "ungrounded_claim", "empty_answer", "missed_escalation")


def _summary(**kw: Any) -> TraceSummary:
    base: dict[str, Any] = dict(
        trace_id="t" * 32, session_id=None, user_id=None, agent_name="a", agent_version="1",
        turns=("hi",), output="hello", outputs=("hello",), error=None, chunks=(), tool_calls=(),
        llm_calls=(), escalated=False, escalation_reason=None, clarification=False, failure_reasons=(),
        latency_s=0.1, input_tokens=None, output_tokens=None,
    )  # fmt: skip
    base.update(kw)
    return TraceSummary(**base)


def _record(
    summary: TraceSummary, start_ns: int = 1, feedback: tuple[dict[str, Any], ...] = ()
) -> TraceRecord:
    return TraceRecord(summary=summary, spans=(), start_ns=start_ns, end_ns=start_ns + 1, feedback=feedback)


def test_demo_traffic_classes_match_the_planted_failure_kinds(
    demo_traffic: tuple[Path, dict[str, Any]],
) -> None:
    db, counts = demo_traffic
    with TraceStore(db) as store:
        records = store.list_traces(limit=None)
    assert len(records) == counts["requests"]
    classes = {c.key: c for c in classify_failures(records)}
    for kind in PLANTED:
        planted = counts[f"injected_{kind}"]
        if planted == 0:
            assert kind not in classes
            continue
        assert kind in classes, kind
        # a planted failure can hide another (an ungrounded answer later emptied is an empty answer)
        assert abs(classes[kind].count - planted) <= 3, (kind, classes[kind].count, planted)
    assert counts["injected_ungrounded_claim"] >= 10 and counts["injected_refusal_without_tools"] >= 10
    members = [m.trace_id for c in classes.values() for m in c.members]
    assert len(members) == len(set(members))  # each trace in one class
    clusters = [c for c in classes.values() if c.kind == "cluster"]
    assert clusters and all(c.pattern for c in classes.values())
    refusal = classes["refusal_without_tools"]
    assert all("assist" in m.answer or "help" in m.answer for m in refusal.members)
    assert sum(refusal.trend) == refusal.count and len(refusal.examples) <= 3


def test_inbox_cli_json_and_coverage(
    demo_traffic: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db, _ = demo_traffic
    main(["inbox", "--store", str(db), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["format_version"] == 1 and doc["traces"] == 300
    keys = [c["key"] for c in doc["classes"]]
    assert "refusal_without_tools" in keys and all(c["covered_by"] == [] for c in doc["classes"])
    refusal = next(c for c in doc["classes"] if c["key"] == "refusal_without_tools")
    member = refusal["trace_ids"][0]
    golden = tmp_path / "golden"
    main(["promote", member, "--owner", "ana", "--origin", "production-incident", "--class-checks",
          "--store", str(db), "--golden", str(golden), "--json"])  # fmt: skip
    path = json.loads(capsys.readouterr().out.splitlines()[0])["path"]
    assert [p for p in lint(GoldenSet(golden)) if p.severity == "error"] == []
    main(["inbox", "--store", str(db), "--golden", str(golden), "--json"])
    doc = json.loads(capsys.readouterr().out)
    refusal = next(c for c in doc["classes"] if c["key"] == "refusal_without_tools")
    assert refusal["covered_by"] == [load_scenario(path).id]
    # without --golden: the golden set of $REPLAYGATE_GOLDEN (else golden/), as the other commands read it
    monkeypatch.setenv("REPLAYGATE_GOLDEN", str(golden))
    main(["inbox", "--store", str(db), "--json"])
    doc = json.loads(capsys.readouterr().out)
    refusal = next(c for c in doc["classes"] if c["key"] == "refusal_without_tools")
    assert refusal["covered_by"] == [load_scenario(path).id]
    main(["inbox", "--store", str(db)])
    out = capsys.readouterr().out
    assert "refusal_without_tools" in out and "suggested checks" in out


def _status(path: str | Path, record: TraceRecord) -> str:
    s = record.summary
    outcome = asyncio.run(
        score_attempt(
            load_scenario(path), answer=s.output or "", label=None, summary=s, latency_s=0.1, judges={}
        )
    )
    return str(outcome.status)


@pytest.mark.parametrize("kind", ["refusal_without_tools", "ungrounded_claim"])
def test_promoted_class_member_checks_fail_the_failure_and_pass_a_good_answer(
    kind: str, demo_traffic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = demo_traffic
    with TraceStore(db) as store:
        records = store.list_traces(limit=None)
    by_id = {r.summary.trace_id: r for r in records}
    chosen = next(c for c in classify_failures(records) if c.key == kind)
    pairs = [
        (by_id[m.trace_id], similar_good_traces(by_id[m.trace_id].summary, records)) for m in chosen.members
    ]
    failing, good = next((f, g) for f, g in pairs if g)
    golden = tmp_path / "golden"
    main(["promote", failing.summary.trace_id, "--owner", "ana", "--origin", "production-incident",
          "--class-checks", "--store", str(db), "--golden", str(golden), "--json"])  # fmt: skip
    path = json.loads(capsys.readouterr().out.splitlines()[0])["path"]
    scenario = load_scenario(path)
    assert scenario.tags["failure_class"] == kind
    assert any(c.type == "forbidden_output_regex" for c in scenario.checks)
    assert [p for p in lint(GoldenSet(golden)) if p.severity == "error"] == []
    assert _status(path, failing) == "fail"
    assert _status(path, by_id[good[0].trace_id]) == "pass"


def test_rule_layer_on_hand_made_traces() -> None:
    refusal = _summary(output="I'm sorry, but I can't help with that request.")
    assert match_rules(refusal).rule == "refusal_without_tools"  # type: ignore[union-attr]
    tried = _summary(output=refusal.output, tool_calls=(ToolCall("lookup_order", {}, {"found": False}),))
    assert match_rules(tried) is None  # it tried a tool: not a refusal without trying
    assert match_rules(_summary(output="  ")).rule == "empty_answer"  # type: ignore[union-attr]
    assert match_rules(_summary(output='{"status": "ok", "items": [1, 2')).rule == "wrong_shape"  # type: ignore[union-attr]
    assert match_rules(_summary(output='{"status": "ok"}')) is None
    legal = _summary(turns=("I will call my lawyer about this",), output="Here is our policy.")
    assert match_rules(legal).rule == "missed_escalation"  # type: ignore[union-attr]
    assert match_rules(dataclasses.replace(legal, escalated=True)) is None
    short = _summary(turns=("Do you ship to Canada?",), output="## Shipping\n- Canada: yes\n- Mexico: no")
    assert match_rules(short).rule == "over_formatting"  # type: ignore[union-attr]
    corrected = _summary(
        turns=("My order is ORD-10052, not ORD-10025.", "where is it?"),
        outputs=("Looking up ORD-10052.", "Order ORD-10025 has shipped."),
        output="Order ORD-10025 has shipped.",
    )
    m = match_rules(corrected)
    assert m is not None and m.rule == "ignored_correction"
    checks = suggest_checks(m, corrected)
    assert [c.type for c in checks] == ["output_regex", "forbidden_output_regex"]
    assert checks[0].regex.search("Order ORD-10052 has shipped.")  # type: ignore[union-attr]
    assert checks[1].regex.search(corrected.output or "")  # type: ignore[union-attr]
    assert not checks[1].regex.search("Order ORD-10052 has shipped.")  # type: ignore[union-attr]
    chunk = Chunk(id="shipping#1", score=0.9, rank=1, text="Standard shipping takes 3 to 5 business days.")
    grounded = _summary(output="Standard shipping takes 3 to 5 business days.", chunks=(chunk,))
    assert match_rules(grounded) is None
    ungrounded = dataclasses.replace(
        grounded, output=(grounded.output or "") + " Express shipping is free for 90 days."
    )
    assert match_rules(ungrounded).rule == "ungrounded_claim"  # type: ignore[union-attr]


def test_a_correction_in_an_earlier_trace_of_the_session_is_seen() -> None:
    first = _summary(
        trace_id="a" * 32, session_id="s1", turns=("My order is ORD-10052, not ORD-10025.",),
        outputs=("Noted: ORD-10052.",), output="Noted: ORD-10052.",
    )  # fmt: skip
    second = _summary(
        trace_id="b" * 32, session_id="s1", turns=("where is it?",),
        outputs=("Order ORD-10025 has shipped.",), output="Order ORD-10025 has shipped.",
        failure_reasons=("negative_feedback",),
    )  # fmt: skip
    classes = classify_failures([_record(first, 1), _record(second, 2)])
    assert [(c.key, [m.trace_id for m in c.members]) for c in classes] == [("ignored_correction", ["b" * 32])]


def test_clustering_groups_similar_failures_and_is_deterministic() -> None:
    docs = [
        "reason_negative_feedback the refund was wrong refund amount",
        "reason_negative_feedback wrong refund amount again refund",
        "reason_escalation passed to a human agent lawyer",
        "reason_escalation passed to a human agent chargeback",
    ]
    clusters = cluster_documents(docs)
    assert sorted(sorted(m) for _, m in clusters) == [[0, 1], [2, 3]]
    assert cluster_documents(docs) == clusters
    assert cluster_documents([]) == [] and len(cluster_documents(["only one"])) == 1
    mixed = [docs[0], docs[2], docs[1], docs[3]]  # beyond max_documents, each joins its nearest cluster
    capped = cluster_documents(mixed, max_documents=2)
    assert sorted(sorted(m) for _, m in capped) == [[0, 2], [1, 3]]


def test_contradictions_are_found() -> None:
    assert contradictions([ExpectedToolsCheck(tools=["escalate"]), ForbiddenToolsCheck(tools=["escalate"])])
    clash: list[Check] = [ContainsCheck(values=["to a human"]), ForbiddenOutputRegexCheck(pattern="human")]
    assert contradictions(clash)
    assert contradictions([ContainsCheck(values=["ok"]), ForbiddenOutputRegexCheck(pattern="refund")]) == []


def test_forbid_answer_on_an_escalation_trace_does_not_expect_the_escalation_again(tmp_path: Path) -> None:
    from replaygate.golden import draft_scenario

    escalation = _summary(
        turns=("Can I return something I bought 3 weeks ago?",),
        output="I've passed this conversation to a human agent (ticket ESC-1).",
        tool_calls=(ToolCall("escalate_to_human", {"reason": "unsure"}, {"ticket_id": "ESC-1"}),),
        escalated=True,
        failure_reasons=("escalation",),
    )

    class Source:
        def get_trace(self, trace_id: str) -> TraceRecord:
            return _record(escalation)

        def session_traces(self, session_id: str) -> list[TraceRecord]:
            return []

    s = draft_scenario(
        Source(), _record(escalation), owner="ana", origin="production-incident", forbid_answer=True
    )
    assert not any(c.type == "expected_tools" for c in s.checks)
    outcome = asyncio.run(
        score_attempt(
            s, answer="Returns: 30 days.", label=None, summary=_summary(output="Returns: 30 days."),
            latency_s=0.1, judges={},
        )
    )  # fmt: skip
    assert outcome.status == "pass"  # an answer that does not escalate can pass: the checks are satisfiable


def test_class_checks_line_never_ends_cut_off(
    demo_traffic: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty-answer member drafts no check of its own: the line says so, not `checks ` and nothing."""
    db, _ = demo_traffic
    with TraceStore(db) as store:
        records = store.list_traces(limit=None)
    empty = next(c for c in classify_failures(records) if c.key == "empty_answer")
    bare = next(
        m.trace_id
        for m in empty.members
        if not next(r for r in records if r.summary.trace_id == m.trace_id).summary.tool_calls
    )
    golden = tmp_path / "golden"
    main(["promote", bare, "--owner", "ana", "--origin", "production-incident", "--class-checks",
          "--store", str(db), "--golden", str(golden)])  # fmt: skip
    line = capsys.readouterr().out.strip().splitlines()[-1]
    scenario = load_scenario(next(golden.glob("*.yaml")))
    assert scenario.checks == [] and scenario.tags["failure_class"] == "empty_answer"
    assert line.startswith("failure class empty_answer: no check drafted; only an error or an empty answer")
