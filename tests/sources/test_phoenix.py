"""Phoenix for real: ``phoenix serve`` on 127.0.0.1 (see conftest), fed by the example agent over OTLP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from replaygate.instrumentation import TraceStore
from replaygate.replay import load_run

from replaygate.sources import PhoenixSource
from tests.conftest import invoke_cli

pytestmark = pytest.mark.timeout(900)  # a first run installs Phoenix; starting it takes ~20 s


def failures(source: list[str], *extra: str) -> dict[str, list[str]]:
    result = invoke_cli("failures", "--limit", "500", "--json", *source, *extra)
    assert result.exit_code == 0, result.output
    return {t["trace_id"]: t["failure_reasons"] for t in json.loads(result.output)["traces"]}


def test_failures_from_phoenix_match_the_store(phoenix_world: tuple[str, Path]) -> None:
    url, store = phoenix_world
    from_store = failures(["--store", str(store)])
    assert any("negative_feedback" in r for r in from_store.values()), "the traffic left negative feedback"
    assert failures(["--source", f"phoenix:{url}"]) == from_store


def test_a_negative_annotation_made_in_phoenix_becomes_a_failure(phoenix_world: tuple[str, Path]) -> None:
    url, store = phoenix_world
    with TraceStore(store, create=False) as ts:
        happy = next(r for r in ts.list_traces(limit=200) if not r.summary.failure_reasons)
    root = next(s for s in happy.spans if s.parent_id is None)
    assert happy.summary.trace_id not in failures(["--source", f"phoenix:{url}"])
    body = {
        "data": [
            {
                "span_id": root.span_id,
                "name": "correctness",
                "annotator_kind": "HUMAN",
                "result": {"label": "incorrect", "explanation": "wrong shipping time"},
            }
        ]
    }
    assert (
        httpx.post(f"{url}/v1/span_annotations", params={"sync": "true"}, json=body, timeout=10).status_code
        == 200
    )
    found = failures(["--source", f"phoenix:{url}"], "--reason", "negative_feedback")
    assert "negative_feedback" in found[happy.summary.trace_id]


def _scenario(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    data.pop("changelog")
    return data


def test_promote_from_phoenix_writes_the_scenario_the_store_writes(
    phoenix_world: tuple[str, Path], tmp_path: Path
) -> None:
    url, store = phoenix_world
    with TraceStore(store, create=False) as ts:
        record = next(r for r in ts.failures(limit=200) if r.summary.chunks and r.summary.session_id)
    trace_id = record.summary.trace_id
    paths = {}
    for name, source in (("store", ["--store", str(store)]), ("phoenix", ["--source", f"phoenix:{url}"])):
        golden = tmp_path / name
        golden.mkdir()
        args = ["promote", trace_id[:10], "--owner", "ana", "--origin", "production-incident", "--json"]
        result = invoke_cli(*args, *source, "--golden", str(golden))
        assert result.exit_code == 0, result.output
        paths[name] = Path(json.loads(result.output)["path"])
    assert _scenario(paths["phoenix"]) == _scenario(paths["store"])
    assert _scenario(paths["store"])["retrieval"]["relevant"]


def test_push_a_replay_and_read_the_annotations_back(phoenix_url: str, replay_run: Path) -> None:
    result = invoke_cli("push", str(replay_run), "--to", "phoenix", "--url", phoenix_url, "--json")
    assert result.exit_code == 0, result.output
    pushed = json.loads(result.output)
    assert pushed["items"] > 0 and not pushed["skipped"], pushed
    assert pushed["exported"] == len({a.trace_id for a in load_run(replay_run).attempts})
    run = load_run(replay_run)
    with PhoenixSource(phoenix_url) as phoenix:
        annotations = phoenix.trace_annotations([a.trace_id or "" for a in run.attempts])
    status = {(a["trace_id"], a["result"]["label"]) for a in annotations if a["name"] == "replaygate.status"}
    assert status == {(a.trace_id, a.status) for a in run.attempts}
    again = json.loads(
        invoke_cli("push", str(replay_run), "--to", "phoenix", "--url", phoenix_url, "--json").output
    )
    with PhoenixSource(phoenix_url) as phoenix:
        assert len(phoenix.trace_annotations([a.trace_id or "" for a in run.attempts])) == len(annotations)
    assert again["items"] == pushed["items"]


def test_an_unreachable_phoenix_is_an_error_not_an_empty_inbox() -> None:
    result = invoke_cli("failures", "--source", "phoenix:http://127.0.0.1:9")
    assert result.exit_code == 3 and "cannot reach Phoenix" in result.output
    result = invoke_cli("failures", "--source", "http://127.0.0.1:9")
    assert result.exit_code == 3 and "say which tool" in result.output


def test_push_failures_marks_the_store_failures_in_phoenix(phoenix_world: tuple[str, Path]) -> None:
    url, store = phoenix_world
    args = ["push", "--failures", "--store", str(store), "--to", "phoenix", "--url", url, "--json"]
    result = invoke_cli(*args)
    assert result.exit_code == 0, result.output
    with TraceStore(store, create=False) as ts:
        expected = {r.summary.trace_id: ", ".join(r.summary.failure_reasons) for r in ts.failures(limit=None)}
    assert json.loads(result.output)["items"] == len(expected)
    with PhoenixSource(url) as phoenix:
        found = {
            a["trace_id"]: a["result"]["label"]
            for a in phoenix.trace_annotations(sorted(expected))
            if a["name"] == "replaygate.failure"
        }
    assert found == expected
    assert json.loads(invoke_cli(*args).output)["items"] == len(expected)  # again: the same annotations
    with PhoenixSource(url) as phoenix:
        again = [a for a in phoenix.trace_annotations(sorted(expected)) if a["name"] == "replaygate.failure"]
    assert len(again) == len(expected)
    # replaygate's own annotations (score 0, label = reasons) are never read back as feedback
    from_phoenix = failures(["--source", f"phoenix:{url}"])
    assert {t: ", ".join(from_phoenix[t]) for t in expected} == expected


def test_a_misspelt_source_is_named_not_read_as_a_store(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)
    for typo, meant in (("langfuze", "langfuse"), ("Phoenx", "phoenix"), ("stor", "store")):
        result = invoke_cli("failures", "--source", typo)
        assert result.exit_code == 3 and f"did you mean --source {meant}?" in result.output, result.output
    (tmp_path / "langfuze").write_bytes(b"")  # a file of that name is a store path, as before
    assert "did you mean" not in invoke_cli("failures", "--source", "langfuze").output
    missing = invoke_cli("push", "--to", "phoenix", "--failures")
    assert missing.exit_code == 3 and "for push, --url URL" in missing.output, missing.output


def test_the_inbox_reads_phoenix_as_it_reads_the_store(phoenix_world: tuple[str, Path]) -> None:
    url, store = phoenix_world
    local = invoke_cli("inbox", "--store", str(store), "--json")
    remote = invoke_cli("inbox", "--source", f"phoenix:{url}", "--json")
    assert local.exit_code == 0 and remote.exit_code == 0, remote.output
    mine, theirs = json.loads(local.output), json.loads(remote.output)
    # the session's Phoenix also holds what other tests sent to its default project: at least the store's
    assert theirs["traces"] >= mine["traces"] > 0 and "Phoenix" in theirs["store"], (theirs, mine)
    rules = {c["key"] for c in mine["classes"] if c["kind"] != "cluster"}
    assert rules and rules <= {c["key"] for c in theirs["classes"]}  # an annotation made there may add one
