"""Pin each part's public names: a rename is a breaking change and must show up here."""

import importlib
import pathlib

import pytest
import replaygate.instrumentation
import replaygate.replay

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_namespace_has_no_init() -> None:
    for base in ("src", "instrumentation/src", "replay/src"):
        assert not (ROOT / base / "replaygate" / "__init__.py").exists(), base


@pytest.mark.parametrize(
    "module",
    [
        "replaygate.instrumentation",
        "replaygate.replay",
        "replaygate.cli",
        "replaygate.inbox",
        "replaygate.labels",
    ],
)
def test_all_names_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.{name}"


def test_error_tree() -> None:
    assert issubclass(replaygate.replay.ScenarioError, replaygate.instrumentation.ReplaygateError)
    assert issubclass(replaygate.instrumentation.StoreError, replaygate.instrumentation.ReplaygateError)


def test_inbox_and_labels_names_are_pinned() -> None:
    import replaygate.inbox
    import replaygate.labels

    assert set(replaygate.inbox.__all__) == {
        "ESCALATION_REQUEST", "PATTERNS", "REFUSAL", "RULES", "ClassMember", "FailureClass", "Rule",
        "RuleMatch", "classify_failures", "cluster_documents", "contradictions", "in_conversation",
        "match_rules", "similar_good_traces", "suggest_checks", "trace_document",
    }  # fmt: skip
    assert set(replaygate.labels.__all__) == {
        "LABELS_FORMAT_VERSION", "QUESTIONS", "UNCALIBRATED", "Agreement", "Calibration", "HumanLabel",
        "LabelsError", "QueueItem", "append_label", "calibration", "current_labels", "draw_sample",
        "judge_agreement", "judge_fingerprint", "kappa_interval", "labelled_judge", "labelled_keys",
        "labels_path", "now_utc", "read_labels", "run_judges", "with_judge_agreement",
    }  # fmt: skip
