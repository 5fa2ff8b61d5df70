"""``replaygate push``: replay results and gate outcomes back into Langfuse or Phoenix.

A run's attempts go on the attempts' own traces (exported with the run, so the trace is in the tool
when the run's process exported to it): ``replaygate.status`` (pass / fail / error), one
``replaygate.judge.<name>`` per judge verdict (0..1) and ``replaygate.retrieval.<metric>`` per
retrieval metric. In Langfuse these are scores, in Phoenix trace annotations.

Failure candidates of the embedded store can be marked where the team looks (``replaygate push
--failures``): one ``replaygate.failure`` annotation/score per trace, its reasons as the label.

A gate report becomes one small trace of its own (``replaygate gate <report id>``, its trace id derived
from the report id) carrying ``replaygate.gate.outcome`` (pass / needs-sign-off / block, with the
headline and a link to the report) and ``replaygate.gate.newly_failing``.

Every item has an identity (run id, scenario, attempt, name; or report id, name): pushing again
updates the same scores/annotations instead of adding more.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from replaygate.instrumentation import TraceRecord

from replaygate.sources._gate_trace import gate_span_json, gate_span_proto
from replaygate.sources._langfuse import LangfuseScore, LangfuseSource
from replaygate.sources._otlp import export_request
from replaygate.sources._phoenix import Annotation, PhoenixSource

if TYPE_CHECKING:  # the gate and replay packages are heavy; only their types are needed here
    from replaygate.replay import RunFile

    from replaygate.gate import GateReport

__all__ = [
    "PushItem",
    "PushResult",
    "failure_items",
    "gate_trace_id",
    "push_failures",
    "push_report",
    "push_run",
    "run_items",
]

Sink = Literal["langfuse", "phoenix"]


@dataclass(frozen=True)
class PushItem:
    """One result to write on one trace: a label (categorical) or a score, with an explanation."""

    trace_id: str
    name: str
    key: str
    label: str | None = None
    score: float | None = None
    explanation: str | None = None


@dataclass
class PushResult:
    """What a push wrote: how many items, on how many traces, and what was left out (and why)."""

    sink: str
    items: int = 0
    traces: int = 0
    skipped: list[str] = field(default_factory=list)
    gate_trace: str | None = None
    exported: int = 0  # attempt traces sent first (from the run's artifacts)

    def describe(self) -> str:
        text = f"pushed {self.items} results on {self.traces} traces to {self.sink}"
        if self.exported:
            text += f" (exported {self.exported} attempt traces first)"
        if self.gate_trace:
            text += f" (gate trace {self.gate_trace})"
        if self.skipped:
            text += f"; skipped {len(self.skipped)}: " + "; ".join(self.skipped[:5])
        return text


def run_items(run: RunFile) -> tuple[list[PushItem], list[str]]:
    """The results of every attempt of a run, and the attempts left out (no trace id)."""
    items: list[PushItem] = []
    skipped: list[str] = []
    for attempt in run.attempts:
        where = f"{attempt.scenario_id}#{attempt.index}"
        if not attempt.trace_id:
            skipped.append(f"{where} has no trace id")
            continue
        key = f"{run.run_id}:{where}"
        failed = [c for c in attempt.checks if not c.passed]
        explanation = attempt.error or "; ".join(f"{c.name}: {c.detail}" for c in failed) or None
        status_score = {"pass": 1.0, "fail": 0.0}.get(attempt.status)
        items.append(
            PushItem(
                attempt.trace_id,
                "replaygate.status",
                key,
                label=attempt.status,
                score=status_score,
                explanation=explanation,
            )
        )
        for judge in attempt.judges:
            items.append(
                PushItem(
                    attempt.trace_id,
                    f"replaygate.judge.{judge.name}",
                    key,
                    score=float(judge.score),
                    label="pass" if judge.passed else "fail",
                    explanation=judge.detail or None,
                )
            )
        if attempt.retrieval is not None:
            for metric in ("hit_rate", "mrr", "recall", "ndcg"):
                items.append(
                    PushItem(
                        attempt.trace_id,
                        f"replaygate.retrieval.{metric}",
                        key,
                        score=float(getattr(attempt.retrieval, metric)),
                    )
                )
    return items, skipped


def failure_items(records: Sequence[TraceRecord]) -> list[PushItem]:
    """One ``replaygate.failure`` item per failure candidate: its reasons as the label, score 0."""
    items = []
    for record in records:
        summary = record.summary
        if not summary.failure_reasons:
            continue
        why = summary.error or summary.escalation_reason
        items.append(
            PushItem(
                summary.trace_id,
                "replaygate.failure",
                "failure",
                label=", ".join(summary.failure_reasons),
                score=0.0,
                explanation=why,
            )
        )
    return items


def push_failures(records: Sequence[TraceRecord], sink: LangfuseSource | PhoenixSource) -> PushResult:
    """Mark failure candidates (from the store) in the tool: a Phoenix annotation / Langfuse score each.

    In Phoenix only traces it has are annotated (the others are listed as skipped).
    """
    items = failure_items(records)
    skipped: list[str] = []
    if isinstance(sink, PhoenixSource):
        there = sink.existing_traces(sorted({i.trace_id for i in items}))
        if len(there) < len(items):
            skipped.append(f"{len(items) - len(there)} failure traces are not in {sink.describe()}")
        items = [i for i in items if i.trace_id in there]
    result = PushResult(sink=sink.describe(), skipped=skipped)
    result.items = _write(sink, items)
    result.traces = len(items)
    return result


def gate_trace_id(report_id: str) -> str:
    """The trace id of a gate report's own trace: derived from the report id, so a push is repeatable."""
    return hashlib.sha256(f"replaygate-gate\x00{report_id}".encode()).hexdigest()[:32]


