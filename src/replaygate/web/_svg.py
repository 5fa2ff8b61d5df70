"""Server-side SVG charts of the live canary: one per measure, both arms, tolerance band, markers.

No script and no style attribute (the page's CSP forbids both); every label is escaped. Each arm's
points are ``<circle class="pt baseline|candidate">`` elements, one per time bin in which that arm served
requests; the shaded band is where the candidate may lie given the baseline of that bin and the
tolerance in force (the gate policy's, or the canary defaults); vertical lines mark applied actions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from markupsafe import Markup, escape

from replaygate.web._canary_series import Marker, MeasureSeries

__all__ = ["fmt_measure", "measure_chart", "significant"]

_W, _H, _L, _R, _T, _B = 560, 190, 64, 16, 30, 34
_COLORS = {"baseline": "#4477aa", "candidate": "#cc3366"}
_MARK_COLORS = {"start": "#555", "widen": "#16813a", "promote": "#16813a", "rollback": "#b3261e"}


def significant(value: float | None, signed: bool = False, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and no exponent; float dust (< 1e-12) reads as 0."""
    if value is None:
        return "—"
    if abs(value) < 1e-12 or not math.isfinite(value):
        value = 0.0 if math.isfinite(value) else value
        return f"{value:+g}" if signed else f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def fmt_measure(kind: str, value: float | None, signed: bool = False) -> str:
    """One unit per kind: rates in % (differences in percentage points), seconds, dollars, scores."""
    if value is None:
        return "—"
    if kind == "rate":
        return f"{value * 100:+.1f} pp" if signed else f"{value * 100:.1f}%"
    if kind == "latency":
        return f"{significant(value, signed=signed)} s"
    if kind == "cost":
        text = significant(abs(value))
        return (("+" if value >= 0 else "-") if signed else "") + f"${text}"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _clock(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%H:%M:%S")


def _band(series: MeasureSeries, x: object, y: object) -> str:
    """The tolerance band over the bins where the baseline has a value."""
    if series.limit is None:
        return ""
    upper, lower = [], []
    for p in series.points:
        if p.baseline is None:
            continue
        allowed = series.limit.allowed(p.baseline)
        edge = p.baseline + allowed if series.higher_is_worse else p.baseline - allowed
        mid = (p.start_ns + p.end_ns) // 2
        upper.append((x(mid), y(edge)))  # type: ignore[operator]
        lower.append((x(mid), y(p.baseline)))  # type: ignore[operator]
    if not upper:
        return ""
    pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in [*upper, *reversed(lower)])
    return f'<polygon class="band" points="{pts}" fill="#f3c98b" fill-opacity="0.45" stroke="none"/>'


def measure_chart(series: MeasureSeries, markers: Sequence[Marker], start_ns: int, end_ns: int) -> Markup:
    """One measure over the rollout: both arms per time bin, the tolerance band, the action markers."""
    values = [v for p in series.points for v in (p.baseline, p.candidate) if v is not None]
    if series.limit is not None:
        values += [
            p.baseline + series.limit.allowed(p.baseline) * (1 if series.higher_is_worse else -1)
            for p in series.points
            if p.baseline is not None
        ]
    top = max([*values, 0.0]) or 1.0
    bottom = min([*values, 0.0])
    top = top + (top - bottom) * 0.08
    span_ns = max(1, end_ns - start_ns)
    plot_w, plot_h = _W - _L - _R, _H - _T - _B

    def x(ns: float) -> float:
        return _L + (ns - start_ns) / span_ns * plot_w

    def y(v: float) -> float:
        return _T + plot_h - (v - bottom) / ((top - bottom) or 1.0) * plot_h

    body = [_band(series, x, y)]
    body.append(
        f'<line x1="{_L}" y1="{_T + plot_h}" x2="{_W - _R}" y2="{_T + plot_h}" stroke="#999"/>'
        f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{_T + plot_h}" stroke="#999"/>'
        f'<text x="{_L - 4}" y="{_T + 4}" font-size="10" text-anchor="end" fill="#555">'
        f"{escape(fmt_measure(series.kind, top))}</text>"
        f'<text x="{_L - 4}" y="{_T + plot_h}" font-size="10" text-anchor="end" fill="#555">'
        f"{escape(fmt_measure(series.kind, bottom))}</text>"
        f'<text x="{_L}" y="{_H - 18}" font-size="10" fill="#555">{escape(_clock(start_ns))} UTC</text>'
        f'<text x="{_W - _R}" y="{_H - 18}" font-size="10" text-anchor="end" fill="#555">'
        f"{escape(_clock(end_ns))} UTC</text>"
    )
    for m in markers:
        if not start_ns <= m.at_ns <= end_ns:
            continue
        color = _MARK_COLORS.get(m.action, "#555")
        mx = x(m.at_ns)
        right = mx > _W - _R - 60  # near the right edge: the label goes to the left of the line
        label_x, anchor = (mx - 2, "end") if right else (mx + 2, "start")
        body.append(
            f'<g class="marker {escape(m.action)}"><line x1="{mx:.1f}" y1="{_T}" x2="{mx:.1f}" '
            f'y2="{_T + plot_h}" stroke="{color}" stroke-dasharray="4 3"/>'
            f'<text x="{label_x:.1f}" y="{_T + 10}" font-size="10" text-anchor="{anchor}" fill="{color}">'
            f"{escape(m.action)}</text>"
            f"<title>{escape(m.action)} by {escape(m.actor)}: {escape(m.reason)}</title></g>"
        )
    for arm in ("baseline", "candidate"):
        pts = [
            (x((p.start_ns + p.end_ns) / 2), y(v), v, n)
            for p in series.points
            for v, n in ((getattr(p, arm), getattr(p, f"{arm}_n")),)
            if v is not None
        ]
        if len(pts) > 1:
            coords = " ".join(f"{a:.1f},{b:.1f}" for a, b, _, _ in pts)
            body.append(f'<polyline fill="none" stroke="{_COLORS[arm]}" stroke-width="2" points="{coords}"/>')
        body += [
            f'<circle class="pt {arm}" data-n="{n}" cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{_COLORS[arm]}">'
            f"<title>{arm}: {escape(fmt_measure(series.kind, v))} (n={n})</title></circle>"
            for a, b, v, n in pts
        ]
    tol = "not checked" if series.limit is None else _describe(series)
    title = f"{series.label} · tolerance {tol}"
    body.append(f'<text x="{_L}" y="16" font-size="12" fill="#222">{escape(title)}</text>')
    body.append(
        f'<text x="{_W - 200}" y="{_H - 4}" font-size="10" fill="{_COLORS["baseline"]}">● baseline</text>'
        f'<text x="{_W - 130}" y="{_H - 4}" font-size="10" fill="{_COLORS["candidate"]}">● candidate</text>'
        f'<text x="{_L}" y="{_H - 4}" font-size="10" fill="#a26b12">▮ tolerance band</text>'
    )
    return Markup(
        f'<svg class="measure-chart" data-measure="{escape(series.name)}" role="img" '
        f'aria-label="{escape(title)}" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>{"".join(body)}</svg>'
    )


def _describe(series: MeasureSeries) -> str:
    """The tolerance in the measure's unit: ``+5.0 pp``, ``+20% of the baseline``."""
    assert series.limit is not None
    direction = "worse by at most"
    if series.limit.mode == "relative":
        return f"{direction} {series.limit.value:.0%} of the baseline"
    return f"{direction} {fmt_measure(series.kind, series.limit.value, signed=True).lstrip('+')}"
