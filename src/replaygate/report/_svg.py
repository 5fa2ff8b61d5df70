"""Inline SVG plots for the HTML report (no scripts, no external assets; every label escaped)."""

from __future__ import annotations

from html import escape

from replaygate.gate import Comparison, RateComparison
from replaygate.stats import wilson_interval

__all__ = [
    "category_chart",
    "guardrail_chart",
    "scenario_diff_chart",
    "scenario_interval_chart",
    "suite_delta_chart",
]

_BASE, _HEAD = "#6b7280", "#2563eb"
_MAX_LABEL = 48


def _label_width(labels: list[str], font_px: int) -> int:
    """Pixels a column of labels needs (about 0.58 em per character): no label runs into the plot."""
    longest = max((len(t) for t in labels), default=0)
    return int(min(longest, _MAX_LABEL) * font_px * 0.58) + 12


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "\u2026"


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>"
    )


def category_chart(c: Comparison) -> str:
    """Pooled pass rates with Wilson intervals per category (and overall): baseline grey, candidate blue."""
    groups: list[RateComparison] = [c.overall, *c.categories]
    by_id = {s.id: s for s in c.scenarios}
    labels = [f"{g.name} (n={g.scenarios})" for g in groups]
    left, width, row = max(120, _label_width(labels, 12)), 420, 26
    height = 30 + row * len(groups)
    body = [
        f'<text x="{left}" y="14" font-size="11">0%</text>',
        f'<text x="{left + width - 30}" y="14" font-size="11">100%</text>',
    ]
    for n, (g, text) in enumerate(zip(groups, labels, strict=True)):
        y = 30 + n * row
        body.append(f'<text x="4" y="{y + 4}" font-size="12">{escape(_clip(text))}</text>')
        body.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="#e5e7eb"/>')
        ids = [s.id for s in c.scenarios if s.counts and not s.problems]
        if g.name != "overall":
            key, _, value = g.name.partition("=")
            ids = [i for i in ids if by_id[i].tags.get(key) == value]
        for side, color, dy in (("base", _BASE, -4), ("head", _HEAD, 4)):
            passed = sum(getattr(by_id[i], side).passed for i in ids)
            scored = sum(getattr(by_id[i], side).scored for i in ids)
            if not scored:
                continue
            rate = passed / scored
            lo, hi = wilson_interval(passed, scored, c.confidence)
            x1, x2 = left + lo * width, left + hi * width
            body.append(
                f'<line x1="{x1:.1f}" y1="{y + dy}" x2="{x2:.1f}" y2="{y + dy}" '
                f'stroke="{color}" stroke-width="2"/>'
            )
            body.append(
                f'<circle cx="{left + rate * width:.1f}" cy="{y + dy}" r="4" fill="{color}"><title>'
                f"{side} {passed}/{scored} = {rate:.1%} [{lo:.1%}, {hi:.1%}]</title></circle>"
            )
    return _svg(left + width + 20, height, body, "pass rate per category with intervals")


def guardrail_chart(c: Comparison) -> str:
    """Relative change of each guardrail (right is worse), capped at ±100%."""
    left, width, row = max(120, _label_width([g.name for g in c.guardrails], 12)), 400, 24
    mid = left + width / 2
    height = 30 + row * len(c.guardrails)
    body = [
        f'<line x1="{mid}" y1="16" x2="{mid}" y2="{height}" stroke="#9ca3af"/>',
        f'<text x="{left}" y="12" font-size="11">better</text>',
        f'<text x="{left + width - 34}" y="12" font-size="11">worse</text>',
    ]
    for n, g in enumerate(c.guardrails):
        y = 24 + n * row
        body.append(f'<text x="4" y="{y + 12}" font-size="12">{escape(g.name)}</text>')
        if g.relative_change is None:
            txt = "unknown" if g.head is None or g.base is None else f"{g.change:+.3g} (abs)"
            body.append(f'<text x="{mid + 4}" y="{y + 12}" font-size="11">{escape(txt)}</text>')
            continue
        rel = max(-1.0, min(1.0, g.relative_change))
        x, w = (mid, rel * width / 2) if rel >= 0 else (mid + rel * width / 2, -rel * width / 2)
        color = "#dc2626" if rel > 0 else "#16a34a"
        body.append(
            f'<rect x="{x:.1f}" y="{y + 2}" width="{max(w, 1):.1f}" height="14" fill="{color}">'
            f"<title>{escape(g.name)} {g.relative_change:+.1%}</title></rect>"
        )
    return _svg(left + width + 20, height, body, "guardrail change, baseline to candidate")


