"""The label of an attempt: ``answer``, ``escalate``, ``clarify`` or ``refuse``.

A target may report its own label; otherwise it is derived from the trace: an escalation signal (or a
tool named ``*escalat*``) gives ``escalate``, the clarification signal gives ``clarify``, an answer that
matches a refusal pattern gives ``refuse``, anything else ``answer``.
"""

from __future__ import annotations

import re
from typing import Literal, cast, get_args

from replaygate.instrumentation import TraceSummary
from replaygate.replay._measures import is_escalated

__all__ = ["LABELS", "Label", "derive_label", "looks_like_refusal"]

Label = Literal["answer", "escalate", "clarify", "refuse"]
LABELS: tuple[str, ...] = get_args(Label)

_REFUSAL = re.compile(
    r"\b(?:I\s+(?:can(?:no|')t|am\s+(?:not\s+able|unable)|'m\s+(?:not\s+able|unable)|won't|will\s+not)"
    r"\s+(?:help|assist|provide|do\s+that|share|comply|answer|discuss|process)"
    r"|I'm\s+sorry,?\s+but\s+I\s+(?:can(?:no|')t|won't)"
    r"|(?:not\s+(?:able|allowed|permitted)\s+to\s+(?:help|assist|provide|share|discuss)))",
    re.IGNORECASE,
)


def looks_like_refusal(answer: str | None) -> bool:
    """Whether an answer reads as a refusal ("I can't help with that", "I'm unable to provide ...")."""
    return bool(answer) and _REFUSAL.search(answer.replace("\u2019", "'") if answer else "") is not None


def derive_label(summary: TraceSummary, answer: str | None, reported: str | None = None) -> Label:
    """Return the target's reported label when given (and valid), else the label derived from the trace.

    Raises:
        ValueError: the target reported a label that is not one of ``answer|escalate|clarify|refuse``.
    """
    if reported is not None:
        if reported not in LABELS:
            raise ValueError(f"target reported label {reported!r}; expected one of {', '.join(LABELS)}")
        return cast(Label, reported)
    if is_escalated(summary):
        return "escalate"
    if summary.clarification:
        return "clarify"
    if looks_like_refusal(answer):
        return "refuse"
    return "answer"
