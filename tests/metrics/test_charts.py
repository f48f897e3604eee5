"""The inline SVG charts: well-formed, escaped, gaps for missing values, honest bins."""

import itertools
import math
import xml.etree.ElementTree as ET

from metrics.reports import charts

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def test_sparkline_breaks_the_line_at_a_missing_value_and_marks_the_last_point():
    root = _parse(charts.sparkline([0.1, 0.5, None, 0.3, float("nan"), 0.9], width=100,
                                   height=20))
    lines = root.findall(f"{SVG}polyline")
    assert [len(line.get("points").split()) for line in lines] == [2, 1, 1]
    dot = root.find(f"{SVG}circle")
    assert (float(dot.get("cx")), float(dot.get("cy"))) == (97.0, 3.0)  # last = highest


def test_sparkline_of_nothing_is_an_empty_frame():
    root = _parse(charts.sparkline([], label="none"))
    assert root.findall(f"{SVG}polyline") == [] and root.find(f"{SVG}title").text == "none"


def test_line_chart_has_a_dot_per_present_value_and_escapes_labels():
    svg = charts.line_chart([("<b>first</b>", 0.25), ("second", None), ("third", 0.75)],
                            label="a & b", y_min=0, y_max=1)
    root = _parse(svg)
    points = root.findall(f"{SVG}circle")
    assert [p.find(f"{SVG}title").text for p in points] == ["<b>first</b>: 0.2500",
                                                           "third: 0.7500"]
    assert "<b>" not in svg and root.get("aria-label") == "a & b"
    # y = 0.25 of [0, 1] sits a quarter up the plot (top 12, bottom 220 - 36 = 184).
    assert float(points[0].get("cy")) == 184 - 0.25 * (184 - 12)


def test_histogram_counts_values_into_equal_bins_including_the_top_edge():
    counts, edges = charts.histogram_bins([0.0, 0.05, 0.5, 1.0, 1.0, None, math.nan],
                                          bins=4, lo=0.0, hi=1.0)
    assert counts == [2, 0, 1, 2] and edges == [0.0, 0.25, 0.5, 0.75, 1.0]
    root = _parse(charts.histogram([0.0, 0.05, 0.5, 1.0, 1.0], bins=4, lo=0, hi=1))
    bars = root.findall(f"{SVG}rect")
    assert len(bars) == 4
    assert [b.find(f"{SVG}title").text.split(": ")[1] for b in bars] == ["2", "0", "1", "2"]
    assert float(bars[1].get("height")) == 0.0


def test_histogram_of_identical_values_still_draws():
    counts, edges = charts.histogram_bins([3.0, 3.0], bins=2)
    assert sum(counts) == 2 and edges[0] == 3.0


def _ticks(root: ET.Element) -> list[str]:
    return [text.text for text in root.iter(f"{SVG}text") if text.get("class") == "tick"]


def test_a_count_chart_has_whole_number_ticks():
    days = [("2026-11-01", 0), ("2026-11-02", 3), ("2026-11-03", 1)]
    root = _parse(charts.line_chart(days, y_min=0, integer=True))
    assert _ticks(root) == ["0", "1", "2", "3"]
    assert [p.find(f"{SVG}title").text for p in root.findall(f"{SVG}circle")] == [
        "2026-11-01: 0", "2026-11-02: 3", "2026-11-03: 1"]
    # The histogram's count axis too: tallest bar 3.
    assert _ticks(_parse(charts.histogram([0.1, 0.1, 0.1, 0.9], bins=2, lo=0, hi=1))) == [
        "0", "1", "2", "3"]
    # Large counts step by round numbers, never 638.5.
    assert _ticks(_parse(charts.line_chart([("a", 0), ("b", 2554)], y_min=0, integer=True))
                  ) == ["0", "1000", "2000", "3000"]


def test_an_empty_or_flat_zero_chart_has_no_negative_tick():
    for svg in (charts.line_chart([("a", None), ("b", None)]),
                charts.line_chart([("a", 0), ("b", 0)], y_min=0, integer=True),
                charts.line_chart([], y_min=0, integer=True),
                charts.line_chart([("a", 0.0)]),
                charts.histogram([], bins=4)):
        ticks = _ticks(_parse(svg))
        assert ticks and all(float(tick) >= 0 for tick in ticks), ticks
    assert _ticks(_parse(charts.line_chart([("a", 0), ("b", 0)], y_min=0, integer=True))) == [
        "0", "1"]
    empty = _parse(charts.line_chart([("a", None)]))
    assert [t.text for t in empty.iter(f"{SVG}text") if t.get("class") == "empty"] == [
        "No values yet"]


def test_metric_ticks_are_round_values_with_the_decimals_they_need():
    root = _parse(charts.line_chart([("a", 0.34), ("b", 0.84)]))
    assert _ticks(root) == ["0.2", "0.4", "0.6", "0.8", "1.0"]
    assert _ticks(_parse(charts.line_chart([("a", 0.84)], y_min=0, y_max=1))) == [
        "0.00", "0.25", "0.50", "0.75", "1.00"]
    assert charts.nice_ticks(0.0, 10.0) == [0.0, 2.5, 5.0, 7.5, 10.0]


