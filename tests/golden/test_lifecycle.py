"""Lifecycle commands and the integrity lock: changes carry changelog entries, silent edits are caught."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from replaygate.replay import Scenario, load_scenario, save_scenario

from replaygate.golden import (
    GoldenError,
    GoldenSet,
    accept_changes,
    lint,
    mark_known_failure,
    quarantine,
    reactivate,
    read_lock,
    retire,
)

TODAY = dt.date(2026, 11, 29)


def scenario(id: str, **kw: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": id,
        "title": f"title of {id}",
        "owner": "alice",
        "origin": "original-eval",
        "added": TODAY,
        "turns": [f"question of {id}"],
        "checks": [{"type": "contains", "values": ["refund"]}],
        "changelog": [{"date": TODAY, "author": "alice", "reason": "created"}],
    }
    data.update(kw)
    return Scenario.model_validate(data)


def make_set(tmp_path: Path, *scenarios: Scenario) -> GoldenSet:
    gs = GoldenSet(tmp_path / "golden")
    gs.write(list(scenarios) or [scenario("a-1"), scenario("b-1")])
    return gs


def errors(gs: GoldenSet) -> list[str]:
    return [str(p) for p in lint(gs, today=TODAY) if p.severity == "error"]


def test_fresh_set_lints_clean_and_lock_lists_every_scenario(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    assert errors(gs) == []
    lock = read_lock(gs.lock_path)
    assert lock is not None and sorted(lock) == ["a-1", "b-1"]


def test_retire_without_reason_is_refused(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    before = gs.file_for("a-1").read_text()
    for reason in (None, "", "   "):
        with pytest.raises(GoldenError, match="needs a reason"):
            retire(gs, "a-1", reason, author="bob", today=TODAY)
    assert gs.file_for("a-1").read_text() == before


def test_retire_writes_status_changelog_and_lock(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    s = retire(gs, "a-1", "feature removed", author="bob", today=TODAY)
    assert s.status.state == "retired"
    again = load_scenario(gs.file_for("a-1"))
    assert again.status.state == "retired" and again.changelog[-1].author == "bob"
    assert "feature removed" in again.changelog[-1].reason
    assert gs.file_for("a-1").exists()  # never deleted
    assert errors(gs) == []
    assert len(retire(gs, "a-1", "again", author="bob", today=TODAY).changelog) == 2  # idempotent


def test_quarantine_known_failure_reactivate(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    with pytest.raises(GoldenError, match="in the past"):
        quarantine(gs, "a-1", "carol", dt.date(2026, 1, 1), "flaky", today=TODAY)
    q = quarantine(gs, "a-1", "carol", dt.date(2026, 12, 31), "flaky on CI", author="bob", today=TODAY)
    assert q.status.state == "quarantined" and q.status.owner == "carol"  # type: ignore[union-attr]
    k = mark_known_failure(gs, "b-1", "bug #12", author="bob", today=TODAY)
    assert k.status.state == "known-failure"
    r = reactivate(gs, "a-1", author="bob", today=TODAY)
    assert r.status.state == "active" and "quarantined" in r.changelog[-1].reason
    assert len(r.changelog) == 3
    assert errors(gs) == []
    # an expired quarantine is a lint error
    quarantine(gs, "a-1", "carol", dt.date(2026, 12, 1), "flaky", author="bob", today=TODAY)
    late = [str(p) for p in lint(gs, today=dt.date(2026, 12, 2)) if p.severity == "error"]
    assert any("quarantine expired" in e for e in late)


def test_edited_pass_condition_without_reason_is_caught(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    path = gs.file_for("a-1")
    path.write_text(path.read_text().replace("values: [refund]", "values: [credit]"))
    found = errors(gs)
    assert len(found) == 1 and "without a new changelog entry" in found[0]
    assert found[0].startswith(f"{path}:")
    # lock refuses it, and lifecycle commands refuse to launder it
    result = accept_changes(gs)
    assert result.accepted == [] and len(result.refused) == 1
    with pytest.raises(GoldenError, match="without a new changelog entry"):
        retire(gs, "a-1", "cleanup", today=TODAY)
    # adding a changelog entry with a reason makes it acceptable
    text = path.read_text() + "  - {date: 2026-11-30, author: bob, reason: credit is the right word}\n"
    path.write_text(text)
    assert any("scenarios lock" in e for e in errors(gs))
    assert accept_changes(gs).accepted == ["a-1"]
    assert errors(gs) == []


def test_status_edit_by_hand_and_history_rewrite_are_caught(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    path = gs.file_for("b-1")
    path.write_text(
        path.read_text().replace("status: {state: active}", "status: {state: known-failure, reason: x}")
    )
    assert any("without a new changelog entry" in e for e in errors(gs))
    path.write_text(path.read_text().replace("reason: created", "reason: rewritten"))
    assert any("were edited" in e for e in errors(gs))


def test_new_and_deleted_scenarios(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    save_scenario(scenario("c-1"), gs.path)
    assert any("c-1 is not in golden.lock" in e for e in errors(gs))
    gs.file_for("b-1").unlink()
    assert any("b-1 is in golden.lock but its file is gone" in e for e in errors(gs))
    result = accept_changes(gs)
    assert result.accepted == ["c-1"] and len(result.refused) == 1
    assert accept_changes(gs, allow_removed=True).accepted == ["b-1"]
    assert errors(gs) == []


def test_holdout_in_smoke_and_invalid_files_reported(tmp_path: Path) -> None:
    gs = make_set(tmp_path, scenario("h-1", holdout=True, tiers=["smoke", "release"]))
    assert any("holdout but lists tier smoke" in e for e in errors(gs))
    (gs.path / "bad-1.yaml").write_text("id: bad-1\ntitle: x\nowner: a\nunknown_key: 1\n")
    found = errors(gs)
    assert any(e.startswith(f"{gs.path / 'bad-1.yaml'}:4:") and "unknown_key" in e for e in found)


def test_interrupted_write_leaves_old_files_and_no_temporaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gs = make_set(tmp_path)
    before = {p.name: p.read_bytes() for p in gs.path.iterdir()}

    def crash(*args: object) -> None:
        raise OSError("simulated crash before rename")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(GoldenError, match="could not write"):
        retire(gs, "a-1", "gone", today=TODAY)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in gs.path.iterdir()} == before
    assert errors(gs) == []


def test_crash_between_renames_is_completed_by_the_next_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    gs = make_set(tmp_path)
    real = os.replace
    calls: list[str] = []

    def replace_once(src: Any, dst: Any) -> None:
        calls.append(str(dst))
        if str(dst).endswith("golden.lock"):
            raise OSError("crash before the lock rename")
        real(src, dst)

    monkeypatch.setattr("os.replace", replace_once)
    with pytest.raises(GoldenError):
        retire(gs, "a-1", "gone", today=TODAY)
    monkeypatch.undo()
    assert load_scenario(gs.file_for("a-1")).status.state == "retired"
    assert any("changed since golden.lock" in e for e in errors(gs))
    # The next golden-set command (here accept_changes; lint and every write alike) completes the write.
    assert accept_changes(gs).accepted == []
    assert errors(gs) == [] and not gs.needs_repair()


def test_leftover_temporary_file_is_reported(tmp_path: Path) -> None:
    gs = make_set(tmp_path)
    (gs.path / ".a-1.yaml.abc.tmp").write_text("half")
    assert any("interrupted write" in e for e in errors(gs))


def test_silent_holdout_flip_is_caught(tmp_path: Path) -> None:
    gs = make_set(tmp_path, scenario("h-1", holdout=True, tiers=["release"]))
    path = gs.file_for("h-1")
    path.write_text(path.read_text().replace("holdout: true", "holdout: false"))
    assert any("without a new changelog entry" in e for e in errors(gs))
