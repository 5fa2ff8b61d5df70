import examples.support_agent as sa
import examples.support_agent.target as target
import examples.support_agent.traffic as traffic


def test_public_names_are_pinned():
    assert sorted(sa.__all__) == sorted(
        [
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
    )
    assert target.__all__ == ["AgentSession", "arun_session", "open_session", "run_session"]
    assert traffic.__all__ == ["SESSION_KINDS", "make_session", "simulate"]
    for name in sa.__all__:
        assert getattr(sa, name) is not None


def test_knowledge_base_has_a_dozen_documents_with_stable_chunk_ids():
    ids = [d.id for d in sa.DOCUMENTS]
    assert len(ids) == 12 and len(set(ids)) == 12
    for expected in ("refund-policy", "refund-limits", "shipping-international", "escalation-policy"):
        assert expected in ids
    chunks = sa.chunk_documents()
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(c.id.startswith(c.doc_id + "#") for c in chunks)
    assert sa.chunk_documents() == chunks  # stable across calls


def test_configs_load_and_differ_where_planned():
    prod, cand, fixed = (sa.load_config(n) for n in ("production", "candidate", "candidate_fixed"))
    assert prod.rates.refund_over_limit == 0 and not prod.enforce_refund_limit
    assert cand.rates.refund_over_limit >= 0.15 and not cand.enforce_refund_limit
    assert cand.rates.ungrounded_claim < prod.rates.ungrounded_claim
    assert cand.rates.refusal_without_tools < prod.rates.refusal_without_tools
    assert fixed.enforce_refund_limit and fixed.rates == cand.rates
    assert len({prod.config_id, cand.config_id, fixed.config_id}) == 3
    assert prod.retrieval_index_version == sa.INDEX_VERSION
    # a path and a mapping give the same configuration as the name
    assert sa.load_config(sa.CONFIG_DIR / "production.yaml") == prod
    assert sa.load_config(prod.to_dict()) == prod


def test_bad_configurations_say_what_and_where(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "config_id: x\nagent_version: '1'\nprompt_version: p\nprompt: hi\n"
        "retrieval_index_version: v\nrates:\n  empty_answer: 1.5\n  typo_rate: 0.1\n"
    )
    try:
        sa.load_config(bad)
    except sa.ConfigError as exc:
        message = str(exc)
    else:
        raise AssertionError("an invalid configuration loaded")
    assert str(bad) in message and "rates.empty_answer" in message and "rates.typo_rate" in message
    try:
        sa.load_config("no-such-config")
    except sa.ConfigError as exc:
        assert "production" in str(exc)  # lists the known names
    else:
        raise AssertionError("a missing configuration loaded")
