"""Pin the names the scoring modules export (a rename is a breaking change and must show up here)."""

from __future__ import annotations

import importlib

import pytest
import replaygate.replay

EXPECTED = {
    "replaygate.replay._checks": ["CheckContext", "run_check", "run_checks"],
    "replaygate.replay._labels": ["LABELS", "Label", "derive_label", "looks_like_refusal"],
    "replaygate.replay._judges": [
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
    ],
    "replaygate.replay._llm_judge": ["LlmJudge", "build_messages", "response_schema"],
    "replaygate.replay._offline_judge": [
        "OfflineContextRelevanceJudge",
        "OfflineGroundednessJudge",
        "split_claims",
    ],
    "replaygate.replay._retrieval_metrics": [
        "chunk_matches",
        "matched_document",
        "mean_retrieval_scores",
        "ranked_chunk_ids",
        "relevant_in_top_k",
        "retrieval_metrics",
        "retrieval_summary",
    ],
    "replaygate.replay._measures": [
        "LLM_CALLS_KEY",
        "NO_LLM_CALL",
        "NO_LLM_CALLS",
        "declares_no_llm_calls",
        "GuardrailMeasures",
        "call_cost",
        "compute_measures",
        "cost_note",
        "guardrail_measures",
        "guardrail_measures_columns",
        "measure_columns",
        "MeasureColumns",
        "percentile",
        "scored_attempts",
        "is_empty_answer",
        "is_escalated",
        "total_cost",
    ],
    "replaygate.replay._scoring": ["ScoreOutcome", "score_attempt"],
    "replaygate.replay._calibrate": [
        "CALIBRATION_LABELS",
        "CONTEXT_SEPARATOR",
        "CalibrationResult",
        "CalibrationRow",
        "calibrate_judge",
        "load_labels",
    ],
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_module_all(module: str) -> None:
    mod = importlib.import_module(module)
    assert sorted(mod.__all__) == sorted(EXPECTED[module])
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.{name}"


def test_public_scoring_names_are_reexported() -> None:
    for name in (
        "score_attempt",
        "ScoreOutcome",
        "Judge",
        "register_judge",
        "create_judge",
        "create_judges",
        "OfflineGroundednessJudge",
        "LlmJudge",
        "retrieval_metrics",
    ):
        assert name in replaygate.replay.__all__, name
        assert getattr(replaygate.replay, name) is not None


def test_builtin_judges_are_registered() -> None:
    from replaygate.replay._judges import registered_judges

    assert {"offline_groundedness", "offline_context_relevance", "llm"} <= set(registered_judges())
