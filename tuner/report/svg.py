"""Tiny dependency-free SVG charts for report.html (scatter/line and grouped bars)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

W, H, PAD = 560, 320, 52
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def _scale(lo: float, hi: float, a: float, b: float):  # noqa: ANN202 - small closure
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    step = (hi - lo) / n if hi > lo else 1.0
    return [lo + i * step for i in range(n + 1)]


def xy_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float]], str]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    lines: bool = False,
    labels: Sequence[tuple[float, float, str]] = (),
) -> str:
    """Series: (name, points, style) with style "dot" or "line". Returns an <svg> element."""
    pts = [p for _, ps, _ in series for p in ps]
    if not pts:
        return f"<p><em>{escape(title)}: no data yet.</em></p>"
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(0.0, min(xs)), max(xs) * 1.05 or 1.0
    y0, y1 = min(0.0, min(ys)), max(ys) * 1.1 or 1.0
    sx, sy = _scale(x0, x1, PAD, W - 16), _scale(y0, y1, H - PAD, 24)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-size="11" font-family="sans-serif">',
        f'<text x="{W / 2}" y="15" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 16}" y2="{H - PAD}" stroke="#333"/>',
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{PAD}" y2="24" stroke="#333"/>',
        f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">{escape(xlabel)}</text>',
        f'<text x="14" y="{H / 2}" text-anchor="middle" transform="rotate(-90 14 {H / 2})">{escape(ylabel)}</text>',
    ]
    for t in _ticks(x0, x1):
        out.append(f'<text x="{sx(t):.1f}" y="{H - PAD + 14}" text-anchor="middle">{t:.3g}</text>')
    for t in _ticks(y0, y1):
        out.append(f'<text x="{PAD - 4}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:.3g}</text>')
    for i, (name, ps, style) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        if style == "line" and len(ps) > 1:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(ps))
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{path}"/>')
        for x, y in ps:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="{c}" opacity="0.8"/>')
        out.append(f'<text x="{W - 20}" y="{34 + 14 * i}" text-anchor="end" fill="{c}">{escape(name)}</text>')
    for x, y, text in labels:
        out.append(f'<text x="{sx(x) + 6:.1f}" y="{sy(y) - 6:.1f}" fill="#555">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], *, title: str) -> str:
    """Horizontal grouped bars; each group is scaled to its own maximum (values printed)."""
    rows = len(groups) * (len(series) + 1)
    height = 40 + rows * 16
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-size="11" '
        f'font-family="sans-serif"><text x="{W / 2}" y="15" text-anchor="middle" font-weight="bold">'
        f"{escape(title)}</text>"
    ]
    y = 32
    for gi, group in enumerate(groups):
        vals = [s[1][gi] for s in series]
        top = max((v for v in vals if v is not None), default=0.0) or 1.0
        out.append(f'<text x="4" y="{y + 11}" font-weight="bold">{escape(group)}</text>')
        y += 16
        for si, (name, _) in enumerate(series):
            v = vals[si]
            width = 0 if v is None else (W - 260) * v / top
            out.append(
                f'<text x="12" y="{y + 11}">{escape(name)}</text>'
                f'<rect x="120" y="{y + 2}" width="{width:.1f}" height="11" fill="{COLORS[si % 6]}"/>'
                f'<text x="{126 + width:.1f}" y="{y + 11}">{"n/a" if v is None else f"{v:.4g}"}</text>'
            )
            y += 16
    out.append("</svg>")
    return "\n".join(out)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points (x = latency, lower better; y = goodput, higher better) not dominated by any other."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return front
