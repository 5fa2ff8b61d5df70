"""Markdown reports that fit a pull-request comment (decision first, then the evidence)."""

from __future__ import annotations

from collections import Counter
from typing import get_args

from replaygate.gate import RULE_TITLES, Change, Comparison, GateReport

__all__ = ["render_comparison_markdown", "render_markdown"]

_MAX_ROWS = 40
_MAX_LIST = 100
_MAX_CHARS = 60_000  # GitHub comments hold 65,536 characters
_ICON = {"pass": "✅", "needs-sign-off": "⚠️", "block": "⛔"}


def _cell(text: str) -> str:
    """Make untrusted text safe inside a Markdown table cell (no HTML, no pipes, one line)."""
    out = text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
    out = out.replace("`", "'").replace("\r", " ").replace("\n", " ")
    return out[:200] + ("…" if len(out) > 200 else "")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _num(x: float | None, fmt: str = "+.3f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _peq(x: float | None) -> str:
    return "=n/a" if x is None else ("<0.001" if x < 0.001 else f"={x:.3g}")


def _p(x: float | None) -> str:
    return "n/a" if x is None else ("<0.001" if x < 0.001 else f"{x:.3g}")


def render_comparison_markdown(c: Comparison, *, title: str = "Comparison") -> str:
    """Render a comparison: noise floor and detectable drop first, then overall, categories, scenarios."""
    lines = [f"### {title}: `{_cell(c.baseline.run_id)}` → `{_cell(c.candidate.run_id)}`", ""]
    o = c.overall
    mdd = "none detectable" if c.minimum_detectable_drop is None else f"{c.minimum_detectable_drop:.2f}"
    noise = "unknown (no second baseline run)" if c.noise is None else f"±{c.noise.magnitude:.3f}"
    lines += [
        f"- Suite `{_cell(c.suite_hash[:19])}`, k={c.k}, {o.scenarios} counted scenarios",
        f"- Noise floor: {noise}; smallest detectable drop: {mdd}",
        f"- Overall pass rate: {_pct(o.base_rate)} → {_pct(o.head_rate)} (Δ {_num(o.delta)}, "
        f"interval [{_num(o.low)}, {_num(o.high)}], p{_peq(o.p_value)})",
        f"- Errors (apart from failures): baseline {c.errors.base_errors}/{c.errors.base_attempts}, "
        f"candidate {c.errors.head_errors}/{c.errors.head_attempts}",
        "",
    ]
    counts = Counter(s.change for s in c.scenarios)
    lines.append(
        "Scenarios: "
        + ", ".join(f"{counts[ch]} {ch.replace('_', ' ')}" for ch in get_args(Change) if counts[ch])
    )
    lines.append("")
    if c.problems:
        lines += ["**Data problems (block):**", *[f"- {_cell(p)}" for p in c.problems], ""]
    if c.categories:
        lines += [
            "| category | n | baseline | candidate | Δ | interval | p (Holm) |",
            "|---|---:|---:|---:|---:|---|---:|",
        ]
        for g in c.categories[:_MAX_ROWS]:
            lines.append(
                f"| {_cell(g.name)} | {g.scenarios} | {_pct(g.base_rate)} | {_pct(g.head_rate)} "
                f"| {_num(g.delta)} | [{_num(g.low)}, {_num(g.high)}] | {_p(g.p_adjusted)} |"
            )
        if len(c.categories) > _MAX_ROWS:
            lines.append(f"| … {len(c.categories) - _MAX_ROWS} more in report.html | | | | | | |")
        lines.append("")
    graded = [g for g in c.graded if g.group == "overall"]
    if graded:
        lines += ["| graded score | n | baseline | candidate | Δ | p |", "|---|---:|---:|---:|---:|---:|"]
        for gg in graded:
            lines.append(
                f"| {_cell(gg.metric)} | {gg.scenarios} | {_num(gg.base_mean, '.3f')} | "
                f"{_num(gg.head_mean, '.3f')} | {_num(gg.delta)} | {_p(gg.p_value)} |"
            )
        lines.append("")
    lines += ["| guardrail | baseline | candidate | change | p |", "|---|---:|---:|---:|---:|"]
    for gr in c.guardrails:
        rel = f" ({gr.relative_change:+.0%})" if gr.relative_change is not None else ""
        lines.append(
            f"| {gr.name} | {_num(gr.base, '.4g')} | {_num(gr.head, '.4g')} | {_num(gr.change, '+.4g')}{rel} "
            f"| {_p(gr.p_value)} |"
        )
    notes = [gr.note for gr in c.guardrails if gr.note]
    lines += [*(f"\n_{_cell(n)}_" for n in notes), ""]
    moved = [
        s
        for s in c.scenarios
        if s.change in ("newly_failing", "worse_unconfirmed", "newly_passing", "unknown")
    ]
    if c.scenario_family:
        drop = "none" if c.scenario_detectable_drop is None else f"{c.scenario_detectable_drop:.2f}"
        lines += [
            f"Per scenario: {c.scenario_test} (over {c.scenario_family}); smallest drop it confirms from a "
            f"scenario that passed every attempt: {drop}",
            "",
        ]
    if moved:
        lines += [
            "| scenario | change | baseline | candidate | Fisher p (one-sided) |",
            "|---|---|---:|---:|---:|",
        ]
        for s in moved[:_MAX_ROWS]:
            mp = " (must-pass)" if s.must_pass else ""
            lines.append(
                f"| `{_cell(s.id)}`{mp} | {s.change.replace('_', ' ')} | {s.base.passed}/{s.base.scored}"
                f"{f' +{s.base.errors} err' if s.base.errors else ''} | {s.head.passed}/{s.head.scored}"
                f"{f' +{s.head.errors} err' if s.head.errors else ''} | {_p(s.fisher_p)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _worse_and_flaky(r: GateReport) -> list[str]:
    """The two lists that ask for no signature: worse but not confirmed at this k, and flaky scenarios."""
    c = r.comparison
    by_id = {s.id: s for s in c.scenarios}
    lines = [f"### Worse, not confirmed at k={c.k}", ""]
    if r.worse_unconfirmed:
        lines += [
            "_Looked worse, but the evidence cannot confirm it at this k; no signature needed for these._",
            "",
        ]
        for sid in r.worse_unconfirmed[:_MAX_LIST]:
            s = by_id[sid]
            why = f" — {_cell(s.cant_tell)}" if s.cant_tell else ""
            lines.append(
                f"- `{_cell(sid)}`: {s.base.verdict} {s.base.passed}/{s.base.scored} → {s.head.verdict} "
                f"{s.head.passed}/{s.head.scored} (Fisher p{_peq(s.fisher_p)}){why}"
            )
        if len(r.worse_unconfirmed) > _MAX_LIST:
            lines.append(f"- … and {len(r.worse_unconfirmed) - _MAX_LIST} more (see report.html)")
    else:
        lines.append("- none")
    lines += ["", "### Flaky (the two baseline runs disagree)", ""]
    if c.noise_run is None:
        lines.append("- unknown: no second baseline run (pass --baseline-2)")
    elif r.flaky:
        share = (
            ""
            if r.flaky_noise_share is None
            else f", carrying {r.flaky_noise_share:.0%} of the disagreement between the baseline runs"
        )
        lines += [
            f"{len(r.flaky)} of {len(c.scenarios)} scenarios are flaky{share}. Quarantine each with an "
            "owner and a date (`replaygate scenarios quarantine ID --owner NAME --until YYYY-MM-DD "
            "--reason ...`) or raise its repeats.",
            "",
        ]
        lines += [f"- `{_cell(sid)}`: {_cell(by_id[sid].flaky_reason)}" for sid in r.flaky[:_MAX_LIST]]
    else:
        lines.append("- none")
    lines.append("")
    return lines


def render_markdown(report: GateReport) -> str:
    """Render a gate report for a pull-request comment: the decision, the failures and their fixes."""
    r = report
    lines = [
        f"## {_ICON[r.outcome]} replaygate gate: **{r.outcome}**",
        "",
        _cell(r.headline),
        "",
        f"Report `{r.report_id}` · policy `{r.policy_hash[:19]}` · "
        f"baseline `{_cell(r.comparison.baseline.run_id)}` · "
        f"candidate `{_cell(r.comparison.candidate.run_id)}`",
        "",
    ]
    if not r.can_tell:
        lines += ["> **Can't tell:** " + _cell(r.notes[0].removeprefix("can't tell: ")), ""]
    cant: dict[str, list[str]] = {}
    for s in r.comparison.scenarios:
        if s.cant_tell:
            cant.setdefault(s.cant_tell, []).append(s.id)
    if cant:
        lines += ["> **Can't tell per scenario:**", ">"]
        for note, ids in list(cant.items())[:_MAX_ROWS]:
            shown = ", ".join(f"`{_cell(i)}`" for i in ids[:20]) + (" …" if len(ids) > 20 else "")
            lines.append(f"> - {shown}: {_cell(note)}")
        lines.append("")
    if r.newly_failing:
        lines += ["### Newly failing", ""]
        by_id = {s.id: s for s in r.comparison.scenarios}
        for sid in r.newly_failing[:_MAX_LIST]:
            s = by_id[sid]
            mp = " **(must-pass)**" if s.must_pass else ""
            detail = "; ".join(s.head.failure_details[:2])
            lines.append(
                f"- `{_cell(sid)}`{mp}: {s.base.passed}/{s.base.scored} → {s.head.passed}/{s.head.scored}"
                + (f" — {_cell(detail)}" if detail else "")
            )
        if len(r.newly_failing) > _MAX_LIST:
            lines.append(f"- … and {len(r.newly_failing) - _MAX_LIST} more (see report.html)")
        lines.append("")
    lines += _worse_and_flaky(r)
    blocking = [f for f in r.findings if f.severity == "block"]
    if blocking or any(f.severity == "review" for f in r.findings):
        lines += [
            "### Findings",
            "",
            "| rule | subject | finding | fix | signable |",
            "|---|---|---|---|---|",
        ]
        for f in r.findings[:_MAX_ROWS]:
            lines.append(
                f"| {f.rule} | {_cell(f.subject)} | {_cell(f.message)} | {_cell(f.fix)} | "
                f"{'yes' if f.signable else 'no'} |"
            )
        lines.append("")
        rules = sorted({f.rule for f in r.findings})
        lines += [*(f"- **{rule}**: {RULE_TITLES[rule]}" for rule in rules), ""]
    other = r.notes[1:] if not r.can_tell else r.notes
    if other or r.policy_notes:
        lines += ["<details><summary>Notes</summary>", ""]
        lines += [f"- {_cell(n)}" for n in [*r.policy_notes, *other][:_MAX_ROWS]]
        lines += ["", "</details>", ""]
    head = "\n".join(lines)
    evidence = render_comparison_markdown(r.comparison)
    if len(head) + len(evidence) > _MAX_CHARS:
        evidence = "_The evidence is too long for a comment: see report.html._\n"
    text = f"{head}\n<details><summary>Evidence</summary>\n\n{evidence}\n</details>\n"
    return (
        text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 40] + "\n\n… (truncated: see report.html)\n"
    )
