"""The judge registry and the types every judge shares: :class:`Judge`, :class:`JudgeVerdict`, ``JudgeMode``.

Judge modules (``_llm_judge``, ``_offline_judge``, a team's own) import this module and register their
factories with ``@register_judge("name")``; ``_judges`` creates judges from the registry. Keeping the
registry below both is what lets ``_judges`` import the built-in judges at the top, without a cycle.
The LLM judge (its response models, its HTTP client) is loaded when ``llm`` is first asked for
(:func:`factory`, :func:`register_judge`), so an offline run does not import it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from replaygate.instrumentation import Chunk

__all__ = ["ON_USE", "REGISTRY", "Judge", "JudgeMode", "JudgeVerdict", "factory", "register_judge"]

JudgeMode = Literal["answer", "claims"]


@dataclass(frozen=True)
class JudgeVerdict:
    """What a judge says: a score in [0, 1], an overall verdict when it gives one, and why.

    ``claims`` (groundedness, claims mode) holds ``{"claim", "supported", "document_id"}`` items;
    ``chunks`` (context relevance) holds ``{"document_id", "relevant"}`` items.
    """

    score: float
    verdict: bool | None = None
    detail: str = ""
    claims: tuple[dict[str, Any], ...] = ()
    chunks: tuple[dict[str, Any], ...] = field(default=())


@runtime_checkable
class Judge(Protocol):
    """A judge of one attempt.

    Groundedness judges (``needs_question = False``) are called with ``question=None`` and must score
    the answer against the chunks only; context-relevance judges receive the question.
    """

    name: str
    model: str | None
    prompt_version: str
    needs_question: bool

    async def judge(
        self,
        *,
        answer: str,
        chunks: Sequence[Chunk],
        question: str | None = None,
        mode: JudgeMode = "answer",
    ) -> JudgeVerdict:
        """Judge one attempt; raise :class:`JudgeError` when no valid verdict can be had."""
        ...


F = TypeVar("F", bound=Callable[..., Any])
REGISTRY: dict[str, Callable[..., Any]] = {}
"""Judge factories by name; filled by :func:`register_judge` (the built-in judges register on import)."""
#: Built-in judges whose module is imported the first time their name is asked for.
ON_USE: dict[str, str] = {"llm": "replaygate.replay._llm_judge"}


def factory(name: str) -> Callable[..., Any] | None:
    """The factory registered under ``name`` (importing a built-in judge's module first), or None."""
    if name not in REGISTRY and name in ON_USE:
        importlib.import_module(ON_USE[name])
    return REGISTRY.get(name)


def register_judge(name: str) -> Callable[[F], F]:
    """Register a judge factory (class or function) under ``name`` for :func:`create_judge`."""

    def decorate(made: F) -> F:
        existing = factory(name)  # a built-in's name is taken even before its module is loaded
        if existing is not None and existing is not made:
            raise ValueError(f"a judge named {name!r} is already registered ({existing!r})")
        REGISTRY[name] = made
        return made

    return decorate
