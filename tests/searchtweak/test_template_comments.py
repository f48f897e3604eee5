"""Django's `{# … #}` comment ends on its own line: one spread over lines is printed on the
page as text (the nav once showed its own note). Longer notes use {% comment %}."""

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_template_comment_spans_lines():
    spread = [f"{path.relative_to(TEMPLATES)}:{number}"
              for path in sorted(TEMPLATES.rglob("*.html"))
              for number, line in enumerate(path.read_text().splitlines(), start=1)
              if line.count("{#") > line.count("#}")]
    assert spread == []


def test_the_scan_reads_the_templates():
    # A scan that read nothing could not fail: the base template has one-line comments.
    assert "{#" in (TEMPLATES / "base.html").read_text()
