"""Issue 19 and 16: ``golden.lock`` is read once per command through ``load_versioned``, written fast.

The text of a lock is the one the indenting JSON encoder writes; a damaged lock is an error that says what
to do; an index entry of an unexpected shape is skipped, never an error; reads inside one transaction are
made once and again after the transaction's own write.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from replaygate.replay import Scenario

from replaygate.golden import GoldenError, GoldenSet, lock_entry, read_lock
from replaygate.golden._index import index_entry
from replaygate.golden._lock import dump_lock, read_lock_file


def _scenario(i: int) -> Scenario:
    return Scenario.model_validate(
        {
            "id": f"s-{i:03d}",
            "title": f"scenario \u00e9 {i}",
            "owner": "qa",
            "origin": "production-incident",
            "source_trace": f"{i:032x}",
            "added": dt.date(2026, 11, 29),
            "turns": [f"question {i}"],
            "holdout": i % 3 == 0,
            "changelog": [{"date": "2026-11-29", "author": "qa", "reason": "new"}] * (i % 2),
        }
    )


def test_the_lock_text_is_the_indenting_encoders(tmp_path: Path) -> None:
    scenarios = [_scenario(i) for i in range(12)]
    entries = {s.id: lock_entry(s) for s in scenarios}
    reference = json.dumps(
        {"format_version": 1, "scenarios": {k: dict(v.__dict__) for k, v in entries.items()}},
        indent=2,
        sort_keys=True,
    )
    assert dump_lock(entries) == reference + "\n"
    assert dump_lock({}) == json.dumps({"format_version": 1, "scenarios": {}}, indent=2) + "\n"
    index = {s.id: index_entry(s, f"{s.id}.yaml", b"x") for s in scenarios[:5]}
    text = dump_lock(entries, index)
    assert json.loads(text)["scenarios"] == json.loads(reference)["scenarios"]
    assert sorted(json.loads(text)["index"]) == sorted(index)
    path = tmp_path / "golden.lock"
    path.write_text(text, encoding="utf-8")
    found = read_lock_file(path)
    assert found is not None
    assert found[0] == entries and found[1] == index


def _lock(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "golden.lock"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


ENTRY = {"content_hash": "sha256:a", "state": "active", "changelog": 0, "changelog_hash": "sha256:b"}


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"format_version": 2, "scenarios": {}}, "golden.lock format_version 2 is not supported"),
        ({"scenarios": {}}, "golden.lock format_version None is not supported"),
        ({"format_version": 1, "scenarios": {"a": {**ENTRY, "extra": 1}}}, "scenarios.a.extra"),
        ({"format_version": 1, "scenarios": {"a": {"state": "active"}}}, "scenarios.a.content_hash"),
        ({"format_version": 1, "scenarios": []}, "scenarios"),
        ([1, 2], "is a JSON object"),
    ],
)
def test_a_damaged_lock_says_what_and_what_to_do(tmp_path: Path, doc: object, says: str) -> None:
    path = _lock(tmp_path, doc)
    with pytest.raises(GoldenError) as err:
        read_lock(path)
    assert says in str(err.value) and str(path) in str(err.value)
    assert "restore it from git or rebuild it with `replaygate scenarios lock`" in str(err.value)


def test_a_lock_that_is_not_json_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "golden.lock"
    path.write_text('{"format_version": 1,\n "scenarios": {,}}', encoding="utf-8")
    with pytest.raises(GoldenError, match=r"golden.lock:2: not valid JSON"):
        read_lock(path)


def test_an_index_of_another_shape_is_skipped_not_an_error(tmp_path: Path) -> None:
    good = index_entry(_scenario(1), "s-001.yaml", b"x").as_json()
    old = {k: v for k, v in good.items() if k != "content_hash"}  # written before content hashes
    loose = {**good, "holdout": 0, "tiers": ["smoke", 3]}  # not the exact shape: read leniently
    for section, want in [
        ("nonsense", {}),
        ({"a": "nonsense", "b": {"file": "b.yaml"}, "c": good}, {"c"}),
        ({"c": old, "d": loose}, {"c", "d"}),
    ]:
        found = read_lock_file(_lock(tmp_path, {"format_version": 1, "scenarios": {}, "index": section}))
        assert found is not None
        assert set(found[1]) == set(want)
    assert found[1]["c"].content_hash is None
    assert found[1]["d"].tiers == ("smoke", "3") and found[1]["d"].holdout is False
    deep: object = "x"
    for _ in range(80):
        deep = [deep]
    with pytest.raises(GoldenError, match="nested deeper than 64"):  # the limit of every JSON file
        read_lock(_lock(tmp_path, {"format_version": 1, "scenarios": {}, "index": {"a": deep}}))


def test_a_transaction_reads_once_and_again_after_its_write(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(1)])
    with gs.transaction():
        assert [p.name for p in gs.files()] == ["s-001.yaml"]
        assert set(gs.lock() or {}) == {"s-001"}
        gs.files().clear()  # a caller's copy: the transaction's listing is not changed by it
        assert [p.name for p in gs.files()] == ["s-001.yaml"]
        gs.write([_scenario(2)])
        assert [p.name for p in gs.files()] == ["s-001.yaml", "s-002.yaml"]
        assert set(gs.lock() or {}) == {"s-001", "s-002"}
        assert set(gs.indexed()) == {"s-001", "s-002"}
        assert len(gs.index()) == 2
    (gs.path / "s-003.yaml").write_text("not read by the transaction above", encoding="utf-8")
    assert [p.name for p in gs.files()] == ["s-001.yaml", "s-002.yaml", "s-003.yaml"]  # no cache outside
