"""The inline SVG charts: well-formed, escaped, gaps for missing values, honest bins."""

import math
import xml.etree.ElementTree as ET

from metrics import charts

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
