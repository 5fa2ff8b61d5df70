"""The demo's release loop: promotion, replay, gate, fix, sign, canary and rollback.

Each stage runs the same ``replaygate`` commands a person would type (printed before they run), in this
process, against a working folder the demo owns (``.replaygate/demo/`` beside the store): a copy of the
example golden set plus the promoted failures, seeded copies of the agent configurations, run files and
gate reports. The seeds make the whole loop reproducible; the statistics are the real ones.

The story: the candidate prompt scores higher overall but grants a refund above the $200 limit in one of
five attempts of a must-pass scenario, so the gate blocks; with the limit enforced in the tool the gate
passes, a release manager signs, and the canary widens on simulated live traffic until a planted rise in
escalations rolls it back.
"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from replaygate.instrumentation import TraceRecord, TraceStore
from rich.text import Text

from replaygate.canary import CanaryStore, RolloutState
from replaygate.cli import main as replaygate_main

if TYPE_CHECKING:
    from examples.demo import Demo

__all__ = ["RELEASE_STAGES"]

ROOT = Path(__file__).resolve().parent
EXAMPLE_GOLDEN = ROOT / "support_agent" / "golden"
CONFIGS = ROOT / "support_agent" / "configs"
POLICY = ROOT / "gate-policy.yaml"
TARGET = "examples.support_agent.target:run_session"
#: Seeds of the replayed configurations (two baseline runs differ; the candidates share one).
SEEDS = {"production": 11, "production-2": 12, "candidate": 39, "candidate_fixed": 39}
OWNER = "oncall-ana"
RELEASER = "release-bob"
PROMOTE_REASONS = ("negative_feedback", "empty_answer", "explicit", "exception")


class StageError(RuntimeError):
    """The loop did not behave as the demo's story says: the pipeline or the example is broken."""


def _work(demo: Demo) -> Path:
    return demo.work


def replaygate(demo: Demo, *args: str, expect: tuple[int, ...] = (0,), echo: bool = True) -> int:
    """Print and run one ``replaygate`` command in this process; return its exit code."""
    shown = " ".join(shlex.quote(a) for a in args)
    if echo:
        demo.console.print(Text(f"$ replaygate {shown}", style="bold cyan"))
    try:
        replaygate_main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 3)
    if code not in expect:
        raise StageError(f"`replaygate {shown}` exited {code}, expected {' or '.join(map(str, expect))}")
    return code


def _pick_failures(demo: Demo) -> list[TraceRecord]:
    with TraceStore(demo.store) as store:
        failures = store.failures(since_ns=demo.started_ns, limit=None)
    picked: list[TraceRecord] = []
    for reason in PROMOTE_REASONS:
        for record in failures:
            if reason in record.summary.failure_reasons and record.summary.turns:
                picked.append(record)
                break
        if len(picked) == 3:
            break
    return picked


def promote(demo: Demo) -> None:
    """Stage 3: an incident responder promotes real failures into the golden set, then lints it."""
    work = _work(demo)
    for owned in ("golden", "configs", "runs", "reports"):  # the store may live here too: keep it
        if (work / owned).exists():
            shutil.rmtree(work / owned)
    golden = work / "golden"
    shutil.copytree(EXAMPLE_GOLDEN, golden)
    picked = _pick_failures(demo)
    if not picked:
        raise StageError("no failure candidate with user turns to promote")
    for record in picked:
        reasons = ", ".join(record.summary.failure_reasons)
        turns = " / ".join(f"“{turn}”" for turn in record.summary.turns)
        demo.console.print(Text(f"failure {record.summary.trace_id[:12]} ({reasons}): {turns}"))
        for _ in range(2):  # the second promotion of the same trace finds the first (idempotent)
            replaygate(
                demo,
                "promote",
                record.summary.trace_id,
                "--owner",
                OWNER,
                "--origin",
                "production-incident",
                "--tier",
                "release",
                "--tag",
                "dimension=incident",
                "--expected-behavior",
                f"Answer from the policy documents; this trace was flagged: {reasons}.",
                "--store",
                str(demo.store),
                "--golden",
                str(golden),
                "--author",
                OWNER,
            )
    replaygate(demo, "scenarios", "lint", "--golden", str(golden))
    demo.results["golden"] = golden
    demo.results["promoted"] = [r.summary.trace_id for r in picked]


