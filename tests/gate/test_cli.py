import json
from pathlib import Path

import pytest
from replaygate.replay import save_run

from tests.conftest import run_main as run_cli


@pytest.fixture
def env(tmp_path, monkeypatch, f):
    monkeypatch.setenv("REPLAYGATE_STORE", str(tmp_path / "store.db"))
    policy = tmp_path / "policy.yaml"
    policy.write_text("alpha: 0.05\ntolerance:\n  overall: 0.05\n", encoding="utf-8")

    def write(name: str, passes, **kw) -> str:
        return str(save_run(f.run(passes, run_id=name, **kw), tmp_path / f"{name}.json"))

    return tmp_path, str(policy), write


def test_gate_exit_codes_and_reports(env, f, capsys) -> None:
    tmp, policy, write = env
    base, same, worse = write("base", f.BASE), write("same", f.BASE), write("worse", f.HEAD)
    out = tmp / "pass"
    assert (
        run_cli(["gate", "--policy", policy, "--baseline", base, "--candidate", same, "--out", str(out)]) == 0
    )
    assert {p.name for p in out.iterdir()} >= {"report.json", "report.md", "report.html", "junit.xml"}
    out_b = tmp / "block"
    code = run_cli(
        ["gate", "--policy", policy, "--baseline", base, "--candidate", worse, "--out", str(out_b)]
    )
    assert code == 1
    assert "BLOCK" in capsys.readouterr().out
    # a confirmed pass (5/5 at threshold 0.5) becomes a confirmed fail: newly failing, read before signing
    plain = {"threshold": 0.5, "tags": lambda _: {}}
    base_r = write("base_r", [5] * 12, **plain)
    review_only = write("review", [5] * 11 + [0], **plain)
    loose = tmp / "loose.yaml"
    loose.write_text("tolerance:\n  overall: 0.1\n", encoding="utf-8")
    out_r = tmp / "review"
    args = [
        "gate",
        "--policy",
        str(loose),
        "--baseline",
        base_r,
        "--candidate",
        review_only,
        "--out",
        str(out_r),
    ]
    assert run_cli(args) == 2
    assert run_cli(["gate", "--policy", str(tmp / "nope.yaml"), "--baseline", base, "--candidate", same]) == 3
    assert (
        run_cli(["gate", "--policy", policy, "--baseline", base, "--candidate", same, "--format", "pdf"]) == 3
    )
    assert run_cli(["gate", "--policy", policy]) == 3
    mismatched = write("k3", [3] * 12, k=3)
    assert run_cli(["gate", "--policy", policy, "--baseline", base, "--candidate", mismatched]) == 3
    assert "k differs" in capsys.readouterr().err


def test_review_then_sign_through_the_cli(env, f, capsys) -> None:
    tmp, policy, write = env
    base, worse = write("base", f.BASE), write("worse", f.HEAD)
    out = tmp / "rep"
    assert (
        run_cli(["gate", "--policy", policy, "--baseline", base, "--candidate", worse, "--out", str(out)])
        == 1
    )
    sign = ["sign", str(out), "--by", "ana", "--outcome", "pass-with-sign-off", "--reason", "accepted"]
    assert run_cli(sign) == 3
    assert "not yet read" in capsys.readouterr().err
    for sid in ("s01", "s02", "s03"):
        assert run_cli(["review", str(out / "report.json"), sid, "--by", "ana", "--note", "read"]) == 0
    assert "every newly failing scenario has been read" in capsys.readouterr().out
    assert run_cli(["sign", str(out), "--by", "ana", "--outcome", "pass", "--reason", "x"]) == 3
    assert run_cli(sign) == 0
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert decision["outcome"] == "pass-with-sign-off" and decision["signed_by"] == "ana"
    assert decision["candidate_fingerprint"]["agent_config_hash"] == "sha256:cfg"
    assert Path(decision["report_path"]) == (out / "report.json").resolve()
    # Gating other runs into the same folder is refused: the old report's decision stays where it is.
    same = write("same", f.BASE)
    kept = (out / "decision.json").read_text(encoding="utf-8")
    assert (
        run_cli(["gate", "--policy", policy, "--baseline", base, "--candidate", same, "--out", str(out)]) == 3
    )
    assert "holds decision.json signed for report" in capsys.readouterr().err
    assert (out / "decision.json").read_text(encoding="utf-8") == kept
    # A second signature of a signed report is refused unless it supersedes the first (audited).
    assert run_cli(["sign", str(out), "--by", "bo", "--outcome", "block", "--reason", "changed my mind"]) == 3
    assert "already signed" in capsys.readouterr().err
    supersede = ["sign", str(out), "--by", "bo", "--outcome", "block", "--reason", "risk", "--supersede"]
    assert run_cli(supersede) == 0
    assert json.loads((out / "decision.json").read_text(encoding="utf-8"))["outcome"] == "block"


