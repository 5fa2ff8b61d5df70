"""replaygate.labels: a reading queue for people on every run, their labels, and judge agreement.

::

    from replaygate.labels import draw_sample, judge_agreement, labels_path, read_labels

    queue = draw_sample(run)                      # reproducible, stratified by status and judge verdict
    rows = judge_agreement(read_labels(labels_path("runs/candidate.json")))
    for r in rows:
        print(r.judge, r.model, r.prompt_version, r.n, r.kappa, (r.low, r.high))

``replaygate label RUN --by NAME`` walks the queue in the terminal and appends each answer to
``<run file>.labels.jsonl``; ``replaygate judge agreement RUN...`` prints kappa with its interval per
judge and judge fingerprint; ``replaygate gate`` puts the agreement in the report, and a policy's
``judge_calibration: {min_kappa, min_labels}`` marks the findings of a judge without enough agreement,
or without labels since its last prompt or model change, as uncalibrated.
"""

from replaygate.labels._agreement import Agreement, Calibration, calibration, judge_agreement, kappa_interval
from replaygate.labels._gate_agreement import UNCALIBRATED, run_judges, with_judge_agreement
from replaygate.labels._queue import QUESTIONS, QueueItem, draw_sample, judge_fingerprint, labelled_judge
from replaygate.labels._store import (
    LABELS_FORMAT_VERSION,
    HumanLabel,
    LabelsError,
    append_label,
    current_labels,
    labelled_keys,
    labels_path,
    now_utc,
    read_labels,
)

__all__ = [
    "LABELS_FORMAT_VERSION",
    "QUESTIONS",
    "UNCALIBRATED",
    "Agreement",
    "Calibration",
    "HumanLabel",
    "LabelsError",
    "QueueItem",
    "append_label",
    "calibration",
    "current_labels",
    "draw_sample",
    "judge_agreement",
    "judge_fingerprint",
    "kappa_interval",
    "labelled_judge",
    "labelled_keys",
    "labels_path",
    "now_utc",
    "read_labels",
    "run_judges",
    "with_judge_agreement",
]
