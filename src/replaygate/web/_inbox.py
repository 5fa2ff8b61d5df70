"""The failure inbox as a work queue, one trace's page, and promotion into the golden set.

The inbox pages through failure candidates newest first (``?page=``, 50 a page), filtered by reason,
agent, variant, time (``?since=1h|24h|7d``) and whether the trace was promoted already
(``?promoted=yes|no``), and grouped by reason: the counts per reason over the whole filtered queue come
first, then the page's rows under their first reason. Each row links to its trace. Releasers and
responders promote a trace from its page (owner, origin, tiers, must-pass): the same
``golden.promote_trace`` as ``replaygate promote``, so promoting twice is one scenario. All trace content
is escaped.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from replaygate.instrumentation import ReplaygateError, TraceRecord
from replaygate.replay import ORIGINS, TIERS  # the choices `replaygate promote` offers
from werkzeug.wrappers import Response

from replaygate.golden import GoldenSet, promote_trace, resolve_golden_dir
from replaygate.web._context import (
    controller,
    current_user,
    login_required,
    page_state,
    promoter_required,
    web_config,
    web_store,
)

__all__ = ["bp"]

bp = Blueprint("inbox", __name__)
PAGE = 50
_SCAN = 5000  # the newest failures the queue looks through
_SINCE = {"1h": 3600, "24h": 86400, "7d": 7 * 86400}
REASONS = ("exception", "empty_answer", "escalation", "explicit", "negative_feedback")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def _golden() -> GoldenSet:
    config = web_config()
    return GoldenSet(resolve_golden_dir(config.golden or os.environ.get("REPLAYGATE_GOLDEN")))


def _promoted(golden: GoldenSet) -> dict[str, str]:
    """Map trace id → scenario id of every promoted trace (files that do not parse are skipped)."""
    state = page_state()
    try:
        files = golden.files()
        key = tuple((str(p), p.stat().st_mtime_ns) for p in files)
    except OSError:
        return {}
    if state.promoted is not None and state.promoted[0] == key:
        return dict(state.promoted[1])
    found: dict[str, str] = {}
    try:
        for s in golden.load():
            if s.source_trace:
                found[s.source_trace] = s.id
    except ReplaygateError:
        found = {}
    state.promoted = (key, found)
    return dict(found)


@dataclass(frozen=True)
class _Filters:
    reason: str
    agent: str
    variant: str
    since: str
    promoted: str

    @classmethod
    def from_args(cls) -> _Filters:
        a = request.args
        return cls(*(str(a.get(k) or "") for k in ("reason", "agent", "variant", "since", "promoted")))

    def keep(self, r: TraceRecord, promoted: dict[str, str]) -> bool:
        s = r.summary
        return (
            (not self.agent or s.agent_name == self.agent)
            and (not self.variant or (s.variant or "none") == self.variant)
            and (not self.promoted or (s.trace_id in promoted) == (self.promoted == "yes"))
        )

    def args(self, **changes: Any) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if v}
        out.update({k: v for k, v in changes.items()})
        return {k: v for k, v in out.items() if v}


@bp.route("/inbox")
@login_required
def inbox() -> str:
    """Failure candidates as a work queue: filters, counts per reason, paging, grouped by reason."""
    traces = controller().traces
    f = _Filters.from_args()
    page = max(1, request.args.get("page", 1, type=int) or 1)
    error = None
    records: list[TraceRecord] = []
    since_ns = time.time_ns() - _SINCE[f.since] * 10**9 if f.since in _SINCE else None
    if traces is not None and hasattr(traces, "failures"):
        try:
            records = traces.failures(
                reasons=[f.reason] if f.reason else None, since_ns=since_ns, limit=_SCAN
            )
        except ReplaygateError as exc:
            error = str(exc)
    promoted = _promoted(_golden())
    agents = sorted({r.summary.agent_name for r in records if r.summary.agent_name})
    variants = sorted({r.summary.variant or "none" for r in records})
    kept = [r for r in records if f.keep(r, promoted)]
    counts = Counter(reason for r in kept for reason in r.summary.failure_reasons)
    pages = max(1, -(-len(kept) // PAGE))
    page = min(page, pages)
    rows = kept[(page - 1) * PAGE : page * PAGE]
    groups: dict[str, list[TraceRecord]] = {}
    for r in rows:
        first = f.reason or (r.summary.failure_reasons[0] if r.summary.failure_reasons else "other")
        groups.setdefault(first, []).append(r)
    return render_template(
        "inbox.html",
        f=f,
        groups=groups,
        counts=counts,
        total=len(kept),
        scanned=len(records),
        scan_limit=_SCAN,
        page=page,
        pages=pages,
        agents=agents,
        variants=variants,
        reasons=REASONS,
        promoted=promoted,
        error=error,
    )


@bp.route("/traces/<trace_id>")
@login_required
def trace(trace_id: str) -> str:
    """One trace: turns, answer, retrieved chunks, tool and LLM calls, failure reasons, feedback, promote."""
    traces = controller().traces
    if traces is None or not hasattr(traces, "get_trace"):
        abort(404)
    try:
        record = traces.get_trace(trace_id)
    except ReplaygateError:
        abort(404)
    promoted = _promoted(_golden()).get(record.summary.trace_id)
    return render_template(
        "trace.html",
        record=record,
        s=record.summary,
        as_json=_json,
        origins=ORIGINS,
        tiers=TIERS,
        promoted=promoted,
        me=current_user(),
    )


@bp.route("/traces/<trace_id>/promote", methods=["POST"])
@promoter_required
def promote(trace_id: str) -> Response:
    """Promote the trace into the golden set, as ``replaygate promote`` does; audited."""
    traces = controller().traces
    user = current_user()
    assert user is not None
    form = request.form
    owner = form.get("owner", "").strip()
    origin = form.get("origin", "")
    tiers = [t for t in form.getlist("tier") if t]
    subject = f"trace:{trace_id}"
    try:
        if traces is None or not hasattr(traces, "get_trace"):
            raise ReplaygateError("no trace store: nothing to promote")
        result = promote_trace(
            traces,  # type: ignore[arg-type]
            trace_id,
            _golden(),
            owner=owner,
            origin=origin,
            must_pass=form.get("must_pass") == "yes",
            tiers=tiers or None,
            expected_behavior=form.get("expected_behavior", "").strip() or None,
            author=user.name,
        )
    except ReplaygateError as exc:
        web_store().audit(
            actor=user.name, action="promote", outcome="refused", subject=subject, reason=str(exc)
        )
        flash(f"promote refused: {exc}", "error")
        return redirect(url_for("inbox.trace", trace_id=trace_id) + "#promote")
    web_store().audit(
        actor=user.name, action="promote", outcome="applied" if result.created else "noop", subject=subject,
        reason=f"{result.scenario.id} ({Path(result.path).name}), owner {owner}, origin {origin}",
    )  # fmt: skip
    verb = "promoted as" if result.created else "already promoted as"
    flash(f"{verb} {result.scenario.id} ({result.path}); review its suggested labels and checks", "ok")
    return redirect(url_for("inbox.trace", trace_id=trace_id) + "#promote")
