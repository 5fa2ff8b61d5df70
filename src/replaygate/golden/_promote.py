"""Promotion: turn a captured trace into a regression scenario of the golden set.

The drafted scenario holds every real user turn of the conversation (all traces of the session up to and
including the failing one, oldest first), the context (user id, and ``replaygate.context.*`` attributes of
the agent spans), the retrieved document ids (a chunk id ``<doc id>#<n>`` counts as its document) as
*suggested* retrieval labels (``confirmed: false``), the tools that were called as a *suggested*
``expected_tools`` check (``suggested: true``), optionally a forbidden-output check drafted from the
failing answer, and the trace id as ``source_trace``. Both suggestions run as written but ``lint`` warns
until a person confirms them. Promoting the same trace again returns the existing scenario.

Drafted checks are checked against the trace's own answer and label before anything is written: a draft
that the good behaviour could never satisfy is not written. A forbidden-output check must match the
failing answer and must not forbid what ``--expected-behavior`` describes; forbidding an escalated trace's
answer while expecting an escalation is refused (every escalating attempt would say it); and on an
escalated trace whose answer is forbidden, the tools that led to the escalation are not suggested (an
attempt repeating them would say the forbidden answer again). What was left out, and why, is in
:attr:`Promotion.notes` and in the scenario's first changelog entry.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from replaygate.instrumentation import TraceRecord
from replaygate.replay import (
    ORIGINS,
    TIERS,
    ChangelogEntry,
    ExpectedLabelCheck,
    ExpectedToolsCheck,
    ForbiddenOutputRegexCheck,
    RetrievalLabels,
    Scenario,
    ScenarioError,
    load_scenario,
)

from replaygate.golden._errors import GoldenError, describe_invalid
from replaygate.golden._goldenset import GoldenSet
from replaygate.golden._lifecycle import default_author, today_utc
from replaygate.golden._lock import lock_entry
from replaygate.inbox import (
    contradictions,
    in_conversation,
    match_rules,
    similar_good_traces,
    suggest_checks,
)

__all__ = [
    "CONTEXT_ATTRIBUTE_PREFIX",
    "Promotion",
    "PromotionSource",
    "draft_checks",
    "draft_forbidden_pattern",
    "draft_scenario",
    "find_promoted",
    "promote_trace",
    "session_turns",
]

#: Agent-span attributes with this prefix become scenario context (``replaygate.context.order_id``).
CONTEXT_ATTRIBUTE_PREFIX = "replaygate.context."
DEFAULT_PROMOTION_TIERS: tuple[str, ...] = ("smoke", "release")


class PromotionSource(Protocol):
    """Where traces come from (``replaygate.instrumentation._store.TraceStore`` satisfies it)."""

    def get_trace(self, trace_id: str) -> TraceRecord: ...

    def session_traces(self, session_id: str) -> list[TraceRecord]: ...


@dataclass(frozen=True)
class Promotion:
    """The result of a promotion: the scenario, its file, and whether it was created now."""

    scenario: Scenario
    path: Path
    created: bool
    notes: tuple[str, ...] = ()  #: drafted checks left out, and why


def _earlier(source: PromotionSource, record: TraceRecord) -> list[TraceRecord]:
    """The traces of ``record``'s session before it, oldest first."""
    summary = record.summary
    upto: list[TraceRecord] = []
    if summary.session_id:
        for r in source.session_traces(summary.session_id):
            if r.summary.trace_id == summary.trace_id:
                break
            if r.start_ns <= record.start_ns:
                upto.append(r)
    return upto


