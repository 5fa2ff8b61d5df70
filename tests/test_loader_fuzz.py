"""Issue 14: every loader, fed any bytes or any edit of a valid file, returns or raises its own error.

Loaders: scenario, policy, question-set CSV, run file, journal, gate report, decision (``gate --out``),
users file. Each is given (1) random bytes, (2) a valid file with a random slice replaced, and (3) a
valid JSON/YAML document with one value swapped for a random JSON value. Nothing but a
:class:`ReplaygateError` may escape, and its message names the file.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replaygate.instrumentation import ReplaygateError
from replaygate.replay import (
    JournalWriter,
    Scenario,
    dump_scenario,
    load_run,
    load_scenario,
    read_journal,
    run_suite,
)

from replaygate.cli import refuse_other_report
from replaygate.gate import Policy, gate_runs, load_policy
from replaygate.golden import parse_csv
from replaygate.report import load_report, write_reports
from replaygate.web import load_users
from tests.gate.conftest import make_run

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.just("1e999")
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _target(turns: list[str], context: dict[str, Any], config: dict[str, Any], **_: Any) -> str:
    return "refund issued"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("seeds")
    s = Scenario.model_validate(
        {
            "id": "s-1",
            "title": "t",
            "owner": "qa",
            "origin": "original-eval",
            "added": dt.date(2026, 11, 29),
            "turns": ["hello"],
            "repeats": 2,
            "checks": [{"type": "tool_args", "tool": "refund", "arg": "amount", "max": 200}],
        }
    )
    run_suite([s], _target, {}, out_path=tmp / "run.json", progress=False, artifacts=False, code_commit=None)
    done = load_run(tmp / "run.json")  # a journal of its attempts (a finished run removes its own)
    header = {"run_id": done.run_id, "fingerprint": done.fingerprint.model_dump(mode="json"), "scenarios": []}
    writer = JournalWriter(tmp / "run.json.journal", header=header)
    writer.extend(list(done.attempts))
    writer.close()
    report = gate_runs(Policy(), make_run([5, 5], run_id="b"), make_run([5, 5], run_id="h"))
    write_reports(report, tmp / "rep", ["json"])
    decision = {"id": "dec-1", "report_id": report.report_id, "outcome": "pass", "signed_by": "ana"}
    return {
        "scenario": dump_scenario(s).encode(),
        "policy": (ROOT / "examples" / "gate-policy.yaml").read_bytes(),
        "csv": b"id,title,owner,question,must_pass\nship-1,Shipping,alice,How long?,false\n",
        "run": (tmp / "run.json").read_bytes(),
        "journal": (tmp / "run.json.journal").read_bytes(),
        "report": (tmp / "rep" / "report.json").read_bytes(),
        "decision": json.dumps(decision).encode(),
        "users": b"users:\n  ana: {password_hash: 'scrypt:x', role: releaser}\n",
    }


def _load_decision(path: Path) -> None:
    refuse_other_report(path.parent, "rpt-someone")


LOADERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "scenario": ("s-1.yaml", load_scenario),
    "policy": ("policy.yaml", load_policy),
    "csv": ("questions.csv", parse_csv),
    "run": ("run.json", load_run),
    "journal": ("run.json.journal", read_journal),
    "report": ("report.json", load_report),
    "decision": ("decision.json", _load_decision),
    "users": ("users.yaml", load_users),
}


def _check(kind: str, data: bytes, tmp: Path) -> None:
    name, loader = LOADERS[kind]
    path = tmp / name
    path.write_bytes(data)
    try:
        loader(path)
    except ReplaygateError as exc:
        assert str(path) in str(exc) or path.name in str(exc), (
            f"{kind}: the error does not name the file: {exc}"
        )
    # anything else escapes and fails the test


def _mutate_json(seed: bytes, value: Any, pick: int) -> bytes:
    """Replace one value (the pick-th, depth first) of a JSON document or of each JSON line."""
    lines = seed.decode().splitlines()
    docs = [json.loads(line) for line in lines] if len(lines) > 1 and seed.startswith(b'{"kind"') else None
    if docs is None:
        docs = [json.loads(seed)]
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            slots.append((node, k))
            walk(v)

    for d in docs:
        walk(d)
    if slots:
        node, key = slots[pick % len(slots)]
        node[key] = value
    return "\n".join(json.dumps(d) for d in docs).encode() + b"\n"


def _mutate_yaml(seed: bytes, value: Any, pick: int) -> bytes:
    doc = yaml.safe_load(seed)
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items):
            slots.append((node, k))
            walk(v)

    walk(doc)
    if slots:
        node, key = slots[pick % len(slots)]
        node[key] = value
    return yaml.safe_dump(doc).encode()


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(
    seeds: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, kind: str, data: bytes
) -> None:
    _check(kind, data, tmp_path_factory.mktemp(kind))


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(start=st.integers(0, 10_000), length=st.integers(0, 30), insert=st.binary(max_size=30))
def test_a_slice_of_a_valid_file_replaced(
    seeds: dict[str, bytes],
    tmp_path_factory: pytest.TempPathFactory,
    kind: str,
    start: int,
    length: int,
    insert: bytes,
) -> None:
    seed = seeds[kind]
    at = start % (len(seed) + 1)
    _check(kind, seed[:at] + insert + seed[at + length :], tmp_path_factory.mktemp(kind))


@pytest.mark.parametrize("kind", sorted(LOADERS))
@FUZZ
@given(value=json_value, pick=st.integers(0, 10_000))
def test_one_value_of_a_valid_document_swapped(
    seeds: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory, kind: str, value: Any, pick: int
) -> None:
    seed = seeds[kind]
    if kind == "csv":
        text = seed.decode().splitlines()
        cells = text[1].split(",")
        cells[pick % len(cells)] = json.dumps(value)
        data = (text[0] + "\n" + ",".join(cells) + "\n").encode()
    elif kind in ("scenario", "policy", "users"):
        data = _mutate_yaml(seed, value, pick)
    else:
        data = _mutate_json(seed, value, pick)
    _check(kind, data, tmp_path_factory.mktemp(kind))


@pytest.mark.parametrize("kind", ["policy", "run", "report", "journal", "scenario"])
def test_deep_nesting_is_a_clear_error(tmp_path: Path, kind: str) -> None:
    deep_json = b'{"a": ' * 5000 + b"1" + b"}" * 5000
    deep_yaml = b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n"
    data = deep_yaml if kind in ("policy", "scenario") else deep_json
    if kind == "journal":
        data = b'{"kind":"header","run_id":"r"}\n' + deep_json + b"\n" + deep_json + b"\n"
    name, loader = LOADERS[kind]
    with pytest.raises(ReplaygateError, match="nested|deep"):
        loader(tmp_path / name) if (tmp_path / name).write_bytes(data) else None
