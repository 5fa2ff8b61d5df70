"""The agent's configuration: the YAML files in ``configs/`` and their loader.

A configuration is everything the agent reads besides the code: model, prompt, tool versions, retrieval
index version, retrieval settings, the refund limit and whether the refund tool enforces it, and the
offline model's failure rates. ``seed`` makes the offline model reproducible; without one it draws from
system entropy, so repeated runs differ as a real model's would.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CONFIG_DIR", "AgentConfig", "ConfigError", "FailureRates", "RetrievalSettings", "load_config"]

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


class ConfigError(ValueError):
    """A support-agent configuration is missing or invalid."""


class FailureRates(BaseModel):
    """Probabilities of the classic failures, each in [0, 1], drawn per turn by the offline model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    refusal_without_tools: float = Field(0.0, ge=0.0, le=1.0)
    ungrounded_claim: float = Field(0.0, ge=0.0, le=1.0)
    empty_answer: float = Field(0.0, ge=0.0, le=1.0)
    refund_over_limit: float = Field(0.0, ge=0.0, le=1.0)
    missed_escalation: float = Field(0.0, ge=0.0, le=1.0)
    unneeded_escalation: float = Field(0.0, ge=0.0, le=1.0)


class RetrievalSettings(BaseModel):
    """How many chunks to retrieve and the optional similarity threshold (cosine, 0..1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_k: int = Field(3, ge=1, le=20)
    threshold: float | None = Field(None, ge=0.0, le=1.0)


class AgentConfig(BaseModel):
    """One configuration of the support agent (one YAML file in ``configs/``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config_id: str
    agent_version: str
    model: str = "gpt-4o-mini"
    provider: str = "openai"
    prompt_version: str
    prompt: str
    tool_versions: dict[str, str] = Field(default_factory=dict)
    retrieval_index_version: str
    retrieval: RetrievalSettings = Field(default_factory=lambda: RetrievalSettings.model_validate({}))
    refund_limit: float = Field(200.0, gt=0)
    enforce_refund_limit: bool = False
    seed: int | None = None
    latency_ms: float = Field(1.0, ge=0.0)
    rates: FailureRates = Field(default_factory=lambda: FailureRates.model_validate({}))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<mapping>") -> AgentConfig:
        """Validate a parsed configuration; ``source`` names it in the error message."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ConfigError(
                f"invalid support-agent configuration {source}: {problems}. "
                f"Compare with {CONFIG_DIR / 'production.yaml'}."
            ) from None

    def to_dict(self) -> dict[str, Any]:
        """Return the configuration as the plain dict its YAML file parses to."""
        return self.model_dump(mode="json")


def load_config(path_or_name: str | Path | Mapping[str, Any] | AgentConfig) -> AgentConfig:
    """Load a configuration by name (``production``), by path, or from an already parsed mapping.

    Args:
        path_or_name: ``production``/``candidate``/``candidate_fixed`` (files in ``configs/``), a path
            to a YAML file, a mapping as parsed from one, or an :class:`AgentConfig` (returned as is).

    Raises:
        ConfigError: the file is missing, is not YAML, or does not validate (the message says where).
    """
    if isinstance(path_or_name, AgentConfig):
        return path_or_name
    if isinstance(path_or_name, Mapping):
        return AgentConfig.from_mapping(path_or_name)
    text = str(path_or_name)
    path = Path(text)
    if not path.suffix and "/" not in text and "\\" not in text:
        path = CONFIG_DIR / f"{text}.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
        raise ConfigError(f"no support-agent configuration at {path} (known names: {known})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{path}: expected a mapping of settings at the top level, got {type(raw).__name__}"
        )
    return AgentConfig.from_mapping(raw, source=str(path))