def _config(demo: Demo, name: str, seed_key: str) -> Path:
    config: dict[str, Any] = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text(encoding="utf-8"))
    config["seed"] = SEEDS[seed_key]
    path = _work(demo) / "configs" / f"{seed_key}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _run(demo: Demo, name: str, seed_key: str, verbose: bool = False) -> Path:
    out = _work(demo) / "runs" / f"{seed_key}.json"
    replaygate(
        demo,
        "run",
        "--target",
        TARGET,
        "--config",
        str(_config(demo, name, seed_key)),
        "--golden",
        str(demo.results["golden"]),
        "--tier",
        "release",
        "--repeats",
        "5",
        "--concurrency",
        "8",
        "--policy",
        str(POLICY),
        "--out",
        str(out),
        *(("--progress", "none") if verbose else ("--quiet",)),
    )
    return out


def replay(demo: Demo) -> None:
    """Stage 4: replay the golden set k=5 times: the production configuration twice, the candidate once."""
    plan = (("production", "production"), ("production-2", "production"), ("candidate", "candidate"))
    demo.results["runs"] = {key: _run(demo, name, key, verbose=key == "candidate") for key, name in plan}


def _gate(demo: Demo, candidate: Path, name: str, expect: tuple[int, ...]) -> tuple[int, Path]:
    runs = demo.results["runs"]
    out = _work(demo) / "reports" / name
    code = replaygate(
        demo,
        "gate",
        "--policy",
        str(POLICY),
        "--baseline",
        str(runs["production"]),
        "--baseline-2",
        str(runs["production-2"]),
        "--candidate",
        str(candidate),
        "--out",
        str(out),
        expect=expect,
    )
    return code, out


def gate_blocks(demo: Demo) -> None:
    """Stage 5: the gate blocks the candidate: a must-pass scenario newly fails (rule 1)."""
    _gate(demo, demo.results["runs"]["candidate"], "candidate", expect=(1,))
    demo.console.print("[bold red]blocked[/]: the candidate granted a refund above the limit.")


def fix_and_sign(demo: Demo) -> None:
    """Stage 6: the limit is enforced in the tool; the gate passes; newly failing reads; a person signs."""
    fixed = _run(demo, "candidate_fixed", "candidate_fixed")
    code, report = _gate(demo, fixed, "candidate_fixed", expect=(0, 2))
    outcome = "pass"
    if code == 2:  # newly failing scenarios that are not must-pass: a person reads each before signing
        data = json.loads((report / "report.json").read_text(encoding="utf-8"))
        newly = [n if isinstance(n, str) else n["id"] for n in data["newly_failing"]]
        for scenario_id in newly:
            replaygate(
                demo,
                "review",
                str(report),
                scenario_id,
                "--by",
                RELEASER,
                "--note",
                "read the attempts: model variance on a non-must-pass scenario",
            )
        outcome = "pass-with-sign-off"
    replaygate(
        demo,
        "sign",
        str(report),
        "--by",
        RELEASER,
        "--outcome",
        outcome,
        "--reason",
        "refund limit enforced in the tool; no must-pass regression",
        "--store",
        str(demo.store),
    )
    decision = json.loads((report / "decision.json").read_text(encoding="utf-8"))
    demo.results["decision"] = decision["id"]
    demo.results["report"] = report


