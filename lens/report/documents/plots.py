"""Inline SVG plots, drawn by hand so a report needs no plotting library and no network.

Every label is escaped: adapter names and question types come from users' configs and data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _html_escape

from lens.core.visible import visible
from lens.report.foundations.shapes import EstimateOut


def escape(text: str) -> str:
    """Markup-escaped, with control characters shown (SVG titles show as tooltips)."""
    return _html_escape(visible(text))

PALETTE = ("#3366cc", "#dc7633", "#2e8b57", "#9b59b6", "#c0392b", "#16a085", "#7f8c8d",
           "#b7950b")
W, H = 500, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 34, 92


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _open(title: str, kind: str, height: int = H) -> list[str]:
    t = escape(title)
    return [f'<svg class="plot" data-kind="{escape(kind)}" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" '
            f'aria-label="{t}"><title>{t}</title>',
            f'<text x="{W / 2}" y="18" text-anchor="middle" class="ptitle">{t}</text>']


def empty_plot(title: str, message: str) -> str:
    parts = _open(title, "empty", 90)
    parts.append(f'<text x="{W / 2}" y="55" text-anchor="middle" class="pnote">'
                 f'{escape(message)}</text></svg>')
    return "".join(parts)


@dataclass(frozen=True)
class Scale:
    lo: float
    hi: float
    px_lo: float
    px_hi: float

    def __call__(self, v: float) -> float:
        if self.hi == self.lo:
            return (self.px_lo + self.px_hi) / 2
        return self.px_lo + (v - self.lo) / (self.hi - self.lo) * (self.px_hi - self.px_lo)


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


def _fmt_tick(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def _y_axis(parts: list[str], y: Scale, label: str) -> None:
    for t in _nice_ticks(y.lo, y.hi):
        py = y(t)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{py:.1f}" y2="{py:.1f}" '
                     'class="grid"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end" class="tick">'
                     f'{_fmt_tick(t)}</text>')
    parts.append(f'<text x="14" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" class="axis" '
                 f'transform="rotate(-90 14 {(TOP + H - BOTTOM) / 2})">{escape(label)}</text>')


def _legend(parts: list[str], names: Sequence[str]) -> None:
    x = LEFT
    for i, name in enumerate(names):
        short = name if len(name) <= 28 else name[:27] + "…"
        parts.append(f'<rect x="{x}" y="{H - 16}" width="10" height="10" '
                     f'fill="{colour(i)}"/>')
        parts.append(f'<text x="{x + 14}" y="{H - 7}" class="legend">{escape(short)}</text>')
        x += 24 + 7 * len(short)


def _whisker(parts: list[str], x: float, y: Scale, est: EstimateOut) -> None:
    if est.low is None or est.high is None:
        return
    y1, y2 = y(est.low), y(est.high)
    parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" class="whisker"/>')
    for yy in (y1, y2):
        parts.append(f'<line x1="{x - 4:.1f}" x2="{x + 4:.1f}" y1="{yy:.1f}" y2="{yy:.1f}" '
                     'class="whisker"/>')


def _tip(name: str, group: str, est: EstimateOut) -> str:
    if est.mean is None:
        return escape(f"{name} · {group}: unknown")
    ci = "" if est.low is None else f" [{est.low:.3f}, {est.high:.3f}]"
    return escape(f"{name} · {group}: {est.mean:.3f}{ci} (n={est.n})")


def _y_range(values: Sequence[EstimateOut | None], unit: bool) -> tuple[float, float]:
    if unit:
        return 0.0, 1.0
    nums = [v for e in values if e is not None
            for v in (e.mean, e.low, e.high) if v is not None]
    if not nums:
        return 0.0, 1.0
    lo, hi = min(0.0, *nums), max(nums)
    return lo, hi if hi > lo else lo + 1


Series = Sequence[tuple[str, Sequence[EstimateOut | None]]]


def _series_frame(title: str, kind: str, categories: Sequence[str], series: Series,
                  ylabel: str, unit: bool) -> tuple[list[str], Scale] | None:
    """The opening of a chart of series over categories with its y axis, scaled to every
    estimate; None when there is nothing to plot."""
    everything = [e for _, ests in series for e in ests]
    if not categories or all(e is None or e.mean is None for e in everything):
        return None
    parts = _open(title, kind)
    y = Scale(*_y_range(everything, unit), H - BOTTOM, TOP)
    _y_axis(parts, y, ylabel)
    return parts, y


def _x_label(parts: list[str], label: str) -> None:
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - BOTTOM + 34}" '
                 f'text-anchor="middle" class="axis">{escape(label)}</text>')


def _close(parts: list[str], names: Sequence[str]) -> str:
    """The chart with its legend of ``names``, as one SVG text."""
    _legend(parts, names)
    parts.append("</svg>")
    return "".join(parts)


def _bar_group(parts: list[str], y: Scale, group: str, gi: int, series: Series,
               slot: float, bar_w: float) -> None:
    """The bars of one group, one a series with its whisker, and the group's label."""
    x0 = LEFT + gi * slot + (slot - bar_w * len(series)) / 2
    for si, (name, ests) in enumerate(series):
        est = ests[gi]
        if est is None or est.mean is None:
            continue
        x = x0 + si * bar_w
        top, base = y(est.mean), y(max(0.0, y.lo))
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{min(top, base):.1f}" '
                     f'width="{bar_w - 1:.1f}" height="{abs(base - top):.1f}" '
                     f'fill="{colour(si)}"><title>{_tip(name, group, est)}</title></rect>')
        _whisker(parts, x + (bar_w - 1) / 2, y, est)
    label = group if len(group) <= 15 else group[:14] + "…"
    cx = LEFT + gi * slot + slot / 2
    parts.append(f'<text x="{cx:.1f}" y="{H - BOTTOM + 14}" text-anchor="end" '
                 f'transform="rotate(-40 {cx:.1f} {H - BOTTOM + 14})" class="tick">'
                 f'<title>{escape(group)}</title>{escape(label)}</text>')