def scenario_diff_chart(c: Comparison) -> str:
    """One row per scenario: baseline and candidate pass rate bars, coloured by change."""
    colors = {
        "newly_failing": "#dc2626",
        "newly_passing": "#16a34a",
        "still_failing": "#f59e0b",
        "unknown": "#7c3aed",
    }
    shown = c.scenarios[:200]
    left, width, row = max(120, _label_width([s.id for s in shown], 11)), 300, 18
    height = 26 + row * len(shown)
    body = [
        f'<text x="{left}" y="12" font-size="11">baseline pass rate</text>',
        f'<text x="{left + width / 2 + 10}" y="12" font-size="11">candidate pass rate</text>',
    ]
    for n, s in enumerate(shown):
        y = 20 + n * row
        color = colors.get(s.change, "#4b5563")
        body.append(f'<text x="4" y="{y + 11}" font-size="11" fill="{color}">{escape(_clip(s.id))}</text>')
        for side, off, col in (("base", 0, _BASE), ("head", width / 2 + 10, _HEAD)):
            rate = getattr(s, side).rate
            w = (rate or 0.0) * (width / 2 - 10)
            body.append(
                f'<rect x="{left + off:.1f}" y="{y + 2}" width="{max(w, 0.5):.1f}" height="10" fill="{col}">'
                f"<title>{escape(s.id)} {side} {'n/a' if rate is None else f'{rate:.0%}'} "
                f"({escape(s.change)})</title></rect>"
            )
    return _svg(left + width + 20, height, body, "scenario pass rates, baseline and candidate")


def scenario_interval_chart(c: Comparison, limit: int = 200) -> str:
    """Per-scenario pass rate, baseline above candidate, each a point with its Wilson interval.

    One ``<circle class="pt base|head">`` per side of each scenario with scored attempts (at most
    ``limit`` scenarios, newly failing first); the vertical tick on each row is the scenario's threshold.
    """
    order = {
        "newly_failing": 0,
        "worse_unconfirmed": 1,
        "still_failing": 2,
        "unknown": 3,
        "inconclusive": 4,
        "newly_passing": 5,
    }
    shown = sorted(c.scenarios, key=lambda s: order.get(s.change, 5))[:limit]
    colors = {
        "newly_failing": "#dc2626",
        "worse_unconfirmed": "#d97706",
        "newly_passing": "#16a34a",
        "still_failing": "#f59e0b",
    }
    left, width, row = max(140, _label_width([s.id for s in shown], 11)), 420, 24
    height = 34 + row * len(shown)
    body = [
        f'<text x="{left}" y="12" font-size="11">0%</text>',
        f'<text x="{left + width / 2 - 10}" y="12" font-size="11">50%</text>',
        f'<text x="{left + width - 30}" y="12" font-size="11">100%</text>',
        f'<text x="{left}" y="26" font-size="10" fill="{_BASE}">● baseline (upper)</text>',
        f'<text x="{left + 130}" y="26" font-size="10" fill="{_HEAD}">● candidate (lower)</text>',
        f'<text x="{left + 270}" y="26" font-size="10" fill="#111">| threshold</text>',
    ]
    for n, s in enumerate(shown):
        y = 36 + n * row
        color = colors.get(s.change, "#374151")
        body.append(
            f'<text x="4" y="{y + 5}" font-size="11" fill="{color}">{escape(_clip(s.id))}'
            f"<title>{escape(s.id)}: {escape(s.change.replace('_', ' '))}</title></text>"
        )
        body.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="#f3f4f6"/>')
        tx = left + s.threshold * width
        body.append(f'<line x1="{tx:.1f}" y1="{y - 8}" x2="{tx:.1f}" y2="{y + 8}" stroke="#111"/>')
        for side, col, dy, cls in (("base", _BASE, -4, "base"), ("head", _HEAD, 4, "head")):
            st = getattr(s, side)
            if not st.scored:
                continue
            lo, hi = wilson_interval(st.passed, st.scored, c.confidence)
            rate = st.passed / st.scored
            body.append(
                f'<line x1="{left + lo * width:.1f}" y1="{y + dy}" x2="{left + hi * width:.1f}" '
                f'y2="{y + dy}" stroke="{col}" stroke-width="2"/>'
            )
            body.append(
                f'<circle class="pt {cls}" cx="{left + rate * width:.1f}" cy="{y + dy}" r="3.5" '
                f'fill="{col}"><title>{escape(s.id)} {"baseline" if side == "base" else "candidate"} '
                f"{st.passed}/{st.scored} = {rate:.0%} [{lo:.0%}, {hi:.0%}]</title></circle>"
            )
    return _svg(left + width + 20, height, body, "pass rate per scenario with Wilson intervals")