def _report_items(report: GateReport, link: str | None) -> list[PushItem]:
    trace_id = gate_trace_id(report.report_id)
    explanation = report.headline + (f" — report: {link}" if link else "")
    return [
        PushItem(
            trace_id,
            "replaygate.gate.outcome",
            report.report_id,
            label=report.outcome,
            score={"pass": 1.0, "needs-sign-off": 0.5, "block": 0.0}[report.outcome],
            explanation=explanation,
        ),
        PushItem(
            trace_id,
            "replaygate.gate.newly_failing",
            report.report_id,
            score=float(len(report.newly_failing)),
            explanation=", ".join(report.newly_failing) or None,
        ),
    ]


_CATEGORICAL = frozenset({"replaygate.status", "replaygate.gate.outcome", "replaygate.failure"})


def _langfuse_value(item: PushItem) -> float | str:
    if item.name in _CATEGORICAL or item.score is None:
        return item.label or ""
    return item.score


def _write(sink: LangfuseSource | PhoenixSource, items: Sequence[PushItem]) -> int:
    if isinstance(sink, LangfuseSource):
        return sink.push_scores(
            [
                LangfuseScore(
                    trace_id=i.trace_id,
                    name=i.name,
                    value=_langfuse_value(i),
                    comment=i.explanation,
                    key=i.key,
                    metadata={"replaygate.key": i.key},
                )
                for i in items
            ]
        )
    return sink.annotate(
        [
            Annotation(
                trace_id=i.trace_id,
                name=i.name,
                label=i.label,
                score=i.score,
                explanation=i.explanation,
                identifier=i.key,
                metadata={"replaygate.key": i.key},
            )
            for i in items
        ]
    )


def _export_attempts(
    run: RunFile,
    sink: LangfuseSource | PhoenixSource,
    spans: Mapping[str, Sequence[Mapping[str, Any]]],
    hash_content: bool,
) -> int:
    """Send the attempts' own spans (from the run's artifacts) to the tool; returns how many traces."""
    wanted = [t for t in dict.fromkeys(a.trace_id for a in run.attempts if a.trace_id) if spans.get(t or "")]
    for start in range(0, len(wanted), 50):
        batch = [record for trace_id in wanted[start : start + 50] for record in spans[trace_id or ""]]
        body = export_request(
            batch,
            service_name="replaygate-replay",
            resource={"replaygate.run_id": run.run_id},
            scope="replaygate.replay",
            hash_content=hash_content,
        )
        sink.export_otlp(body)
    return len(wanted)


def _await_traces(sink: PhoenixSource, trace_ids: Sequence[str], timeout_s: float = 30.0) -> set[str]:
    """The traces Phoenix has, waiting a little for ones just exported (it inserts asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        there = sink.existing_traces(trace_ids)
        if there >= set(trace_ids) or time.monotonic() > deadline:
            return there
        time.sleep(0.5)


def push_run(
    run: RunFile,
    sink: LangfuseSource | PhoenixSource,
    *,
    spans: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    hash_content: bool = True,
) -> PushResult:
    """Write every attempt's status, judge scores and retrieval metrics onto its trace.

    Args:
        run: the run file.
        sink: Langfuse or Phoenix.
        spans: the attempts' spans by trace id (from the run's artifacts): exported first, so each
            result sits on a trace the tool shows. Replay traces are never part of production export.
        hash_content: replace content-bearing attributes of those spans by ``sha256:<hex>`` (the
            default, as in OTLP export).
    """
    items, skipped = run_items(run)
    exported = _export_attempts(run, sink, spans, hash_content) if spans else 0
    trace_ids = sorted({i.trace_id for i in items})
    if isinstance(sink, PhoenixSource):
        there = _await_traces(sink, trace_ids) if exported else sink.existing_traces(trace_ids)
        missing = sorted(set(trace_ids) - there)
        if missing:
            skipped.append(
                f"{len(missing)} attempt traces are not in {sink.describe()} (their spans come from the "
                "run's artifacts: run without --no-artifacts, keep the artifacts beside the run file)"
            )
        items = [i for i in items if i.trace_id in there]
    result = PushResult(sink=sink.describe(), skipped=skipped, exported=exported)
    result.items = _write(sink, items)
    result.traces = len({i.trace_id for i in items})
    return result


def push_report(
    report: GateReport, sink: LangfuseSource | PhoenixSource, link: str | None = None
) -> PushResult:
    """Write a gate report as its own trace with the outcome and the newly failing count."""
    trace_id = gate_trace_id(report.report_id)
    now = time.time_ns()
    if isinstance(sink, PhoenixSource):
        sink.create_spans([gate_span_json(report, trace_id, now, link)])
    else:
        sink.export_otlp(gate_span_proto(report, trace_id, now, link))
    items = _report_items(report, link)
    result = PushResult(sink=sink.describe(), gate_trace=trace_id)
    result.items = _write(sink, items)
    result.traces = 1
    return result