def bar_chart(title: str, groups: Sequence[str], series: Series, *, ylabel: str,
              unit: bool = True) -> str:
    """Grouped bars (one group per category, one bar per series) with interval whiskers."""
    frame = _series_frame(title, "bar", groups, series, ylabel, unit)
    if frame is None:
        return empty_plot(title, "no values to plot")
    parts, y = frame
    slot = (W - LEFT - RIGHT) / len(groups)
    bar_w = max(3.0, min(36.0, slot * 0.8 / max(1, len(series))))
    for gi, group in enumerate(groups):
        _bar_group(parts, y, group, gi, series, slot, bar_w)
    return _close(parts, [n for n, _ in series])


def _line_series(parts: list[str], y: Scale, xs: Sequence[str], si: int, name: str,
                 ests: Sequence[EstimateOut | None], count: int) -> None:
    """Series ``si`` of ``count`` as a line through its known points, each with a whisker; the
    series are set a little apart so that their whiskers do not hide each other."""
    step = (W - LEFT - RIGHT) / len(xs)
    pts = [(LEFT + step * (xi + 0.5) + (si - (count - 1) / 2) * 3, y(est.mean), est, xs[xi])
           for xi, est in enumerate(ests) if est is not None and est.mean is not None]
    if len(pts) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{px:.1f},{py:.1f}"
                        for i, (px, py, _, _) in enumerate(pts))
        parts.append(f'<path class="line" d="{path}" stroke="{colour(si)}" fill="none"/>')
    for px, py, est, xname in pts:
        _whisker(parts, px, y, est)
        parts.append(f'<circle class="point" cx="{px:.1f}" cy="{py:.1f}" r="4" '
                     f'fill="{colour(si)}"><title>{_tip(name, xname, est)}</title></circle>')


def line_chart(title: str, xs: Sequence[str], series: Series, *, ylabel: str, xlabel: str,
               unit: bool = True) -> str:
    """One line per series across ordered categories, with whiskers at each point."""
    frame = _series_frame(title, "line", xs, series, ylabel, unit)
    if frame is None:
        return empty_plot(title, "no values to plot")
    parts, y = frame
    for si, (name, ests) in enumerate(series):
        _line_series(parts, y, xs, si, name, ests, len(series))
    step = (W - LEFT - RIGHT) / len(xs)
    for xi, xname in enumerate(xs):
        parts.append(f'<text x="{LEFT + step * (xi + 0.5):.1f}" y="{H - BOTTOM + 16}" '
                     f'text-anchor="middle" class="tick">{escape(xname)}</text>')
    _x_label(parts, xlabel)
    return _close(parts, [n for n, _ in series])


def _x_scale(values: Sequence[float]) -> Scale:
    """From 0 to a tenth past the largest value (to 1 when none is above 0)."""
    hi = max(values) * 1.1 if max(values) > 0 else 1.0
    return Scale(0.0, hi, LEFT + 10, W - RIGHT - 10)


def _x_axis(parts: list[str], xs: Scale, label: str) -> None:
    for t in _nice_ticks(xs.lo, xs.hi):
        parts.append(f'<text x="{xs(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" '
                     f'class="tick">{_fmt_tick(t)}</text>')
    _x_label(parts, label)


def _scatter_point(parts: list[str], xs: Scale, y: Scale, i: int, name: str, x: float,
                   est: EstimateOut) -> None:
    px = xs(x)
    _whisker(parts, px, y, est)
    parts.append(f'<circle class="point" cx="{px:.1f}" cy="{y(est.mean or 0.0):.1f}" r="5" '
                 f'fill="{colour(i)}"><title>{_tip(name, f"{x:g}", est)}</title></circle>')


def scatter(title: str, points: Sequence[tuple[str, float | None, EstimateOut]], *,
            xlabel: str, ylabel: str, unit: bool = True) -> str:
    """One point per series at (x, estimate) with a vertical interval whisker."""
    usable = [(n, x, e) for n, x, e in points if x is not None and e.mean is not None]
    if not usable:
        return empty_plot(title, f"no values to plot ({xlabel} unknown)")
    parts = _open(title, "scatter")
    y = Scale(*_y_range([e for _, _, e in usable], unit), H - BOTTOM, TOP)
    _y_axis(parts, y, ylabel)
    xs = _x_scale([float(x) for _, x, _ in usable])
    _x_axis(parts, xs, xlabel)
    names = [n for n, _, _ in points]
    for name, x, est in usable:
        _scatter_point(parts, xs, y, names.index(name), name, float(x), est)
    return _close(parts, names)
