"""Server-side charts as inline SVG strings: no JavaScript library, so they render in any
browser, in tests and without scripts.

Every function is pure: numbers in, an SVG string out. Labels are escaped here, so a
caller may mark the result safe. A missing value (None or NaN) leaves a gap; it is never
drawn as 0.
"""

import math
from collections.abc import Sequence
from html import escape

import numpy as np

Number = float | int | None


def _present(value: Number) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _fmt(value: float) -> str:
    # Two decimals keep the markup small; a pixel is the finest thing drawn.
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _svg(width: int, height: int, label: str, body: list[str], css_class: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>{"".join(body)}</svg>'
    )


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):
    span = hi - lo
    if span == 0:
        middle = (out_lo + out_hi) / 2
        return lambda value: middle
    return lambda value: out_lo + (value - lo) / span * (out_hi - out_lo)


def _segments(points: list[tuple[float, float] | None]) -> list[list[tuple[float, float]]]:
    """Runs of consecutive present points: a missing value breaks the line."""
    runs: list[list[tuple[float, float]]] = [[]]
    for point in points:
        if point is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def sparkline(values: Sequence[Number], *, width: int = 120, height: int = 28,
              label: str = "Trend") -> str:
    """A small line of the values in order (e.g. a metric's history), its last point marked.

    Fewer than one present value draws an empty frame.
    """
    pad = 3
    present = [float(v) for v in values if _present(v)]
    body: list[str] = []
    if present:
        y_of = _scale(min(present), max(present), height - pad, pad)
        x_of = _scale(0, max(len(values) - 1, 1), pad, width - pad)
        points = [(x_of(i), y_of(float(v))) if _present(v) else None
                  for i, v in enumerate(values)]
        if len(values) == 1:
            points = [(width / 2, y_of(present[0]))]
        for run in _segments(points):
            body.append('<polyline fill="none" stroke="currentColor" stroke-width="1.5" '
                        f'points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in run)}"/>')
        last = next(point for point in reversed(points) if point is not None)
        body.append(f'<circle cx="{_fmt(last[0])}" cy="{_fmt(last[1])}" r="2" '
                    'fill="currentColor"/>')
    return _svg(width, height, label, body, "sparkline")


def line_chart(points: Sequence[tuple[str, Number]], *, width: int = 640, height: int = 220,
               label: str = "Chart", y_min: float | None = None,
               y_max: float | None = None) -> str:
    """A line over labelled x positions (e.g. evaluations in finish order) with a y axis,
    gridlines, and a hoverable dot per present value (its <title> names label and value)."""
    left, right, top, bottom = 48, 12, 12, 36
    present = [float(v) for _, v in points if _present(v)]
    lo = y_min if y_min is not None else (min(present) if present else 0.0)
    hi = y_max if y_max is not None else (max(present) if present else 1.0)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    y_of = _scale(lo, hi, height - bottom, top)
    x_of = _scale(0, max(len(points) - 1, 1), left, width - right)
    if len(points) == 1:
        x_of = lambda index: (left + width - right) / 2  # noqa: E731
    body = [f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" '
            'stroke="#999"/>',
            f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" '
            f'y2="{height - bottom}" stroke="#999"/>']
    for step in range(5):
        value = lo + (hi - lo) * step / 4
        y = y_of(value)
        body.append(f'<line class="grid" x1="{left}" y1="{_fmt(y)}" x2="{width - right}" '
                    f'y2="{_fmt(y)}" stroke="#eee"/>')
        body.append(f'<text x="{left - 4}" y="{_fmt(y + 4)}" text-anchor="end" '
                    f'font-size="10">{_fmt(round(value, 3))}</text>')
    coords = [(x_of(i), y_of(float(v))) if _present(v) else None
              for i, (_, v) in enumerate(points)]
    for run in _segments(coords):
        body.append('<polyline fill="none" stroke="#2563eb" stroke-width="2" '
                    f'points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in run)}"/>')
    every = max(1, math.ceil(len(points) / 8))  # at most ~8 x labels stay readable
    for index, ((name, value), coord) in enumerate(zip(points, coords, strict=True)):
        if coord is not None:
            body.append(f'<circle class="point" cx="{_fmt(coord[0])}" cy="{_fmt(coord[1])}" '
                        f'r="3.5" fill="#2563eb"><title>{escape(name)}: '
                        f'{float(value):.4f}</title></circle>')
        if index % every == 0:
            text = name if len(name) <= 18 else name[:17] + "…"
            body.append(f'<text x="{_fmt(x_of(index))}" y="{height - bottom + 14}" '
                        f'text-anchor="middle" font-size="10">{escape(text)}</text>')
    return _svg(width, height, label, body, "line-chart")


def histogram_bins(values: Sequence[Number], *, bins: int = 10,
                   lo: float | None = None, hi: float | None = None
                   ) -> tuple[list[int], list[float]]:
    """Counts per bin and the bin edges (bins + 1) of the present values; the last bin
    includes its upper edge."""
    present = np.array([float(v) for v in values if _present(v)], dtype=np.float64)
    low = lo if lo is not None else (float(present.min()) if present.size else 0.0)
    high = hi if hi is not None else (float(present.max()) if present.size else 1.0)
    if high <= low:
        high = low + 1.0
    counts, edges = np.histogram(present, bins=bins, range=(low, high))
    return [int(c) for c in counts], [float(e) for e in edges]


def histogram(values: Sequence[Number], *, bins: int = 10, lo: float | None = None,
              hi: float | None = None, width: int = 640, height: int = 200,
              label: str = "Distribution") -> str:
    """Bars of how many values fall in each of `bins` equal ranges between lo and hi
    (default: the values' own range); each bar's <title> gives its range and count."""
    left, right, top, bottom = 40, 12, 12, 32
    counts, edges = histogram_bins(values, bins=bins, lo=lo, hi=hi)
    tallest = max(counts) if counts else 0
    y_of = _scale(0, max(tallest, 1), height - bottom, top)
    bar_width = (width - left - right) / bins
    body = [f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" '
            f'y2="{height - bottom}" stroke="#999"/>',
            f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="10">'
            f'{tallest}</text>',
            f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end" font-size="10">0'
            '</text>']
    for index, count in enumerate(counts):
        x = left + index * bar_width
        y = y_of(count)
        body.append(
            f'<rect class="bar" x="{_fmt(x + 1)}" y="{_fmt(y)}" width="{_fmt(bar_width - 2)}" '
            f'height="{_fmt(height - bottom - y)}" fill="#2563eb"><title>'
            f'{edges[index]:.3g} to {edges[index + 1]:.3g}: {count}</title></rect>'
        )
    for index in (0, bins // 2, bins):
        body.append(f'<text x="{_fmt(left + index * bar_width)}" y="{height - bottom + 14}" '
                    f'text-anchor="middle" font-size="10">{edges[index]:.3g}</text>')
    return _svg(width, height, label, body, "histogram")
