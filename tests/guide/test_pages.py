"""The user guide at /help/: docs/guide/*.md rendered by the guide app."""

import re
from pathlib import Path

import pytest
from django.test import Client, override_settings

from guide import pages

pytestmark = pytest.mark.django_db


def _article(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    return html[html.index('data-testid="guide-page"'):html.index("</article>")]


def test_a_page_shows_the_markdowns_headings_with_their_anchors(client):
    article = _article(client, "/help/metrics/")
    assert '<h1 id="metrics-and-grades">Metrics and grades</h1>' in article
    assert '<h2 id="bounds-under-missing-grades">Bounds under missing grades</h2>' in article
    assert ('<h2 id="spending-grading-effort-where-it-changes-the-answer">'
            "Spending grading effort where it changes the answer</h2>") in article


def test_the_index_lists_every_page_and_its_links_work_under_help(client):
    article = _article(client, "/help/")
    assert '<h1 id="searchtweak-user-guide">SearchTweak user guide</h1>' in article
    links = re.findall(r'<a href="([^"]+)">', article)
    guide_links = [link for link in links if link.startswith("/help/")]
    assert guide_links == ["/help/grading/", "/help/evaluations/", "/help/metrics/",
                           "/help/verdicts/", "/help/schedules/",
                           "/help/moving-from-other-tools/", "/help/admin/", "/help/judges/"]
    for link in guide_links:
        assert client.get(link).status_code == 200


def test_a_link_to_a_section_of_another_page_reaches_that_heading(client):
    article = _article(client, "/help/evaluations/")
    target = "/help/metrics/#spending-grading-effort-where-it-changes-the-answer"
    assert f'<a href="{target}">' in article
    page, fragment = target.split("#")
    assert f'id="{fragment}"' in _article(client, page)


def test_the_export_menu_links_the_rank_eval_section_of_the_moving_page(client):
    article = _article(client, "/help/moving-from-other-tools/")
    assert 'id="elasticsearch-rank_eval"' in article
    assert '<a href="/help/metrics/#files-from-other-tools">' in article


def test_a_link_that_leaves_the_guide_keeps_its_text_without_a_link(client):
    # evaluations.md links ../operations/settings.md, which the app does not serve.
    article = _article(client, "/help/evaluations/")
    assert "the settings reference" in article
    assert "operations/settings.md" not in article
    assert all(href.startswith(("/help/", "#", "http")) for href in
               re.findall(r'href="([^"]+)"', article))


def test_an_unknown_page_is_a_404(client):
    assert client.get("/help/no-such-page/").status_code == 404
    # Names that are not pages of the guide, whatever they point at on disk.
    assert client.get("/help/README/").status_code == 404
    assert client.get("/help/..%2Foperations%2Fsettings/").status_code == 404


def test_the_index_has_one_address(client):
    response = client.get("/help/index/")
    assert (response.status_code, response["Location"]) == (301, "/help/")


def test_it_answers_get_only(client):
    assert client.post("/help/metrics/").status_code == 405


def test_raw_html_in_the_markdown_is_shown_as_text(tmp_path):
    guide = tmp_path / "docs" / "guide"
    guide.mkdir(parents=True)
    (guide / "index.md").write_text(
        "# Home\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n"
        "A [trap](javascript:alert(1)) and <b>bold</b>.\n\n[Next](next.md#part)\n\n"
        "![A picture](../img/a.png)\n")
    (guide / "next.md").write_text("# Next\n\n## Part\n")
    with override_settings(BASE_DIR=tmp_path):
        html = str(pages.render("index").html)
        assert pages.render("missing") is None
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "href=\"javascript" not in html.lower()
    assert '<a href="/help/next/#part">Next</a>' in html
    assert "<p>A picture</p>" in html


def test_the_main_pages_link_their_section_of_the_guide():
    # The templates name guide pages that exist, at headings that exist.
    templates = Path(__file__).resolve().parents[2] / "templates"
    includes = re.findall(
        r'guide/_help_link\.html" with page="([a-z-]+)"(?: section="([a-z0-9-]+)")?',
        "\n".join(path.read_text() for path in templates.rglob("*.html")))
    assert {page for page, _ in includes} >= {"metrics", "grading", "evaluations", "judges",
                                              "schedules"}
    for page, section in includes:
        shown = pages.render(page)
        assert shown is not None, page
        if section:
            assert f'id="{section}"' in str(shown.html), (page, section)
