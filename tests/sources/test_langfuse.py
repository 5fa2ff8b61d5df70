"""Langfuse as a trace source and a sink, against a stand-in speaking its public API (see langfuse_standin).

The traffic is the example agent's, exported by replaygate's own Langfuse exporter; requests are made
and replies parsed by the ``langfuse`` package's API client.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from langfuse.api import CreateScoreRequest, ScoreDataType
from replaygate.instrumentation import TraceStore

from replaygate.sources import LangfuseSource, SourceError, push_run, score_id
from tests.conftest import invoke_cli
from tests.sources.langfuse_standin import PUBLIC_KEY, SECRET_KEY, LangfuseStandIn


@pytest.fixture
def env(langfuse_world: tuple[LangfuseStandIn, Path], monkeypatch: pytest.MonkeyPatch) -> LangfuseStandIn:
    standin, _ = langfuse_world
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_HOST", standin.url)
    standin.page_size = None
    standin.fail_with_429 = 0
    return standin


def failures_json(*extra: str) -> list[dict[str, Any]]:
    result = invoke_cli("failures", "--limit", "500", "--json", *extra)
    assert result.exit_code == 0, result.output
    traces: list[dict[str, Any]] = json.loads(result.output)["traces"]
    return traces


def test_failures_from_langfuse_match_the_store(env: LangfuseStandIn, langfuse_world: Any) -> None:
    _, store = langfuse_world
    from_store = {t["trace_id"]: t["failure_reasons"] for t in failures_json("--store", str(store))}
    from_langfuse = {t["trace_id"]: t["failure_reasons"] for t in failures_json("--source", "langfuse")}
    assert from_store, "the simulated traffic has failures"
    assert from_langfuse == from_store


def test_a_trace_reads_alike_from_langfuse_and_the_store(env: LangfuseStandIn, langfuse_world: Any) -> None:
    _, store = langfuse_world
    with TraceStore(store, create=False) as ts:
        record = next(r for r in ts.list_traces(limit=200) if r.summary.tool_calls and r.summary.chunks)
    with LangfuseSource() as source:
        other = source.get_trace(record.summary.trace_id)
    mine, theirs = record.summary, other.summary
    assert (theirs.turns, theirs.output, theirs.session_id) == (mine.turns, mine.output, mine.session_id)
    assert [c.id for c in theirs.chunks] == [c.id for c in mine.chunks]
    assert [(t.name, t.arguments) for t in theirs.tool_calls] == [
        (t.name, t.arguments) for t in mine.tool_calls
    ]
    assert (theirs.input_tokens, theirs.output_tokens) == (mine.input_tokens, mine.output_tokens)
    assert len(other.spans) == len(record.spans)


def test_observations_over_several_pages_make_one_whole_trace(
    env: LangfuseStandIn, langfuse_world: Any
) -> None:
    _, store = langfuse_world
    with TraceStore(store, create=False) as ts:
        record = max(ts.list_traces(limit=200), key=lambda r: len(r.spans))
    assert len(record.spans) >= 4
    env.page_size = 2
    env.requests.clear()
    with LangfuseSource() as source:
        other = source.get_trace(record.summary.trace_id)
    pages = [p for m, p in env.requests if "v2/observations" in p and record.summary.trace_id in p]
    assert len(pages) >= len(record.spans) // 2
    assert sorted(s.span_id for s in other.spans) == sorted(s.span_id for s in record.spans)


def test_a_negative_score_made_in_langfuse_becomes_a_failure(
    env: LangfuseStandIn, langfuse_world: Any
) -> None:
    _, store = langfuse_world
    with TraceStore(store, create=False) as ts:
        happy = next(r for r in ts.list_traces(limit=200) if not r.summary.failure_reasons)
    trace_id = happy.summary.trace_id
    assert trace_id not in {t["trace_id"] for t in failures_json("--source", "langfuse")}
    request = CreateScoreRequest(
        id="ui-thumbs-down-1",
        trace_id=trace_id,
        name="user-feedback",
        value=0.0,
        data_type=ScoreDataType.BOOLEAN,
    )
    env.add_score(request, source="ANNOTATION")
    try:
        found = {
            t["trace_id"]: t for t in failures_json("--source", "langfuse", "--reason", "negative_feedback")
        }
        assert "negative_feedback" in found[trace_id]["failure_reasons"]
        assert found[trace_id]["feedback"][0]["score"] == -1.0
    finally:
        env.scores.pop("ui-thumbs-down-1")


def test_rate_limits_are_retried_then_reported(env: LangfuseStandIn) -> None:
    env.fail_with_429 = 2
    assert failures_json("--source", "langfuse", "--limit", "3")
    env.fail_with_429 = 1000
    result = invoke_cli("failures", "--source", "langfuse")
    assert result.exit_code == 3
    assert "429" in result.output and "Traceback" not in result.output
    env.fail_with_429 = 0


def test_refused_keys_and_an_unreachable_host_are_errors_not_an_empty_inbox(
    env: LangfuseStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-wrong")
    result = invoke_cli("failures", "--source", "langfuse")
    assert result.exit_code == 3 and "refused the API keys" in result.output
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    result = invoke_cli("failures", "--source", "langfuse:http://127.0.0.1:9")
    assert result.exit_code == 3 and "cannot reach Langfuse" in result.output
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY")
    result = invoke_cli("traces", "--source", "langfuse")
    assert result.exit_code == 3 and "LANGFUSE_PUBLIC_KEY" in result.output


def _scenario(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    data.pop("changelog")
    return data


def test_promote_from_langfuse_writes_the_scenario_the_store_writes(
    env: LangfuseStandIn, langfuse_world: Any, tmp_path: Path
) -> None:
    _, store = langfuse_world
    with TraceStore(store, create=False) as ts:
        record = next(
            r
            for r in ts.failures(limit=200)
            if r.summary.session_id and len(ts.session_traces(r.summary.session_id)) > 1
        )
    trace_id = record.summary.trace_id
    paths = {}
    for name, source in (("store", ["--store", str(store)]), ("langfuse", ["--source", "langfuse"])):
        golden = tmp_path / name
        golden.mkdir()
        args = ["promote", trace_id, "--owner", "ana", "--origin", "production-incident", "--json"]
        result = invoke_cli(*args, *source, "--golden", str(golden))
        assert result.exit_code == 0, result.output
        paths[name] = Path(json.loads(result.output)["path"])
    assert _scenario(paths["langfuse"]) == _scenario(paths["store"])
    assert len(_scenario(paths["store"])["turns"]) > 1
    changelog = yaml.safe_load(paths["langfuse"].read_text())["changelog"][0]["reason"]
    assert changelog.startswith(f"Promoted from langfuse trace {trace_id}")


def test_push_writes_each_attempt_once_even_when_pushed_twice(
    env: LangfuseStandIn, tmp_path: Path, replay_run: Path
) -> None:
    env.scores.clear()
    result = invoke_cli("push", str(replay_run), "--to", "langfuse", "--json")
    assert result.exit_code == 0, result.output
    first = json.loads(result.output)
    assert first["items"] == len(env.scores) > 0
    again = invoke_cli("push", str(replay_run), "--to", "langfuse", "--json")
    assert json.loads(again.output)["items"] == first["items"] and len(env.scores) == first["items"]
    from replaygate.replay import load_run

    run = load_run(replay_run)
    attempt = run.attempts[0]
    status = env.scores[
        score_id(attempt.trace_id or "", "replaygate.status", f"{run.run_id}:{attempt.scenario_id}#0")
    ]
    assert status.value == attempt.status
    with LangfuseSource() as source:
        names = {s.name for s in source.scores_of(attempt.trace_id or "")}
    assert "replaygate.status" in names


def test_push_to_langfuse_reports_a_rejected_batch(env: LangfuseStandIn, replay_run: Path) -> None:
    from replaygate.replay import load_run

    with LangfuseSource() as source:
        env.fail_with_429 = 1000
        with pytest.raises(SourceError, match="429"):
            push_run(load_run(replay_run), source)
    env.fail_with_429 = 0


def test_record_feedback_writes_a_langfuse_score_without_a_store(env: LangfuseStandIn) -> None:
    from replaygate.instrumentation import record_feedback

    trace_id = "ab" * 16
    record_feedback(trace_id, False, "wrong refund amount", store="off")
    mine = [s for s in env.scores.values() if s.subject and s.subject.id == trace_id]
    assert [(s.name, s.value, s.comment) for s in mine] == [("user-feedback", -1.0, "wrong refund amount")]
    with pytest.raises(Exception, match=r"\[-1, 1\]"):
        record_feedback(trace_id, 3, store="off")
    record_feedback(trace_id, 0.5, store="off", langfuse=False)
    assert len([s for s in env.scores.values() if s.subject and s.subject.id == trace_id]) == 1


def test_what_langfuse_receives_as_a_guest(env: LangfuseStandIn) -> None:
    """Version and environment on the resource, failure reasons as trace tags, documents as output."""
    observations = [
        o
        for o in env.observations.values()
        if o.metadata and o.metadata["resourceAttributes"].get("service.name") == "support-agent"
    ]  # not the replay traces a push exported
    assert observations
    resources = [o.metadata["resourceAttributes"] for o in observations if o.metadata]
    assert all(r.get("service.version") == "1.4.0" for r in resources)
    assert all(r.get("deployment.environment.name") == "staging" for r in resources)
    assert all(o.version == "1.4.0" for o in observations)
    agents = [o for o in observations if o.is_root_observation and o.metadata]
    tagged = [o for o in agents if o.metadata["attributes"].get("replaygate.failure.reasons")]
    assert tagged and all(
        o.metadata["attributes"]["langfuse.trace.tags"]
        == o.metadata["attributes"]["replaygate.failure.reasons"]
        for o in tagged
    )
    retrievals = [o for o in observations if o.type == "RETRIEVER"]
    assert retrievals and all(json.loads(o.output or "[]")[0]["id"] for o in retrievals if o.output != "[]")


def test_llm_spans_reach_langfuse_with_their_cost(env: LangfuseStandIn) -> None:
    """gen_ai.usage.cost on exported LLM spans, priced by genai-prices as replay prices them."""
    from replaygate.instrumentation import LlmCall, call_cost

    llm = [
        o
        for o in env.observations.values()
        if o.type == "GENERATION"
        and o.metadata
        and o.metadata["resourceAttributes"].get("service.name") == "support-agent"
    ]
    assert llm
    for o in llm:
        attrs = o.metadata["attributes"] if o.metadata else {}
        expected = call_cost(
            LlmCall(
                attrs.get("gen_ai.request.model"),
                attrs.get("gen_ai.provider.name"),
                attrs.get("gen_ai.usage.input_tokens"),
                attrs.get("gen_ai.usage.output_tokens"),
                0.0,
            )
        )
        assert expected is not None and attrs["gen_ai.usage.cost"] == pytest.approx(expected)
