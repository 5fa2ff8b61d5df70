"""Issue 19: a second run of an unchanged golden set reads its scenarios from the cache, not from YAML.

The cache gives exactly what parsing gives (the same scenarios, shorthand forms included), a file that
changed is parsed afresh (its error and line unchanged), and a cache that is corrupt, foreign, tampered
with or unwritable costs a parse, never a wrong scenario or a failed load.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from replaygate.replay import ScenarioCache, ScenarioError, load_scenarios

from replaygate.golden import GoldenSet, select_golden
from tests.replay.conftest import cli

SCENARIO = """\
id: {sid}
title: scenario {sid}
owner: qa
origin: production-incident
added: 2026-11-29
turns: ["question about {sid}"]
context: {{note: "a note", count: 3, ratio: 0.5, flag: true, none: null}}
tags: {{risk: high}}
checks:
  - contains: refund
  - type: max_chars
    limit: 300
  - output_regex: "Refund.*days"
"""


def _golden(root: Path, n: int = 5) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        sid = f"s-{i:03d}"
        (root / f"{sid}.yaml").write_text(SCENARIO.format(sid=sid), encoding="utf-8")
    return root


def _forms(scenarios: list[object]) -> list[list[bool]]:
    return [[bool(getattr(c, "_shorthand", False)) for c in getattr(s, "checks")] for s in scenarios]  # noqa: B009


def test_the_second_load_reads_the_cache_and_gives_what_parsing_gives(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden")
    parsed = load_scenarios(golden)
    first = ScenarioCache(tmp_path / "cache.json")
    assert load_scenarios(golden, cache=first) == parsed
    assert (first.hits, first.misses) == (0, 5)
    assert (tmp_path / "cache.json").is_file()
    second = ScenarioCache(tmp_path / "cache.json")
    again = load_scenarios(golden, cache=second)
    assert (second.hits, second.misses) == (5, 0)
    assert again == parsed and _forms(again) == _forms(parsed) and _forms(again)[0] == [True, False, True]
    assert [s.model_fields_set for s in again] == [s.model_fields_set for s in parsed]
    mtime = os.stat(tmp_path / "cache.json").st_mtime_ns
    assert second.save() is False and os.stat(tmp_path / "cache.json").st_mtime_ns == mtime  # all hits


def test_a_scenario_json_cannot_rebuild_exactly_is_not_cached(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden", n=2)
    odd = golden / "s-001.yaml"  # a date in free-form context: JSON would give it back as a string
    odd.write_text(odd.read_text(encoding="utf-8").replace("count: 3", "when: 2026-01-02"))
    load_scenarios(golden, cache=ScenarioCache(tmp_path / "cache.json"))
    cache = ScenarioCache(tmp_path / "cache.json")
    got = load_scenarios(golden, cache=cache)
    assert (cache.hits, cache.misses) == (1, 1)
    assert got == load_scenarios(golden) and type(got[1].context["when"]).__name__ == "date"


def test_a_changed_file_is_parsed_afresh_with_its_error_and_line(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden")
    load_scenarios(golden, cache=ScenarioCache(tmp_path / "cache.json"))
    bad = golden / "s-002.yaml"
    bad.write_text(bad.read_text(encoding="utf-8").replace("limit: 300", "limit: 300\n    colour: red"))
    with pytest.raises(ScenarioError) as plain:
        load_scenarios(golden)
    with pytest.raises(ScenarioError) as cached:
        load_scenarios(golden, cache=ScenarioCache(tmp_path / "cache.json"))
    assert str(cached.value) == str(plain.value)
    assert f"{bad}:13: checks[1].colour" in str(cached.value)
    edited = golden / "s-001.yaml"
    edited.write_text(edited.read_text(encoding="utf-8").replace("limit: 300", "limit: 250"))
    bad.unlink()
    cache = ScenarioCache(tmp_path / "cache.json")
    got = load_scenarios(golden, cache=cache)
    assert (cache.hits, cache.misses) == (3, 1) and got[1].checks[1].limit == 250  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "not json at all",
        lambda text: text.replace('"code":"', '"code":"0', 1),  # another replaygate's scenario code
        lambda text: json.dumps({"format": "other", "entries": {}}),
        lambda text: text.replace('"id":"s-001"', '"id":"s-001x"', 1),  # an entry under another id
        lambda text: text.replace("limit", "colour"),  # entries that no longer validate
        lambda text: text.replace('"forms":[true,false,true]', '"forms":[1]'),
    ],
)
def test_a_damaged_cache_costs_a_parse_never_a_wrong_scenario(tmp_path: Path, damage: object) -> None:
    golden = _golden(tmp_path / "golden")
    parsed = load_scenarios(golden)
    path = tmp_path / "cache.json"
    load_scenarios(golden, cache=ScenarioCache(path))
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")  # type: ignore[operator]
    cache = ScenarioCache(path)
    got = load_scenarios(golden, cache=cache)
    assert got == parsed and _forms(got) == _forms(parsed)
    assert cache.misses >= 1
    healed = ScenarioCache(path)
    load_scenarios(golden, cache=healed)
    assert (healed.hits, healed.misses) == (5, 0)  # rewritten whole


def test_a_renamed_file_with_cached_bytes_still_fails_on_its_id(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden")
    load_scenarios(golden, cache=ScenarioCache(tmp_path / "cache.json"))
    (golden / "s-001.yaml").rename(golden / "other.yaml")
    with pytest.raises(ScenarioError, match="differs from the file name 'other'"):
        load_scenarios(golden, cache=ScenarioCache(tmp_path / "cache.json"))


def test_an_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden")
    (tmp_path / "file").write_text("x")
    cache = ScenarioCache(tmp_path / "file" / "cache.json")  # its folder is a file
    assert load_scenarios(golden, cache=cache) == load_scenarios(golden)
    assert cache.save() is False


def test_default_cache_location_and_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REPLAYGATE_SCENARIO_CACHE", raising=False)
    cache = ScenarioCache.default()
    assert cache is not None and cache.path == Path(".replaygate/cache/scenarios-v1.json")
    monkeypatch.setenv("REPLAYGATE_SCENARIO_CACHE", "off")
    assert ScenarioCache.default() is None
    monkeypatch.setenv("REPLAYGATE_SCENARIO_CACHE", str(tmp_path / "c.json"))
    cache = ScenarioCache.default()
    assert cache is not None and cache.path == tmp_path / "c.json"


def test_select_golden_with_a_cache_selects_the_same(tmp_path: Path) -> None:
    golden = _golden(tmp_path / "golden")
    gs = GoldenSet(golden)
    plain = select_golden(gs, tags={"risk": "high"})
    select_golden(gs, tags={"risk": "high"}, cache=ScenarioCache(tmp_path / "cache.json"))
    cache = ScenarioCache(tmp_path / "cache.json")
    cached = select_golden(gs, tags={"risk": "high"}, cache=cache)
    assert cached == plain and cache.hits == 5


def test_replaygate_run_reads_the_cache_on_its_second_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    golden = _golden(tmp_path / "golden", n=3)
    (tmp_path / "rg_cache_target.py").write_text("def ok(turns, context, config):\n    return 'refund'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPLAYGATE_SCENARIO_CACHE", raising=False)
    args = ["run", "--golden", str(golden), "--target", "rg_cache_target:ok", "--repeats", "1", "--quiet"]
    assert cli([*args, "--out", str(tmp_path / "a.json")]) == 0
    path = tmp_path / ".replaygate" / "cache" / "scenarios-v1.json"  # the default, below the cwd
    written = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(e["id"] for e in written["entries"].values()) == ["s-000", "s-001", "s-002"]
    for entry in written["entries"].values():  # what the second run reads is the cache: mark it
        entry["json"] = entry["json"].replace("scenario s-", "cached s-")
    path.write_text(json.dumps(written), encoding="utf-8")
    assert cli([*args, "--out", str(tmp_path / "b.json")]) == 0
    b = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    a = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert [e["id"] for e in b["scenarios"]] == [e["id"] for e in a["scenarios"]]
    assert all(e["title"].startswith("cached s-") for e in b["scenarios"]), b["scenarios"][0]
