"""A candidate: its configuration file, its hash and the versions it declares for the fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest
from replaygate.replay._candidate import Candidate, declared_versions, load_config
from replaygate.replay._errors import TargetError
from replaygate.replay._runfile import content_hash


def test_declared_versions_flatten_and_hash_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "cand.yaml"
    path.write_text(
        "config_id: c1\nmodel: gpt-4o-mini\nprompt_version: v4\nprompt: |\n  Be helpful.\n"
        "tool_versions: {lookup_order: 2, issue_refund: '1.1'}\ntemperature: 0.2\n"
    )
    cand = Candidate.load("pkg.mod:fn", path)
    assert cand.config_hash == content_hash(load_config(path))
    assert cand.versions == {
        "config_id": "c1",
        "model": "gpt-4o-mini",
        "prompt_version": "v4",
        "tool_versions.issue_refund": "1.1",
        "tool_versions.lookup_order": "2",
        "prompt_hash": content_hash("Be helpful.\n")[:19],
    }
    edited = declared_versions({**cand.config, "prompt": "Be very helpful.\n"})
    # The same prompt_version, another prompt text: the fingerprint shows it.
    assert edited["prompt_version"] == "v4" and edited["prompt_hash"] != cand.versions["prompt_hash"]
    assert "temperature" not in cand.versions  # undeclared keys count only through the config hash


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("absent.yaml", None, "no such configuration file"),
        ("list.yaml", "- a\n- b\n", "a mapping at the top level, got list"),
        ("bad.yaml", "model: [unclosed\n", "not valid YAML"),
        ("bad.json", "{'single': 'quotes'}", "not valid JSON"),
    ],
)
def test_bad_configuration_files_name_the_file(
    tmp_path: Path, name: str, text: str | None, needle: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(TargetError, match=needle) as info:
        load_config(path)
    assert str(path) in str(info.value)


def test_empty_configuration_is_empty(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("")
    assert load_config(tmp_path / "empty.yaml") == {}
    assert Candidate.load("m:f", None).config == {} and Candidate.load("m:f", None).versions == {}
