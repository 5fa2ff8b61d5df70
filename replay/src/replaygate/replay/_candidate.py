"""A candidate: a target plus the configuration file the agent reads (model, prompt, tools, index)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replaygate.replay._bounded import (
    MAX_YAML_BYTES,
    load_yaml_bounded,
    parse_json_bounded,
    read_text_bounded,
)
from replaygate.replay._errors import TargetError
from replaygate.replay._runfile import content_hash

__all__ = ["DECLARED_VERSION_KEYS", "PROMPT_KEYS", "Candidate", "declared_versions", "load_config"]

#: Configuration keys copied into the fingerprint's declared versions.
DECLARED_VERSION_KEYS = (
    "agent_version",
    "model",
    "prompt_version",
    "tool_versions",
    "retrieval_index_version",
    "config_id",
)
#: Configuration keys holding prompt text; each present one adds ``<key>_hash`` to the declared versions.
PROMPT_KEYS = ("prompt", "system_prompt")


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a candidate configuration file (YAML or JSON; an empty file is ``{}``).

    Raises:
        TargetError: the file is missing, unreadable, not YAML/JSON, or not a mapping.
    """
    p = Path(path)
    text = read_text_bounded(p, what="configuration file", error=TargetError, max_bytes=MAX_YAML_BYTES)
    if p.suffix.lower() == ".json":
        data = parse_json_bounded(text, str(p), TargetError, "configuration")
    else:
        data, _ = load_yaml_bounded(text, str(p), TargetError)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TargetError(f"{p}: a configuration is a mapping at the top level, got {type(data).__name__}")
    return {str(k): v for k, v in data.items()}


def declared_versions(config: Mapping[str, Any]) -> dict[str, str]:
    """Return the versions a configuration declares, flattened to strings.

    ``tool_versions: {lookup_order: "2"}`` becomes ``{"tool_versions.lookup_order": "2"}``; a prompt
    text (``prompt``, ``system_prompt``) is recorded by its hash (``prompt_hash: sha256:<12 hex>``), so two
    runs whose prompts differ show it even when nobody bumped ``prompt_version``.
    """
    out: dict[str, str] = {}
    for key in DECLARED_VERSION_KEYS:
        if key not in config or config[key] is None:
            continue
        value = config[key]
        if isinstance(value, Mapping):
            for sub, v in sorted(value.items(), key=lambda kv: str(kv[0])):
                out[f"{key}.{sub}"] = str(v)
        else:
            out[key] = str(value)
    for key in PROMPT_KEYS:
        if config.get(key) is not None:
            out[f"{key}_hash"] = content_hash(config[key])[: len("sha256:") + 12]
    return out


@dataclass(frozen=True)
class Candidate:
    """A target spec with its parsed configuration, its hash and its declared versions."""

    target: str
    config: dict[str, Any] = field(default_factory=dict)
    config_path: str | None = None

    @property
    def config_hash(self) -> str:
        """``content_hash`` of the parsed configuration."""
        return content_hash(self.config)

    @property
    def versions(self) -> dict[str, str]:
        """The declared versions (agent, model, prompt, tools, retrieval index, config id)."""
        return declared_versions(self.config)

    @classmethod
    def load(cls, target: str, config_path: str | os.PathLike[str] | None) -> Candidate:
        """Read the configuration file (if any) and pair it with the target spec."""
        config = load_config(config_path) if config_path is not None else {}
        return cls(
            target=target, config=config, config_path=None if config_path is None else str(config_path)
        )
