"""Listings of the golden set that respect the holdout rule.

:func:`list_scenarios` is pure; :func:`list_golden` reads a golden set for it, parsing only the files the
listing may show: a file whose bytes still match its ``golden.lock`` index entry, and whose entry rules it
out (tier, tags, status, origin, holdout), is not parsed (its holdout flag is still counted).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from replaygate.replay import HOLDOUT_TIERS, Scenario, counts_in_gate, select_scenarios

from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._index import IndexEntry

__all__ = ["Listing", "list_golden", "list_scenarios", "listing_rows"]


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


def list_golden(
    golden: GoldenSet,
    tier: str | None = None,
    tags: Mapping[str, str] | None = None,
    statuses: Collection[str] | None = None,
    origins: Collection[str] | None = None,
) -> Listing:
    """:func:`list_scenarios` of a golden set, parsing only the files it may show (module docstring)."""
    files = golden.files()
    stems = [f.stem for f in files]
    index = golden.index() if len(set(stems)) == len(stems) else {}  # two files, one id: read them all
    states = None if statuses is None else frozenset(statuses)  # None: select_scenarios' default decides
    wanted = dict(tags or {})

    def ruled_out(e: IndexEntry) -> bool:  # each condition is one select_scenarios applies
        return (
            (e.holdout and tier not in HOLDOUT_TIERS)
            or (tier is not None and tier not in e.tiers)
            or (states is not None and e.state not in states)
            or (origins is not None and e.origin not in origins)
            or any(e.tags.get(k) != v for k, v in wanted.items())
        )

    skipped = {path: e for path, e in index.items() if ruled_out(e)}
    listing = list_scenarios(golden.load(skip=skipped), tier, tags, statuses, origins)
    extra = 0 if tier in HOLDOUT_TIERS else sum(1 for e in skipped.values() if e.holdout)
    return Listing(listing.scenarios, listing.hidden_holdout + extra, tier)


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
