"""The demo's harness stages: failure classes, simulated follow-up turns, and a reading queue for people.

- **Failure classes**: the production traffic's failures grouped into classes (rules for the known kinds,
  clusters for the rest), side by side with what the traffic planted; one member of a class is promoted
  with its class's checks (``replaygate promote ID --class-checks``), the set is linted, and the checks
  are shown to fail on the failing trace's answer and to pass on a good answer to a similar question.
- **Follow-ups**: one scenario replayed as it is (one turn: it passes) and with simulated follow-up turns
  (the scripted simulator, offline): the agent forgets the order id it was given in turn one.
- **Reading queue**: the candidate run's sample for people, a person labels it, and the judge's
  agreement with the person (Cohen's kappa) is reported.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from replaygate.instrumentation import TraceRecord, TraceStore
from replaygate.replay import load_run, load_scenario, score_attempt
from rich.table import Table
from rich.text import Text

from examples.demo_release import CONFIGS, OWNER, RELEASER, TARGET, StageError, replaygate
from examples.support_agent._answers import REFUSALS, UNGROUNDED_CLAIMS
from replaygate.inbox import FailureClass, classify_failures, similar_good_traces
from replaygate.labels import HumanLabel, append_label, draw_sample, judge_fingerprint, labels_path, now_utc

if TYPE_CHECKING:
    from examples.demo import Demo

__all__ = ["HARNESS_STAGES", "LATE_STAGES", "failure_classes", "followups", "reading_queue"]

#: Planted kinds of the traffic and the class each one should land in.
PLANTED_CLASSES = {
    "refusal_without_tools": "refusal_without_tools",
    "ungrounded_claim": "ungrounded_claim",
    "empty_answer": "empty_answer",
    "missed_escalation": "missed_escalation",
}
#: The class whose member the demo promotes, in order of preference.
PROMOTE_PREFERENCE = ("refusal_without_tools", "ungrounded_claim", "missed_escalation")


def _classes_dir(demo: Demo) -> Path:
    return demo.work / "classes"


def _since_iso(demo: Demo) -> str:
    moment = dt.datetime.fromtimestamp(demo.started_ns / 1e9, dt.UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="seconds")


async def _status(scenario_path: Path, record: TraceRecord) -> str:
    scenario = load_scenario(scenario_path)
    s = record.summary
    outcome = await score_attempt(
        scenario, answer=s.output or "", label=None, summary=s, latency_s=s.latency_s, judges={}
    )
    return str(outcome.status)


def failure_classes(demo: Demo) -> None:
    """Group this run's failures into classes; promote one member with its class's checks."""
    with TraceStore(demo.store) as store:
        records = store.list_traces(since_ns=demo.started_ns, limit=None)
    classes = classify_failures(records)
    replaygate(demo, "inbox", "--since", _since_iso(demo), "--store", str(demo.store))
    demo.console.print(
        "Not stage 2's count of candidates: the inbox's rules read every trace, so a refusal or an "
        "ungrounded claim that nobody flagged is counted too."
    )
    by_key = {c.key: c for c in classes}
    planted = demo.results.get("traffic", {})
    compare = Table(title="Planted failure kinds and the classes the inbox found")
    for column in ("planted kind", "planted", "class", "in class"):
        compare.add_column(column)
    for kind, key in PLANTED_CLASSES.items():
        n = int(planted.get(f"injected_{kind}", 0))
        found = by_key[key].count if key in by_key else 0
        compare.add_row(kind, str(n), key, str(found))
        if n >= 3 and found == 0:
            raise StageError(f"{n} planted {kind} failures, but the inbox has no {key} class")
    demo.console.print(compare)
    demo.results["classes"] = {c.key: c.count for c in classes}
    chosen: FailureClass | None = next((by_key[k] for k in PROMOTE_PREFERENCE if k in by_key), None)
    if chosen is None:
        demo.console.print("No member of a class with an assertion pattern to promote in this traffic.")
        return
    _promote_member(demo, chosen, records)


def _promote_member(demo: Demo, chosen: FailureClass, records: list[TraceRecord]) -> None:
    by_id = {r.summary.trace_id: r for r in records}
    for member in chosen.members:
        failing = by_id[member.trace_id]
        good = similar_good_traces(failing.summary, records)
        if good:
            break
    else:
        demo.console.print(f"No good answer to compare with in class {chosen.key}; nothing promoted.")
        return
    golden = _classes_dir(demo) / "golden"
    if golden.exists():
        shutil.rmtree(golden)
    golden.mkdir(parents=True)
    demo.console.print(
        f"Promote the newest {chosen.key} member that has a good answer to a similar question to compare:"
    )
    scenario_id = f"{chosen.key.replace('_', '-')}-{failing.summary.trace_id[:8]}"
    replaygate(
        demo,
        "promote",
        failing.summary.trace_id,
        "--owner",
        OWNER,
        "--origin",
        "production-incident",
        "--class-checks",
        "--id",
        scenario_id,
        "--store",
        str(demo.store),
        "--golden",
        str(golden),
        "--author",
        OWNER,
    )
    path = golden / f"{scenario_id}.yaml"
    demo.console.print(Text(path.read_text(encoding="utf-8")))
    replaygate(demo, "scenarios", "lint", "--golden", str(golden))
    good_record = by_id[good[0].trace_id]
    results = {
        "failing": asyncio.run(_status(path, failing)),
        "good": asyncio.run(_status(path, good_record)),
    }
    table = Table(title=f"The {chosen.key} checks on two real answers to the same question")
    for column in ("trace", "question", "answer", "checks"):
        table.add_column(column, overflow="fold")
    for name, record in (("failing", failing), ("good", good_record)):
        s = record.summary
        table.add_row(
            s.trace_id[:12],
            Text((s.turns[-1] if s.turns else "")[:50]),
            Text((s.output or "")[:70]),
            results[name],
        )
    demo.console.print(table)
    if results != {"failing": "fail", "good": "pass"}:
        raise StageError(f"the suggested checks gave {results}; expected fail, then pass")
    demo.results["class_promoted"] = {"class": chosen.key, "scenario": scenario_id, **results}


FOLLOWUPS = Path(__file__).resolve().parent / "support_agent" / "followups"


def _followup_config(demo: Demo) -> Path:
    """The production configuration with its planted failure rates off: only the weakness shows."""
    config = yaml.safe_load((CONFIGS / "production.yaml").read_text(encoding="utf-8"))
    config.update(seed=21, latency_ms=0, rates={name: 0.0 for name in config["rates"]})
    path = demo.work / "configs" / "production-followups.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def followups(demo: Demo) -> None:
    """One scenario with simulated follow-up turns finds what its single-turn version cannot."""
    work = demo.work
    out = work / "runs" / "followups.json"
    replaygate(
        demo, "run", "--target", TARGET, "--config", str(_followup_config(demo)), "--golden", str(FOLLOWUPS),
        "--repeats", "3", "--simulator", "scripted", "--out", str(out), "--quiet",
    )  # fmt: skip
    run = json.loads(out.read_text(encoding="utf-8"))
    table = Table(title="The same first turn, without and with simulated follow-ups (k=3)")
    for column in ("scenario", "turns", "passes", "failing checks"):
        table.add_column(column)
    by_id: dict[str, list[dict[str, object]]] = {}
    for attempt in run["attempts"]:
        by_id.setdefault(str(attempt["scenario_id"]), []).append(attempt)
    for sid, attempts in sorted(by_id.items(), reverse=True):
        turns = sorted({len(a.get("conversation") or [None]) for a in attempts})  # type: ignore[arg-type]
        failing = sorted({c["name"] for a in attempts for c in a["checks"] if not c["passed"]})  # type: ignore[attr-defined,index]
        passes = sum(1 for a in attempts if a["status"] == "pass")
        table.add_row(sid, "/".join(map(str, turns)), f"{passes}/{len(attempts)}", ", ".join(failing) or "-")
    demo.console.print(table)
    followed = by_id.get("order-memory-followup-001", [])
    single = by_id.get("order-memory-single-turn-001", [])
    if (
        not followed
        or any(a["status"] != "fail" for a in followed)
        or any(a["status"] != "pass" for a in single)
    ):
        raise StageError("the follow-up scenario should fail every attempt and its single-turn version pass")
    demo.console.print(
        "Attempt 0 of order-memory-followup-001, turn by turn (* = written by the simulated user):"
    )
    for n, turn in enumerate(followed[0]["conversation"], start=1):  # type: ignore[arg-type]
        mark = "*" if turn["generated"] else " "
        demo.console.print(Text(f" {mark} {n}. user: {turn['user']}"))
        demo.console.print(Text(f"      agent: {turn['answer']}", style="dim"))
    frozen = work / "followups-golden"
    if frozen.exists():
        shutil.rmtree(frozen)
    shutil.copytree(FOLLOWUPS, frozen)
    demo.console.print("Freeze that conversation into a fixed multi-turn scenario:")
    replaygate(
        demo, "promote", "--from-run", str(out), "order-memory-followup-001#0", "--owner", OWNER,
        "--origin", "near-miss", "--golden", str(frozen), "--author", OWNER,
    )  # fmt: skip
    replaygate(demo, "scenarios", "lint", "--golden", str(frozen))
    demo.results["followups"] = {"run": out, "golden": frozen}


def _stand_in_reviewer(answer: str) -> bool:
    """What a careful person would answer: no planted unsupported claim, not empty, not a refusal."""
    return (
        bool(answer.strip())
        and not any(c in answer for c in UNGROUNDED_CLAIMS.values())
        and not any(r in answer for r in REFUSALS)
    )


def reading_queue(demo: Demo) -> None:
    """People read a sample of the candidate's run; the judges' agreement with them is measured."""
    run_path = demo.work / "runs" / "candidate_fixed.json"
    report = demo.results.get("report")
    listing = ["label", str(run_path), "--by", RELEASER, "--list"]
    replaygate(demo, *listing, *(("--report", str(report)) if report else ()))
    run = load_run(run_path)
    newly = (
        json.loads((report / "report.json").read_text(encoding="utf-8"))["newly_failing"] if report else []
    )
    queue = draw_sample(run, newly_failing=[n if isinstance(n, str) else n["id"] for n in newly])
    attempts = {(a.scenario_id, a.index): a for a in run.attempts}
    store = labels_path(run_path)
    if store.exists():
        store.unlink()
    demo.console.print(
        f"{RELEASER} labels the queue ({len(queue)} attempts; here a stand-in who knows which claims were "
        f"planted answers for them; in real use: replaygate label {run_path} --by NAME):"
    )
    for item in queue:
        attempt = attempts[item.key]
        model, prompt = judge_fingerprint(run.fingerprint, item.judge)
        append_label(
            store,
            HumanLabel(
                run_id=run.run_id, scenario_id=item.scenario_id, index=item.index, judge=item.judge,
                judge_model=model, judge_prompt_version=prompt, judge_verdict=item.verdict,
                human=_stand_in_reviewer(attempt.answer or ""), by=RELEASER, at=now_utc(),
            ),
        )  # fmt: skip
    replaygate(demo, "judge", "agreement", str(run_path))
    demo.results["labels"] = store


#: Stages that follow the promotion stage of the release loop.
HARNESS_STAGES = [("failure classes: group, promote one with its class's checks", failure_classes)]
#: Stages after the release is signed, before the canary.
LATE_STAGES = [
    ("simulated follow-up turns find a weakness one turn cannot", followups),
    ("reading queue: a person labels a sample, judge agreement (kappa)", reading_queue),
]
