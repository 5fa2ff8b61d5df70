"""The runner's and readers' fast paths give what the plain paths give (issue 19), and RunOptions."""

import asyncio
import json
import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import SpanRecord, summarize_spans
from replaygate.replay import RunFileError, RunOptions, load_run, load_versioned, run_suite
from replaygate.replay._attempt_summary import ROOT_KEYS, AttemptSummaries
from replaygate.replay._batch_queue import STOP, next_batch
from replaygate.replay._deadlines import Deadlines
from replaygate.replay._journal import JournalWriter, read_journal, read_journal_fingerprint
from replaygate.replay._runfile import (
    Attempt,
    CheckResult,
    ConversationTurn,
    JudgeResult,
    Measures,
    RunFile,
    attempt_digest,
    attempt_json,
)
from replaygate.replay._scenario import Scenario

from tests.conftest import make_scenario

text = st.text(max_size=30)


def scenario(sid: str, repeats: int = 2, **extra: Any) -> Scenario:
    return make_scenario(sid, repeats=repeats, **extra)


def ok_target(turns: list[str], context: dict[str, Any]) -> str:
    return "ok " + turns[0]


attempts = st.builds(
    Attempt,
    scenario_id=text,
    index=st.integers(0, 10**6),
    status=st.sampled_from(["pass", "fail", "error"]),
    error=st.none() | text,
    answer=st.none() | text,
    checks=st.lists(st.builds(CheckResult, name=text, passed=st.booleans(), detail=text), max_size=3),
    judges=st.lists(
        st.builds(
            JudgeResult,
            name=text,
            score=st.floats(0, 1),
            passed=st.booleans(),
            claims=st.lists(st.dictionaries(text, text | st.integers(), max_size=3), max_size=2),
        ),
        max_size=2,
    ),
    measures=st.builds(Measures, latency_s=st.floats(0, 100), cost_usd=st.none() | st.floats(0, 1)),
    trace_id=st.none() | text,
    artifact_path=st.none() | text,
    started=text,
    conversation=st.none()
    | st.lists(st.builds(ConversationTurn, user=text, answer=st.none() | text), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(attempts)
def test_attempt_json_is_the_dump_and_the_digest(a: Attempt) -> None:
    text_, digest = attempt_json(a)
    assert text_ == a.model_dump_json()
    assert digest == attempt_digest(a)


def test_only_conversation_follows_started() -> None:
    # attempt_json puts artifact_path back before the last ',"started":'; a field after ``started`` with
    # free-form keys would make that ambiguous.
    names = list(Attempt.model_fields)
    assert names[names.index("artifact_path") + 1] == "started"
    assert names[names.index("started") + 1 :] == ["conversation"]


def record(**changes: Any) -> SpanRecord:
    fields: dict[str, Any] = {
        "trace_id": "ab" * 16,
        "span_id": "cd" * 8,
        "parent_id": None,
        "name": "replay attempt",
        "kind": "other",
        "start_ns": 1_000,
        "end_ns": 5_000_000,
        "status": "unset",
        "status_message": None,
        "attributes": {"replaygate.scenario.id": "s", "replaygate.attempt.index": 0},
    }
    fields.update(changes)
    return SpanRecord(**fields)


@settings(max_examples=200, deadline=None)
@given(
    trace=st.text("0123456789abcdef", min_size=32, max_size=32),
    start=st.integers(0, 10**12),
    length=st.integers(-1000, 10**10),
    status=st.sampled_from(["ok", "error", "unset"]),
    message=st.none() | st.sampled_from(["boom", "timed out after 1s"]),
    name=st.sampled_from(["replay attempt", "renamed"]),
)
def test_root_only_summary_is_summarize_spans(
    trace: str, start: int, length: int, status: str, message: str | None, name: str
) -> None:
    summaries = AttemptSummaries()
    first = record(status=status, status_message=message, name=name)
    assert summaries([first]) == summarize_spans([first])  # made once ...
    other = record(
        trace_id=trace,
        start_ns=start,
        end_ns=start + length,
        status=status,
        status_message=message,
        name=name,
    )
    other = SpanRecord(
        **{**other.__dict__, "attributes": {"replaygate.scenario.id": "t", "replaygate.attempt.index": 7}}
    )
    assert summaries([other]) == summarize_spans([other])  # ... and copied


def test_other_traces_are_summarized_in_full() -> None:
    summaries = AttemptSummaries()
    tagged = record(attributes={**dict.fromkeys(ROOT_KEYS, "x"), "replaygate.escalation": True})
    assert summaries([tagged]).escalated and summaries([tagged]) == summarize_spans([tagged])
    agent = record(
        span_id="ef" * 8,
        parent_id="cd" * 8,
        attributes={"gen_ai.operation.name": "invoke_agent", "replaygate.agent.output": "hi"},
    )
    assert summaries([record(), agent]) == summarize_spans([record(), agent])


def test_next_batch_gathers_until_the_deadline_and_stops_at_stop() -> None:
    q: queue.SimpleQueue[Any] = queue.SimpleQueue()
    q.put([1])

    def later() -> None:
        time.sleep(0.02)
        q.put([2, 3])

    threading.Thread(target=later).start()
    items, stop = next_batch(q, until=time.monotonic() + 2.0)  # a STOP or the deadline ends it
    assert not stop and items[0] == 1
    if items == [1]:  # the deadline cannot have passed in 20 ms: the second list is in the batch
        pytest.fail("next_batch returned before its deadline without STOP")
    assert items == [1, 2, 3]
    q.put([4])
    q.put(STOP)
    t0 = time.monotonic()
    assert next_batch(q, until=time.monotonic() + 5.0) == ([4], True)
    assert time.monotonic() - t0 < 1.0  # STOP ends the wait at once


def test_run_options_whole_or_as_keywords(tmp_path: Path) -> None:
    suite = [scenario("a"), scenario("b")]
    opts = RunOptions(out_path=tmp_path / "one.json", repeats=1, progress=False, code_commit=None)
    one = run_suite(suite, ok_target, options=opts)
    two = run_suite(suite, ok_target, options=opts, out_path=tmp_path / "two.json", repeats=3)
    kw = run_suite(
        suite, ok_target, out_path=tmp_path / "kw.json", repeats=1, progress=False, code_commit=None
    )
    assert len(one.attempts) == 2 and len(two.attempts) == 6 and len(kw.attempts) == 2
    assert two.fingerprint.k == 3 and {a.status for a in two.attempts} == {"pass"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'repeat'"):
        run_suite(suite, ok_target, out_path=tmp_path / "x.json", repeat=2)
    with pytest.raises(TypeError, match="out_path"):
        run_suite(suite, ok_target)


def write_run(tmp_path: Path) -> Path:
    out = tmp_path / "run.json"
    run_suite([scenario("a"), scenario("b")], ok_target, out_path=out, progress=False, code_commit=None)
    return out


def test_run_file_read_in_one_pass_equals_the_strict_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = write_run(tmp_path)
    strict = RunFile.model_validate(json.loads(out.read_text()))
    with monkeypatch.context() as patched:  # the one-pass read neither parses to objects nor re-dumps
        patched.setattr(RunFile, "model_validate", None)
        patched.setattr(Attempt, "model_dump_json", None)
        fast = load_run(out)
    assert fast == strict
    # laid out differently (re-indented) but the same content: still read, the digest made again
    relaid = tmp_path / "relaid.json"
    relaid.write_text(json.dumps(json.loads(out.read_text()), indent=4))
    assert load_run(relaid) == fast


def edited(out: Path, tmp_path: Path, edit: Any, name: str) -> Path:
    doc = json.loads(out.read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_fast_path_refuses_what_the_strict_reader_refuses(tmp_path: Path) -> None:
    out = write_run(tmp_path)
    text_ = out.read_text()
    nan = tmp_path / "nan.json"
    nan.write_text(text_.replace('"latency_s":', '"latency_s":NaN,"x":', 1))
    with pytest.raises(RunFileError, match="not valid JSON"):
        load_run(nan)
    true_version = tmp_path / "true.json"
    true_version.write_text(text_.replace('"format_version": 1', '"format_version": true', 1))
    with pytest.raises(RunFileError, match="format_version True is not supported"):
        load_run(true_version)
    deep: Any = "leaf"
    for _ in range(70):
        deep = [deep]
    nested = edited(out, tmp_path, lambda d: d.update(policy={"deep": deep}), "deep.json")
    with pytest.raises(RunFileError, match="nested deeper than 64"):
        load_run(nested)
    in_summary = edited(out, tmp_path, lambda d: d["summary"].update(retrieval={"deep": deep}), "deep2.json")
    with pytest.raises(RunFileError, match="nested deeper than 64"):
        load_run(in_summary)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(text_.replace('"status":"pass"', '"status":"fail"', 1))
    with pytest.raises(RunFileError, match="edited after the run"):
        load_run(tampered)


def test_load_versioned_upgrades_old_documents(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"run_id": "r", "format_version": 0}))
    upgrades = {0: lambda raw: {**raw, "format_version": 1, "shard": None}}
    with pytest.raises(RunFileError, match="format_version 0 is not supported"):
        load_versioned(path, RunFile, version=1, what="run file", error=RunFileError)
    with pytest.raises(RunFileError, match="invalid run file: fingerprint: Field required"):
        load_versioned(path, RunFile, version=1, what="run file", error=RunFileError, upgrades=upgrades)


def test_journal_header_is_versioned_and_an_unversioned_one_reads_as_version_1(tmp_path: Path) -> None:
    path = tmp_path / "j"
    w = JournalWriter(path, header={"run_id": "r", "fingerprint": {}})
    w.append(Attempt(scenario_id="s", index=0, status="pass", measures=Measures(latency_s=0.1)))
    w.close()
    head, rest = path.read_bytes().split(b"\n", 1)
    assert json.loads(head)["format_version"] == 1
    state = read_journal(path)
    assert state.header["format_version"] == 1 and len(state.attempts) == 1
    old = json.loads(head)
    del old["format_version"]
    path.write_bytes(json.dumps(old).encode() + b"\n" + rest)
    assert read_journal(path).header["format_version"] == 1  # upgraded
    newer = {**old, "format_version": 2}
    path.write_bytes(json.dumps(newer).encode() + b"\n" + rest)
    with pytest.raises(RunFileError, match="journal header format_version 2 is not supported"):
        read_journal(path)
    with pytest.raises(RunFileError, match="journal header format_version 2 is not supported"):
        read_journal_fingerprint(path)


def test_journal_attempt_lines_fast_and_strict_agree(tmp_path: Path) -> None:
    path = tmp_path / "j"
    w = JournalWriter(path, header={"run_id": "r"})
    claims = [{"doc": "d1", "verdict": "supported"}]
    judged = Attempt(
        scenario_id="s",
        index=1,
        status="fail",
        judges=[JudgeResult(name="g", score=0.5, passed=False, claims=claims)],
        measures=Measures(latency_s=0.2),
        artifact_path="/x/artifacts.jsonl",
    )
    w.append(Attempt(scenario_id="s", index=0, status="pass", measures=Measures(latency_s=0.1)))
    w.append(judged)
    w.close()
    with pytest.MonkeyPatch.context() as patched:  # the writer's lines are read in one pass
        patched.setattr(Attempt, "model_validate", None)
        assert read_journal(path).attempts[1] == judged
    lines = path.read_bytes().split(b"\n")
    doc = json.loads(lines[2])
    doc["attempt"]["status"] = "pass"  # edited: its digest no longer matches
    path.write_bytes(b"\n".join([lines[0], lines[1], json.dumps(doc).encode(), lines[1], b""]))
    with pytest.raises(RunFileError, match=r"j:3: corrupt journal line .*does not match its digest"):
        read_journal(path)


def test_an_attempt_with_judges_is_scored_in_a_task(tmp_path: Path) -> None:
    suite = [scenario("j", judges=[{"type": "groundedness"}]), scenario("p")]
    run = run_suite(suite, ok_target, out_path=tmp_path / "r.json", progress=False, code_commit=None)
    by = {a.scenario_id: a for a in run.attempts}
    assert by["j"].judges and by["j"].judges[0].name == "groundedness"
    assert not by["p"].judges and by["p"].status == "pass"


def test_async_calls_time_out_on_the_shared_deadlines(tmp_path: Path) -> None:
    async def target(turns: list[str], context: dict[str, Any]) -> str:
        kind = context["kind"]
        if kind == "hang":
            await asyncio.sleep(3)
        if kind == "own-timeout":
            raise TimeoutError("upstream API did not answer")
        return "ok " + kind

    kinds = ["hang", "own-timeout", "fine"]
    suite = [scenario(f"s-{k}", context={"kind": k}) for k in kinds]
    t0 = time.monotonic()
    run = run_suite(
        suite, target, out_path=tmp_path / "r.json", timeout_s=0.3, progress=False, code_commit=None
    )
    assert time.monotonic() - t0 < 2.5  # the hanging calls were given up at their deadline
    by = {(a.scenario_id, a.index): a for a in run.attempts}
    assert [by[("s-hang", i)].error for i in range(2)] == ["timed out after 0.3s"] * 2
    assert by[("s-own-timeout", 0)].error == "target raised TimeoutError: upstream API did not answer"
    assert [a.status for a in run.attempts_for("s-fine")] == ["pass", "pass"]


def test_a_deadline_cancels_only_its_own_call_and_never_hides_another_cancel() -> None:
    async def main() -> tuple[bool, bool, bool]:
        deadlines = Deadlines(0.05)

        async def call(seconds: float) -> bool:
            deadline = deadlines.start()
            try:
                try:
                    await asyncio.sleep(seconds)
                finally:
                    timed_out = deadline.stop()
            except asyncio.CancelledError:
                if not timed_out:
                    raise
                return True
            return False

        quick, slow = await asyncio.gather(call(0.0), call(1.0))
        outer = asyncio.ensure_future(call(1.0))
        await asyncio.sleep(0.01)
        outer.cancel()  # the run interrupted before the deadline: the cancel goes on
        try:
            await outer
            cancelled = False
        except asyncio.CancelledError:
            cancelled = True
        deadlines.close()
        return quick, slow, cancelled

    assert asyncio.run(main()) == (False, True, True)


def test_scores_kept_for_root_only_attempts_equal_scoring_each_afresh(tmp_path: Path) -> None:
    from replaygate.replay import score_attempt

    answers = ["ok fine", "ok fine", "", "nope", {"answer": "ok", "label": "escalate"}, "ok fine"]
    answers += [{"answer": "ok", "label": "bogus"}, "ok fine " * 40]
    suite = [
        scenario("a", repeats=len(answers)),
        scenario(
            "b",
            repeats=len(answers),
            checks=[
                {"type": "output_regex", "pattern": "fi(ne)"},
                {"type": "not_contains", "values": ["nope"]},
                {"type": "max_chars", "limit": 50},
                {"type": "expected_label", "label": "answer"},
            ],
        ),
        scenario("c", repeats=len(answers), checks=[{"type": "output_regex", "pattern": r"(o)k\s+\1?"}]),
        scenario("d", repeats=len(answers), allow_empty=True, tags={"llm_calls": "none"}),
    ]

    def runs(scorer: Any, out: str) -> list[Attempt]:
        served: dict[str, int] = {}

        def target(turns: list[str], context: dict[str, Any]) -> Any:
            n = served[turns[0]] = served.get(turns[0], -1) + 1
            time.sleep(0.001 * (n + 1))  # each call its own, growing duration
            return answers[n % len(answers)]

        run = run_suite(
            suite,
            target,
            out_path=tmp_path / out,
            concurrency=1,
            scorer=scorer,
            progress=False,
            code_commit=None,
        )
        return run.attempts

    async def afresh(*args: Any, **kwargs: Any) -> Any:  # another scorer: nothing is kept
        return await score_attempt(*args, **kwargs)

    kept, fresh = runs(None, "kept.json"), runs(afresh, "fresh.json")
    assert len(kept) == len(fresh) == 4 * len(answers)
    own = {"trace_id", "started", "artifact_path", "measures"}
    for a, b in zip(kept, fresh, strict=True):
        assert a.model_dump(exclude=own) == b.model_dump(exclude=own)
        assert a.measures.model_dump(exclude={"latency_s"}) == b.measures.model_dump(exclude={"latency_s"})
    # each attempt its own latency: one kept from an earlier, shorter call would be below this call's sleep
    assert all(a.measures.latency_s >= 0.001 * (a.index + 1) for a in kept)
    assert {a.status for a in kept} == {"pass", "fail", "error"}  # kept outcomes of every kind reused
