"""Which scenarios a run selects, and which of them count in the gate (pure logic, no I/O).

Rules:
- ``holdout: true`` scenarios are selected only for the ``release`` and ``scheduled`` tiers (never for
  ``smoke``, the tier used for tuning, and never when no tier is given).
- Retired scenarios are not selected unless ``statuses`` asks for them.
- Quarantined scenarios are selected; a quarantined scenario that is not must-pass is reported but does
  not count in the gate; a quarantined must-pass scenario still counts (a flaky must-pass still blocks).
- Known failures are selected, count, and stay visible.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from replaygate.replay._scenario_model import Scenario

__all__ = ["DEFAULT_STATUSES", "HOLDOUT_TIERS", "counts_in_gate", "select_scenarios"]

#: Tiers in which holdout scenarios run (never a tier used for tuning).
HOLDOUT_TIERS = frozenset({"release", "scheduled"})
#: Statuses selected when none are asked for.
DEFAULT_STATUSES = frozenset({"active", "quarantined", "known-failure"})


def select_scenarios(
    scenarios: Iterable[Scenario],
    tier: str | None = None,
    tags: Mapping[str, str] | None = None,
    statuses: Collection[str] | None = None,
    origins: Collection[str] | None = None,
) -> list[Scenario]:
    """Select scenarios by tier, tags (all must match), status and origin, applying the holdout rule.

    Args:
        scenarios: the golden set.
        tier: ``smoke``, ``release`` or ``scheduled``; None selects every tier but no holdout scenario.
        tags: ``{key: value}`` pairs that must all match the scenario's tags.
        statuses: states to keep (default: active, quarantined, known-failure; retired only when asked).
        origins: origins to keep (default: all).

    Returns:
        The selected scenarios, sorted by id.
    """
    wanted_states = DEFAULT_STATUSES if statuses is None else frozenset(statuses)
    wanted_tags = dict(tags or {})
    selected = []
    for s in scenarios:
        if s.holdout and tier not in HOLDOUT_TIERS:
            continue
        if tier is not None and tier not in s.tiers:
            continue
        if s.status.state not in wanted_states:
            continue
        if origins is not None and s.origin not in origins:
            continue
        if any(s.tags.get(k) != v for k, v in wanted_tags.items()):
            continue
        selected.append(s)
    return sorted(selected, key=lambda s: s.id)


def counts_in_gate(scenario: Scenario) -> bool:
    """Whether a scenario's result counts in the gate (False: reported only)."""
    state = scenario.status.state
    if state == "retired":
        return False
    if state == "quarantined":
        return scenario.must_pass
    return True
