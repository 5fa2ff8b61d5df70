"""Issue 19: ``golden.lock``'s index lets promote skip parsing files, and a stale index is never trusted."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from replaygate.replay import Scenario

import replaygate.golden._promote as promote_module
from replaygate.golden import GoldenSet, accept_changes, lint, promote_trace
from replaygate.golden._index import file_hash, read_index
from tests.golden.test_promote import FAILING, TODAY, conversation


def _scenario(i: int, trace: str | None) -> Scenario:
    return Scenario.model_validate(
        {
            "id": f"s-{i:03d}",
            "title": f"scenario {i}",
            "owner": "qa",
            "origin": "production-incident",
            "source_trace": trace,
            "added": dt.date(2026, 11, 29),
            "turns": [f"question {i}"],
            "tags": {"risk": "high" if i % 2 else "low"},
            "checks": [{"type": "contains", "values": ["refund"]}],
        }
    )


@pytest.fixture
def golden(tmp_path: Path) -> GoldenSet:
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(i, f"{i:032x}") for i in range(20)])
    return gs


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    parsed: list[Path] = []
    real = promote_module.load_scenario

    def counting(path: Path) -> Scenario:
        parsed.append(Path(path))
        return real(path)

    monkeypatch.setattr(promote_module, "load_scenario", counting)
    return parsed


def test_write_indexes_the_bytes_it_wrote(golden: GoldenSet) -> None:
    index = read_index(golden.lock_path)
    assert sorted(index) == [f"s-{i:03d}" for i in range(20)]
    entry = index["s-003"]
    assert entry.file == "s-003.yaml" and entry.source_trace == f"{3:032x}"
    assert entry.file_hash == file_hash((golden.path / "s-003.yaml").read_bytes())
    assert entry.tags == {"risk": "high"} and entry.state == "active"
    assert len(golden.index()) == 20
    assert [p for p in lint(golden, today=TODAY) if p.severity == "error"] == []  # the index is no problem


def test_promote_parses_no_indexed_file(golden: GoldenSet, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _count_parses(monkeypatch)
    made = promote_trace(
        conversation(), FAILING, golden, owner="qa", origin="production-incident", today=TODAY
    )
    assert made.created and parsed == []
    again = promote_trace(
        conversation(), FAILING, golden, owner="qa", origin="production-incident", today=TODAY
    )
    assert not again.created and again.scenario.id == made.scenario.id
    assert parsed == [made.path]  # only the file the index names for that trace


def test_a_file_edited_by_hand_is_parsed_not_trusted(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = golden.path / "s-005.yaml"
    text = path.read_text(encoding="utf-8").replace(f"'{5:032x}'", f"'{FAILING}'")
    assert FAILING in text
    path.write_text(text, encoding="utf-8")  # the index still says s-005 came from another trace
    parsed = _count_parses(monkeypatch)
    found = promote_trace(
        conversation(), FAILING, golden, owner="qa", origin="production-incident", today=TODAY
    )
    assert not found.created and found.scenario.id == "s-005"  # the edit wins over the stale index
    assert parsed == [path]


def test_a_damaged_index_is_ignored(golden: GoldenSet, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = json.loads(golden.lock_path.read_text(encoding="utf-8"))
    lock["index"] = {"s-001": {"file": "s-001.yaml"}, "s-002": "nonsense"}
    golden.lock_path.write_text(json.dumps(lock), encoding="utf-8")
    assert golden.index() == {}
    parsed = _count_parses(monkeypatch)
    promote_trace(conversation(), FAILING, golden, owner="qa", origin="production-incident", today=TODAY)
    assert len(parsed) == 20  # everything parsed, nothing wrong


def test_scenarios_lock_rebuilds_the_index(golden: GoldenSet) -> None:
    lock = json.loads(golden.lock_path.read_text(encoding="utf-8"))
    del lock["index"]
    golden.lock_path.write_text(json.dumps(lock), encoding="utf-8")
    assert golden.index() == {}
    accept_changes(golden)
    assert len(golden.index()) == 20


def test_list_by_tag_parses_only_what_it_may_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import replaygate.replay._scenario_io as io_module

    from replaygate.golden import list_golden, list_scenarios

    gs = GoldenSet(tmp_path / "g")
    gs.write([_scenario(i, None).model_copy(update={"holdout": i == 4}) for i in range(10)])
    parsed: list[Path] = []
    real = io_module.load_scenario

    def counting(path: Path) -> Scenario:
        parsed.append(Path(path))
        return real(path)

    monkeypatch.setattr(io_module, "load_scenario", counting)
    for tier, tags in ((None, {"risk": "high"}), ("release", {"risk": "low"}), ("smoke", None)):
        parsed.clear()
        got = list_golden(gs, tier=tier, tags=tags)
        want = list_scenarios(gs.load(), tier=tier, tags=tags)
        assert got == want
        if tags:
            assert {p.stem for p in parsed[: len(parsed) - 10]} == {s.id for s in got.scenarios}
    high = [s.id for s in list_golden(gs, tags={"risk": "high"}).scenarios]
    assert high == ["s-001", "s-003", "s-005", "s-007", "s-009"]
    (gs.path / "s-002.yaml").write_text(
        (gs.path / "s-002.yaml").read_text(encoding="utf-8").replace("risk: low", "risk: high"),
        encoding="utf-8",
    )  # edited by hand: its stale entry says low, the file says high
    assert "s-002" in [s.id for s in list_golden(gs, tags={"risk": "high"}).scenarios]
