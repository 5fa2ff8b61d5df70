"""Build a run's fingerprint (with how each judge was made) and tell why two fingerprints differ."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Mapping
from typing import Any

from replaygate.replay._judges import Judge, judge_identity, judge_specs
from replaygate.replay._runfile import Fingerprint, content_hash
from replaygate.replay.version import __version__

__all__ = [
    "NO_CONFIG",
    "build_fingerprint",
    "fingerprint_differences",
    "git_commit",
    "judge_identity",
    "utc_now",
]


def utc_now() -> str:
    """Return the current time as ISO 8601 UTC with seconds, e.g. ``2026-11-29T18:30:00Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """Return ``git rev-parse HEAD`` (with ``-dirty`` when tracked files changed), or None outside git."""
    try:  # both commands at once: a run starts a few milliseconds sooner
        head = subprocess.Popen(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        status = subprocess.Popen(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            head_out, _ = head.communicate(timeout=10)
            status_out, _ = status.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            head.kill()
            status.kill()
            head.communicate()
            status.communicate()
            return None
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    commit = head_out.strip()
    if status.returncode == 0 and status_out.strip():
        commit += "-dirty"
    return commit or None


#: ``agent_config_hash`` of a run whose target was given no configuration file.
NO_CONFIG = "no config"


def build_fingerprint(
    *,
    config: Mapping[str, Any] | None,
    versions: Mapping[str, str],
    target: str,
    judges: Mapping[str, Judge],
    suite_hash: str,
    policy: Mapping[str, Any] | None,
    tier: str | None,
    k: int,
    seed: int,
    code_commit: str | None,
    date: str | None = None,
) -> Fingerprint:
    """Assemble the fingerprint recorded with a run (``config=None``: no configuration, :data:`NO_CONFIG`)."""
    judge_model, judge_prompt = judge_identity(judges)
    return Fingerprint(
        agent_config_hash=NO_CONFIG if config is None else content_hash(dict(config)),
        declared_versions=dict(versions),
        target=target,
        code_commit=code_commit,
        judge_model=judge_model,
        judge_prompt_version=judge_prompt,
        judges=judge_specs(judges),
        replaygate_version=__version__,
        suite_hash=suite_hash,
        policy_hash=content_hash(dict(policy)) if policy is not None else None,
        tier=tier,
        k=k,
        seed=seed,
        date=date or utc_now(),
    )


def fingerprint_differences(
    a: Fingerprint, b: Fingerprint, *, fields: Iterable[str] | None = None, ignore: Iterable[str] = ("date",)
) -> list[str]:
    """Return ``field: a != b`` lines for the fields that differ (all but ``ignore`` unless ``fields``)."""
    names = (
        list(fields) if fields is not None else [f for f in Fingerprint.model_fields if f not in set(ignore)]
    )
    out = []
    for name in names:
        va, vb = getattr(a, name), getattr(b, name)
        if va != vb:
            out.append(f"{name}: {va!r} != {vb!r}")
    return out
