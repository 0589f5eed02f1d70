"""An inline SVG line chart of node confidences over the Bayesian iterations. Pure.

Written by hand (about sixty lines) rather than with a plotting library: the report must be one
self-contained file with no script, and matplotlib or plotly would add a heavy dependency to
draw a handful of polylines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["confidence_plot", "PALETTE"]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_W, _H = 860, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 330, 16, 36


def confidence_plot(history: Sequence[Mapping[str, float]], threshold: float = 0.9, top: int = 6) -> str:
    """An SVG of the ``top`` nodes' confidence (those that peaked highest) at each iteration.

    ``history[i]`` maps every node to its confidence after iteration ``i`` (0: the priors). The
    dashed line is the convergence threshold.
    """
    if not history:
        return "<p>No iterations to plot.</p>"
    peaks: dict[str, float] = {}
    for step in history:
        for fqn, value in step.items():
            peaks[fqn] = max(peaks.get(fqn, 0.0), value)
    chosen = sorted(peaks, key=lambda f: (-peaks[f], f))[:top]
    width, height = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    steps = max(1, len(history) - 1)

    def x(i: int) -> float:
        return _LEFT + width * i / steps

    def y(value: float) -> float:
        return _TOP + height * (1.0 - min(1.0, max(0.0, value)))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
             f'viewBox="0 0 {_W} {_H}" role="img" aria-label="confidence per iteration">',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{width}" height="{height}" fill="#fafafa" stroke="#999"/>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + width}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" font-size="11" text-anchor="end">'
                     f'{tick:.2f}</text>')
    for i in range(len(history)):
        parts.append(f'<text x="{x(i):.1f}" y="{_TOP + height + 16}" font-size="11" text-anchor="middle">'
                     f'{i}</text>')
    parts.append(f'<text x="{_LEFT + width / 2:.1f}" y="{_H - 4}" font-size="12" text-anchor="middle">'
                 'iteration (0: priors)</text>')
    parts.append(f'<line x1="{_LEFT}" x2="{_LEFT + width}" y1="{y(threshold):.1f}" y2="{y(threshold):.1f}" '
                 'stroke="#555" stroke-dasharray="6 4"/>')
    for index, fqn in enumerate(chosen):
        colour = PALETTE[index % len(PALETTE)]
        points = " ".join(f"{x(i):.1f},{y(step.get(fqn, 0.0)):.1f}" for i, step in enumerate(history))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2.5" points="{points}"/>')
        for i, step in enumerate(history):
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(step.get(fqn, 0.0)):.1f}" r="3" fill="{colour}"/>')
        legend_y = _TOP + 14 + 20 * index
        parts.append(f'<rect x="{_LEFT + width + 12}" y="{legend_y - 9}" width="14" height="10" '
                     f'fill="{colour}"/>')
        label = fqn if len(fqn) <= 44 else "…" + fqn[-43:]
        parts.append(f'<text x="{_LEFT + width + 32}" y="{legend_y}" font-size="11">'
                     f'<title>{escape(fqn)}</title>{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
