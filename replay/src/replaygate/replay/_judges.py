"""Judges: the :class:`Judge` protocol, its verdict, and a registry that records how each judge was made.

A judge is an object with a ``name`` (``groundedness`` or ``context_relevance``), a ``model`` and a
``prompt_version`` (recorded in the run's fingerprint), a ``needs_question`` flag, and an async
``judge(...)`` method. The scorer passes the question only to judges with ``needs_question = True``:
a groundedness (faithfulness) judge never receives it, so it cannot score relevance instead.

``@register_judge("name")`` registers a factory (a class or a function); ``create_judge("name", **args)``
calls it and records ``{"name": ..., "args": ...}`` on the judge (:func:`judge_spec`); secrets
(``api_key``) are never recorded. The run file itself records the judges' model and prompt version (in
its fingerprint), from which :func:`judges_from_fingerprint` rebuilds the built-in judges; ``replaygate
run --resume`` uses it so a resumed run keeps its judges. (Custom judges' specs are not yet written to the
run file.)

Environment variables read by :func:`create_judges` for ``kind="llm"`` when an argument is not given:
``REPLAYGATE_JUDGE_BASE_URL``, ``REPLAYGATE_JUDGE_MODEL``, ``REPLAYGATE_JUDGE_API_KEY``.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from replaygate.replay._errors import JudgeError
from replaygate.replay._fingerprint import judge_identity
from replaygate.replay._judge_registry import REGISTRY, Judge, JudgeVerdict, register_judge
from replaygate.replay._llm_judge import LlmJudge
from replaygate.replay._offline_judge import OfflineContextRelevanceJudge, OfflineGroundednessJudge
from replaygate.replay._runfile import Fingerprint

__all__ = [
    "BUILTIN_JUDGES",
    "Judge",
    "JudgeVerdict",
    "create_judge",
    "create_judges",
    "judges_from_fingerprint",
    "judge_spec",
    "register_judge",
    "registered_judges",
]

BUILTIN_JUDGES = (LlmJudge, OfflineContextRelevanceJudge, OfflineGroundednessJudge)  # registered on import
_SECRET_ARGS = frozenset({"api_key"})
_SPEC_ATTR = "_replaygate_judge_spec"


def registered_judges() -> list[str]:
    """The names of all registered judge factories."""
    return sorted(REGISTRY)


def create_judge(name: str, **args: Any) -> Judge:
    """Create a registered judge and record its name and (non-secret) arguments on it.

    Raises:
        JudgeError: no judge is registered under ``name``, or the factory rejected the arguments.
    """
    factory = REGISTRY.get(name)
    if factory is None:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise JudgeError(f"unknown judge {name!r}; registered judges: {known}")
    try:
        judge = factory(**args)
    except TypeError as exc:
        raise JudgeError(f"judge {name!r} cannot be created with {sorted(args)}: {exc}") from None
    recorded = {k: v for k, v in args.items() if k not in _SECRET_ARGS}
    object.__setattr__(judge, _SPEC_ATTR, {"name": name, "args": recorded})
    if not isinstance(judge, Judge):
        raise JudgeError(f"judge factory {name!r} returned {type(judge).__name__}, which is not a Judge")
    return judge


def judge_spec(judge: Judge) -> dict[str, Any] | None:
    """How a judge was created (``{"name", "args"}``), or None when it was not made by create_judge."""
    spec = getattr(judge, _SPEC_ATTR, None)
    return dict(spec) if isinstance(spec, dict) else None


def create_judges(
    kind: Literal["offline", "llm"] = "offline",
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Judge]:
    """Create the two judges a run uses, keyed ``groundedness`` and ``context_relevance``.

    Args:
        kind: ``offline`` (no model; the default) or ``llm`` (an OpenAI-compatible endpoint).
        model: the judge model (``llm``; falls back to ``REPLAYGATE_JUDGE_MODEL``).
        base_url: the endpoint base URL, e.g. ``http://127.0.0.1:8000/v1`` (``llm``; falls back to
            ``REPLAYGATE_JUDGE_BASE_URL``).
        api_key: sent as a bearer token (``llm``; falls back to ``REPLAYGATE_JUDGE_API_KEY``); never recorded.
        timeout_s: per-request timeout in seconds (``llm``).

    Raises:
        JudgeError: an unknown kind, or an LLM judge without a model or base URL.
    """
    if kind == "offline":
        return {
            "groundedness": create_judge("offline_groundedness"),
            "context_relevance": create_judge("offline_context_relevance"),
        }
    if kind != "llm":
        raise JudgeError(f"unknown judge kind {kind!r}; use 'offline' or 'llm'")
    model = model or os.environ.get("REPLAYGATE_JUDGE_MODEL")
    base_url = base_url or os.environ.get("REPLAYGATE_JUDGE_BASE_URL")
    api_key = api_key or os.environ.get("REPLAYGATE_JUDGE_API_KEY")
    if not model or not base_url:
        raise JudgeError(
            "an LLM judge needs a model and a base URL: pass --judge-model/--judge-base-url or set "
            "REPLAYGATE_JUDGE_MODEL and REPLAYGATE_JUDGE_BASE_URL"
        )
    common: dict[str, Any] = {"model": model, "base_url": base_url, "timeout_s": timeout_s}
    if api_key:
        common["api_key"] = api_key
    return {
        "groundedness": create_judge("llm", task="groundedness", **common),
        "context_relevance": create_judge("llm", task="context_relevance", **common),
    }


def judges_from_fingerprint(
    fingerprint: Fingerprint,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Judge]:
    """Rebuild the judges a run was recorded with (its fingerprint's judge model and prompt version).

    ``offline`` gives the offline judges; any other model gives the LLM judges of that model (the base
    URL and key come from the arguments or the environment, as for :func:`create_judges`). The rebuilt
    judges must carry the recorded prompt version, so a run is never continued or re-judged with a prompt
    that changed since.

    Raises:
        JudgeError: the fingerprint names no judge, judges of different models, or a prompt version this
            replaygate does not have.
    """
    model, prompt = fingerprint.judge_model, fingerprint.judge_prompt_version
    if model is None:
        raise JudgeError(
            "the run records no judge model: its judges cannot be rebuilt; choose them with --judge"
        )
    if "=" in model:
        raise JudgeError(
            f"the run's judges used different models ({model}); they cannot be rebuilt from the run"
        )
    judges = (
        create_judges("offline")
        if model == "offline"
        else create_judges("llm", model=model, base_url=base_url, api_key=api_key, timeout_s=timeout_s)
    )
    now_model, now_prompt = judge_identity(judges)
    if (now_model, now_prompt) != (model, prompt):
        raise JudgeError(
            f"the run was judged by {model} with prompt version {prompt}; this replaygate's judges for that "
            f"model have prompt version {now_prompt}: use the replaygate version the run was made with"
        )
    return judges
