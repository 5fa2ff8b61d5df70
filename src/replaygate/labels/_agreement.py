"""Judge-human agreement from people's labels: Cohen's kappa per judge and judge fingerprint (pure).

``judge_agreement(labels)`` groups the standing labels (the last one per attempt, judge and person) by
judge name and the judge's fingerprint (model and prompt version as the run recorded them), and reports
for each group the number of labels, the raw agreement, Cohen's kappa between the judge's verdicts and
the people's answers, and a 95 % percentile bootstrap interval for kappa (2,000 resamples of the labels,
seeded, so the interval is reproducible). Labels of attempts whose judge gave no verdict are left out.

``calibration(rows, judges, min_kappa=..., min_labels=...)`` says, for each judge fingerprint a run was
judged with, whether that judge is calibrated: it has at least ``min_labels`` labels *for that very
fingerprint* (so labels made before its last prompt or model change do not count) and its kappa reaches
``min_kappa``. An uncalibrated judge's findings are marked as such in the gate report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from replaygate.labels._store import HumanLabel, current_labels
from replaygate.stats import cohen_kappa

__all__ = ["Agreement", "Calibration", "calibration", "judge_agreement", "kappa_interval"]


@dataclass(frozen=True)
class Agreement:
    """Agreement of one judge fingerprint with people."""

    judge: str
    model: str | None
    prompt_version: str | None
    n: int
    agreement: float
    kappa: float | None
    low: float | None
    high: float | None
    last_label_at: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (``judge agreement --json`` and the gate report)."""
        return asdict(self)


def kappa_interval(
    judge: Sequence[bool], human: Sequence[bool], *, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of Cohen's kappa; None when kappa is undefined in most resamples."""
    a = np.asarray(judge, dtype=bool)
    b = np.asarray(human, dtype=bool)
    n = len(a)
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    ja, hb = a[idx], b[idx]
    po = (ja == hb).mean(axis=1)
    pa, pb = ja.mean(axis=1), hb.mean(axis=1)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)
    finite = kappas[np.isfinite(kappas)]
    if len(finite) < resamples / 2:
        return None, None
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def judge_agreement(labels: Sequence[HumanLabel]) -> list[Agreement]:
    """Kappa with its interval per (judge, model, prompt version), over the standing labels."""
    groups: dict[tuple[str, str | None, str | None], list[HumanLabel]] = {}
    for label in current_labels(labels):
        if label.judge_verdict is None:
            continue
        groups.setdefault((label.judge, label.judge_model, label.judge_prompt_version), []).append(label)
    rows: list[Agreement] = []
    for (judge, model, prompt), group in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        verdicts = [bool(lab.judge_verdict) for lab in group]
        humans = [lab.human for lab in group]
        kappa = cohen_kappa(verdicts, humans)
        low, high = kappa_interval(verdicts, humans)
        rows.append(
            Agreement(
                judge=judge,
                model=model,
                prompt_version=prompt,
                n=len(group),
                agreement=sum(v == h for v, h in zip(verdicts, humans, strict=True)) / len(group),
                kappa=None if math.isnan(kappa) else kappa,
                low=low,
                high=high,
                last_label_at=max(lab.at for lab in group),
            )
        )
    return rows


@dataclass(frozen=True)
class Calibration:
    """Whether one judge fingerprint of a run may be trusted, and why."""

    judge: str
    model: str | None
    prompt_version: str | None
    calibrated: bool
    reason: str
    agreement: Agreement | None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (the gate report's ``judge_agreement`` entries)."""
        data = asdict(self)
        data["agreement"] = self.agreement.to_json() if self.agreement else None
        return data


def calibration(
    rows: Sequence[Agreement],
    judges: Sequence[tuple[str, str | None, str | None]],
    *,
    min_kappa: float | None = None,
    min_labels: int = 1,
) -> list[Calibration]:
    """For each (judge, model, prompt version) a run used: calibrated or not, and why."""
    by_key = {(r.judge, r.model, r.prompt_version): r for r in rows}
    out: list[Calibration] = []
    for judge, model, prompt in judges:
        row = by_key.get((judge, model, prompt))
        older = [r for r in rows if r.judge == judge and (r.model, r.prompt_version) != (model, prompt)]
        if row is None or row.n < min_labels:
            have = 0 if row is None else row.n
            reason = f"{have} label(s) for {model} ({prompt}); {min_labels} needed"
            if older:
                reason += " (labels of an earlier prompt or model do not count)"
            out.append(Calibration(judge, model, prompt, False, reason, row))
        elif min_kappa is not None and (row.kappa is None or row.kappa < min_kappa):
            shown = "undefined" if row.kappa is None else f"{row.kappa:.2f}"
            out.append(Calibration(judge, model, prompt, False, f"kappa {shown} < {min_kappa:g}", row))
        else:
            shown = "undefined" if row.kappa is None else f"{row.kappa:.2f}"
            out.append(Calibration(judge, model, prompt, True, f"kappa {shown} on {row.n} label(s)", row))
    return out
