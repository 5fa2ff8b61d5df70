"""Listings of the golden set that respect the holdout rule (pure logic)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from replaygate.replay import HOLDOUT_TIERS, Scenario, counts_in_gate, select_scenarios

__all__ = ["Listing", "list_scenarios", "listing_rows"]


@dataclass(frozen=True)
class Listing:
    """The scenarios a listing may show and how many holdout scenarios it hides (count only)."""

    scenarios: list[Scenario]
    hidden_holdout: int
    tier: str | None


def list_scenarios(
    scenarios: Iterable[Scenario],
    tier: str | None = None,
    tags: Mapping[str, str] | None = None,
    statuses: Collection[str] | None = None,
    origins: Collection[str] | None = None,
) -> Listing:
    """Select scenarios for a listing; for a tuning tier (smoke, or no tier) holdout ones are only counted."""
    every = list(scenarios)
    shown = select_scenarios(every, tier=tier, tags=tags, statuses=statuses, origins=origins)
    hidden = 0 if tier in HOLDOUT_TIERS else sum(1 for s in every if s.holdout)
    return Listing(scenarios=shown, hidden_holdout=hidden, tier=tier)


def listing_rows(listing: Listing) -> list[dict[str, object]]:
    """One plain row per shown scenario (for tables and ``--json``)."""
    return [
        {
            "id": s.id,
            "title": s.title,
            "status": s.status.state,
            "must_pass": s.must_pass,
            "counts": counts_in_gate(s),
            "origin": s.origin,
            "tiers": list(s.tiers),
            "tags": dict(s.tags),
            "turns": len(s.turns),
            "owner": s.owner,
        }
        for s in listing.scenarios
    ]