def test_compare_prints_text_and_json(env, f, capsys) -> None:
    tmp, policy, write = env
    base, worse, noise = write("base", f.BASE), write("worse", f.HEAD), write("base2", f.BASE)
    assert run_cli(["compare", base, worse, "--noise", noise, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format_version"] == 1 and data["noise"]["run_id"] == "base2"
    assert [s["id"] for s in data["scenarios"] if s["change"] == "newly_failing"] == ["s01", "s02", "s03"]
    assert run_cli(["compare", base, worse]) == 0
    assert "newly failing" in capsys.readouterr().out
    assert run_cli(["compare", base, str(tmp / "missing.json")]) == 3


def test_drift_exit_codes(tmp_path, f, capsys) -> None:
    runs = tmp_path / "runs"

    def put(name: str, passes, date: str, config: str = "sha256:prod") -> None:
        run = f.run(passes, run_id=name, tier="scheduled", date=date, config_hash=config)
        save_run(run, runs / f"{name}.json")

    put("mon", f.BASE, "2026-11-23T03:00:00+00:00")
    put("tue", f.BASE, "2026-11-24T03:00:00+00:00")
    put("other", f.HEAD, "2026-11-25T03:00:00+00:00", config="sha256:candidate")
    save_run(f.run(f.HEAD, run_id="release", tier="release"), runs / "release.json")
    assert run_cli(["drift", "--runs", str(runs), "--config-hash", "sha256:prod"]) == 0
    assert "no significant drop" in capsys.readouterr().out
    put("wed", f.HEAD, "2026-11-26T03:00:00+00:00")
    assert run_cli(["drift", "--runs", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "DRIFT" in out and "tue.json" in out and "wed.json" in out
    assert run_cli(["drift", "--runs", str(tmp_path / "empty")]) == 3


def test_gate_refuses_a_policy_widened_after_the_run(env, f, capsys) -> None:
    tmp, policy, write = env
    recorded = {"alpha": 0.05, "tolerance": {"overall": 0.05}}
    base = write("base", f.BASE, policy=recorded)
    head = write("head", f.BASE, policy=recorded)
    noise = write("base2", f.BASE, policy=recorded)
    wide = tmp / "wide.yaml"
    wide.write_text("alpha: 0.05\ntolerance:\n  overall: 0.3\n", encoding="utf-8")
    assert run_cli(["gate", "--policy", str(wide), "--baseline", base, "--candidate", head]) == 3
    assert "tolerance widened after the run" in capsys.readouterr().err
    out = tmp / "ok"
    args = ["gate", "--policy", policy, "--baseline", base, "--candidate", head, "--baseline-2", noise]
    assert run_cli([*args, "--out", str(out), "--format", "json"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert data["comparison"]["noise"]["run_id"] == "base2" and data["policy_notes"] == []


def test_gate_review_and_sign_print_versioned_json(env, f, capsys) -> None:
    tmp, policy, write = env
    base, worse = write("base", f.BASE), write("worse", f.HEAD)
    out = tmp / "rep"
    gate = ["gate", "--policy", policy, "--baseline", base, "--candidate", worse, "--out", str(out), "--json"]
    assert run_cli(gate) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["format_version"] == 1 and doc["kind"] == "gate"
    assert doc["outcome"] == "block" and doc["exit_code"] == 1
    assert doc["findings"] and all({"rule", "message", "fix"} <= set(x) for x in doc["findings"])
    assert Path(doc["reports"]["json"]) == out / "report.json"
    review = ["review", str(out), "s01", "--by", "ana", "--note", "read", "--json"]
    assert run_cli(review) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["scenario_id"], doc["by"], doc["unread"]) == (
        "review",
        "s01",
        "ana",
        ["s02", "s03"],
    )
    for sid in ("s02", "s03"):
        assert run_cli(["review", str(out), sid, "--by", "ana", "--note", "read"]) == 0
    capsys.readouterr()
    sign = ["sign", str(out), "--by", "ana", "--outcome", "block", "--reason", "worse", "--json"]
    assert run_cli(sign) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "decision" and doc["decision"]["signed_by"] == "ana"
    assert doc["decision"] == json.loads((out / "decision.json").read_text(encoding="utf-8"))
    # the old name of --baseline-2 on compare still works, and means the same
    noise = write("base2", f.BASE)
    assert run_cli(["compare", base, worse, "--baseline-2", noise, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["noise"]["run_id"] == "base2"
