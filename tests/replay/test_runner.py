import asyncio
import datetime as dt
import json
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from replaygate.instrumentation import TraceSummary
from replaygate.replay._artifacts import read_artifacts
from replaygate.replay._runfile import CheckResult, Measures, RunFile, content_hash, load_run
from replaygate.replay._runner import run_suite, run_suite_async
from replaygate.replay._scenario import Scenario, suite_hash


def scenario(sid: str, turns: list[str] | None = None, **extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": sid,
        "title": f"scenario {sid}",
        "owner": "qa",
        "origin": "original-eval",
        "added": dt.date(2026, 11, 29),
        "turns": turns or [f"question of {sid}"],
        "repeats": 2,
    }
    data.update(extra)
    return Scenario.model_validate(data)


@dataclass
class Outcome:
    status: str
    error: str | None
    checks: list[CheckResult]
    judges: list[Any] = field(default_factory=list)
    retrieval: Any = None
    measures: Measures = field(default_factory=lambda: Measures(latency_s=0.0))
    attribution: str | None = None


class FakeScorer:
    """Passes when the answer contains 'good'; records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, TraceSummary]] = []

    async def __call__(
        self,
        scenario: Scenario,
        *,
        answer: str | None,
        label: str | None,
        summary: TraceSummary,
        latency_s: float,
        judges: Mapping[str, Any],
    ) -> Outcome:
        self.calls.append((scenario.id, answer, summary))
        ok = answer is not None and "good" in answer
        check = CheckResult(name="contains", passed=ok, detail="" if ok else "'good' missing")
        return Outcome(
            status="pass" if ok else "fail",
            error=None,
            checks=[check],
            measures=Measures(latency_s=latency_s),
        )


class FakeJudge:
    model = "judge-model-1"
    prompt_version = "g-v3"


def run(scenarios: list[Scenario], target: Any, tmp_path: Path, **kw: Any) -> RunFile:
    kw.setdefault("judges", {"groundedness": FakeJudge()})
    kw.setdefault("scorer", FakeScorer())
    kw.setdefault("progress", False)
    kw.setdefault("code_commit", None)
    return run_suite(
        scenarios, target, kw.pop("config", {"model": "m"}), out_path=tmp_path / "run.json", **kw
    )


def test_raising_hanging_and_garbage_targets_are_errors_never_passes(tmp_path: Path) -> None:
    def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> Any:
        kind = context["kind"]
        if kind == "raise":
            raise RuntimeError("database is down")
        if kind == "hang":
            time.sleep(3)
            return "good but late"
        if kind == "garbage":
            return 12345
        if kind == "none-answer":
            return {"answer": None}
        if kind == "own-timeout":
            raise TimeoutError("upstream API did not answer")
        if kind == "exit":
            raise SystemExit(2)
        return "good answer"

    kinds = ["raise", "hang", "garbage", "none-answer", "own-timeout", "exit", "fine"]
    scenarios = [scenario(f"s-{k}", context={"kind": k}) for k in kinds]
    t0 = time.monotonic()
    result = run(scenarios, target, tmp_path, timeout_s=0.3, concurrency=10)
    assert time.monotonic() - t0 < 2.5  # the hanging attempts did not hold the run
    by = {(a.scenario_id, a.index): a for a in result.attempts}
    assert len(by) == 14
    for k in kinds[:-1]:
        for i in range(2):
            a = by[(f"s-{k}", i)]
            assert a.status == "error", (k, a)
            assert a.error
    assert "RuntimeError: database is down" in (by[("s-raise", 0)].error or "")
    assert by[("s-hang", 1)].error == "timed out after 0.3s"
    assert "bad target output" in (by[("s-garbage", 0)].error or "") and "int" in (
        by[("s-garbage", 0)].error or ""
    )
    assert "'answer' is None" in (by[("s-none-answer", 0)].error or "")
    assert by[("s-own-timeout", 0)].error == "target raised TimeoutError: upstream API did not answer"
    assert by[("s-exit", 1)].error == "target raised SystemExit: 2"
    assert [a.status for a in result.attempts_for("s-fine")] == ["pass", "pass"]
    assert result.summary.errors == 12 and result.summary.passes == 2
    assert [e.scenario_id for e in result.summary.error_attempts][:2] == ["s-exit", "s-exit"]
    assert load_run(tmp_path / "run.json") == result


def test_failing_scorer_and_scoring_crash_are_errors(tmp_path: Path) -> None:
    async def crash(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("scorer bug")

    result = run([scenario("a")], lambda turns, context: "good", tmp_path, scorer=crash)
    assert {a.status for a in result.attempts} == {"error"}
    assert all("scoring failed: ValueError: scorer bug" in (a.error or "") for a in result.attempts)


def test_multi_turn_scenario_sends_turns_in_order_in_one_session(tmp_path: Path) -> None:
    sessions: list[list[str]] = []
    lock = threading.Lock()

    def target(turns: list[str], context: dict[str, Any]) -> str:
        with lock:
            sessions.append(list(turns))
        return "good: " + " -> ".join(turns)

    turns = ["I want a refund for ORD-10042", "it arrived broken", "and how long will it take?"]
    result = run([scenario("multi", turns=turns, repeats=3)], target, tmp_path)
    assert sessions == [turns, turns, turns]  # one call (one session) per attempt, turns in order
    assert [a.answer for a in result.attempts] == ["good: " + " -> ".join(turns)] * 3


def test_async_target_concurrency_is_bounded(tmp_path: Path) -> None:
    active = 0
    peak = 0

    async def target(turns: list[str], context: dict[str, Any], config: dict[str, Any]) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return "good"

    result = run([scenario(f"c{i}", repeats=4) for i in range(10)], target, tmp_path, concurrency=5)
    assert len(result.attempts) == 40
    assert peak == 5


def test_sync_target_runs_on_concurrency_threads_each_attempt_once(tmp_path: Path) -> None:
    lock = threading.Lock()
    active = 0
    peak = 0
    threads: set[int] = set()
    calls: list[tuple[str, str]] = []

    def target(turns: list[str], context: dict[str, Any]) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            threads.add(threading.get_ident())
            calls.append((turns[0], threading.current_thread().name))
        time.sleep(0.01)
        with lock:
            active -= 1
        return "good"

    result = run([scenario(f"c{i}", repeats=4) for i in range(10)], target, tmp_path, concurrency=5)
    assert [a.status for a in result.attempts] == ["pass"] * 40
    assert peak == 5 and len(threads) == 5  # five slots, each a thread that takes attempts itself
    expected = sorted(f"question of c{i}" for i in range(10) for _ in range(4))
    assert sorted(turn for turn, _ in calls) == expected
    assert all(name.startswith("replaygate-target-") for _, name in calls)
    assert threading.main_thread().ident not in threads


def test_each_sync_attempt_runs_in_its_own_copy_of_the_callers_context(tmp_path: Path) -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[str] = []

    def target(turns: list[str], context: dict[str, Any]) -> str:
        seen.append(var.get())
        var.set("leaked by an earlier attempt")  # must not reach the next attempt of this thread
        return "good"

    async def main() -> RunFile:
        var.set("caller")
        return await run_suite_async(
            [scenario("a", repeats=6)],
            target,
            {},
            out_path=tmp_path / "run.json",
            concurrency=1,
            scorer=FakeScorer(),
            progress=False,
            code_commit=None,
        )

    result = asyncio.run(main())
    assert seen == ["caller"] * 6
    assert [a.status for a in result.attempts] == ["pass"] * 6


def test_a_sync_callable_that_returns_an_awaitable_is_awaited_on_the_loop(tmp_path: Path) -> None:
    from opentelemetry import trace

    trace_ids: list[str] = []

    async def answer(turns: list[str]) -> str:
        trace_ids.append(format(trace.get_current_span().get_span_context().trace_id, "032x"))
        await asyncio.sleep(0.001)
        return "good " + turns[0]

    class AsyncAgent:
        async def __call__(self, turns: list[str], context: dict[str, Any]) -> str:
            return await answer(turns)

    wrapped = run([scenario("a")], lambda turns, context: answer(turns), tmp_path / "lambda")
    assert [a.answer for a in wrapped.attempts] == ["good question of a"] * 2
    assert trace_ids == [a.trace_id for a in wrapped.attempts]  # run inside the attempt's own trace
    instance = run([scenario("b")], AsyncAgent(), tmp_path / "instance")
    assert [a.status for a in instance.attempts] == ["pass"] * 2


def test_fingerprint_records_candidate_judges_suite_policy_k_seed(tmp_path: Path) -> None:
    config = {
        "config_id": "candidate",
        "agent_version": "2.1",
        "model": "gpt-4o-mini",
        "prompt_version": "p7",
        "tool_versions": {"lookup_order": "3", "issue_refund": "1"},
        "retrieval_index_version": "idx-42",
        "temperature": 0.3,
    }
    policy = {"tolerance": {"score": 0.02}, "must_pass_blocks": True}
    scenarios = [scenario("b"), scenario("a", repeats=3)]
    result = run(
        scenarios,
        lambda t, c: "good",
        tmp_path,
        config=config,
        policy=policy,
        seed=7,
        repeats=2,
        tier="release",
        code_commit="abc123-dirty",
    )
    fp = result.fingerprint
    assert fp.agent_config_hash == content_hash(config)
    assert fp.declared_versions == {
        "config_id": "candidate",
        "agent_version": "2.1",
        "model": "gpt-4o-mini",
        "prompt_version": "p7",
        "tool_versions.issue_refund": "1",
        "tool_versions.lookup_order": "3",
        "retrieval_index_version": "idx-42",
    }
    assert fp.suite_hash == suite_hash(scenarios)
    assert fp.policy_hash == content_hash(policy) and result.policy == policy
    assert (fp.k, fp.seed, fp.tier, fp.code_commit) == (2, 7, "release", "abc123-dirty")
    assert (fp.judge_model, fp.judge_prompt_version) == ("judge-model-1", "g-v3")
    assert fp.target.endswith("<lambda>")
    assert fp.date.endswith("Z")
    assert [s.id for s in result.scenarios] == ["a", "b"]
    assert all(s.repeats == 2 for s in result.scenarios)


def test_code_commit_is_read_from_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    (repo / "f.txt").write_text("1")
    subprocess.run(git + ["add", "f.txt"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], cwd=repo, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    monkeypatch.chdir(repo)
    result = run([scenario("a", repeats=1)], lambda t, c: "good", tmp_path, code_commit=True)
    assert result.fingerprint.code_commit == head
    (repo / "f.txt").write_text("2")
    result = run([scenario("a", repeats=1)], lambda t, c: "good", tmp_path, code_commit=True)
    assert result.fingerprint.code_commit == head + "-dirty"
    monkeypatch.chdir(tmp_path)
    result = run([scenario("a", repeats=1)], lambda t, c: "good", tmp_path / "x", code_commit=True)
    assert result.fingerprint.code_commit is None


def test_artifacts_written_and_a_failed_write_never_fails_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def target(turns: list[str], context: dict[str, Any]) -> dict[str, Any]:
        return {"answer": "good <b>", "label": "answer", "messages": [{"role": "user", "content": turns[0]}]}

    result = run([scenario("art", repeats=2)], target, tmp_path)
    first, second = result.attempts
    assert first.artifact_path is not None and first.artifact_path == second.artifact_path
    path = Path(first.artifact_path)
    assert path == tmp_path / result.run_id / "artifacts.jsonl"  # one file per run, one line per attempt
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted((d["scenario_id"], d["index"]) for d in lines) == [("art", 0), ("art", 1)]
    assert read_artifacts(path)[("art", 1)]["trace_id"] == second.trace_id
    doc = read_artifacts(path)[("art", 0)]
    assert doc["answer"] == "good <b>" and doc["messages"][0]["content"] == "question of art"
    assert doc["trace_id"] == first.trace_id and doc["error"] is None
    [root] = [s for s in doc["spans"] if s["name"] == "replay attempt"]
    assert root["trace_id"] == first.trace_id and root["parent_id"] is None
    assert root["attributes"] == {"replaygate.scenario.id": "art", "replaygate.attempt.index": 0}

    import replaygate.replay._artifacts as artifacts

    def broken(*a: Any, **k: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(artifacts, "_append", broken)
    with caplog.at_level("WARNING", logger="replaygate.replay"):
        result = run([scenario("art", repeats=1)], target, tmp_path / "second")
    [attempt] = result.attempts
    assert attempt.status == "pass" and attempt.artifact_path is None
    assert "disk full" in caplog.text

    import replaygate.replay._runner as runner

    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the artifacts folder would be")
    monkeypatch.setattr(
        runner, "artifacts_path", lambda out_dir, run_id: blocker / run_id / "artifacts.jsonl"
    )
    caplog.clear()
    with caplog.at_level("WARNING", logger="replaygate.replay"):
        result = run([scenario("art", repeats=1)], target, tmp_path / "third")
    [attempt] = result.attempts  # the artifacts file cannot be created: the attempt is still scored
    assert attempt.status == "pass" and attempt.artifact_path is None
    assert "could not open the artifacts file" in caplog.text


def test_progress_callback_sees_every_attempt(tmp_path: Path) -> None:
    seen: list[str] = []
    result = run(
        [scenario("p", repeats=3)], lambda t, c: "bad", tmp_path, progress=lambda a: seen.append(a.status)
    )
    assert seen == ["fail"] * 3 and result.summary.fails == 3


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    from replaygate.replay._errors import ReplayError

    with pytest.raises(ReplayError, match="concurrency"):
        run([scenario("a")], lambda t, c: "x", tmp_path, concurrency=0)
    with pytest.raises(ReplayError, match="twice"):
        run([scenario("a"), scenario("a")], lambda t, c: "x", tmp_path)
    with pytest.raises(ReplayError, match="shard"):
        run([scenario("a")], lambda t, c: "x", tmp_path, shard="3/2")

    async def inside() -> None:
        run([scenario("a")], lambda t, c: "x", tmp_path)

    with pytest.raises(ReplayError, match="run_suite_async"):
        asyncio.run(inside())
    assert callable(run_suite_async)


def test_hung_sync_calls_do_not_starve_later_attempts(tmp_path: Path) -> None:
    release = threading.Event()

    def target(turns: list[str], context: dict[str, Any]) -> str:
        if context.get("hang"):
            release.wait(5)
        return "good"

    scenarios = [scenario("a-hang", context={"hang": True})] + [scenario(f"b-{i}") for i in range(4)]
    try:
        result = run(scenarios, target, tmp_path, concurrency=2, timeout_s=0.3)
    finally:
        release.set()
    statuses = {(a.scenario_id, a.index): a.status for a in result.attempts}
    assert statuses[("a-hang", 0)] == statuses[("a-hang", 1)] == "error"
    assert [s for k, s in statuses.items() if k[0] != "a-hang"] == ["pass"] * 8


def test_progress_bar_shows_errors_fails_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def target(turns: list[str], context: dict[str, Any]) -> str:
        if context.get("boom"):
            raise RuntimeError("boom")
        return "good" if context.get("good") else "bad"

    scenarios = [scenario("e", context={"boom": True}), scenario("f"), scenario("p", context={"good": True})]
    result = run(scenarios, target, tmp_path, progress=True)
    err = capsys.readouterr().err  # not a terminal: plain lines
    assert err.splitlines()[-1].startswith("replay: 6/6 (100%)  pass 2  fail 2  error 2  elapsed ")
    assert result.summary.errors == 2
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal: the rich bar, with its ETA
    run(scenarios, target, tmp_path / "bar", progress=True)
    err = capsys.readouterr().err
    assert "pass 2  fail 2  error 2" in err and "eta" in err and "replay: " not in err


def test_a_raising_target_leaves_its_traceback_in_the_artifact(tmp_path: Path) -> None:
    def target(turns: list[str], context: dict[str, Any]) -> str:
        raise RuntimeError("database down")

    [attempt] = run([scenario("boom", repeats=1)], target, tmp_path).attempts
    assert attempt.status == "error" and attempt.error == "target raised RuntimeError: database down"
    doc = read_artifacts(attempt.artifact_path or "")[("boom", 0)]
    [root] = [s for s in doc["spans"] if s["name"] == "replay attempt"]
    [event] = root["events"]
    assert event["attributes"]["exception.type"] == "RuntimeError"
    assert 'raise RuntimeError("database down")' in event["attributes"]["exception.stacktrace"]
    assert root["status"] == "error" and doc["error"] == attempt.error


def test_run_suite_restores_the_garbage_collector(tmp_path: Path) -> None:
    import gc

    seen: list[tuple[int, int]] = []

    def target(turns: list[str], context: dict[str, Any]) -> str:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return "good"

    before = gc.get_threshold()
    run([scenario("a", repeats=1)], target, tmp_path)
    assert seen[0][0] > 0 and seen[0][1] >= 5000  # old objects set aside during the run
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before and gc.isenabled()
    gc.freeze()  # a process that froze objects itself is left alone
    try:
        run([scenario("b", repeats=1)], target, tmp_path / "again")
        assert seen[1][1] == before[0] and gc.get_freeze_count() > 0  # not unfrozen by the run
    finally:
        gc.unfreeze()


def test_run_file_lists_one_attempt_per_line_and_reuses_only_the_journaled_object(tmp_path: Path) -> None:
    from replaygate.replay._runfile import dump_run

    result = run([scenario("a"), scenario("b")], lambda turns, context: "good", tmp_path)
    lines = (tmp_path / "run.json").read_text().splitlines()
    start = lines.index('  "attempts": [')
    attempt_lines = lines[start + 1 : start + 5]
    assert [json.loads(line.strip().rstrip(",")) for line in attempt_lines] == [
        a.model_dump(mode="json") for a in result.attempts
    ]
    assert lines[start + 5 :] == ["  ]", "}"]
    assert load_run(tmp_path / "run.json") == result
    first = result.attempts[0]
    stale = first.model_copy(update={"answer": "what the journal wrote before the attempt changed"})
    text = dump_run(result, {(first.scenario_id, first.index): (stale, stale.model_dump_json())})
    assert "before the attempt changed" not in text  # a cached text is used for its own object only
    same = dump_run(result, {(first.scenario_id, first.index): (first, '{"cached": true}')})
    assert '    {"cached": true},' in same.splitlines()


def test_a_failure_inside_a_target_thread_fails_the_run_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replaygate.replay._attempt import AttemptRunner

    real = AttemptRunner.call_blocking
    calls = {"n": 0}

    def broken(self: AttemptRunner, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("a bug in the runner")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(AttemptRunner, "call_blocking", broken)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="a bug in the runner"):
        run([scenario(f"s{i}") for i in range(5)], lambda turns, context: "good", tmp_path, concurrency=2)
    assert time.monotonic() - t0 < 10
