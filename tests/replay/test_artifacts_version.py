"""The artifacts file is versioned: each line carries its ``format_version``, checked when it is read."""

import json
from pathlib import Path

import pytest
from replaygate.replay import RunFileError, read_artifacts
from replaygate.replay._artifacts import ARTIFACTS_FORMAT_VERSION, Artifact, ArtifactWriter


def test_lines_carry_their_version_and_old_lines_still_read(tmp_path: Path) -> None:
    path = tmp_path / "run" / "artifacts.jsonl"
    writer = ArtifactWriter(path)
    writer.submit(Artifact("a", 0, None, "ok", None, None))
    writer.flush()
    assert writer.close() == set()
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["format_version"] == ARTIFACTS_FORMAT_VERSION == 1
    # a line written before the version was recorded is a version 1 line
    old = {"scenario_id": "b", "index": 1, "trace_id": None, "answer": "old", "label": None, "error": None}
    with path.open("a") as fh:
        fh.write(json.dumps(old) + "\n")
    found = read_artifacts(path)
    assert sorted(found) == [("a", 0), ("b", 1)]
    assert found[("b", 1)]["answer"] == "old" and found[("b", 1)]["format_version"] == 1


def test_a_line_of_another_version_is_refused_with_its_place(tmp_path: Path) -> None:
    path = tmp_path / "artifacts.jsonl"
    good = Artifact("a", 0, None, "ok", None, None).line().decode()
    newer = json.dumps({"scenario_id": "a", "index": 1, "format_version": 2})
    path.write_text(good + newer + "\n")
    with pytest.raises(RunFileError, match=rf"{path}:2: artifact line format_version 2 is not supported"):
        read_artifacts(path)
