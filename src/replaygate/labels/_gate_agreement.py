"""Judge agreement in the gate report: kappa per judge fingerprint, and findings of uncalibrated judges.

``with_judge_agreement(report, candidate, labels, policy)`` adds to a gate report one entry per judge
the candidate run was judged with (``report.judge_agreement``): its kappa with people (from the labels of
the runs being gated) and whether it is calibrated. A policy may ask for it::

    judge_calibration:
      min_kappa: 0.6      # below: uncalibrated
      min_labels: 10      # fewer labels for the judge's current prompt and model: uncalibrated

Without ``judge_calibration`` the agreement is reported and no judge is called uncalibrated. The
findings on newly failing scenarios whose failing attempts failed a judge that is uncalibrated say so
("on the verdicts of an uncalibrated judge"), and a note lists each uncalibrated judge.
"""

from __future__ import annotations

from collections.abc import Sequence

from replaygate.replay import RunFile

from replaygate.gate import GateReport
from replaygate.labels._agreement import Calibration, calibration, judge_agreement
from replaygate.labels._queue import judge_fingerprint
from replaygate.labels._store import HumanLabel

__all__ = ["UNCALIBRATED", "run_judges", "with_judge_agreement"]

UNCALIBRATED = "on the verdicts of an uncalibrated judge"


def run_judges(run: RunFile) -> list[tuple[str, str | None, str | None]]:
    """The (judge, model, prompt version) triples a run's attempts were judged with."""
    names = sorted({j.name.split("#", 1)[0] for a in run.attempts for j in a.judges})
    return [(name, *judge_fingerprint(run.fingerprint, name)) for name in names]


def with_judge_agreement(
    report: GateReport,
    candidate: RunFile,
    labels: Sequence[HumanLabel],
    *,
    min_kappa: float | None = None,
    min_labels: int = 1,
    required: bool = False,
) -> GateReport:
    """The report with ``judge_agreement`` filled and uncalibrated judges' findings marked."""
    rows = judge_agreement(labels)
    status = calibration(rows, run_judges(candidate), min_kappa=min_kappa, min_labels=min_labels)
    shown: list[Calibration] = status
    entries = [c.to_json() for c in shown]
    if not required:
        for entry in entries:  # without a policy, agreement is information: nobody is "uncalibrated"
            entry["calibrated"] = None
        return report.model_copy(update={"judge_agreement": entries})
    bad = {c.judge for c in status if not c.calibrated}
    if not bad:
        return report.model_copy(update={"judge_agreement": entries})
    failed_by = {
        a.scenario_id
        for a in candidate.attempts
        if a.status == "fail" and any(not j.passed and j.name.split("#", 1)[0] in bad for j in a.judges)
    }
    findings = [
        f.model_copy(update={"message": f"{f.message} ({UNCALIBRATED})"})
        if f.subject in failed_by and UNCALIBRATED not in f.message
        else f
        for f in report.findings
    ]
    notes = [
        *report.notes,
        *(
            f"judge {c.judge} ({c.model}, {c.prompt_version}) is uncalibrated: {c.reason}; "
            "its findings are marked uncalibrated (label a sample: replaygate label RUN)"
            for c in status
            if not c.calibrated
        ),
    ]
    return report.model_copy(update={"judge_agreement": entries, "findings": findings, "notes": notes})
