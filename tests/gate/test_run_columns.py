"""The gate's fast reading of run files gives what validating every attempt gives, and refuses no less.

``scan_run_columns`` / ``parse_attempt_line`` read attempt lines with one strict pattern instead of
building ``Attempt`` objects; these tests check, on generated attempts and on mutated lines, that a line
the pattern accepts is one ``Attempt`` validation accepts with the same fields, and that whole runs read
as columns reduce (and gate) exactly as the runs loaded whole do.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from replaygate.replay import (
    Attempt,
    CheckResult,
    JudgeResult,
    Measures,
    RetrievalScores,
    attempt_digest,
    attempt_fields,
    load_run,
    parse_attempt_line,
    save_run,
    scan_run_columns,
)

from replaygate.gate import Policy, RunData, compare_runs, gate_runs, load_run_data
from tests.gate.conftest import make_run

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_plain = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters='"\\'))
_number = st.floats(allow_nan=False, allow_infinity=False, width=64)
_count = st.none() | st.integers(-(10**17), 10**17)  # larger ints are read by validation

attempts = st.builds(
    Attempt,
    scenario_id=_plain | _text,
    index=st.integers(-(10**17), 10**17),
    status=st.sampled_from(["pass", "fail", "error"]),
    error=st.none() | _plain | _text,
    answer=st.none() | _plain | _text,
    checks=st.lists(
        st.builds(CheckResult, name=_plain, passed=st.booleans(), detail=_plain | _text), max_size=3
    ),
    judges=st.lists(st.builds(JudgeResult, name=_plain, score=_number, passed=st.booleans()), max_size=1),
    retrieval=st.none()
    | st.builds(
        RetrievalScores,
        k=st.integers(0, 10),
        hit_rate=_number,
        mrr=_number,
        recall=_number,
        ndcg=_number,
        retrieved=st.integers(0, 10),
        filtered=st.none() | st.integers(0, 10),
        threshold=st.none() | _number,
        threshold_noop=st.booleans(),
    ),
    measures=st.builds(
        Measures,
        latency_s=_number,
        input_tokens=_count,
        output_tokens=_count,
        cost_usd=st.none() | _number,
        escalated=st.booleans(),
        empty=st.booleans(),
        steps=st.integers(0, 50),
        llm_calls=st.none() | st.integers(0, 50),
    ),
    attribution=st.sampled_from([None, "retrieval", "generation"]),
    trace_id=st.none() | _plain,
    artifact_path=st.none() | _plain | _text,
    started=_plain,
)


def _read(line: str) -> Any:
    data = line.encode("utf-8")
    return parse_attempt_line(data, 0, len(data))


@settings(max_examples=400, deadline=None)
@given(attempts)
def test_a_line_read_fast_has_the_fields_and_digest_of_the_validated_attempt(a: Attempt) -> None:
    line = a.model_dump_json()
    read = _read(line)
    plain = not a.judges and "\\" not in line and not any(ord(ch) < 32 for ch in line)
    assert (read is not None) == plain  # every line replaygate writes without a judge or an escape
    if read is not None:
        fields, digest = read
        assert fields == attempt_fields(Attempt.model_validate_json(line))
        assert digest.hex() == attempt_digest(a)


_NUMBERS = ["0", "-0", "1", "-1", "1.5", "1e5", "1E-5", "0.1000000000000000055511151231257827", "2.5e+300"]


@pytest.mark.parametrize("seed", range(4))
def test_a_mutated_line_is_read_fast_only_when_validation_accepts_it_with_the_same_fields(seed: int) -> None:
    rng = random.Random(seed)
    base = make_run([3, 2, 0], k=4, errors={2: 2}).attempts
    lines = [a.model_dump_json() for a in base]
    alphabet = list('{}[],:"\\ 0123456789.eE+-tfnul') + ["null", "true", "false", '"x"', "1.0", "\u00e9"]
    accepted = 0
    for _ in range(1500):
        line = rng.choice(lines)
        at = rng.randrange(len(line))
        cut = rng.randrange(0, 3)
        mutated = line[:at] + rng.choice(alphabet + _NUMBERS) + line[at + cut :]
        read = _read(mutated)
        if read is None:
            continue
        accepted += 1
        try:
            valid = Attempt.model_validate_json(mutated)
        except ValidationError as exc:  # pragma: no cover - the failure this test is for
            raise AssertionError(f"read fast, refused by validation: {mutated}") from exc
        assert read[0] == attempt_fields(valid), mutated
    assert accepted > 50  # the mutations do reach the pattern's accepting side (numbers, strings, nulls)


def _save(tmp_path: Path, name: str, run: Any) -> Path:
    return save_run(run, tmp_path / f"{name}.json")


def _shuffled(run: Any, seed: int) -> Any:
    rows = list(run.attempts)
    random.Random(seed).shuffle(rows)
    return run.model_copy(update={"attempts": rows})


@pytest.mark.parametrize("seed", range(5))
def test_a_run_read_as_columns_reduces_and_gates_as_the_run_loaded_whole(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n, k = 30, 6
    passes = [rng.randint(0, k) for _ in range(n)]
    base = make_run(passes, run_id="base", k=k, errors={1: 2, 7: 1}, escalated_every=4, answer="ünï ok")
    head = make_run(
        [max(0, p - rng.randint(0, 2)) for p in passes],
        run_id="head",
        k=k,
        errors={3: k},
        cost=None if seed % 2 else 0.002,
    )
    short = make_run(passes, run_id="short", k=k, attempts={5: k - 1, 6: 0})  # (the gate refuses it)
    noise = make_run([min(k, p + rng.randint(-1, 1)) for p in passes], run_id="noise", k=k, latency=0.6)
    rows = list(head.attempts)
    rows[4] = rows[4].model_copy(update={"answer": None, "retrieval": RetrievalScores(
        k=3, hit_rate=0.5, mrr=0.25, recall=1.0, ndcg=0.75, retrieved=3)})  # fmt: skip
    head = _shuffled(head.model_copy(update={"attempts": rows}), seed)
    rows[9] = rows[9].model_copy(update={"index": rows[8].index})  # two attempts with one index
    twice = _shuffled(head.model_copy(update={"attempts": rows}), seed)  # (the gate refuses it)
    paths = [_save(tmp_path, name, run) for name, run in (("base", base), ("head", head), ("noise", noise))]
    for path in [*paths, _save(tmp_path, "twice", twice), _save(tmp_path, "short", short)]:
        read = scan_run_columns(path)
        assert read is not None  # read as columns, not per line
        columns = read[1]
        for row, a in enumerate(load_run(path).attempts):
            fields = columns.fields(row)
            assert fields == attempt_fields(a)
            assert columns.answer(row) == fields.answer and columns.error(row) == fields.error
            assert columns.failed_checks(row) == fields.failed_checks
        assert load_run_data(path) == RunData.of(load_run(path))
    text = tuple(str(p) for p in paths)
    whole = gate_runs(Policy(), *(load_run(p) for p in paths), paths=text)
    fast = gate_runs(Policy(), *(load_run_data(p) for p in paths), paths=text)
    assert fast.outcome == whole.outcome
    a, b = json.loads(fast.model_dump_json()), json.loads(whole.model_dump_json())
    a.pop("created_at"), b.pop("created_at")
    assert a == b
    assert compare_runs(*(load_run_data(p) for p in paths)) == compare_runs(*(load_run(p) for p in paths))
    short_path = tmp_path / "short.json"
    fast_short = compare_runs(load_run_data(short_path), load_run_data(paths[1]))
    assert fast_short == compare_runs(load_run(short_path), load_run(paths[1]))
    assert fast_short.problems  # the missing attempts are problems on both paths


def test_a_run_with_judges_is_read_per_line_and_gives_the_same_data(tmp_path: Path) -> None:
    run = make_run([3, 1, 2], run_id="judged", k=3, judge=0.6)
    path = _save(tmp_path, "judged", run)
    assert scan_run_columns(path) is None  # a judge line: validated as an Attempt
    assert load_run_data(path) == RunData.of(load_run(path))


@pytest.mark.parametrize(
    "latency", [1.0389291955903938e-05, 1.2345678901234567e-06, 5e-324, 1.7976931348623157e308]
)
def test_a_tiny_or_huge_latency_is_read_fast_as_written(latency: float) -> None:
    # pydantic writes 1.04e-05 as 0.000010389291955903938: 21 digits after the point
    a = Attempt(scenario_id="s", index=0, status="pass", measures=Measures(latency_s=latency))
    read = _read(a.model_dump_json())
    assert read is not None
    assert read[0].latency_s == latency
