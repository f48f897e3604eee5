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


def nice_ticks(lo: float, hi: float, *, integer: bool = False, count: int = 5) -> list[float]:
    """About ``count`` evenly spaced round values (steps of 1, 2, 2.5 or 5 times 10^n) from at
    or below ``lo`` to at or above ``hi``; the chart's y axis spans the first to the last.

    ``integer`` (counts): whole steps only, so a chart of counts up to 3 reads 0, 1, 2, 3.
    Data that never goes below 0 never gets an axis below 0, empty or flat data included.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    lo, hi = min(lo, hi), max(lo, hi)
    if hi == lo:
        # Flat (or no) data: a unit around the value, kept at or above 0 when it is.
        lo, hi = (lo, lo + 1.0) if lo >= 0 and (integer or lo == 0) else (lo - 0.5, hi + 0.5)
        if lo < 0 <= hi - 0.5:
            lo, hi = 0.0, hi + 0.5
    raw = (hi - lo) / max(count - 1, 1)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    multiples = (1.0, 2.0, 5.0, 10.0) if integer else (1.0, 2.0, 2.5, 5.0, 10.0)
    step = next(m * magnitude for m in multiples if m * magnitude >= raw * (1 - 1e-9))
    if integer:
        step = max(1.0, round(step))
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    return [_clean(index * step) for index in range(first, last + 1)]


def _clean(value: float) -> float:
    # index * step carries float noise (0.30000000000000004); ticks are round numbers.
    return float(f"{value:.10g}") + 0.0  # + 0.0 turns -0.0 into 0.0


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = 0
    while decimals < 10 and round(step * 10**decimals, 9) % 1:
        decimals += 1  # as many as the step needs: 0.25 two, 2.5 one, 5 none
    return f"{value:.{decimals}f}"


def _axes_with_y_grid(ticks: Sequence[float], y_of, *, left: float, right: float, top: float,
                      bottom: float, width: float, height: float) -> list[str]:
    """Both axes, and a grid line and a label at each of the y axis's ticks."""
    body = [f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" '
            'stroke="#999"/>',
            f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" '
            f'y2="{height - bottom}" stroke="#999"/>']
    for value in ticks:
        y = y_of(value)
        body.append(f'<line class="grid" x1="{left}" y1="{_fmt(y)}" x2="{width - right}" '
                    f'y2="{_fmt(y)}" stroke="#eee"/>')
        body.append(f'<text class="tick" x="{left - 5}" y="{_fmt(y + 4)}" text-anchor="end" '
                    f'font-size="{FONT_SIZE}">{_tick_text(value, ticks)}</text>')
    return body


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

    A line needs two points: no present value draws an empty frame, a single one nothing
    at all (a lone dot reads as a trend it is not, and the card already shows the value).
    """
    pad = 3
    present = [float(v) for v in values if _present(v)]
    body: list[str] = []
    if len(present) == 1:
        return ""
    if present:
        y_of = _scale(min(present), max(present), height - pad, pad)
        x_of = _scale(0, max(len(values) - 1, 1), pad, width - pad)
        points = [(x_of(i), y_of(float(v))) if _present(v) else None
                  for i, v in enumerate(values)]
        for run in _segments(points):
            body.append('<polyline fill="none" stroke="currentColor" stroke-width="1.5" '
                        f'points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in run)}"/>')
        last = next(point for point in reversed(points) if point is not None)
        body.append(f'<circle cx="{_fmt(last[0])}" cy="{_fmt(last[1])}" r="2" '
                    'fill="currentColor"/>')
    return _svg(width, height, label, body, "sparkline")


FONT_SIZE = 11
"""Label size in SVG units; pages draw charts at (about) their own width, so at that size."""


def line_chart(points: Sequence[tuple[str, Number]], *, width: int = 640, height: int = 220,
               label: str = "Chart", y_min: float | None = None,
               y_max: float | None = None, integer: bool = False,
               intervals: Sequence[tuple[float, float] | None] | None = None,
               marked: Sequence[bool] | None = None, marked_name: str = "regressed",
               bands: Sequence[tuple[Number, Number] | None] | None = None) -> str:
    """A line over labelled x positions (e.g. evaluations in finish order) with a y axis,
    gridlines, and a hoverable dot per present value (its <title> names label and value).

    ``y_min``/``y_max`` fix the y range (default: round values around the data);
    ``integer`` (counts) puts the gridlines on whole numbers. ``intervals`` (one per point
    or None) draws each point's interval as a whisker with caps; ``marked`` (one bool per
    point) rings those points in red and names them ``marked_name`` in their title.
    ``bands`` (one (lower, upper) or None per point) shades where each value can still go
    once every ungraded result is graded (bounds under missing grades), between points as
    a band and at a lone point as a bar.
    """
    left, right, top, bottom = 48, 16, 12, 36
    intervals = list(intervals) if intervals is not None else [None] * len(points)
    marked = list(marked) if marked is not None else [False] * len(points)
    present = [float(v) for _, v in points if _present(v)]
    bands = [band if band is not None and all(_present(b) for b in band) else None
             for band in bands] if bands is not None else [None] * len(points)
    present += [float(bound) for interval in [*intervals, *bands] if interval is not None
                for bound in interval if _present(bound)]
    lo = y_min if y_min is not None else (min(present) if present else 0.0)
    hi = y_max if y_max is not None else (max(present) if present else 1.0)
    if y_max is None and present and y_min is not None:
        hi = max(hi, y_min)
    ticks = nice_ticks(lo, hi, integer=integer)
    if y_min is not None and y_max is not None and y_max > y_min:
        ticks = [t for t in ticks if y_min <= t <= y_max]
        lo, hi = y_min, y_max
    else:
        lo, hi = ticks[0], ticks[-1]
    y_of = _scale(lo, hi, height - bottom, top)
    x_of = _scale(0, max(len(points) - 1, 1), left, width - right)
    if len(points) == 1:
        x_of = lambda index: (left + width - right) / 2  # noqa: E731
    body = _axes_with_y_grid(ticks, y_of, left=left, right=right, top=top, bottom=bottom,
                             width=width, height=height)
    if not present:
        body.append(f'<text class="empty" x="{_fmt((left + width - right) / 2)}" '
                    f'y="{_fmt((top + height - bottom) / 2)}" text-anchor="middle" '
                    f'font-size="{FONT_SIZE + 1}" fill="#666">No values yet</text>')
    coords = [(x_of(i), y_of(float(v))) if _present(v) else None
              for i, (_, v) in enumerate(points)]
    band_edges = [(x_of(i), y_of(float(band[0])), y_of(float(band[1])))
                  if band is not None else None for i, band in enumerate(bands)]
    for run in _segments(band_edges):
        if len(run) == 1:
            x, low, high = run[0]
            body.append(f'<rect class="bounds-band" x="{_fmt(x - 3)}" y="{_fmt(high)}" '
                        f'width="6" height="{_fmt(max(low - high, 0.5))}" fill="#2563eb" '
                        'fill-opacity="0.15"/>')
            continue
        outline = [(x, high) for x, _, high in run] + [(x, low) for x, low, _ in reversed(run)]
        body.append('<polygon class="bounds-band" fill="#2563eb" fill-opacity="0.15" '
                    f'points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in outline)}"/>')
    for run in _segments(coords):
        body.append('<polyline fill="none" stroke="#2563eb" stroke-width="2" '
                    f'points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in run)}"/>')
    for (name, value), coord, interval, mark, band in zip(points, coords, intervals, marked,
                                                          bands, strict=True):
        if coord is None:
            continue
        shown = f"{int(value)}" if integer else f"{float(value):.4f}"
        if band is not None and band[0] != band[1]:
            shown += f", can still go {float(band[0]):.4f} to {float(band[1]):.4f}"
        if interval is not None:
            x, low, high = coord[0], y_of(float(interval[0])), y_of(float(interval[1]))
            body.append(
                f'<path class="interval" stroke="#2563eb" stroke-opacity="0.55" fill="none" '
                f'd="M{_fmt(x)},{_fmt(low)}V{_fmt(high)}M{_fmt(x - 4)},{_fmt(low)}'
                f'H{_fmt(x + 4)}M{_fmt(x - 4)},{_fmt(high)}H{_fmt(x + 4)}"/>')
            shown += f" (95% CI {float(interval[0]):.4f} to {float(interval[1]):.4f})"
        if mark:
            shown += f", {marked_name}"
            body.append(f'<circle class="marker" cx="{_fmt(coord[0])}" cy="{_fmt(coord[1])}" '
                        'r="7" fill="none" stroke="#d92d20" stroke-width="2"/>')
        body.append(f'<circle class="point" cx="{_fmt(coord[0])}" cy="{_fmt(coord[1])}" '
                    f'r="3.5" fill="#2563eb"><title>{escape(name)}: '
                    f'{escape(shown)}</title></circle>')
    body += _x_labels([name for name, _ in points], x_of, left=left, right=width - right,
                      width=width, y=height - bottom + 15)
    return _svg(width, height, label, body, "line-chart")


def _x_labels(names: Sequence[str], x_of, *, left: float, right: float, width: float,
              y: float) -> list[str]:
    """Labels under the x axis, centred on their points, as many as fit side by side, each
    cut to the room it has and kept inside the chart."""
    if not names:
        return []
    char_width = FONT_SIZE * 0.6  # a sans-serif average
    # Up to 18 characters per label decide how many labels fit; each then gets its room.
    widest = min(max(len(name) for name in names), 18) * char_width + 8
    room = (right - left) if len(names) == 1 else (right - left) / (len(names) - 1)
    # An edge label pulled inside the chart moves toward its neighbour by up to this much.
    pull = max(0.0, widest / 2 - min(left, width - right))
    every = max(1, math.ceil((widest + pull) / max(room, 1.0)), math.ceil(len(names) / 10))
    chars = max(4, int((room * every - pull - 8) / char_width))
    labels = []
    for index in range(0, len(names), every):
        name = names[index]
        text = name if len(name) <= chars else name[:chars - 1] + "…"
        half = (len(text) * char_width + 4) / 2
        x = min(max(x_of(index), half), width - half)
        labels.append(f'<text class="x-label" x="{_fmt(x)}" y="{_fmt(y)}" '
                      f'text-anchor="middle" font-size="{FONT_SIZE}">'
                      f'<title>{escape(name)}</title>{escape(text)}</text>')
    return labels


def histogram_bins(values: Sequence[Number], *, bins: int = 10,
                   lo: float | None = None, hi: float | None = None,
                   weights: Sequence[int] | None = None) -> tuple[list[int], list[float]]:
    """Counts per bin and the bin edges (bins + 1) of the present values; the last bin
    includes its upper edge. With `weights` (one whole number per value) a bin holds the
    sum of its values' weights instead of their count."""
    kept = [(float(v), w) for v, w in zip(values, weights if weights is not None
                                          else [1] * len(values), strict=True)
            if _present(v)]
    present = np.array([v for v, _ in kept], dtype=np.float64)
    low = lo if lo is not None else (float(present.min()) if present.size else 0.0)
    high = hi if hi is not None else (float(present.max()) if present.size else 1.0)
    if high <= low:
        high = low + 1.0
    counts, edges = np.histogram(present, bins=bins, range=(low, high),
                                 weights=None if weights is None else
                                 np.array([w for _, w in kept], dtype=np.int64))
    return [int(c) for c in counts], [float(e) for e in edges]


