"""The reading queue: a reproducible sample of a run's attempts for a person to read and label (pure).

``draw_sample(run)`` takes ``max(10, ceil(5 % of the attempts))`` attempts (at most all of them),
stratified by (status, judge verdict): each stratum gets its share of the sample by largest remainder,
and at least one attempt while the sample has room. Within a stratum attempts are drawn with a random
generator seeded by what the run replayed (configuration hash, seed and k in its fingerprint) over
the attempts in (scenario, index) order, so the same run always gives the same queue, and so does a
rerun of the same suite and configuration. Every attempt of each
newly failing scenario of a gate report is added (reason ``newly_failing``).

What a person labels is the judge's question: for a groundedness judge "is the answer supported by the
retrieved context?" (supported / not supported), for a context-relevance judge "is the retrieved context
relevant to the question?"; an attempt without a judge gets "is the answer acceptable?" against the
deterministic checks (pseudo-judge ``checks``).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from replaygate.replay import Attempt, Fingerprint, RunFile

__all__ = ["QUESTIONS", "QueueItem", "draw_sample", "judge_fingerprint", "labelled_judge"]

#: The question a person answers for each judge, with its two answers (yes first).
QUESTIONS: dict[str, tuple[str, str, str]] = {
    "groundedness": ("Is the answer supported by the retrieved context?", "supported", "not supported"),
    "context_relevance": ("Is the retrieved context relevant to the question?", "relevant", "not relevant"),
    "checks": ("Is the answer acceptable?", "acceptable", "not acceptable"),
}


@dataclass(frozen=True)
class QueueItem:
    """One attempt to read: which judge's question to answer, what the judge said, and why it is here."""

    scenario_id: str
    index: int
    status: str
    judge: str
    verdict: bool | None
    reason: Literal["sample", "newly_failing"]

    @property
    def key(self) -> tuple[str, int]:
        """(scenario id, attempt index)."""
        return self.scenario_id, self.index


def labelled_judge(attempt: Attempt) -> tuple[str, bool | None]:
    """The judge whose question a person answers for this attempt, and that judge's verdict."""
    if attempt.judges:
        first = attempt.judges[0]
        return first.name.split("#", 1)[0], first.passed
    if attempt.status == "error":
        return "checks", None
    return "checks", attempt.status == "pass"


def judge_fingerprint(fingerprint: Fingerprint, judge: str) -> tuple[str | None, str | None]:
    """The model and prompt version the run recorded for one judge (``checks``: the deterministic checks)."""
    if judge == "checks":
        return "deterministic", f"replaygate-{fingerprint.replaygate_version}"

    def pick(value: str | None) -> str | None:
        if value is None or "=" not in value:
            return value
        pairs = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        return pairs.get(judge)

    return pick(fingerprint.judge_model), pick(fingerprint.judge_prompt_version)


def _stratum(attempt: Attempt) -> tuple[str, str]:
    judge, verdict = labelled_judge(attempt)
    return attempt.status, f"{judge}:{verdict}"


def _allocate(sizes: dict[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    total = sum(sizes.values())
    keys = sorted(sizes)
    quota = {k: n * sizes[k] / total for k in keys}
    take = {k: min(sizes[k], math.floor(quota[k])) for k in keys}
    if n >= len(keys):
        for k in keys:
            take[k] = max(take[k], 1)
    while sum(take.values()) > n:  # the minimum of one each overshot: trim the largest
        k = max(keys, key=lambda k: (take[k], k))
        take[k] -= 1
    order = sorted(keys, key=lambda k: (-(quota[k] - math.floor(quota[k])), k))
    while sum(take.values()) < n:
        grew = False
        for k in order:
            if sum(take.values()) < n and take[k] < sizes[k]:
                take[k] += 1
                grew = True
        if not grew:
            break
    return take


def draw_sample(
    run: RunFile,
    *,
    size: int | None = None,
    share: float = 0.05,
    minimum: int = 10,
    newly_failing: Sequence[str] = (),
) -> list[QueueItem]:
    """The run's reading queue (see the module docstring); the same run gives the same queue."""
    attempts = sorted(run.attempts, key=lambda a: (a.scenario_id, a.index))
    if not attempts:
        return []
    n = min(len(attempts), size if size is not None else max(minimum, math.ceil(share * len(attempts))))
    strata: dict[tuple[str, str], list[Attempt]] = {}
    for attempt in attempts:
        strata.setdefault(_stratum(attempt), []).append(attempt)
    take = _allocate({k: len(v) for k, v in strata.items()}, n)
    fp = run.fingerprint
    basis = f"{fp.agent_config_hash}|{fp.seed}|{fp.k}|{run.shard}"
    seed = int(hashlib.sha256(basis.encode()).hexdigest()[:15], 16)
    rng = random.Random(seed)
    picked: list[Attempt] = []
    for key in sorted(strata):
        picked += rng.sample(strata[key], take[key])
    chosen = {(a.scenario_id, a.index) for a in picked}
    items = [_item(a, "sample") for a in attempts if (a.scenario_id, a.index) in chosen]
    wanted = set(newly_failing)
    items += [
        _item(a, "newly_failing")
        for a in attempts
        if a.scenario_id in wanted and (a.scenario_id, a.index) not in chosen
    ]
    return items


def _item(attempt: Attempt, reason: Literal["sample", "newly_failing"]) -> QueueItem:
    judge, verdict = labelled_judge(attempt)
    return QueueItem(attempt.scenario_id, attempt.index, attempt.status, judge, verdict, reason)
