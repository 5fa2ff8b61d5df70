"""Judge calibration: labels file, predictions, Cohen's kappa and the CLI."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import Sequence

import pytest
from replaygate.instrumentation import Chunk
from replaygate.replay._calibrate import calibrate_judge, load_labels
from replaygate.replay._errors import JudgeError, ReplayError
from replaygate.replay._judges import JudgeVerdict, create_judges

from replaygate.cli import main
from replaygate.stats import cohen_kappa
from tests.replay.conftest import FakeOpenAI, completion

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "judge_labels.csv"
HEADER = "question,answer,context,label\n"


def kappa_by_hand(a: Sequence[str], b: Sequence[str]) -> float:
    n = len(a)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in ("supported", "unsupported"))
    return (po - pe) / (1 - pe)


def test_load_example_labels() -> None:
    rows = load_labels(EXAMPLE)
    assert len(rows) >= 20
    assert {r.label for r in rows} == {"supported", "unsupported"}
    first = rows[0]
    assert first.line == 2 and len(first.context) == 2
    assert [c.id for c in first.chunks()] == ["doc-1", "doc-2"]


def test_bad_rows_name_file_and_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(HEADER + 'q,a,"doc",maybe\nq,,"doc",supported\nq,a,,unsupported\nq,a,doc,supported\n')
    with pytest.raises(ReplayError) as info:
        load_labels(path)
    message = str(info.value)
    assert f"{path}:2: label 'maybe'" in message
    assert f"{path}:3: empty answer" in message
    assert f"{path}:4: empty context" in message
    assert ":5:" not in message
    path.write_text("question,answer\nq,a\n")
    with pytest.raises(ReplayError, match="missing column"):
        load_labels(path)
    with pytest.raises(ReplayError, match="no such labels file"):
        load_labels(tmp_path / "absent.csv")


def test_calibrate_offline_judge_on_the_example() -> None:
    rows = load_labels(EXAMPLE)
    result = asyncio.run(calibrate_judge(create_judges()["groundedness"], rows))
    assert len(result.predictions) == len(rows)
    matrix = result.confusion()
    assert sum(sum(v.values()) for v in matrix.values()) == len(rows)
    assert matrix["supported"]["supported"] + matrix["unsupported"]["unsupported"] == round(
        result.agreement * len(rows)
    )
    assert kappa_by_hand(result.labels, result.predictions) > 0.5  # the offline judge is useful on this set


class Contrarian:
    """Says the opposite of a lexical check: supported when the answer mentions 'never'."""

    name = "groundedness"
    model: str | None = "contrarian"
    prompt_version = "c-1"
    needs_question = False

    async def judge(
        self, *, answer: str, chunks: Sequence[Chunk], question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        assert question is None
        return JudgeVerdict(score=1.0 if "never" in answer else 0.0)


def test_predictions_and_kappa_by_hand(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(
        HEADER
        + "q,we never do that,d,supported\n"
        + "q,we never do that,d,unsupported\n"
        + "q,yes,d,unsupported\n"
        + "q,yes,d,unsupported\n"
        + "q,yes,d || e,supported\n"
    )
    result = asyncio.run(calibrate_judge(Contrarian(), load_labels(path)))
    assert result.predictions == ("supported", "supported", "unsupported", "unsupported", "unsupported")
    assert result.confusion() == {
        "supported": {"supported": 1, "unsupported": 1},
        "unsupported": {"supported": 1, "unsupported": 2},
    }
    assert cohen_kappa(result.labels, result.predictions) == pytest.approx(
        kappa_by_hand(result.labels, result.predictions)
    )
    assert [r.line for r in result.disagreements()] == [3, 6]


class Failing(Contrarian):
    async def judge(
        self, *, answer: str, chunks: Sequence[Chunk], question: str | None = None, mode: str = "answer"
    ) -> JudgeVerdict:
        raise JudgeError("endpoint down")


def test_a_judge_error_stops_calibration() -> None:
    with pytest.raises(JudgeError):
        asyncio.run(calibrate_judge(Failing(), load_labels(EXAMPLE)))


def test_cli_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    main(["judge", "calibrate", str(EXAMPLE)])
    out = capsys.readouterr().out
    assert "Cohen's kappa" in out and "supported" in out and "Confusion matrix" in out
    main(["judge", "calibrate", str(EXAMPLE), "--json"])
    report = json.loads(capsys.readouterr().out)
    rows = load_labels(EXAMPLE)
    result = asyncio.run(calibrate_judge(create_judges()["groundedness"], rows))
    assert report["n"] == len(rows)
    assert report["kappa"] == pytest.approx(kappa_by_hand(result.labels, result.predictions))
    assert report["confusion"] == result.confusion()
    assert report["judge"]["model"] == "offline"


def test_cli_exit_codes(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["judge", "calibrate", str(EXAMPLE), "--json", "--min-kappa", "0.99"])
    assert info.value.code == 1
    with pytest.raises(SystemExit) as info:
        main(["judge", "calibrate", str(tmp_path / "absent.csv")])
    assert info.value.code == 3
    assert "no such labels file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["judge", "calibrate", str(EXAMPLE), "--judge", "llm"])
    assert info.value.code == 3
    with pytest.raises(SystemExit) as info:
        main(["judge", "calibrate", str(EXAMPLE), "--timeout", "0"])
    assert info.value.code == 3


def test_cli_with_an_llm_judge_on_a_loopback_server(
    openai_server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = {"verdict": "supported", "score": 1.0, "document_ids": ["doc-1"], "reason": "r"}
    openai_server.respond = lambda body: (200, completion(reply), 0.0)
    seen = openai_server.requests
    main(
        [
            "judge",
            "calibrate",
            str(EXAMPLE),
            "--judge",
            "llm",
            "--judge-model",
            "m",
            "--judge-base-url",
            openai_server.url,
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    rows = load_labels(EXAMPLE)
    assert len(seen) == len(rows)  # one request per row
    assert report["judge"]["model"] == "m" and report["judge"]["prompt_version"].startswith(
        "llm-groundedness"
    )
    assert report["confusion"]["unsupported"]["supported"] == sum(r.label == "unsupported" for r in rows)
    assert report["kappa"] == pytest.approx(0.0)  # a judge that always says "supported" agrees only by chance
    bodies = json.dumps(seen)
    assert all(r.question not in bodies for r in rows)  # the groundedness judge never sees a question
