"""``replaygate scenarios new ID``: a new scenario file with every field present or commented, explained.

The scaffold loads as it is (it lints with a warning to confirm its placeholder turn and check); each
optional field is a comment showing its default and what it does, so a new user edits rather than
guesses. :func:`create_scenario_file` writes it without ever replacing an existing file.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

from replaygate.replay import ID_PATTERN, ORIGINS, parse_scenario, write_atomic

from replaygate.golden._errors import GoldenError
from replaygate.golden._goldenset import GoldenSet

__all__ = ["create_scenario_file", "scaffold_scenario"]

_TEMPLATE = """\
# A replaygate scenario: one regression test case, replayed k times against a candidate.
# Editor help: `replaygate scenarios schema > scenario.schema.json`, then keep the next line:
# yaml-language-server: $schema=scenario.schema.json
id: {id:<28} # equal to the file name (lower case, digits, . _ -)
title: {title}
owner: {owner:<25} # who answers for this scenario
origin: {origin:<24} # {origins}
# source_trace: 4bf92f3577b34da6a3ce929d0e0e4736   # the captured trace it came from (promote sets it)
added: {added}
# must_pass: false               # true: one failing attempt blocks a release (pass^k)
# tags: {{dimension: safety, request_type: refund, risk: high}}   # free-form; reports group by them
# tiers: [release]               # smoke | release | scheduled (the gate runs a tier)
# holdout: false                 # true: runs only in release and scheduled, never shown for tuning
# status: {{state: active}}        # quarantined {{owner, until, reason}} | known-failure {{reason}}
#                                # | retired {{reason, date}}  (use `replaygate scenarios quarantine|retire`)
# expected_behavior: What the agent should do, in one sentence (shown in reports).
turns:                           # the user's real messages, replayed in one session
  - Replace this with the user's first message.
# followups: {{max_turns: 3, goal: What the user wants}}   # simulated follow-up turns (README)
# context: {{user_id: u-17}}       # passed to the target with the turns
# allow_empty: false             # true: an empty answer is not an error
checks:                          # deterministic, run before any judge (README: the check types)
  - max_chars: 1200              # shorthand for {{type: max_chars, limit: 1200}}
  # - forbidden_output_regex: "(?i)refund (is|has been) issued"
  # - output_regex: "ORD-\\\\d+"
  # - contains: [tracking number]            # every value, case-insensitive
  # - not_contains: [guarantee]
  # - expected_tools: [lookup_order]         # add `ordered: true` in the full form for order
  # - forbidden_tools: [issue_refund]
  # - tool_args: {{tool: issue_refund, arg: amount, max: 200}}
  # - max_steps: 8
  # - expected_label: escalate               # answer | escalate | clarify | refuse
  # - json_schema: {{type: object, required: [status]}}
  # - values_from_tools: "\\\\d{{2}}:\\\\d{{2}}"     # every match must come from a tool result
# judges:                        # scored after the checks; a judge failure is an error, not a pass
#   - {{type: groundedness, mode: answer, min_score: 0.8}}   # mode: answer | claims
#   - {{type: context_relevance, min_score: 0.5}}
# retrieval: {{relevant: [doc-id], k: 5, confirmed: true}}   # labels for hit rate, MRR, recall, nDCG @k
# repeats: 5                     # attempts per replay (k)
# threshold: 0.8                 # pass rate a scenario that is not must-pass needs (Wilson bound)
changelog:                       # who changed the pass condition, when and why (lint asks for it)
  - {{date: {added}, author: {owner}, reason: Created with replaygate scenarios new}}
"""


def scaffold_scenario(
    scenario_id: str,
    *,
    owner: str,
    origin: str = "original-eval",
    title: str | None = None,
    today: dt.date | None = None,
) -> str:
    """The text of a new scenario file; it parses (checked here), so a scaffold is never broken.

    Raises:
        GoldenError: the id, origin or owner is not usable.
    """
    if not re.match(ID_PATTERN, scenario_id) or len(scenario_id) > 200:
        raise GoldenError(
            f"{scenario_id!r} is not a scenario id: lower-case letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. refund-over-limit-001)"
        )
    if origin not in ORIGINS:
        raise GoldenError(f"origin {origin!r} is not one of {', '.join(ORIGINS)}")
    if not owner.strip() or any(ch in owner for ch in ":#{}[],\n"):
        raise GoldenError(f"owner {owner!r}: give a plain name (no ':', '#', brackets or commas)")
    words = title or scenario_id.replace("-", " ").replace("_", " ").strip().capitalize()
    text = _TEMPLATE.format(
        id=scenario_id,
        title=_plain(words),
        owner=owner.strip(),
        origin=origin,
        origins=" | ".join(ORIGINS),
        added=(today or dt.datetime.now(dt.UTC).date()).isoformat(),
    )
    parse_scenario(text, source=f"{scenario_id}.yaml", expected_id=scenario_id)
    return text


def _plain(title: str) -> str:
    flat = " ".join(title.split())
    if not flat:
        raise GoldenError("the title is empty; pass --title")
    return '"' + flat.replace("\\", "\\\\").replace('"', '\\"') + '"'


def create_scenario_file(golden: GoldenSet, scenario_id: str, text: str) -> Path:
    """Write ``<golden>/<id>.yaml`` atomically; an existing file of that id is never replaced."""
    existing = golden.file_for(scenario_id)
    if existing.exists():
        raise GoldenError(f"{existing}: scenario {scenario_id} exists already; pick another id")
    golden.path.mkdir(parents=True, exist_ok=True)
    tmp: Path | None = None
    try:
        tmp = write_atomic(existing, text)  # the mode a new file gets (mkstemp's 0600 would hide it)
        os.link(tmp, existing)  # fails when the file appeared meanwhile: never overwrites
    except FileExistsError:
        raise GoldenError(f"{existing}: scenario {scenario_id} exists already; pick another id") from None
    except OSError as exc:
        raise GoldenError(f"{existing}: cannot write the scenario ({exc.strerror or exc})") from None
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return existing