def suite_delta_chart(c: Comparison, tolerances: dict[str, float]) -> str:
    """Each group's change in pass rate (percentage points) with its interval, against the tolerance.

    ``tolerances`` maps a group name (``overall``, ``risk=high``) to its allowed drop; the red line on
    each row is minus that drop, the grey band the noise floor (the change between two baseline runs),
    the dotted line the smallest drop this suite can detect. One ``<circle class="pt delta">`` per group
    with a delta.
    """
    groups: list[RateComparison] = [c.overall, *c.categories]
    deltas = [abs(v) for g in groups for v in (g.delta, g.low, g.high) if v is not None]
    extent = max([0.1, *deltas, *tolerances.values(), c.minimum_detectable_drop or 0.0]) * 1.15
    labels = [f"{g.name} (n={g.scenarios})" for g in groups]
    left, width, row = max(140, _label_width(labels, 12)), 440, 26
    mid = left + width / 2
    height = 48 + row * len(groups)

    def x(v: float) -> float:
        return mid + max(-1.0, min(1.0, v / extent)) * width / 2

    body = [
        f'<text x="{left}" y="12" font-size="11">−{extent * 100:.0f} pp (worse)</text>',
        f'<text x="{left + width - 90}" y="12" font-size="11">+{extent * 100:.0f} pp (better)</text>',
        f'<line x1="{mid}" y1="18" x2="{mid}" y2="{height - 20}" stroke="#9ca3af"/>',
    ]
    if c.noise is not None:
        m = abs(c.noise.magnitude)
        body.append(
            f'<rect class="noise" x="{x(-m):.1f}" y="18" width="{max(1.0, x(m) - x(-m)):.1f}" '
            f'height="{height - 38}" fill="#e5e7eb" fill-opacity="0.7"><title>noise floor ±{m * 100:.1f} pp '
            "(two baseline runs)</title></rect>"
        )
    if c.minimum_detectable_drop is not None:
        d = x(-c.minimum_detectable_drop)
        body.append(
            f'<line class="mdd" x1="{d:.1f}" y1="18" x2="{d:.1f}" y2="{height - 20}" stroke="#7c3aed" '
            f'stroke-dasharray="2 3"><title>smallest detectable drop {c.minimum_detectable_drop * 100:.1f} pp'
            "</title></line>"
        )
    for n, (g, text) in enumerate(zip(groups, labels, strict=True)):
        y = 34 + n * row
        body.append(f'<text x="4" y="{y + 4}" font-size="12">{escape(_clip(text))}</text>')
        tol = tolerances.get(g.name, tolerances.get("overall"))
        if tol is not None:
            tx = x(-tol)
            body.append(
                f'<line class="tolerance" x1="{tx:.1f}" y1="{y - 9}" x2="{tx:.1f}" y2="{y + 9}" '
                f'stroke="#dc2626" stroke-width="2"><title>tolerance: a drop of at most {tol * 100:g} pp'
                "</title></line>"
            )
        if g.delta is None:
            continue
        if g.low is not None and g.high is not None:
            body.append(
                f'<line x1="{x(g.low):.1f}" y1="{y}" x2="{x(g.high):.1f}" y2="{y}" stroke="{_HEAD}" '
                'stroke-width="2"/>'
            )
        interval = "" if g.low is None or g.high is None else f" [{g.low * 100:+.1f}, {g.high * 100:+.1f}]"
        body.append(
            f'<circle class="pt delta" cx="{x(g.delta):.1f}" cy="{y}" r="4" fill="{_HEAD}"><title>'
            f"{escape(g.name)}: {g.delta * 100:+.1f} pp{interval}</title></circle>"
        )
    body.append(
        f'<text x="4" y="{height - 4}" font-size="10" fill="#555">red: tolerance · grey band: noise floor · '
        "dotted: smallest detectable drop · blue: change with its interval</text>"
    )
    return _svg(left + width + 20, height, body, "change in pass rate with interval against the tolerance")