def histogram(values: Sequence[Number], *, bins: int = 10, lo: float | None = None,
              hi: float | None = None, width: int = 400, height: int = 200,
              label: str = "Distribution", weights: Sequence[int] | None = None) -> str:
    """Bars of how many values fall in each of `bins` equal ranges between lo and hi
    (default: the values' own range), or of their weights' sum with `weights`; each bar's
    <title> gives its range and count. The count axis has whole-number gridlines from 0."""
    counts, edges = histogram_bins(values, bins=bins, lo=lo, hi=hi, weights=weights)
    return histogram_svg(counts, edges, width=width, height=height, label=label)


def unit_edges(bins: int) -> list[float]:
    """The edges histogram_bins gives for `bins` bins over [0, 1]."""
    return [float(e) for e in np.linspace(0.0, 1.0, bins + 1)]


def histogram_svg(counts: list[int], edges: list[float], *, width: int = 400,
                  height: int = 200, label: str = "Distribution") -> str:
    """The histogram of counts already binned (len(edges) == len(counts) + 1), as
    histogram draws it."""
    left, right, top, bottom = 36, 14, 12, 34
    bins = len(counts)
    tallest = max(counts) if counts else 0
    ticks = nice_ticks(0, tallest, integer=True)
    y_of = _scale(0, ticks[-1], height - bottom, top)
    bar_width = (width - left - right) / bins
    body = [f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" '
            f'y2="{height - bottom}" stroke="#999"/>']
    for value in ticks:
        y = y_of(value)
        if value:
            body.append(f'<line class="grid" x1="{left}" y1="{_fmt(y)}" x2="{width - right}" '
                        f'y2="{_fmt(y)}" stroke="#eee"/>')
        body.append(f'<text class="tick" x="{left - 5}" y="{_fmt(y + 4)}" text-anchor="end" '
                    f'font-size="{FONT_SIZE}">{int(value)}</text>')
    for index, count in enumerate(counts):
        x = left + index * bar_width
        y = y_of(count)
        body.append(
            f'<rect class="bar" x="{_fmt(x + 1)}" y="{_fmt(y)}" width="{_fmt(bar_width - 2)}" '
            f'height="{_fmt(height - bottom - y)}" fill="#2563eb"><title>'
            f'{edges[index]:.3g} to {edges[index + 1]:.3g}: {count}</title></rect>'
        )
    for index in (0, bins // 2, bins):
        anchor = "start" if index == 0 else "end" if index == bins else "middle"
        body.append(f'<text class="x-label" x="{_fmt(left + index * bar_width)}" '
                    f'y="{height - bottom + 15}" text-anchor="{anchor}" '
                    f'font-size="{FONT_SIZE}">{edges[index]:.3g}</text>')
    return _svg(width, height, label, body, "histogram")


def scatter_chart(points: Sequence[tuple[str, Number, Number]], *, width: int = 480,
                  height: int = 320, label: str = "Scatter", x_name: str = "x",
                  y_name: str = "y", marked: Sequence[bool] | None = None) -> str:
    """One dot per (name, x, y) with both values present, on axes with round ticks, each
    dot's <title> naming it and its values; `marked` (one bool per point) rings those in
    red. A point missing either value is left out, never drawn at 0."""
    left, right, top, bottom = 48, 16, 12, 40
    marked = list(marked) if marked is not None else [False] * len(points)
    present = [(name, float(x), float(y), mark) for (name, x, y), mark
               in zip(points, marked, strict=True) if _present(x) and _present(y)]
    x_ticks = nice_ticks(min((p[1] for p in present), default=0.0),
                         max((p[1] for p in present), default=1.0))
    y_ticks = nice_ticks(min((p[2] for p in present), default=0.0),
                         max((p[2] for p in present), default=1.0))
    x_of = _scale(x_ticks[0], x_ticks[-1], left, width - right)
    y_of = _scale(y_ticks[0], y_ticks[-1], height - bottom, top)
    body = _axes_with_y_grid(y_ticks, y_of, left=left, right=right, top=top, bottom=bottom,
                             width=width, height=height)
    for value in x_ticks:
        body.append(f'<text class="tick" x="{_fmt(x_of(value))}" y="{height - bottom + 14}" '
                    f'text-anchor="middle" font-size="{FONT_SIZE}">'
                    f'{_tick_text(value, x_ticks)}</text>')
    body.append(f'<text class="axis-name" x="{_fmt((left + width - right) / 2)}" '
                f'y="{height - 4}" text-anchor="middle" font-size="{FONT_SIZE}">'
                f'{escape(x_name)}</text>')
    body.append(f'<text class="axis-name" x="{left + 4}" y="{top + 10}" '
                f'font-size="{FONT_SIZE}">{escape(y_name)}</text>')
    if not present:
        body.append(f'<text class="empty" x="{_fmt((left + width - right) / 2)}" '
                    f'y="{_fmt((top + height - bottom) / 2)}" text-anchor="middle" '
                    f'font-size="{FONT_SIZE + 1}" fill="#666">No keyword has both values</text>')
    for name, x, y, mark in present:
        cx, cy = _fmt(x_of(x)), _fmt(y_of(y))
        if mark:
            body.append(f'<circle class="marker" cx="{cx}" cy="{cy}" r="7" fill="none" '
                        'stroke="#d92d20" stroke-width="2"/>')
        body.append(f'<circle class="point" cx="{cx}" cy="{cy}" r="3.5" fill="#2563eb" '
                    f'fill-opacity="0.7"><title>{escape(name)}: {escape(x_name)} {x:.4f}, '
                    f'{escape(y_name)} {y:.4f}</title></circle>')
    return _svg(width, height, label, body, "scatter-chart")