def session_turns(source: PromotionSource, record: TraceRecord) -> list[str]:
    """Every user turn of the conversation up to and including ``record``, in order."""
    traces = [*_earlier(source, record), record]
    return [turn for r in traces for turn in r.summary.turns if turn and turn.strip()]


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def draft_forbidden_pattern(answer: str, max_chars: int = 60) -> str:
    """A regex matching a distinctive fragment of a wrong answer (escaped, whitespace-tolerant).

    The most distinctive sentence is the one with the most digits, amounts and long words; it is cut at
    a word boundary to ``max_chars``.
    """
    sentences = [s.strip() for s in _SENTENCE.split(answer) if s.strip()]
    if not sentences:
        raise GoldenError("the failing answer is empty: there is nothing to forbid (drop --forbid-answer)")

    def score(sentence: str) -> tuple[int, int]:
        digits = sum(ch.isdigit() for ch in sentence)
        long_words = sum(1 for w in re.findall(r"\w+", sentence) if len(w) >= 7)
        return (3 * digits + long_words, len(sentence))

    best = max(sentences, key=score)
    if len(best) > max_chars:
        cut = best[:max_chars]
        best = cut[: cut.rfind(" ")] if " " in cut[10:] else cut
    words = best.strip().split()
    return "(?i)" + r"\s+".join(re.escape(w) for w in words)


def _context(record: TraceRecord) -> dict[str, Any]:
    context: dict[str, Any] = {}
    if record.summary.user_id:
        context["user_id"] = record.summary.user_id
    for span in record.spans:
        if span.kind != "agent":
            continue
        for key, value in span.attributes.items():
            if key.startswith(CONTEXT_ATTRIBUTE_PREFIX) and isinstance(value, str | int | float | bool):
                context[key.removeprefix(CONTEXT_ATTRIBUTE_PREFIX)] = value
    return context


def _slug(text: str, limit: int = 40) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "trace"


def draft_scenario(
    source: PromotionSource,
    record: TraceRecord,
    *,
    owner: str,
    origin: str,
    must_pass: bool = False,
    tags: Mapping[str, str] | None = None,
    expected_behavior: str | None = None,
    forbid_answer: bool = False,
    tiers: Sequence[str] | None = None,
    scenario_id: str | None = None,
    title: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
    class_checks: bool = False,
    similar: Sequence[TraceRecord] = (),
    source_name: str | None = None,
) -> Scenario:
    """Draft the scenario for one trace (no I/O beyond reading the session's traces).

    ``source_name`` (``phoenix``, ``langfuse``) is named in the changelog when the trace did not come
    from the embedded store; the trace id is the same OpenTelemetry id in every tool.

    With ``class_checks``, a trace of a known failure class gets that class's checks
    (``replaygate.inbox.suggest_checks``; ``similar`` traces tell which tools a good answer used) and
    the tag ``failure_class``. Checks that contradict each other are refused (:class:`GoldenError`).
    """
    summary = record.summary
    turns = session_turns(source, record)
    if not turns:
        raise GoldenError(f"trace {summary.trace_id} has no user input to replay; it cannot be promoted")
    checks, notes = draft_checks(
        record, origin=origin, forbid_answer=forbid_answer, expected_behavior=expected_behavior
    )
    tags = dict(tags or {})
    if class_checks:
        earlier = [r.summary for r in _earlier(source, record)]
        match = match_rules(in_conversation(summary, earlier))
        if match is not None:
            drafted = suggest_checks(match, summary, similar_good_traces(summary, similar))
            have = {c.model_dump_json() for c in checks}
            checks.extend(c for c in drafted if c.model_dump_json() not in have)
            tags.setdefault("failure_class", match.rule)
    problems = contradictions(checks)
    if problems:
        raise GoldenError(
            f"the checks drafted from trace {summary.trace_id} contradict each other "
            f"({'; '.join(problems)}); no replay could pass them: drop --forbid-answer or change --origin"
        )
    ranked = sorted(summary.chunks, key=lambda c: c.rank)
    relevant = list(dict.fromkeys(chunk.id.split("#", 1)[0] for chunk in ranked if chunk.id))
    retrieval = (
        RetrievalLabels(relevant=relevant, k=max(5, len(relevant)), confirmed=False) if relevant else None
    )
    reasons = ", ".join(summary.failure_reasons) or "no failure signal"
    where = f"{source_name} " if source_name else ""
    day = today or today_utc()
    data: dict[str, Any] = {
        "id": scenario_id or f"{_slug(turns[-1])}-{summary.trace_id[:8]}",
        "title": title or f"{origin}: {turns[-1][:70]}",
        "owner": owner,
        "origin": origin,
        "source_trace": summary.trace_id,
        "added": day,
        "must_pass": must_pass,
        "tags": tags,
        "tiers": list(tiers or DEFAULT_PROMOTION_TIERS),
        "expected_behavior": expected_behavior or "",
        "turns": turns,
        "context": _context(record),
        "checks": checks,
        "retrieval": retrieval,
        "changelog": [
            ChangelogEntry(
                date=day,
                author=author or default_author(),
                reason=f"Promoted from {where}trace {summary.trace_id} ({reasons})"
                + "".join(f"; {note}" for note in notes),
            )
        ],
    }
    try:
        return Scenario.model_validate(data)
    except ValueError as exc:
        raise GoldenError(
            f"cannot draft a scenario from trace {summary.trace_id}: {describe_invalid(exc)}; "
            "fix the option given (an --id is lowercase letters, digits, '.', '_' and '-')"
        ) from None


