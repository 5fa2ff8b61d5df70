"""A small but realistic customer-support RAG agent, traced with replaygate (an example, not a library).

Usage::

    from examples.support_agent import SupportAgent

    agent = SupportAgent("production")            # or "candidate", "candidate_fixed", a path, a mapping
    agent.respond("How long does a refund take?", session_id="s1", user_id="u-1003")
    agent.respond("I want a refund for ORD-10042", session_id="s1", user_id="u-1003")
    agent.respond("and how long will that take?", session_id="s1")

Parts: a knowledge base of a dozen policy documents split into chunks ``<doc id>#<n>``; a TF-IDF
retriever with an optional similarity threshold; tools ``lookup_order``, ``issue_refund`` (refuses
amounts above the limit only with ``enforce_refund_limit: true``) and ``escalate_to_human``; an offline
stand-in for the LLM with configurable, seeded failure rates. With ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``SUPPORT_AGENT_MODEL`` set, a real OpenAI-compatible model is used instead.

``examples.support_agent.target:run_session`` is the replay target; ``examples.support_agent.traffic``
simulates production traffic with late negative feedback.
"""

from examples.support_agent._agent import AGENT_NAME, CODE_VERSION, SupportAgent
from examples.support_agent._config import (
    CONFIG_DIR,
    AgentConfig,
    ConfigError,
    FailureRates,
    RetrievalSettings,
    load_config,
)
from examples.support_agent._kb import DOCUMENTS, INDEX_VERSION, Document, KbChunk, chunk_documents
from examples.support_agent._offline_model import OfflineModel
from examples.support_agent._openai_model import ModelError, OpenAIChatModel
from examples.support_agent._orders import ORDERS, Order, find_order
from examples.support_agent._retriever import RetrievalResult, Retriever, ScoredChunk
from examples.support_agent._session import INJECTED_FAILURES, SessionState, TurnResult
from examples.support_agent._tools import RefundRefused, SupportTools

__all__ = [
    "AGENT_NAME",
    "CODE_VERSION",
    "CONFIG_DIR",
    "DOCUMENTS",
    "INDEX_VERSION",
    "INJECTED_FAILURES",
    "ORDERS",
    "AgentConfig",
    "ConfigError",
    "Document",
    "FailureRates",
    "KbChunk",
    "ModelError",
    "OfflineModel",
    "OpenAIChatModel",
    "Order",
    "RefundRefused",
    "RetrievalResult",
    "RetrievalSettings",
    "Retriever",
    "ScoredChunk",
    "SessionState",
    "SupportAgent",
    "SupportTools",
    "TurnResult",
    "chunk_documents",
    "find_order",
    "load_config",
]
