"""Judges: the :class:`Judge` protocol, its verdict, and a registry that records how each judge was made.

A judge is an object with a ``name`` (``groundedness`` or ``context_relevance``), a ``model`` and a
``prompt_version`` (recorded in the run's fingerprint), a ``needs_question`` flag, and an async
``judge(...)`` method. The scorer passes the question only to judges with ``needs_question = True``:
a groundedness (faithfulness) judge never receives it, so it cannot score relevance instead.

``@register_judge("name")`` registers a factory (a class or a function); ``create_judge("name", **args)``
calls it and records ``{"name": ..., "args": ...}`` on the judge (:func:`judge_spec`); secrets
(``api_key``) are never recorded. The run file records the judges' model and prompt version and each
judge's spec (``fingerprint.judges``, slot -> :class:`JudgeSpec`), from which :func:`judges_from_fingerprint`
rebuilds them: the built-in ones from the model (with the endpoint and key given now), any other registered
judge from its spec. ``replaygate run --resume`` uses it so a resumed run keeps its judges; a run file
written before specs were recorded still rebuilds its built-in judges.

Environment variables read by :func:`create_judges` for ``kind="llm"`` when an argument is not given:
``REPLAYGATE_JUDGE_BASE_URL``, ``REPLAYGATE_JUDGE_MODEL``, ``REPLAYGATE_JUDGE_API_KEY``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from replaygate.replay._errors import JudgeError
from replaygate.replay._judge_registry import ON_USE, REGISTRY, Judge, JudgeVerdict, factory, register_judge
from replaygate.replay._offline_judge import OfflineContextRelevanceJudge, OfflineGroundednessJudge
from replaygate.replay._runfile import Fingerprint, JudgeSpec

__all__ = [
    "Judge",
    "JudgeVerdict",
    "create_judge",
    "create_judges",
    "judge_identity",
    "judge_spec",
    "judge_specs",
    "judges_from_fingerprint",
    "register_judge",
    "registered_judges",
]

#: Registered on import; the LLM judge registers when ``llm`` is first asked for (``ON_USE``).
BUILTIN_JUDGES = (OfflineContextRelevanceJudge, OfflineGroundednessJudge)
_SECRET_ARGS = frozenset({"api_key"})
_SPEC_ATTR = "_replaygate_judge_spec"


def registered_judges() -> list[str]:
    """The names of all registered judge factories."""
    return sorted(set(REGISTRY) | set(ON_USE))


def create_judge(name: str, **args: Any) -> Judge:
    """Create a registered judge and record its name and (non-secret) arguments on it.

    Raises:
        JudgeError: no judge is registered under ``name``, or the factory rejected the arguments.
    """
    made = factory(name)
    if made is None:
        known = ", ".join(registered_judges()) or "none"
        raise JudgeError(f"unknown judge {name!r}; registered judges: {known}")
    try:
        judge = made(**args)
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


def judge_specs(judges: Mapping[str, Judge]) -> dict[str, JudgeSpec] | None:
    """How each judge was made (slot -> spec), as the run file records it.

    None when a judge was not made by :func:`create_judge` (it could not be rebuilt from a spec).
    """
    specs = {slot: judge_spec(j) for slot, j in sorted(judges.items())}
    if not specs or any(spec is None for spec in specs.values()):
        return None
    return {slot: JudgeSpec.model_validate(spec) for slot, spec in specs.items() if spec is not None}


def judge_identity(judges: Mapping[str, Judge]) -> tuple[str | None, str | None]:
    """Return the judges' model and prompt version (``name=value`` pairs when they differ)."""

    def collect(values: dict[str, str | None]) -> str | None:
        present = {k: str(v) for k, v in values.items() if v is not None}
        if not present:
            return None
        distinct = set(present.values())
        if len(distinct) == 1:
            return distinct.pop()
        return ",".join(f"{k}={v}" for k, v in present.items())

    ordered = sorted(judges.items())
    return (
        collect({name: j.model for name, j in ordered}),
        collect({name: j.prompt_version for name, j in ordered}),
    )


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

    A run that records its judges' specs gets each judge rebuilt from its spec
    (``create_judge(spec.name, **spec.args)``; register a custom factory first); an LLM judge takes the base
    URL (else the recorded one), key and timeout given now or from the environment. A run written before
    specs were recorded gets, for ``offline``, the offline judges and for any other model the LLM judges of
    that model (the base URL and key come from the arguments or the environment, as for
    :func:`create_judges`). The rebuilt
    judges must carry the recorded prompt version, so a run is never continued or re-judged with a prompt
    that changed since.

    Raises:
        JudgeError: the fingerprint names no judge, judges of different models, or a prompt version this
            replaygate does not have.
    """
    model, prompt = fingerprint.judge_model, fingerprint.judge_prompt_version
    if fingerprint.judges:
        judges = {
            slot: create_judge(spec.name, **_endpoint(spec, base_url, api_key, timeout_s))
            for slot, spec in fingerprint.judges.items()
        }
        return _same_identity(judges, model, prompt)
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
    return _same_identity(judges, model, prompt)


def _endpoint(spec: JudgeSpec, base_url: str | None, api_key: str | None, timeout_s: float) -> dict[str, Any]:
    """A spec's arguments; an LLM judge takes the endpoint, key and timeout given now (no key recorded)."""
    args = dict(spec.args)
    if spec.name == "llm":
        args["base_url"] = base_url or os.environ.get("REPLAYGATE_JUDGE_BASE_URL") or args.get("base_url")
        args["timeout_s"] = timeout_s
        key = api_key or os.environ.get("REPLAYGATE_JUDGE_API_KEY")
        if key:
            args["api_key"] = key
    return args


def _same_identity(judges: dict[str, Judge], model: str | None, prompt: str | None) -> dict[str, Judge]:
    """The rebuilt judges, if they carry the recorded model and prompt version."""
    now_model, now_prompt = judge_identity(judges)
    if (now_model, now_prompt) != (model, prompt):
        raise JudgeError(
            f"the run was judged by {model} with prompt version {prompt}; this replaygate's judges for that "
            f"model have prompt version {now_prompt}: use the replaygate version the run was made with"
        )
    return judges
