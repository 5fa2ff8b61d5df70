"""``replaced``: what ``model_copy(update=...)`` makes, field for field."""

from __future__ import annotations

from replaygate.replay import Attempt, Measures
from replaygate.replay._model_copy import replaced


def test_replaced_is_model_copy() -> None:
    kept = Attempt(scenario_id="s", index=0, status="pass", answer="a", measures=Measures(latency_s=0.5))
    update = {"index": 3, "trace_id": "t" * 32, "measures": replaced(kept.measures, {"latency_s": 0.25})}
    mine, theirs = replaced(kept, update), kept.model_copy(update=update)
    assert mine == theirs and type(mine) is Attempt
    assert mine.__pydantic_fields_set__ == theirs.__pydantic_fields_set__
    assert mine.__pydantic_fields_set__ is not kept.__pydantic_fields_set__
    assert mine.model_dump_json() == theirs.model_dump_json()
    assert mine.measures.latency_s == 0.25 and kept.measures.latency_s == 0.5 and kept.index == 0


def test_a_kept_scores_copy_is_what_replaced_makes() -> None:
    """The runner's one-step copy of a kept score equals ``replaced`` of the attempt and its measures."""
    from replaygate.replay._attempt import _copy_kept

    kept = Attempt(
        scenario_id="s",
        index=0,
        status="pass",
        answer="a",
        trace_id="0" * 32,
        started="2026-12-07T11:00:00Z",
        artifact_path="/runs/r/artifacts.jsonl",
        measures=Measures(latency_s=0.5, input_tokens=3),
    )
    mine = _copy_kept(kept, 4, "f" * 32, "2026-12-07T11:00:01Z", None, 0.125)
    theirs = replaced(
        kept,
        {
            "index": 4,
            "trace_id": "f" * 32,
            "started": "2026-12-07T11:00:01Z",
            "artifact_path": None,
            "measures": replaced(kept.measures, {"latency_s": 0.125}),
        },
    )
    assert mine == theirs and type(mine) is Attempt and type(mine.measures) is Measures
    assert mine.__pydantic_fields_set__ == theirs.__pydantic_fields_set__
    assert mine.measures.__pydantic_fields_set__ == theirs.measures.__pydantic_fields_set__
    assert mine.__pydantic_fields_set__ is not kept.__pydantic_fields_set__
    assert mine.model_dump_json() == theirs.model_dump_json()
    assert kept.index == 0 and kept.measures.latency_s == 0.5 and kept.artifact_path is not None


def test_a_kept_score_with_private_measures_is_copied_the_general_way() -> None:
    """Measures of a subclass with a private attribute go through ``model_copy``, which keeps it."""
    from pydantic import PrivateAttr
    from replaygate.replay._attempt import _copy_kept

    class Noted(Measures):
        _note: str = PrivateAttr(default="kept")

    kept = Attempt(scenario_id="s", index=0, status="pass", answer="a", measures=Noted(latency_s=0.5))
    mine = _copy_kept(kept, 1, "e" * 32, "2026-12-07T11:00:01Z", None, 0.25)
    assert type(mine.measures) is Noted and mine.measures._note == "kept"
    assert (mine.index, mine.measures.latency_s, kept.measures.latency_s) == (1, 0.25, 0.5)
