"""Issue 19: ``run`` selects by tier and tag through ``golden.lock``'s index, and takes its suite hash there.

Only the files a selection may take are parsed; the selection, the holdout count and the suite hash are
the ones parsing everything gives, also when the index is stale (a file edited by hand, an edit the lock
refused): a stale entry costs a parse, never a wrong answer.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from replaygate.replay import (
    HOLDOUT_TIERS,
    Scenario,
    ScenarioError,
    load_scenarios,
    scenario_content_hash,
    select_scenarios,
    suite_hash,
)

import replaygate.golden._select as select_module
from replaygate.golden import GoldenSet, accept_changes, select_golden
from tests.replay.conftest import cli


def _scenario(i: int) -> Scenario:
    return Scenario.model_validate(
        {
            "id": f"s-{i:03d}",
            "title": f"scenario {i}",
            "owner": "qa",
            "origin": "production-incident",
            "added": dt.date(2026, 11, 29),
            "turns": [f"question {i}"],
            "tags": {"risk": "high" if i % 2 else "low"},
            "tiers": ["smoke", "release"] if i % 3 else ["release"],
            "holdout": i == 4,
            "status": {"state": "retired", "reason": "gone", "date": "2026-11-30"}
            if i == 7
            else {"state": "active"},
            "checks": [{"type": "contains", "values": ["ok"]}],
        }
    )


@pytest.fixture
def golden(tmp_path: Path) -> GoldenSet:
    gs = GoldenSet(tmp_path / "golden")
    gs.write([_scenario(i) for i in range(12)])
    return gs


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []
    real = select_module.parse_scenario_file

    def counting(path: Path, raw: bytes) -> Scenario:
        parsed.append(Path(path).stem)
        return real(path, raw)

    monkeypatch.setattr(select_module, "parse_scenario_file", counting)
    return parsed


CASES = [(None, {}), ("smoke", {}), ("release", {"risk": "high"}), ("scheduled", {}), (None, {"risk": "low"})]


def _expected(gs: GoldenSet, tier: str | None, tags: dict[str, str]) -> tuple[list[Scenario], int]:
    every = load_scenarios(gs.path)
    held = sum(1 for s in every if s.holdout and tier not in HOLDOUT_TIERS)
    return select_scenarios(every, tier=tier, tags=tags), held


@pytest.mark.parametrize(("tier", "tags"), CASES)
def test_selection_parses_only_what_it_may_take(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch, tier: str | None, tags: dict[str, str]
) -> None:
    want, held = _expected(golden, tier, tags)
    parsed = _parses(monkeypatch)
    got = select_golden(golden, tier=tier, tags=tags)
    assert got.scenarios == want and got.held_out == held
    assert sorted(parsed) == [s.id for s in want]  # every other file was ruled out by its entry
    assert got.content_hashes == {s.id: scenario_content_hash(s) for s in want}


def test_a_stale_entry_is_parsed_and_never_trusted(
    golden: GoldenSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = golden.path / "s-002.yaml"  # indexed as risk low (smoke and release)
    edited.write_text(
        edited.read_text(encoding="utf-8").replace("risk: low", "risk: high").replace("question 2", "q2"),
        encoding="utf-8",
    )
    parsed = _parses(monkeypatch)
    got = select_golden(golden, tier="release", tags={"risk": "high"})
    want, _ = _expected(golden, "release", {"risk": "high"})
    assert "s-002" in [s.id for s in got.scenarios] and got.scenarios == want
    assert "s-002" in parsed and "s-002" not in got.content_hashes  # its hash is computed, not indexed
    assert suite_hash(got.scenarios) == suite_hash(want)


def test_an_edit_the_lock_refused_is_hashed_as_the_file_is(golden: GoldenSet) -> None:
    path = golden.path / "s-005.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("question 5", "question five"), encoding="utf-8")
    result = accept_changes(golden)  # no changelog entry: refused, the lock keeps the accepted hash
    assert any("s-005 changed without a new changelog entry" in r for r in result.refused)
    lock = json.loads(golden.lock_path.read_text(encoding="utf-8"))
    scenario = next(s for s in load_scenarios(golden.path) if s.id == "s-005")
    assert lock["scenarios"]["s-005"]["content_hash"] != scenario_content_hash(scenario)
    got = select_golden(golden, tier="release")
    assert got.content_hashes["s-005"] == scenario_content_hash(scenario)  # the file's, from the index
    assert suite_hash(got.scenarios) == suite_hash(select_scenarios(load_scenarios(golden.path), "release"))


def test_a_broken_file_is_an_error_even_if_its_old_entry_rules_it_out(golden: GoldenSet) -> None:
    path = golden.path / "s-000.yaml"  # tiers [release] only: a smoke run would not select it
    path.write_text(path.read_text(encoding="utf-8") + "bogus_key: 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as err:
        select_golden(golden, tier="smoke")
    assert "s-000.yaml" in str(err.value) and "bogus_key" in str(err.value)
    (golden.path / "extra.yaml").write_text("id: s-001\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as err:  # every problem in one error, as load_scenarios does
        select_golden(golden, tier="release")
    assert "s-000.yaml" in str(err.value) and "extra.yaml" in str(err.value)


def test_two_files_of_one_id_are_all_read(golden: GoldenSet) -> None:
    (golden.path / "sub").mkdir()
    (golden.path / "sub" / "s-003.yaml").write_bytes((golden.path / "s-003.yaml").read_bytes())
    with pytest.raises(ScenarioError, match="is also used by"):
        select_golden(golden, tier="smoke", tags={"risk": "low"})  # s-003 is high: still an error


def test_the_run_records_the_suite_hash_of_what_it_selected(
    golden: GoldenSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rg_select_target.py").write_text("def ok(turns, context, config):\n    return 'ok'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    path = golden.path / "s-008.yaml"  # stale entry: edited by hand
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("question 8", "question eight"), encoding="utf-8")
    out = tmp_path / "run.json"
    code = cli(
        ["run", "--golden", str(golden.path), "--target", "rg_select_target:ok", "--tier", "smoke"]
        + ["--repeats", "1", "--out", str(out), "--quiet"]
    )
    assert code == 0
    run = json.loads(out.read_text(encoding="utf-8"))
    want = select_scenarios(load_scenarios(golden.path), tier="smoke")
    assert [e["id"] for e in run["scenarios"]] == [s.id for s in want]
    assert run["fingerprint"]["suite_hash"] == suite_hash(want)
    assert [e["content_hash"] for e in run["scenarios"]] == [scenario_content_hash(s) for s in want]
