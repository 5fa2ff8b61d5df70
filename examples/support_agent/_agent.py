"""``SupportAgent``: the traced entry point, per-session memory, and the runtime the model drives."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
import uuid
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from examples.support_agent import _telemetry as tel
from examples.support_agent._config import AgentConfig, load_config
from examples.support_agent._offline_model import OfflineModel
from examples.support_agent._openai_model import OpenAIChatModel
from examples.support_agent._retriever import RetrievalResult, Retriever
from examples.support_agent._session import SessionState, TurnModel, TurnResult
from examples.support_agent._text import estimate_tokens
from examples.support_agent._tools import SupportTools

__all__ = ["AGENT_NAME", "CODE_VERSION", "SupportAgent"]

AGENT_NAME = "support-agent"
#: The version of this code, given to ``@trace_agent``; each call then records the configuration's
#: ``agent_version`` (what a release ships) as ``gen_ai.agent.version``, with config id and prompt version.
CODE_VERSION = "1.5"


@lru_cache(maxsize=1)
def _shared_retriever() -> Retriever:
    return Retriever()


class SupportAgent:
    """A customer-support RAG agent: retrieval over the policy documents, order tools, an LLM.

    The LLM is the offline stand-in unless ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and
    ``SUPPORT_AGENT_MODEL`` are all set, in which case it calls that OpenAI-compatible endpoint.
    """

    def __init__(
        self,
        config: AgentConfig | Mapping[str, Any] | str | Path = "production",
        *,
        seed: int | None = None,
        model: TurnModel | None = None,
    ) -> None:
        """Build an agent from a configuration (a name such as ``production``, a path, or a mapping).

        Args:
            config: the configuration; see ``load_config``.
            seed: overrides the configuration's ``seed``; None with no configured seed draws from system
                entropy, so two agents behave differently, as a real model would.
            model: the turn model to use instead of the default (the offline model or a real endpoint).
        """
        self.config = load_config(config)
        chosen = seed if seed is not None else self.config.seed
        self.seed = chosen
        rng = random.Random(chosen) if chosen is not None else random.Random()
        self._jitter = random.Random(rng.random())
        self.tools = SupportTools(self.config.refund_limit, self.config.enforce_refund_limit)
        self.retriever = _shared_retriever()
        self.model: TurnModel = model or OpenAIChatModel.from_env() or OfflineModel(rng, self.config.model)
        self._sessions: dict[str, SessionState] = {}
        self._lock = threading.Lock()
        self.last_turn: TurnResult | None = None

    # -- the runtime the model drives ----------------------------------------------------------------

    def retrieve(self, query: str) -> RetrievalResult:
        """Search the knowledge base, traced as a retrieval span with chunks, scores and the threshold."""
        settings = self.config.retrieval
        with tel.retrieval_span(query, "support-kb", settings.threshold) as span:
            result = self.retriever.search(query, settings.top_k, settings.threshold)
            span.record([c.as_document() for c in result.chunks], filtered=result.filtered)
            return result

    def model_step(self, input_text: str, output_text: str) -> None:
        """One offline model step, traced as an LLM span with token counts estimated from the text."""
        with tel.llm_span(self.config.model, self.config.provider, input_text) as span:
            if self.config.latency_ms:
                time.sleep(self.config.latency_ms * (0.5 + self._jitter.random()) / 1000.0)
            span.set_usage(estimate_tokens(input_text), estimate_tokens(output_text))
            span.set_output(output_text)

    # -- sessions ------------------------------------------------------------------------------------

    def session(self, session_id: str) -> SessionState | None:
        """Return the state of a session this agent has seen, or None."""
        with self._lock:
            return self._sessions.get(session_id)

    def start_session(
        self, session_id: str, user_id: str | None = None, order_id: str | None = None
    ) -> SessionState:
        """Open (or return) a session, optionally with the customer and an order already known."""
        state = self._state(session_id, user_id)
        if order_id is not None:
            state.order_id = str(order_id).strip().upper()
        return state

    def _state(self, session_id: str | None, user_id: str | None) -> SessionState:
        with self._lock:
            if session_id is None:
                return SessionState(session_id=None, user_id=user_id)
            state = self._sessions.get(session_id)
            if state is None:
                state = self._sessions[session_id] = SessionState(session_id=session_id, user_id=user_id)
            elif user_id is not None:
                state.user_id = user_id
            return state

    # -- the entry point -----------------------------------------------------------------------------

    @tel.agent_span(name=AGENT_NAME, version=CODE_VERSION)
    def respond(self, message: str, session_id: str | None = None, user_id: str | None = None) -> str:
        """Answer one customer message; turns with the same ``session_id`` share the conversation."""
        tel.annotate_config(self.config.config_id, self.config.agent_version, self.config.prompt_version)
        state = self._state(session_id, user_id)
        result = self.model.run_turn(message, state, self)
        result = dataclasses.replace(result, trace_id=tel.current_trace_id())
        state.history.append({"role": "user", "content": message})
        state.history.append({"role": "assistant", "content": result.answer})
        state.turns.append(result)
        self.last_turn = result
        return result.answer

    def respond_turn(
        self, message: str, session_id: str | None = None, user_id: str | None = None
    ) -> TurnResult:
        """Like ``respond``, but return the whole turn result (label, tools, chunks, planted failures)."""
        if session_id is None:
            session_id = f"anon-{uuid.uuid4().hex[:12]}"
        self.respond(message, session_id=session_id, user_id=user_id)
        state = self.session(session_id)
        if state is None or not state.turns:  # pragma: no cover - respond always records the turn
            raise RuntimeError(f"session {session_id}: the turn was not recorded")
        return state.turns[-1]