def draft_checks(
    record: TraceRecord, *, origin: str, forbid_answer: bool, expected_behavior: str | None = None
) -> tuple[list[Any], list[str]]:
    """The checks drafted from a trace, checked against its own answer and label, and what was left out.

    Raises:
        GoldenError: the draft asked for could never pass (the message says why and what to do instead).
    """
    summary = record.summary
    tools = list(dict.fromkeys(call.name for call in summary.tool_calls))
    expected = ExpectedToolsCheck(tools=tools, suggested=True) if tools else None
    label = ExpectedLabelCheck(label="escalate") if origin == "missed-escalation" else None
    forbidden = None
    notes: list[str] = []
    if forbid_answer:
        answer = summary.output or ""
        forbidden = ForbiddenOutputRegexCheck(pattern=draft_forbidden_pattern(answer))
        quoted = answer if len(answer) <= 60 else answer[:57] + "..."
        if not forbidden.regex.search(answer):
            raise GoldenError(
                f"the forbidden-output pattern drafted from trace {summary.trace_id} does not match its own "
                "answer, so it would not catch this failure; drop --forbid-answer and write the check by hand"
            )
        if expected_behavior and forbidden.regex.search(expected_behavior):
            raise GoldenError(
                f"--forbid-answer would forbid {quoted!r}, which --expected-behavior describes as the right "
                "answer: no attempt could pass; drop --forbid-answer or reword --expected-behavior"
            )
        if summary.escalated and label is not None:
            raise GoldenError(
                f"trace {summary.trace_id} escalated with the answer {quoted!r}: --forbid-answer forbids "
                "that message while origin missed-escalation expects an escalation, so every escalating "
                "attempt would fail; drop --forbid-answer (expected_label escalate is the check) or pick "
                "another --origin"
            )
        if summary.escalated and expected is not None:
            notes.append(
                f"expected_tools {tools} not suggested: those calls escalated and gave the answer "
                "--forbid-answer forbids, so an attempt repeating them would fail"
            )
            expected = None
    checks = [c for c in (expected, label, forbidden) if c is not None]
    return checks, notes


def find_promoted(golden: GoldenSet, trace_id: str) -> tuple[Scenario, Path] | None:
    """The scenario already promoted from ``trace_id``, if any.

    Files whose bytes match their ``golden.lock`` index entry are not parsed: their source trace is the
    one indexed (so promoting into a big set reads and hashes files instead of parsing them).

    Raises:
        GoldenError: an invalid scenario file mentions the trace (fix it before promoting again).
    """
    index = golden.index_names()
    for name in golden.file_names():
        entry = index.get(name)
        if entry is not None and entry.source_trace != trace_id:
            continue  # indexed, and promoted from another trace (or none)
        path = Path(name)
        try:
            scenario = load_scenario(path)
        except ScenarioError:
            try:
                mentions = trace_id in path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                mentions = False
            if mentions:
                raise GoldenError(
                    f"{path} mentions trace {trace_id} but is invalid; fix it (`replaygate scenarios lint`)"
                ) from None
            continue
        if scenario.source_trace == trace_id:
            return scenario, path
    return None


