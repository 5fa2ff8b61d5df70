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