def canary(demo: Demo) -> None:
    """Stage 7: the canary widens on evidence, then a planted rise in escalations rolls it back."""
    store = str(demo.store)
    common = ("--store", store, "--policy", str(POLICY))
    replaygate(
        demo,
        "canary",
        "start",
        demo.results["decision"],
        "--by",
        RELEASER,
        "--plan",
        "10,25,50,100",
        "--reason",
        "signed gate pass",
        "--salt",
        "demo-2026",  # a fixed routing salt: every demo run routes the same users to the candidate
        *common,
    )
    # Live traffic arrives one batch at a time; the canary widens only when every measure is confidently
    # within its tolerance (bounds valid at every look), and holds, saying how much more it needs, until then.
    start_share = _share(demo)
    for batch in range(1, 13):
        replaygate(
            demo,
            "canary",
            "simulate",
            "--batches",
            "1",
            "--batch-size",
            "500",
            "--seed",
            str(batch),
            *common,
        )
        state = _state(demo)
        if state.status != "canary":
            raise StageError(f"the canary of an equal candidate ended as {state.status}: {state.reason}")
        if state.share > start_share:
            break
    else:
        raise StageError("the canary never widened on twelve batches of equal traffic")
    demo.console.print(f"Every measure was confidently within its tolerance: widened to {_share(demo):.0%}.")
    replaygate(demo, "canary", "status", *common)
    demo.console.print(
        "Now the candidate's escalation rate rises by 10 points (planted), twice the policy's 5-point "
        "tolerance:"
    )
    replaygate(
        demo,
        "canary",
        "simulate",
        "--batches",
        "20",
        "--batch-size",
        "500",
        "--seed",
        "99",
        "--plant-escalation",
        "0.10",
        *common,
        expect=(0, 1),
    )
    replaygate(demo, "canary", "status", *common)
    rolled = _state(demo)
    if rolled.status != "rolled_back":
        raise StageError("the planted rise in escalations was not rolled back")
    if "escalation rate is confidently worse than the tolerance" not in (rolled.reason or ""):
        raise StageError(f"the canary rolled back for another reason: {rolled.reason}")
    demo.console.print(
        "Rolled back automatically: the escalation rate is confidently worse than the tolerance, "
        "so every user is on the baseline again (the audit log says who, when and why)."
    )


def _state(demo: Demo) -> RolloutState:
    canary_store = CanaryStore(str(demo.store))
    try:
        return canary_store.load()
    finally:
        canary_store.close()


def _share(demo: Demo) -> float:
    return _state(demo).share


def serve_hint(demo: Demo) -> None:
    """Last stage: where to look, and the page when ``--serve`` was given."""
    store = str(demo.store)
    demo.console.print(f"Reports: {demo.results['report']}/report.html  (and report.md, junit.xml)")
    demo.console.print(f"Audit log: replaygate canary audit --store {store}")
    if not getattr(demo, "serve", False):
        demo.console.print(
            "Run `make demo DEMO_ARGS=--serve` to run the demo again and keep the release page open."
        )
        return
    password = secrets.token_urlsafe(9)
    from werkzeug.security import generate_password_hash

    users = _work(demo) / "users.yaml"
    entry = {"password_hash": generate_password_hash(password), "role": "releaser", "one_time": True}
    users.write_text(yaml.safe_dump({"users": {RELEASER: entry}}), encoding="utf-8")
    blocked = json.loads((_work(demo) / "reports" / "candidate" / "report.json").read_text(encoding="utf-8"))
    signed = json.loads((demo.results["report"] / "report.json").read_text(encoding="utf-8"))
    port = getattr(demo, "port", 8080)
    demo.console.print(
        f"Log in as [bold]{RELEASER}[/] with the one-time password [bold]{password}[/] "
        "(it works once: the page asks you to choose your own)"
    )
    demo.console.print(
        f"Blocked report: http://127.0.0.1:{port}/reports/{blocked['report_id']}  ·  "
        f"signed report: http://127.0.0.1:{port}/reports/{signed['report_id']}"
    )
    replaygate(
        demo,
        "serve",
        "--users",
        str(users),
        "--policy",
        str(POLICY),
        "--store",
        store,
        "--reports",
        str(_work(demo) / "reports"),
        "--golden",
        str(_work(demo) / "golden"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--insecure-cookies",
    )


RELEASE_STAGES = [
    ("promote failures into the golden set", promote),
    ("replay: production twice, the candidate once (k=5)", replay),
    ("gate: the candidate is blocked", gate_blocks),
    ("fix, gate passes, review and sign", fix_and_sign),
    ("canary: widen on evidence, planted breach, rollback", canary),
    ("where to look", serve_hint),
]
