"""CSV import: all rows or nothing, one clear error per bad row (row number and column)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from replaygate.replay import ContainsCheck, load_scenario

from replaygate.golden import GoldenError, GoldenSet, import_csv, lint, read_lock

TODAY = dt.date(2026, 11, 29)
HEADER = (
    "id,title,owner,question,must_pass,tags,tiers,expected_behavior,contains,not_contains,relevant_docs\n"
)
GOOD = (
    HEADER
    + "ship-1,Shipping time,alice,How long does shipping take?,false,dimension=helpfulness;risk=low,"
    + "smoke;release,"
    '"Says 3-5 days",business days,,shipping-policy\n'
    + "multi-1,Follow-up,bob,I want to return shoes || what about the box?,yes,request_type=returns,release,,"
    ",guaranteed,returns-policy;packaging\n"
)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "questions.csv"
    p.write_text(text, encoding="utf-8")
    return p


def test_good_csv_imports_every_row(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    created = import_csv(write(tmp_path, GOOD), gs, author="carol", today=TODAY)
    assert [s.id for s in created] == ["ship-1", "multi-1"]
    multi = load_scenario(gs.file_for("multi-1"))
    assert multi.turns == ["I want to return shoes", "what about the box?"]
    assert multi.must_pass and multi.tiers == ["release"]
    assert multi.retrieval is not None and multi.retrieval.relevant == ["returns-policy", "packaging"]
    ship = load_scenario(gs.file_for("ship-1"))
    assert ship.tags == {"dimension": "helpfulness", "risk": "low"}
    assert isinstance(ship.checks[0], ContainsCheck) and ship.checks[0].values == ["business days"]
    assert ship.changelog[0].author == "carol"
    lock = read_lock(gs.lock_path)
    assert lock is not None and sorted(lock) == ["multi-1", "ship-1"]
    assert [p for p in lint(gs, today=TODAY) if p.severity == "error"] == []


def test_bad_rows_each_reported_and_nothing_written(tmp_path: Path) -> None:
    bad = (
        GOOD
        + "Bad Id,x,alice,q,false,,,,,,\n"  # line 4: id
        + "ok-2,x,alice,q,maybe,,,,,,\n"  # line 5: must_pass
        + "ok-3,x,alice,q,false,dimension,,,,,\n"  # line 6: tags
        + "ok-4,x,alice,,false,,,,,,\n"  # line 7: question
        + "ok-5,x,alice,q,false,,tuning,,,,\n"  # line 8: tiers
        + "ship-1,dup,alice,q,false,,,,,,\n"  # line 9: duplicate id
    )
    gs = GoldenSet(tmp_path / "golden")
    path = write(tmp_path, bad)
    with pytest.raises(GoldenError) as info:
        import_csv(path, gs, today=TODAY)
    message = str(info.value)
    for line, column in [(4, "id"), (5, "must_pass"), (6, "tags"), (7, "question"), (8, "tiers"), (9, "id")]:
        assert f"{path}:{line}: column {column}:" in message, (line, column, message)
    assert "nothing was written" in message
    assert not gs.path.exists()


def test_unknown_column_and_existing_ids(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    with pytest.raises(GoldenError, match="unknown column"):
        import_csv(write(tmp_path, "id,title,question,colour\na,b,c,red\n"), gs)
    import_csv(write(tmp_path, GOOD), gs, today=TODAY)
    before = sorted(p.name for p in gs.path.iterdir())
    with pytest.raises(GoldenError, match="already in"):
        import_csv(write(tmp_path, GOOD), gs, today=TODAY)
    assert sorted(p.name for p in gs.path.iterdir()) == before


def test_owner_option_fills_missing_owner(tmp_path: Path) -> None:
    gs = GoldenSet(tmp_path / "golden")
    path = write(tmp_path, "id,title,question\nq-1,Question,Where is my order?\n")
    with pytest.raises(GoldenError, match="column owner"):
        import_csv(path, gs)
    created = import_csv(path, gs, owner="dave", today=TODAY)
    assert created[0].owner == "dave"
