"""A small inline SVG time series of the failure rate per arm (numbers only; labels escaped)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from markupsafe import Markup, escape

from replaygate.canary import SeriesPoint

__all__ = ["series_svg", "significant"]

_W, _H, _PAD = 420, 140, 28
_COLORS = {"baseline": "#4477aa", "candidate": "#cc6677"}


def significant(value: float | None, signed: bool = False, digits: int = 3) -> str:
    """A number with ``digits`` significant digits and no exponent; float dust (< 1e-12) reads as 0."""
    if value is None:
        return "—"
    if abs(value) < 1e-12 or not math.isfinite(value):
        value = 0.0 if math.isfinite(value) else value
        return f"{value:+g}" if signed else f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _polyline(points: list[tuple[float, float]], color: str) -> str:
    if not points:
        return ""
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"/>' for x, y in points)
    return f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>{dots}'


def _clock(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).strftime("%H:%M:%S UTC")


def series_svg(
    series: Sequence[SeriesPoint], title: str = "failure rate per arm (error, empty or escalation)"
) -> Markup:
    """Render the series as an ``<svg>`` element (no script, no style attribute: CSP-safe)."""
    if not series:
        return Markup('<p class="muted">No traffic yet.</p>')
    rates = [r for p in series for r in (p.baseline_rate, p.candidate_rate) if r is not None]
    top = max([0.05, *rates]) * 1.1
    n = len(series)
    step = (_W - 2 * _PAD) / max(1, n - 1)

    def y(rate: float) -> float:
        return _H - _PAD - (rate / top) * (_H - 2 * _PAD)

    lines = []
    for arm, attr in (("baseline", "baseline_rate"), ("candidate", "candidate_rate")):
        pts = [
            (_PAD + i * step, y(getattr(p, attr)))
            for i, p in enumerate(series)
            if getattr(p, attr) is not None
        ]
        lines.append(_polyline(pts, _COLORS[arm]))
    axis = (
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#999"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#999"/>'
        f'<text x="{_PAD + 2}" y="{_PAD - 6}" font-size="10" fill="#555">{top * 100:.0f}%</text>'
        f'<text x="{_PAD + 2}" y="{_H - _PAD - 3}" font-size="10" fill="#555">0%</text>'
        f'<text x="{_PAD}" y="{_H - 8}" font-size="10" fill="#555">'
        f"{escape(_clock(series[0].start_ns))}</text>"
        f'<text x="{_W - _PAD - 60}" y="{_H - 8}" font-size="10" fill="#555">'
        f"{escape(_clock(series[-1].start_ns))}</text>"
        f'<text x="{_PAD + 40}" y="14" font-size="11" fill="#333">{escape(title)}</text>'
    )
    legend = (
        f'<text x="{_W - 150}" y="30" font-size="10" fill="{_COLORS["baseline"]}">■ baseline</text>'
        f'<text x="{_W - 80}" y="30" font-size="10" fill="{_COLORS["candidate"]}">■ candidate</text>'
    )
    return Markup(
        f'<svg class="series" role="img" aria-label="{escape(title)}" viewBox="0 0 {_W} {_H}" '
        f'width="{_W}" height="{_H}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f"{axis}{''.join(lines)}{legend}</svg>"
    )
