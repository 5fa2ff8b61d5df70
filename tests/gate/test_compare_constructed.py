"""Issue 19: the per-scenario models the comparison constructs without validation are valid as they are.

``SideStats`` and ``ScenarioComparison`` are built with ``model_construct`` (20,000 of them for 5,000
scenarios and three runs); validating what they hold gives the very same models.
"""

from __future__ import annotations

from typing import Any

from replaygate.gate import compare_runs
from replaygate.gate._comparison_model import ScenarioComparison, SideStats


def test_constructed_scenarios_validate_to_themselves(f: Any) -> None:
    base = f.run(f.BASE, run_id="b", errors={1: 2})
    head = f.run([5, 5, 3] + f.BASE[3:], run_id="h", drop=[4], errors={2: 2})
    noise = f.run(f.BASE, run_id="n")
    c = compare_runs(base, head, noise)
    assert any(not s.head.present for s in c.scenarios) and any(s.head.errors for s in c.scenarios)
    for s in c.scenarios:
        again = ScenarioComparison.model_validate(s.model_dump())
        assert again == s and again.model_dump_json() == s.model_dump_json()
        for side in (s.base, s.head, s.second):
            if side is not None:
                assert SideStats.model_validate(side.model_dump()) == side
