import pytest

from replaygate.gate import DecisionError, DecisionStore, Policy, gate_runs, resolve_store_url


@pytest.fixture
def store(tmp_path):
    s = DecisionStore(tmp_path / "store.db")
    yield s
    s.close()


def test_store_url_from_env_and_path(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("REPLAYGATE_STORE", str(tmp_path / "x" / "rg.db"))
    assert resolve_store_url() == f"sqlite:///{tmp_path / 'x' / 'rg.db'}"
    assert (tmp_path / "x").is_dir()
    assert resolve_store_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_sign_refused_until_every_newly_failing_scenario_is_read(f, store) -> None:
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.HEAD, run_id="h"))
    with pytest.raises(DecisionError, match=r"not yet read: s01, s02, s03"):
        store.sign(report, signed_by="ana", outcome="pass-with-sign-off", reason="trade-off")
    with pytest.raises(DecisionError, match="not newly failing"):
        store.add_review(report, "s05", "ana", "looked")
    for sid in ("s01", "s02"):
        store.add_review(report, sid, "ana", "read the transcript")
    with pytest.raises(DecisionError, match="not yet read: s03"):
        store.sign(report, signed_by="ana", outcome="pass-with-sign-off", reason="trade-off")
    store.add_review(report, "s03", "ana", "first note")
    store.add_review(report, "s03", "ana", "second note")  # idempotent: updates
    reviews = store.reviews(report.report_id)
    assert [r.scenario_id for r in reviews] == ["s01", "s02", "s03"] and reviews[-1].note == "second note"
    with pytest.raises(DecisionError, match="`pass` cannot be signed"):
        store.sign(report, signed_by="ana", outcome="pass", reason="looks fine")
    d = store.sign(report, signed_by="ana", outcome="pass-with-sign-off", reason="accepted the drop")
    assert d.outcome == "pass-with-sign-off" and d.signed_by == "ana"
    assert d.baseline_fingerprint.suite_hash == report.comparison.suite_hash
    assert d.candidate_config_id == "cfg-h" and d.candidate_target == "examples.agent:respond"
    again = store.sign(report, signed_by="ana", outcome="pass-with-sign-off", reason="accepted the drop")
    assert again.id == d.id
    assert store.get(d.id) == d
    assert store.get("dec-unknown") is None
    assert [x.id for x in store.list_decisions(outcomes=["pass", "pass-with-sign-off"])] == [d.id]
    assert store.list_decisions(outcomes=["block"]) == []


def test_rule_1_cannot_be_signed_away(f, store) -> None:
    base = f.run(f.BASE, run_id="b", must_pass=[0])
    head = f.run([4] + f.BASE[1:], run_id="h", must_pass=[0])
    report = gate_runs(Policy(), base, head)
    assert report.rule1_fired
    store.add_review(report, "s01", "ana", "refund above the limit")
    for outcome in ("pass", "pass-with-sign-off"):
        with pytest.raises(DecisionError, match="rule 1"):
            store.sign(report, signed_by="ana", outcome=outcome, reason="ship it")
    blocked = store.sign(report, signed_by="ana", outcome="block", reason="fix the refund limit")
    assert blocked.outcome == "block"


def test_a_clean_pass_can_be_signed(f, store) -> None:
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.BASE, run_id="h"))
    d = store.sign(report, signed_by="bo", outcome="pass", reason="no change")
    assert d.outcome == "pass" and d.report_id == report.report_id
    with pytest.raises(DecisionError, match="name"):
        store.sign(report, signed_by=" ", outcome="pass", reason="x")


def test_an_edited_report_cannot_be_signed(f, store) -> None:
    report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.HEAD, run_id="h"))
    forged = report.model_copy(update={"outcome": "pass", "findings": [], "newly_failing": []})
    with pytest.raises(DecisionError, match="edited"):
        store.sign(forged, signed_by="mallory", outcome="pass", reason="trust me")
    assert store.list_decisions() == []


def test_typed_fingerprints_keep_the_json_and_old_reports_and_decisions_verify(f, store, tmp_path) -> None:
    """Reports and decisions written while fingerprints were dicts still load, verify and sign (issue 16)."""
    import json
    import sqlite3

    from replaygate.replay import Fingerprint

    from replaygate.gate._signing import verify_report
    from replaygate.report import load_report

    base, head = f.run(f.BASE, run_id="b"), f.run(f.HEAD, run_id="h")
    report = gate_runs(Policy(), base, head)
    assert isinstance(report.comparison.baseline.fingerprint, Fingerprint)
    doc = report.model_dump(mode="json")
    # on disk, exactly the dict the untyped RunRef held: the run's fingerprint as the run file has it
    assert doc["comparison"]["baseline"]["fingerprint"] == base.fingerprint.model_dump(mode="json")
    assert doc["comparison"]["candidate"]["fingerprint"] == head.fingerprint.model_dump(mode="json")
    for side in ("baseline", "candidate"):  # a report from before judge specs were recorded
        del doc["comparison"][side]["fingerprint"]["judges"]
        del doc["comparison"][side]["fingerprint"]["simulator"]
    (tmp_path / "report.json").write_text(json.dumps(doc))
    old = load_report(tmp_path / "report.json")
    verify_report(old)  # its outcome still follows from its comparison
    assert old.comparison.candidate.fingerprint.judges is None
    for sid in old.newly_failing:
        store.add_review(old, sid, "ana", "read")
    d = store.sign(old, signed_by="ana", outcome="block", reason="not yet")
    assert d.candidate_fingerprint == old.comparison.candidate.fingerprint
    assert d.candidate_target == head.fingerprint.target
    assert d.candidate_config_id == head.fingerprint.config_id()
    # the decision row as an older replaygate stored it (a plain dict without the later keys) still reads
    with sqlite3.connect(tmp_path / "store.db") as db:
        (stored,) = db.execute(
            "SELECT candidate_fingerprint FROM gate_decisions WHERE id = ?", (d.id,)
        ).fetchone()
        raw = json.loads(stored)
        assert raw == {k: v for k, v in head.fingerprint.model_dump(mode="json").items() if k in raw}
        raw.pop("judges", None)
        db.execute(
            "UPDATE gate_decisions SET candidate_fingerprint = ? WHERE id = ?", (json.dumps(raw), d.id)
        )
    again = store.get(d.id)
    assert again is not None and again.candidate_fingerprint.suite_hash == head.fingerprint.suite_hash
    assert again.candidate_fingerprint.judges is None
