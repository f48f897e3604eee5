"""The per-evaluation judgments page (judgments:feedback): links to it, pages, columns."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judgments.grading import feedback_submit
from judgments.models import FeedbackSlot
from judgments.queue import slot_claim_next
from judgments.views import FEEDBACK_PAGE_SIZE
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _slot_ids(html: str) -> list[int]:
    return [int(found) for found in re.findall(r'data-slot-id="(\d+)"', html)]


def _row(html: str, slot_id: int) -> str:
    row = html[html.index(f'data-slot-id="{slot_id}"'):]
    return row[:row.index("</tr>")]


def test_it_shows_a_hundred_slots_a_page_and_the_rest_on_page_two(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=3, positions=50)  # 150 slots
    url = f"/feedback/evaluations/{evaluation.pk}/"
    client = client_for(personas.lead)
    first = client.get(url).content.decode()
    second = client.get(f"{url}?page=2").content.decode()
    expected = list(FeedbackSlot.objects.filter(evaluation=evaluation).order_by(
        "keyword__position", "snapshot__position", "index").values_list("pk", flat=True))
    assert FEEDBACK_PAGE_SIZE == 100
    assert _slot_ids(first) == expected[:100]
    assert _slot_ids(second) == expected[100:]
    assert "Page 1 of 2 (150 slots)" in first and 'href="?page=2"' in first
    assert "Page 2 of 2" in second and 'href="?page=1"' in second


def test_page_links_keep_the_filters(personas):
    # 3 graders per result: the second keyword alone holds 40 x 3 = 120 slots.
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=40, strategy=3)
    keyword = evaluation.keywords.get(position=2)
    url = f"/feedback/evaluations/{evaluation.pk}/"
    client = client_for(personas.lead)
    first = client.get(f"{url}?keyword={keyword.pk}").content.decode()
    assert f'href="?keyword={keyword.pk}&amp;page=2"' in first
    second = client.get(f"{url}?keyword={keyword.pk}&page=2").content.decode()
    on_second = _slot_ids(second)
    assert len(_slot_ids(first)) == 100 and len(on_second) == 20
    assert set(FeedbackSlot.objects.filter(pk__in=on_second).values_list(
        "keyword_id", flat=True)) == {keyword.pk}
    assert f'href="?keyword={keyword.pk}&amp;page=1"' in second


def test_a_page_beyond_the_last_shows_the_last(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    html = client_for(personas.lead).get(
        f"/feedback/evaluations/{evaluation.pk}/?page=9").content.decode()
    assert len(_slot_ids(html)) == 2 and "feedback-pager" not in html


def test_it_shows_unsure_and_the_note_in_their_own_columns(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=2)
    slot = slot_claim_next(user=personas.grader, team=personas.team)
    feedback_submit(user=personas.grader, slot_id=slot.pk, grade=2, unsure=True,
                    note="Same shoe, <b>other</b> colour")
    html = client_for(personas.lead).get(
        f"/feedback/evaluations/{evaluation.pk}/").content.decode()
    assert "<th>Unsure</th><th>Note</th>" in html
    graded = _row(html, slot.pk)
    assert '<td data-testid="unsure"><span class="badge">unsure</span></td>' in graded
    assert "Same shoe, &lt;b&gt;other&lt;/b&gt; colour" in graded
    other = FeedbackSlot.objects.exclude(pk=slot.pk).get(evaluation=evaluation)
    assert '<td data-testid="unsure"></td>' in _row(html, other.pk)
    assert '<td data-testid="note"></td>' in _row(html, other.pk)


def test_unsure_only_lists_the_unsure_grades_and_pages_keep_it(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=3)
    claimed = []
    for unsure in (True, False, True):
        slot = slot_claim_next(user=personas.grader, team=personas.team)
        feedback_submit(user=personas.grader, slot_id=slot.pk, grade=1,
                        unsure=unsure, note="hm" if unsure else "")
        claimed.append(slot)
    url = f"/feedback/evaluations/{evaluation.pk}/"
    client = client_for(personas.lead)
    html = client.get(f"{url}?unsure=1").content.decode()
    assert _slot_ids(html) == [claimed[0].pk, claimed[2].pk]
    assert 'name="unsure" value="1" id="unsure" checked' in html
    assert _slot_ids(client.get(url).content.decode()) == [slot.pk for slot in claimed]
    # Anything but "1" is no filter.
    assert len(_slot_ids(client.get(f"{url}?unsure=yes").content.decode())) == 3


def test_unsure_only_carries_into_page_links(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=2, positions=60)
    FeedbackSlot.objects.filter(evaluation=evaluation).update(unsure=True)
    html = client_for(personas.lead).get(
        f"/feedback/evaluations/{evaluation.pk}/?unsure=1").content.decode()
    assert 'href="?unsure=1&amp;page=2"' in html


def test_its_json_export_link_downloads_a_file(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    html = client_for(personas.lead).get(
        f"/feedback/evaluations/{evaluation.pk}/").content.decode()
    assert (f'href="/api/v1/evaluations/{evaluation.pk}/judgments/?format=json&amp;download=1"'
            in html)


def test_the_evaluation_page_and_dashboard_link_it_for_leads(personas):
    evaluation = evaluation_with_slots(personas.team, keywords=1, positions=1)
    link = f'href="/feedback/evaluations/{evaluation.pk}/"'
    for url in (f"/evaluations/{evaluation.pk}/", f"/dashboard/evaluations/{evaluation.pk}/"):
        lead_page = client_for(personas.lead).get(url)
        assert lead_page.status_code == 200 and link in lead_page.content.decode(), url
        grader_page = client_for(personas.grader).get(url)
        assert grader_page.status_code == 200 and link not in grader_page.content.decode(), url


def test_the_page_costs_the_same_queries_for_a_full_page(personas):
    small = evaluation_with_slots(personas.team, keywords=1, positions=2)
    large = evaluation_with_slots(personas.team, keywords=3, positions=50)
    client = client_for(personas.lead)
    client.get(f"/feedback/evaluations/{small.pk}/")  # session and user rows warmed alike
    counts = []
    for evaluation in (small, large):
        with CaptureQueriesContext(connection) as captured:
            client.get(f"/feedback/evaluations/{evaluation.pk}/?page=1")
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1] <= 12


def test_the_keyword_filter_offers_the_first_keywords_and_the_chosen_one(
        client, personas, monkeypatch):
    # 100,000 keywords would be 100,000 options: the first FEEDBACK_KEYWORD_CHOICES are offered,
    # plus the one filtered by, and the keyword's own page links to its feedback.
    from judgments import views as judgment_views
    from tests.metrics.builders import build_evaluation

    monkeypatch.setattr(judgment_views, "FEEDBACK_KEYWORD_CHOICES", 2)
    evaluation = build_evaluation(team=personas.team, keywords={"a": ["d"], "b": ["d"],
                                                                 "c": ["d"]},
                                  metrics=[("precision", 1, {})])
    third = evaluation.keywords.get(position=3)
    client.force_login(personas.lead)
    page = client.get(f"/feedback/evaluations/{evaluation.pk}/")
    assert [k.text for k in page.context["keywords"]] == ["a", "b"]
    assert 'data-testid="more-keywords"' in page.content.decode()
    chosen = client.get(f"/feedback/evaluations/{evaluation.pk}/?keyword={third.pk}")
    assert [k.text for k in chosen.context["keywords"]] == ["a", "b", "c"]
    assert [row.keyword.text for row in chosen.context["rows"]] == ["c"]
    keyword_page = client.get(f"/keywords/{third.pk}/").content.decode()
    assert f'/feedback/evaluations/{evaluation.pk}/?keyword={third.pk}"' in keyword_page