def test_a_single_point_draws_nothing_the_card_shows_the_value():
    assert charts.sparkline([None, 0.8348, None], label="History of P@10") == ""
    # Two points draw the line.
    two = _parse(charts.sparkline([0.5, 0.6]))
    assert two.get("class") == "chart sparkline" and len(two.findall(f"{SVG}polyline")) == 1


def test_labels_are_legible_and_x_labels_do_not_overlap():
    days = [(f"2026-11-{day:02d}", day) for day in range(1, 15)]
    root = _parse(charts.line_chart(days, width=560, height=180, y_min=0, integer=True))
    texts = list(root.iter(f"{SVG}text"))
    assert all(float(text.get("font-size")) >= 11 for text in texts)
    labels = [text for text in texts if text.get("class") == "x-label"]
    assert 2 <= len(labels) < 14
    spans = [(float(label.get("x")) - half, float(label.get("x")) + half)
             for label in labels
             for half in [len(label.find(f"{SVG}title").tail) * 11 * 0.6 / 2]]
    assert all(first[1] <= second[0] for first, second in itertools.pairwise(spans))
    assert spans[0][0] >= 0 and spans[-1][1] <= 560
    # Long evaluation names are cut to their room; the full text stays in the title.
    names = [(f"Spring relevance review number {i}", 0.5) for i in range(12)]
    named = [t for t in _parse(charts.line_chart(names, width=640)).iter(f"{SVG}text")
             if t.get("class") == "x-label"]
    assert len(named) == 3
    assert named[0].find(f"{SVG}title").text == "Spring relevance review number 0"
    assert named[0].find(f"{SVG}title").tail == "Spring relevance revie…"


def test_line_chart_draws_intervals_and_rings_marked_points():
    svg = charts.line_chart([("first", 0.5), ("second", 0.4), ("third", None)],
                            intervals=[(0.4, 0.6), None, (0.1, 0.2)],
                            marked=[False, True, True], y_min=0.0, y_max=1.0)
    root = _parse(svg)
    # A whisker per present point with an interval; the missing value draws nothing.
    assert len([e for e in root.iter() if e.get("class") == "interval"]) == 1
    assert len([e for e in root.iter() if e.get("class") == "marker"]) == 1
    titles = [e.text for e in root.iter() if e.tag.endswith("title")]
    assert "first: 0.5000 (95% CI 0.4000 to 0.6000)" in titles
    assert "second: 0.4000, regressed" in titles


def test_line_chart_shades_the_bounds_as_a_band_and_a_lone_bar():
    # y from 0 to 1 over 220 - 12 - 36 = 172 units: y(v) = 184 - 172 v.
    svg = charts.line_chart([("a", 0.5), ("b", 0.6), ("c", None), ("d", 0.7)],
                            bands=[(0.4, 0.75), (0.6, 0.6), None, (0.5, 1.0)],
                            y_min=0.0, y_max=1.0, width=640)
    root = _parse(svg)
    shaded = [e for e in root.iter() if e.get("class") == "bounds-band"]
    assert [e.tag.removeprefix(SVG) for e in shaded] == ["polygon", "rect"]
    # The band of a and b: their uppers left to right, then their lowers right to left.
    xs = [48 + i * (640 - 16 - 48) / 3 for i in range(4)]
    expected = [(xs[0], 184 - 172 * 0.75), (xs[1], 184 - 172 * 0.6),
                (xs[1], 184 - 172 * 0.6), (xs[0], 184 - 172 * 0.4)]
    got = [tuple(float(n) for n in pair.split(",")) for pair in shaded[0].get("points").split()]
    assert len(got) == 4
    for (x, y), (want_x, want_y) in zip(got, expected, strict=True):
        assert math.isclose(x, want_x, abs_tol=0.01) and math.isclose(y, want_y, abs_tol=0.01)
    # d alone: a bar from 1.0 down to 0.5.
    assert math.isclose(float(shaded[1].get("y")), 184 - 172 * 1.0, abs_tol=0.01)
    assert math.isclose(float(shaded[1].get("height")), 172 * 0.5, abs_tol=0.01)
    titles = [e.text for e in root.iter() if e.tag.endswith("title")]
    assert "a: 0.5000, can still go 0.4000 to 0.7500" in titles
    assert "b: 0.6000" in titles  # closed bounds say nothing


def test_scatter_places_each_keyword_and_leaves_out_a_missing_value():
    root = _parse(charts.scatter_chart(
        [("a", 0.0, 0.0), ("b <&>", 1.0, 1.0), ("c", 0.5, None), ("d", float("nan"), 0.3)],
        marked=[False, True, False, False], x_name="nDCG@10", y_name="CTR@10"))
    dots = root.findall(f"{SVG}circle[@class='point']")
    # Ticks 0..1: x from the left margin 48 to 480 - 16, y from 320 - 40 up to 12.
    assert [(float(d.get("cx")), float(d.get("cy"))) for d in dots] == [(48.0, 280.0),
                                                                       (464.0, 12.0)]
    assert dots[1].find(f"{SVG}title").text == "b <&>: nDCG@10 1.0000, CTR@10 1.0000"
    assert len(root.findall(f"{SVG}circle[@class='marker']")) == 1


def test_scatter_of_nothing_says_so():
    root = _parse(charts.scatter_chart([("a", None, 0.2)]))
    assert root.find(f"{SVG}text[@class='empty']").text == "No keyword has both values"