def promote_trace(
    source: PromotionSource,
    trace_id: str,
    golden: GoldenSet | str | Path | None = None,
    *,
    owner: str,
    origin: str,
    must_pass: bool = False,
    tags: Mapping[str, str] | None = None,
    expected_behavior: str | None = None,
    forbid_answer: bool = False,
    tiers: Sequence[str] | None = None,
    scenario_id: str | None = None,
    author: str | None = None,
    today: dt.date | None = None,
    class_checks: bool = False,
    similar: Sequence[TraceRecord] = (),
    source_name: str | None = None,
) -> Promotion:
    """Promote a captured trace into the golden set (idempotent: one scenario per trace).

    Args:
        source: the trace store (``TraceStore``) or anything with ``get_trace`` and ``session_traces``.
        trace_id: the failing trace.
        golden: the golden set (a :class:`GoldenSet` or its directory; default ``$REPLAYGATE_GOLDEN`` or
            ``golden/``).
        owner: who owns the new scenario.
        origin: production-incident, near-miss, missed-escalation, adversarial or original-eval.
        must_pass: whether one failing attempt blocks a release.
        tags: ``dimension``, ``request_type``, ``risk`` and free-form tags.
        expected_behavior: what the agent should have done.
        forbid_answer: add a ``forbidden_output_regex`` check drafted from the failing answer.
        tiers: tiers to run in (default smoke and release).
        scenario_id: the id (default: a slug of the last turn plus the trace id's first 8 characters).
        author: changelog author (default ``$REPLAYGATE_AUTHOR`` or the login name).
        today: the date to record (default: today, UTC).
        class_checks: draft the checks of the trace's failure class (see :func:`draft_scenario`).
        similar: other traces (e.g. the store's recent ones), for the tools a good answer used.
        source_name: the trace source named in the changelog (None: the embedded store).

    Returns:
        The scenario, its path, and ``created`` (False when the trace was promoted before).
    """
    gs = golden if isinstance(golden, GoldenSet) else GoldenSet(golden)
    if not owner or not owner.strip():
        raise GoldenError("promote needs --owner: the person responsible for the new scenario")
    if origin not in ORIGINS:
        raise GoldenError(f"unknown origin {origin!r}; use one of {', '.join(ORIGINS)}")
    for tier in tiers or ():
        if tier not in TIERS:
            raise GoldenError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    with gs.transaction():  # one promote at a time: find, draft and write under the folder lock
        record = source.get_trace(trace_id)
        full_id = record.summary.trace_id
        existing = find_promoted(gs, full_id)
        if existing is not None:
            scenario, path = existing
            lock = gs.lock() or {}
            if scenario.id not in lock:  # a crash between the renames: finish the lock update
                gs.write_lock({**lock, scenario.id: lock_entry(scenario)})
            return Promotion(scenario, path, created=False)
        scenario = draft_scenario(
            source,
            record,
            owner=owner.strip(),
            origin=origin,
            must_pass=must_pass,
            tags=tags,
            expected_behavior=expected_behavior,
            forbid_answer=forbid_answer,
            tiers=tiers,
            scenario_id=scenario_id,
            author=author,
            today=today,
            class_checks=class_checks,
            similar=similar,
            source_name=source_name,
        )
        if gs.file_for(scenario.id).exists():
            raise GoldenError(f"a scenario {scenario.id!r} already exists in {gs.path}; pass another --id")
        path = gs.write([scenario])[0]
        _, notes = draft_checks(
            record, origin=origin, forbid_answer=forbid_answer, expected_behavior=expected_behavior
        )
        return Promotion(scenario, path, created=True, notes=tuple(notes))
