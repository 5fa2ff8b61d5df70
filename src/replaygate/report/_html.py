"""A self-contained HTML report: inline CSS and SVG, no script, no external asset, everything escaped."""

from __future__ import annotations

import math
import re
from html import escape

from replaygate.gate import (
    RULE_TITLES,
    Comparison,
    GateReport,
    GuardrailComparison,
    PolicyError,
    ScenarioComparison,
    SideStats,
    policy_from_mapping,
)
from replaygate.report._markdown import _num as _f
from replaygate.report._markdown import _p as _md_p
from replaygate.report._markdown import _pct
from replaygate.report._markdown import _peq as _md_peq
from replaygate.report._svg import (
    category_chart,
    guardrail_chart,
    scenario_interval_chart,
    suite_delta_chart,
)
from replaygate.stats import wilson_interval

__all__ = ["group_tolerances", "render_html"]

_CANT = "can't tell: "

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#111827;padding:0 1em}
h1 .pass{color:#15803d}h1 .block{color:#b91c1c}h1 .needs-sign-off{color:#b45309}
table{border-collapse:collapse;margin:.6em 0;width:100%}td,th{border:1px solid #e5e7eb;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f9fafb}.num{text-align:right}
.note{background:#fffbeb;border-left:4px solid #f59e0b;padding:.5em 1em}
pre{white-space:pre-wrap;background:#f3f4f6;padding:.5em;max-height:12em;overflow:auto}
.newly_failing{color:#b91c1c;font-weight:600}.newly_passing{color:#15803d}.unknown{color:#7c3aed}
"""


def _agreement_html(r: GateReport) -> list[str]:
    """Judge agreement with people (``replaygate.labels``), escaped."""
    if not r.judge_agreement:
        return []
    rows = ["<h2>Judge agreement with people</h2><table><tr><th>judge</th><th>model / prompt</th>"
            "<th>labels</th><th>kappa</th><th>status</th></tr>"]  # fmt: skip
    for entry in r.judge_agreement:
        a = entry.get("agreement") or {}
        kappa = a.get("kappa")
        shown = "-" if not a else "undefined" if kappa is None else f"{kappa:.2f}"
        if a.get("low") is not None and a.get("high") is not None:
            shown += f" [{a['low']:.2f}, {a['high']:.2f}]"
        calibrated = entry.get("calibrated")
        status = "calibrated" if calibrated else "uncalibrated" if calibrated is False else "-"
        rows.append(
            f"<tr><td>{_e(entry.get('judge'))}</td><td>{_e(entry.get('model'))} / "
            f"{_e(entry.get('prompt_version'))}</td><td>{_e(a.get('n', 0))}</td><td>{_e(shown)}</td>"
            f"<td>{_e(status)}: {_e(entry.get('reason', ''))}</td></tr>"
        )
    return [*rows, "</table>"]


def group_tolerances(report: GateReport) -> dict[str, float]:
    """The allowed drop of each pass-rate group (``overall``, ``risk=high``) in the report's own policy."""
    try:
        tol = policy_from_mapping(report.policy, f"report {report.report_id}").tolerance
    except PolicyError:
        return {}
    c = report.comparison
    return {"overall": tol.overall, **{g.name: tol.for_category(g.name) for g in c.categories}}


def _pp(x: float | None) -> str:
    """A change in a rate, in percentage points."""
    return "n/a" if x is None else f"{x * 100:+.1f} pp"


_NEEDS_ESCAPE = re.compile("[&<>\"']")  # what html.escape(quote=True) replaces


def _e(text: object) -> str:
    value = str(text)
    return escape(value, quote=True) if _NEEDS_ESCAPE.search(value) else value


def _sig(x: float | None, signed: bool = False) -> str:
    """Four significant digits without an exponent (a cost of 8.6e-05 USD reads as 0.00008647)."""
    if x is None:
        return "n/a"
    if x == 0 or not math.isfinite(x):
        return f"{x:+g}" if signed else f"{x:g}"
    decimals = max(0, 3 - math.floor(math.log10(abs(x))))
    return f"{x:+.{decimals}f}" if signed else f"{x:.{decimals}f}"


def _money(unit: str, x: float | None, signed: bool = False) -> str:
    """Dollars as ``$0.00018`` (``-$0.00002`` for a change); other units as plain numbers."""
    if x is None or "usd" not in unit.lower():
        return _sig(x, signed=signed)
    sign = ("+" if x >= 0 else "-") if signed else ("-" if x < 0 else "")
    return f"{sign}${_sig(abs(x))}"


def _noise(gr: GuardrailComparison) -> str:
    """The guardrail's change between the two baseline runs (what load or chance alone moves it by)."""
    if gr.noise_change is None:
        return "n/a"
    rel = f" ({gr.noise_relative_change:+.0%})" if gr.noise_relative_change is not None else ""
    return _sig(gr.noise_change, signed=True) + rel


def _peq(x: float | None) -> str:
    return _e(_md_peq(x))


def _p(x: float | None) -> str:
    return _e(_md_p(x))


def _counts(side: SideStats) -> str:
    return f"{side.passed}/{side.scored}" + (f" +{side.errors} err" if side.errors else "")


def _scenario_rows(scenarios: list[ScenarioComparison]) -> list[str]:
    rows = []
    for s in scenarios:
        detail = "<br>".join(
            _e(d) for d in [*s.problems, *s.head.failure_details, *s.head.error_messages][:6]
        )
        answer = f"<pre>{_e(s.head.sample_answer)}</pre>" if s.head.sample_answer else ""
        tags = ", ".join(f"{_e(k)}={_e(v)}" for k, v in sorted(s.tags.items()))
        rows.append(
            f"<tr><td>{_e(s.id)}{' <b>(must-pass)</b>' if s.must_pass else ''}"
            f"{'' if s.counts else ' <i>(does not count)</i>'}<br><small>{_e(s.title)}</small></td>"
            f'<td class="{_e(s.change)}">{_e(s.change.replace("_", " "))}</td>'
            f'<td class="num">{_counts(s.base)}</td><td class="num">{_counts(s.head)}</td>'
            f'<td class="num">{_p(s.fisher_p)}</td><td>{tags}</td><td>{detail}{answer}</td></tr>'
        )
    return rows


def _worse_and_flaky(r: GateReport) -> str:
    """The two lists that ask for no signature (the Markdown report words them the same)."""
    worse = ", ".join(_e(i) for i in r.worse_unconfirmed) or "none"
    flaky = "none"
    if r.comparison.noise_run is None:
        flaky = "unknown (no second baseline run)"
    elif r.flaky:
        share = "" if r.flaky_noise_share is None else f"; {r.flaky_noise_share:.0%} of their disagreement"
        advice = "quarantine each with an owner and a date, or raise its repeats"
        flaky = f"{', '.join(_e(i) for i in r.flaky)} ({len(r.flaky)}{share}; {advice})"
    return (
        f"<p><b>Worse, not confirmed at k={r.comparison.k}</b> (no signature needed): {worse}<br>"
        f"<b>Flaky</b> (the two baseline runs disagree): {flaky}</p>"
    )


def _scenario_legend(c: Comparison) -> str:
    """Say what each change label means; "inconclusive" on a 5/5 scenario puzzles readers otherwise."""
    perfect_low = wilson_interval(c.k, c.k, c.confidence)[0] if c.k else 0.0
    return (
        "<p><small><b>newly failing</b>: passed before, fails now beyond noise (a must-pass scenario "
        "failed an attempt; another went from a confirmed pass to a confirmed fail, or fell significantly "
        "by a Benjamini-Hochberg-adjusted one-sided Fisher test) · <b>worse unconfirmed</b>: the verdict "
        "got worse but k cannot confirm it (no signature needed) · "
        "<b>newly passing</b>, <b>still failing</b>, <b>still passing</b> likewise · "
        "<b>inconclusive</b>: a pass rate's Wilson interval still straddles the scenario's threshold, so "
        f"k={c.k} attempts cannot tell (even {c.k}/{c.k} only shows a rate above {perfect_low:.2f} at "
        f"{c.confidence:.0%}); must-pass scenarios need every attempt to pass. Raise the scenario's repeats "
        "to decide. Bars: pass rate per scenario; names coloured red (newly failing), amber (still failing), "
        "green (newly passing).</small></p>"
    )


def render_html(report: GateReport) -> str:
    """Render the report as one self-contained HTML page (model output and scenario text escaped)."""
    r, c = report, report.comparison
    o = c.overall
    noise = "unknown (no second baseline run)" if c.noise is None else f"±{c.noise.magnitude * 100:.1f} pp"
    mdd = (
        "none detectable"
        if c.minimum_detectable_drop is None
        else f"{c.minimum_detectable_drop * 100:.1f} pp"
    )
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' "
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>replaygate gate {_e(r.outcome)} {_e(r.report_id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>replaygate gate: <span class='{_e(r.outcome)}'>{_e(r.outcome)}</span></h1>",
        f"<p>{_e(r.headline)}</p>",
        f"<p><small>report {_e(r.report_id)} · created {_e(r.created_at)} · policy {_e(r.policy_hash)}<br>"
        f"baseline {_e(c.baseline.run_id)} ({_e(c.baseline.fingerprint.target)}) · candidate "
        f"{_e(c.candidate.run_id)} ({_e(c.candidate.fingerprint.target)}) · suite "
        f"{_e(c.suite_hash)} · k={c.k}</small></p>",
        f"<p><b>Noise floor</b> {_e(noise)} · <b>smallest detectable drop</b> {_e(mdd)} · <b>overall</b> "
        f"{_pct(o.base_rate)} → {_pct(o.head_rate)} (Δ {_pp(o.delta)}, "
        f"interval [{_pp(o.low)}, {_pp(o.high)}], "
        f"p{_peq(o.p_value)})</p>",
    ]
    if not r.can_tell and r.notes:
        parts.append(f"<p class='note'><b>Can't tell.</b> {_e(r.notes[0].removeprefix(_CANT))}</p>")
    if r.findings:
        parts.append(
            "<h2>Findings</h2><table><tr><th>rule</th><th>subject</th><th>finding</th><th>fix</th>"
            "<th>signable</th></tr>"
        )
        for f in r.findings:
            parts.append(
                f"<tr><td title='{_e(RULE_TITLES[f.rule])}'>{_e(f.rule)}</td><td>{_e(f.subject)}</td>"
                f"<td>{_e(f.message)}</td><td>{_e(f.fix)}</td><td>{'yes' if f.signable else 'no'}</td></tr>"
            )
        parts.append("</table>")
    parts += _agreement_html(r)
    parts.append(_worse_and_flaky(r))
    notes = [*r.policy_notes, *(r.notes[1:] if not r.can_tell else r.notes)]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts += [
        "<h2>Change in pass rate against the tolerance</h2>",
        suite_delta_chart(c, group_tolerances(r)),
        "<h2>Pass rate by category</h2>",
        "<p><small>grey: baseline, blue: candidate; "
        "lines are Wilson intervals of the pooled rate</small></p>",
        category_chart(c),
        "<table><tr><th>group</th><th>n</th><th>baseline</th><th>candidate</th><th>Δ</th><th>interval</th>"
        "<th>p</th><th>p (Holm)</th><th>noise</th></tr>",
    ]
    for g in [o, *c.categories]:
        parts.append(
            f"<tr><td>{_e(g.name)}</td><td class='num'>{g.scenarios}</td>"
            f"<td class='num'>{_pct(g.base_rate)}</td>"
            f"<td class='num'>{_pct(g.head_rate)}</td><td class='num'>{_pp(g.delta)}</td>"
            f"<td>[{_pp(g.low)}, {_pp(g.high)}]</td><td class='num'>{_p(g.p_value)}</td>"
            f"<td class='num'>{_p(g.p_adjusted)}</td><td class='num'>{_pp(g.noise_magnitude)}</td></tr>"
        )
    parts.append("</table>")
    changed = [g for g in c.graded if g.delta is not None and abs(g.delta) >= 0.0005]
    if c.graded:
        parts.append(
            f"<h2>Graded scores</h2><p><small>{len(changed)} of {len(c.graded)} metric × group rows changed "
            "by 0.001 or more (scores on a 0..1 scale); the unchanged rows are folded below.</small></p>"
            "<table><tr><th>metric</th><th>group</th><th>n</th><th>baseline</th>"
            "<th>candidate</th><th>Δ</th><th>interval</th><th>p (Holm in group)</th></tr>"
        )
        unchanged = [g for g in c.graded if g not in changed]
        for gg in [*changed, None, *unchanged]:
            if gg is None:
                if unchanged:
                    parts.append(
                        f"</table><details><summary>{len(unchanged)} unchanged rows</summary><table>"
                    )
                continue
            parts.append(
                f"<tr><td>{_e(gg.metric)}</td><td>{_e(gg.group)}</td><td class='num'>{gg.scenarios}</td>"
                f"<td class='num'>{_f(gg.base_mean, '.3f')}</td>"
                f"<td class='num'>{_f(gg.head_mean, '.3f')}</td>"
                f"<td class='num'>{_f(gg.delta)}</td><td>[{_f(gg.low)}, {_f(gg.high)}]</td>"
                f"<td class='num'>{_p(gg.p_adjusted)}</td></tr>"
            )
        parts.append("</table></details>" if unchanged else "</table>")
    parts += [
        "<h2>Guardrails</h2>",
        guardrail_chart(c),
        "<table><tr><th>guardrail</th><th>baseline</th><th>candidate</th><th>change</th><th>p</th>"
        "<th>baseline run-to-run</th><th>note</th></tr>",
    ]
    for gr in c.guardrails:
        rel = f" ({gr.relative_change:+.0%})" if gr.relative_change is not None else ""
        parts.append(
            f"<tr><td>{_e(gr.name)} <small>{_e(gr.unit)}</small></td>"
            f"<td class='num'>{_money(gr.unit, gr.base)}</td><td class='num'>{_money(gr.unit, gr.head)}</td>"
            f"<td class='num'>{_money(gr.unit, gr.change, signed=True)}{rel}</td>"
            f"<td class='num'>{_p(gr.p_value)}</td><td class='num'>{_noise(gr)}</td>"
            f"<td>{_e(gr.note)}</td></tr>"
        )
    parts += [
        "</table>",
        f"<p>Errors (counted apart from failures): baseline {c.errors.base_errors}/{c.errors.base_attempts}, "
        f"candidate {c.errors.head_errors}/{c.errors.head_attempts}</p>",
        "<h2>Scenarios</h2>",
        _scenario_legend(c),
        scenario_interval_chart(c),
        "<table><tr><th>scenario</th><th>change</th><th>baseline</th><th>candidate</th><th>Fisher p</th>"
        "<th>tags</th><th>candidate failures / answer (untrusted)</th></tr>",
        *_scenario_rows(c.scenarios),
        "</table></body></html>",
    ]
    return "\n".join(parts)
