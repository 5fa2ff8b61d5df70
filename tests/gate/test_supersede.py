"""Issue 14: a signed report is not signed again by someone else without ``--supersede`` (audited)."""

import pytest

from replaygate.gate import DecisionError, DecisionStore, Policy, gate_runs


def test_a_second_signature_needs_supersede_and_the_old_one_stays_listed(f, tmp_path) -> None:
    store = DecisionStore(tmp_path / "store.db")
    try:
        report = gate_runs(Policy(), f.run(f.BASE, run_id="b"), f.run(f.BASE, run_id="h"))
        assert report.outcome == "pass"
        first = store.sign(report, signed_by="ana", outcome="block", reason="not convinced")
        assert store.sign(report, signed_by="ana", outcome="block", reason="not convinced") == first
        with pytest.raises(DecisionError, match="already signed: block by ana"):
            store.sign(report, signed_by="bo", outcome="pass", reason="fine by me")
        second = store.sign(report, signed_by="bo", outcome="pass", reason="re-read it", supersede=True)
        listed = {d.id: d for d in store.list_decisions()}
        assert listed[first.id].superseded_by == second.id and listed[second.id].superseded_by is None
        assert store.get(first.id).superseded_by == second.id  # type: ignore[union-attr]
        startable = store.list_decisions(outcomes=["pass", "pass-with-sign-off", "block"])
        assert [d.id for d in startable] == [second.id]  # what a canary may start from
        with pytest.raises(DecisionError, match="superseded"):
            store.sign(report, signed_by="ana", outcome="block", reason="not convinced")
    finally:
        store.close()
